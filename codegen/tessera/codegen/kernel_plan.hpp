/// \file kernel_plan.hpp
/// \brief `kernel_plan`: a plain, printable description of one kernel — its family, Kokkos
///        policy, league, team and vector sizes, scratch level and bytes, every buffer's memory
///        space and scratch offset, every barrier, and the family's parameters (blocking,
///        staging). Produced by the lowering passes; the executors launch exactly what it says,
///        and explain() prints it.
#pragma once

#include <tessera/codegen/target.hpp>
#include <tessera/dsl/expr/node_kind.hpp>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::codegen {

/// Where a buffer lives during the kernel (C++ AMP / OpenCL terms, Kokkos levels).
enum class memory_space_kind {
  global,          ///< device memory (array, array_view, Kokkos::View): OpenCL __global
  scratch_level0,  ///< team scratch level 0 (GPU shared memory / LDS): tile_static, __local
  scratch_level1,  ///< team scratch level 1 (slower, larger): tile_static that does not fit level 0
  private_memory,  ///< per logical thread or member: registers (GPU tile_local, the GPU
                   ///< matmul's accumulators, CPU vector accumulators): OpenCL __private
};

inline const char* to_string(memory_space_kind m) {
  switch (m) {
    case memory_space_kind::global:
      return "global";
    case memory_space_kind::scratch_level0:
      return "scratch level 0";
    case memory_space_kind::scratch_level1:
      return "scratch level 1";
    case memory_space_kind::private_memory:
      return "private";
  }
  return "?";
}

/// What a kernel computes (dsl/expr/node_kind.hpp: node types name their family there).
using tessera::kernel_family;
using tessera::to_string;

/// Team scratch is requested with this many spare bytes, so the kernel can align its base to
/// 64 bytes (vector loads); plans show it next to each kernel's scratch bytes.
inline constexpr std::size_t scratch_align_slack = 64;

/// One buffer a kernel touches.
struct buffer_plan {
  std::string name;  ///< e.g. "A", "tile_static#0"
  std::string type;  ///< e.g. "float[16][16]", "float (1024x1024)"
  memory_space_kind space = memory_space_kind::global;
  std::size_t bytes = 0;   ///< per team for scratch, per logical thread for private,
                           ///< whole buffer for global (0 when unknown)
  std::size_t offset = 0;  ///< byte offset inside the team's scratch allocation
  std::string role;        ///< "input", "output", "staging", "accumulator", ...
};

/// One barrier between two phases of a kernel.
struct barrier_plan {
  int after_phase = 0;   ///< the barrier ends phase `after_phase` (phases count from 0)
  std::string fence;     ///< "all memory", "global memory", "tile_static memory"
  std::string hazard;    ///< why it is needed, e.g. "read-after-write on a_tile"
  bool in_loop = false;  ///< repeated once per iteration of a tile-uniform loop
  /// in_loop and ending the iteration (a hazard carried into the next one): runs between
  /// iterations, so trips - 1 times.
  bool loop_carried = false;
};

/// How many barriers a kernel whose plan has `barriers` runs per tile when its loop makes
/// `trips` iterations: the ones outside the loop once, those inside once per iteration, the
/// loop-carried ones between iterations. (A barrier entering the loop runs only if it is
/// entered.) Tile programs insert their barriers as they run; this is what they must execute.
inline std::int64_t executed_barriers(const std::vector<barrier_plan>& barriers,
                                      std::int64_t trips) {
  std::int64_t n = 0;
  for (const auto& b : barriers) {
    if (b.loop_carried)
      n += trips > 0 ? trips - 1 : 0;
    else if (b.in_loop)
      n += trips;
    else if (b.hazard.find("(entering the loop)") != std::string::npos)
      n += trips > 0 ? 1 : 0;
    else
      ++n;
  }
  return n;
}

/// Cache blocking of a packed matrix multiply as launched (elements; gemm_blocking's mc, kc, nc,
/// mr, nr after planning): C is cut into `m_blocks` row blocks of mc rows, each split over
/// `splits` column ranges (teams = m_blocks * splits per launch); one launch per (nc-column
/// panel, kc-deep block).
struct gemm_params : gemm_blocking {
  std::int64_t m_blocks = 0, splits = 1, panels_per_split = 0;
  std::int64_t launches = 0;  ///< (N / nc) * (K / kc), rounded up
  /// A problem too small to repay packing (direct_gemm_fits): one RangePolicy launch of
  /// m_blocks row blocks of mr rows, the micro-kernels reading A and B where they lie.
  bool direct = false;
  /// A direct problem small enough that a launch would cost more than it saves
  /// (target::matmul.inline_madds): its row blocks in order on the calling thread, after a
  /// fence of the execution space; no launch (launches = 0).
  bool inline_run = false;
  int scratch_level = 1;  ///< the scratch level holding each team's packed A block
  std::string origin;     ///< "cache sizes", "tuned", "set by the caller"
};

/// A stencil operand staged in team scratch by an elementwise kernel under the GPU mapping:
/// every shift of one array (same buffer, strides and boundary policy) in the kernel reads the
/// team's box of that array, the output tile grown by the shifts' halo, loaded once (boundary
/// policy applied) before a barrier.
struct stencil_stage {
  std::string operand;                ///< the array's name in the plan ("A")
  std::vector<int> shifts;            ///< the nodes (pre-order ids) reading the box: shifts,
                                      ///< or terminals where `sections`
  std::vector<std::int64_t> lo, hi;   ///< smallest and largest offset per dimension
  std::vector<std::int64_t> box;      ///< tile + hi - lo per dimension (elements)
  std::string boundary;               ///< the shifts' boundary policy
  std::size_t offset = 0, bytes = 0;  ///< the box in the team's scratch (level 0)
  /// Overlapping sections of one buffer instead of shifts: `offsets` holds each member's index
  /// offset from the buffer's first section (members x rank), and [span_lo, span_hi] the
  /// elements, counted from that section's first element along its strides, that the members'
  /// memory spans: the box is loaded only there (a star stencil's box corners may lie outside
  /// the array), and every member reads inside it.
  bool sections = false;
  std::vector<std::int64_t> offsets;
  std::int64_t span_lo = 0, span_hi = 0;
};

/// An input buffer whose rows a CPU row loop (elementwise kernel, not a flat loop) prefetches:
/// the terminal `node` (pre-order id; for overlapping sections, the buffer's first section)
/// read at `offset` from the index being computed, the buffer's leading read (its rows further
/// down are the ones not yet in cache: the other reads of a stencil operand hit the lines the
/// rows before brought in).
struct row_prefetch {
  int node = -1;
  std::vector<std::int64_t> offset;
};
/// The most buffers a row loop prefetches (a kernel reading more prefetches none).
inline constexpr std::size_t max_row_prefetches = 4;

/// One kernel launch (a Kokkos TeamPolicy, or a range policy for simple kernels).
struct kernel_plan {
  std::string name;  ///< e.g. "parallel_for_each<16,16>"
  kernel_family family = kernel_family::tile_kernel;
  std::string label;                      ///< the Kokkos kernel label (profiling tools)
  std::string policy = "TeamPolicy";      ///< Kokkos policy used
  std::string backend;                    ///< Kokkos execution space name
  std::vector<std::int64_t> tile;         ///< tile sizes (logical threads per dimension)
  std::vector<std::int64_t> tiles;        ///< tiles per dimension
  std::int64_t league_size = 0;           ///< teams (= tiles), or range length
  int team_size = 1;                      ///< Kokkos team members per team
  int vector_length = 1;                  ///< Kokkos vector lanes per member
  int logical_threads = 1;                ///< logical threads per tile
  std::string mapping;                    ///< how logical threads map onto members/lanes
  int scratch_level = 0;                  ///< the level holding the team's scratch
  std::size_t scratch_bytes[2] = {0, 0};  ///< per team, per scratch level
  std::size_t tile_local_bytes = 0;       ///< private bytes per logical thread
  int phases = 1;                         ///< barrier-separated phases per tile (per pass)
  std::vector<buffer_plan> buffers;
  std::vector<barrier_plan> barriers;
  std::vector<std::string> notes;  ///< fusion decisions, temporaries, ...
  // Family parameters (0 / empty when unused), set by the passes from the target:
  int staged_block = 0;           ///< staged transpose on CPUs: B x B register blocks
  int staged_ld = 0;              ///< staged transpose: leading dimension of a staged tile
  bool streaming_stores = false;  ///< CPU: outputs written with non-temporal stores
  bool flat_index = true;         ///< elementwise: every operand contiguous (one flat loop)
  /// elementwise under the GPU mapping: stencil operands staged in scratch, a team per tile
  std::vector<stencil_stage> stencil_stages;
  int rows_per_team = 1;   ///< tile_reduce: output rows advancing together in one team
  int line_bytes = 0;      ///< tile_reduce on CPUs: bytes of each input row per line
  int prefetch_lines = 0;  ///< tile_reduce on CPUs: loads prefetch this many lines ahead into L2
  /// elementwise row loops on CPUs whose operands come from memory: each output line
  /// prefetches these buffers `row_prefetch_bytes` ahead (into every cache level), and the
  /// loop runs at the target's memory_rows_vector_bytes
  std::vector<row_prefetch> row_prefetches;
  int row_prefetch_bytes = 0;
  /// staged transpose on CPUs: consecutive tiles down a column of the output that one team
  /// walks (one store fence per team when streaming).
  std::int64_t tiles_per_team = 1;
  /// staged transpose on CPUs: operand rows (output columns) of a tile walked together, block
  /// column by block column, before the next group (0: the whole tile width).
  int staged_row_group = 0;
  /// staged transpose on CPUs: a plain transpose (one operand of the stored element type, no
  /// other step) whose output has fewer rows or columns than a block, so no full block: the
  /// kernel copies the operand's lines into the output directly, a few at a time, instead of
  /// walking blocks (no scratch, plain stores).
  bool staged_narrow_copy = false;
  /// staged transpose on CPUs with streaming stores: each full output tile is assembled in the
  /// team-scratch buffer of this name (the tile's rows x cols, the stored element type), then
  /// written row by row in whole runs of non-temporal stores (absent: block by block).
  static constexpr const char* staged_output_tile = "out_tile";
  gemm_params gemm;            ///< matmul, packed CPU form
  gpu_matmul_params gpu_mm;    ///< matmul, register-blocked GPU form
  bool packed_matmul = false;  ///< matmul lowers to the packed CPU gemm
  /// packed matmul whose output has another element type than the matmul: it accumulates in a
  /// workspace of the matmul's type, and one more launch stores the epilogue, converted
  bool matmul_workspace = false;
  /// packed matmul computing `C + matmul(A, B)` into C: it adds into C's prior contents
  /// (BLAS beta = 1) and the epilogue is the identity; no temporary
  bool matmul_accumulates_output = false;
  std::int64_t k_step = 0;        ///< generic tiled matmul: K elements loaded per step (0: tile[0])
  std::int64_t reduce_chunk = 0;  ///< reduction: elements one iteration folds
  /// reproducible reduction: chunk c of league_size chunks folds elements c, c + league_size,
  /// ... (in that order) instead of a contiguous run
  bool reduce_interleaved = false;
  /// reduction on a CPU: the input is larger than the caches (it comes from memory); folds
  /// then read each block in address order, which the hardware prefetchers follow
  bool reduce_from_memory = false;
  /// reduction on a CPU: each cache line of the input is prefetched this many bytes ahead
  /// into L2 (0: not; only where reduce_from_memory)
  int reduce_prefetch_bytes = 0;
  /// reduction from memory in one run (one thread): the run is cut into this many parts of
  /// whole blocks (the last takes the rest), each folded as a run of its own, the parts read
  /// block by block in turn (interleaved streams) and their results merged in order (0 or 1:
  /// one part)
  int reduce_streams = 0;
  /// the kernel runs on the calling thread, without a Kokkos launch (a small kernel on a host
  /// backend): a reduction of few chunks (target::reduction.inline_fold_chunks) or on one
  /// thread folds them in order, a small scan (target::scan.inline_elements) scans in order;
  /// element-wise, tile_reduce and staged-transpose kernels (target::elementwise_inline_elements)
  /// run the league's iterations in order (a staged transpose's teams in one scratch buffer),
  /// a small direct matmul (gemm_params::inline_run) its row blocks
  bool inline_run = false;
  /// scan, line form: adjacent lines one iteration walks together (0: the segmented form, one
  /// iteration per chunk of `reduce_chunk` elements of a line, carries by Kokkos parallel_scan)
  int scan_line_block = 0;
  /// scan, segmented form: carries by three launches of Tessera's own instead of Kokkos
  /// parallel_scan — each chunk's total, an inclusive scan of the totals along each line
  /// (planned like any scan), each chunk scanned from its carry — which keep the operator's
  /// order on every backend (Kokkos' GPU scans join in an order only commutative joins survive)
  bool scan_carry_passes = false;
  /// scan, segmented form on a host space with several threads: one team of team_size members
  /// walks the chunks in rounds of team_size (each chunk's total, a barrier, each chunk scanned
  /// from its carry, a barrier), chunks sized to stay in a core's L2 between their two reads
  bool scan_rounds = false;
  /// histogram: elements one team counts (reduce_chunk), private bin copies per team (0: every
  /// count an atomic add to the result), and whether results are added without atomics (one
  /// thread runs every team)
  int histogram_copies = 0;
  bool histogram_plain_adds = false;
  /// sort: elements per tile sort (tile kernel), merge passes and the output elements one
  /// merge iteration writes (merge kernel), radix digits of `sort_radix_bits` bits (radix form)
  std::int64_t sort_tile = 0;
  int sort_merge_passes = 0;
  std::int64_t sort_merge_block = 0;
  int sort_radix_bits = 0;
};

inline std::string list_dims(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(v[i]);
  }
  return s;
}

/// "lo..+hi x ..." for the smallest and largest read offsets of a stencil operand per
/// dimension. Shifts are offsets from the element computed; sections have no centre of their
/// own (`from_middle`): their offsets are printed from the middle of the box they span
/// (rounded down), so a star of sections reads as its radius.
inline std::string halo_text(const std::vector<std::int64_t>& lo,
                             const std::vector<std::int64_t>& hi, bool from_middle) {
  std::string s;
  for (std::size_t d = 0; d < lo.size() && d < hi.size(); ++d) {
    const std::int64_t c = from_middle ? (lo[d] + hi[d] - ((lo[d] + hi[d]) % 2 != 0)) / 2 : 0;
    s += (d ? " x " : "") + std::to_string(lo[d] - c) + ".." + (hi[d] - c >= 0 ? "+" : "") +
         std::to_string(hi[d] - c);
  }
  return s;
}

/// Human-readable text of a plan (what explain() prints).
inline std::string to_string(const kernel_plan& k) {
  std::ostringstream os;
  os << "kernel " << k.name << "  [" << k.policy << " on " << k.backend << "]\n";
  if (!k.label.empty()) os << "  label: " << k.label << "\n";
  os << "  league " << k.league_size;
  if (!k.tiles.empty())
    os << " (" << list_dims(k.tiles) << " tiles of " << list_dims(k.tile) << ")";
  os << ", team " << k.team_size << ", vector " << k.vector_length << ", logical threads/tile "
     << k.logical_threads << "\n";
  if (!k.mapping.empty()) os << "  mapping: " << k.mapping << "\n";
  os << "  scratch per team: level 0 " << k.scratch_bytes[0] << " B, level 1 " << k.scratch_bytes[1]
     << " B";
  if (k.scratch_bytes[k.scratch_level] > 0)
    os << " (requested from Kokkos with " << scratch_align_slack << " B for 64-byte alignment)";
  os << "\n";
  if (k.packed_matmul && k.gemm.direct)
    os << "  blocking: direct, no packing (" << k.gemm.m_blocks << " row blocks of mr=" << k.gemm.mr
       << ", micro-tiles of " << k.gemm.mr << "x" << k.gemm.nr << "); "
       << (k.gemm.inline_run ? "no launch (on the calling thread)" : "1 launch") << "\n";
  else if (k.packed_matmul)
    os << "  blocking: mc=" << k.gemm.mc << " kc=" << k.gemm.kc << " nc=" << k.gemm.nc
       << " mr=" << k.gemm.mr << " nr=" << k.gemm.nr
       << (k.gemm.a_prefetch > 0 ? " a_prefetch=" + std::to_string(k.gemm.a_prefetch) : "") << " ("
       << k.gemm.origin << "); " << k.gemm.m_blocks << "x" << k.gemm.splits << " teams per launch, "
       << k.gemm.launches << " launch" << (k.gemm.launches == 1 ? "" : "es") << "\n";
  if (k.gpu_mm.bm)
    os << "  blocking: " << k.gpu_mm.bm << "x" << k.gpu_mm.bn << " outputs per team, k-step "
       << k.gpu_mm.bk << ", " << k.gpu_mm.tm << "x" << k.gpu_mm.tn << " outputs per logical thread"
       << (k.gpu_mm.double_buffered ? ", double-buffered" : "") << "\n";
  os << "  buffers:\n";
  for (const auto& b : k.buffers) {
    os << "    " << b.name << " : " << b.type << " -> " << to_string(b.space);
    if (b.space == memory_space_kind::scratch_level0 ||
        b.space == memory_space_kind::scratch_level1)
      os << " (" << b.bytes << " B at offset " << b.offset << ")";
    else if (b.space == memory_space_kind::private_memory)
      os << " (" << b.bytes << " B per logical thread)";
    if (!b.role.empty()) os << "  [" << b.role << "]";
    os << "\n";
  }
  os << "  phases: " << k.phases << ", barriers: " << k.barriers.size() << "\n";
  for (const auto& b : k.barriers) {
    os << "    barrier after phase " << b.after_phase << " (fence: " << b.fence << ")";
    if (b.in_loop) os << " [per loop iteration]";
    if (!b.hazard.empty()) os << " -- " << b.hazard;
    os << "\n";
  }
  for (const auto& n : k.notes) os << "  note: " << n << "\n";
  return os.str();
}

/// A whole program: the kernels an expression or launch lowers to, in order.
struct program_plan {
  std::vector<kernel_plan> kernels;
};

inline std::string to_string(const program_plan& p) {
  std::string s =
      std::to_string(p.kernels.size()) + (p.kernels.size() == 1 ? " kernel\n" : " kernels\n");
  for (const auto& k : p.kernels) s += to_string(k);
  return s;
}

}  // namespace tessera::codegen
