/// \file target.hpp
/// \brief What the code generator knows about a backend: the core description every pass reads
///        (mapping, scratch and team limits, concurrency) and one options struct per kernel family
///        (transposes, matmul, tile_reduce), filled by the backend that owns the family
///        (backends/host/target.hpp, backends/gpu/target.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera::codegen {

/// Cache blocking of a packed matrix multiply (elements): rows of A per packed block (mc),
/// depth per block (kc), columns of B per packed panel (nc), register tile of the micro-kernel
/// (mr x nr; 0 when not recorded), and how many k steps ahead the micro-kernel prefetches the
/// packed micro-panel of A it streams from L2 into L1 (a_prefetch; 0: none, the hardware
/// prefetchers alone). The CPU gemm (backends/host/gemm.hpp) and its plans share it.
struct gemm_blocking {
  int mc = 0, kc = 0, nc = 0;
  int mr = 0, nr = 0;
  int a_prefetch = 0;
};

/// Register-blocked GPU matmul: a block of bm x bn outputs per team, bk-deep scratch tiles,
/// each logical thread computing a tm x tn micro-tile (bm = 0: the target has none).
struct gpu_matmul_params {
  int bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
  bool double_buffered = false;
};

/// Whether streamed CPU transposes assemble each output tile in team scratch and write its rows
/// as runs of target::transpose_options::stream_run_bytes (passes/phases.hpp).
enum class tile_staging {
  rows_exceed_l2,  ///< where a tile's operand rows do not fit in L2 together (the default)
  always,          ///< every streamed output whose tile is whole blocks and fits L2
  never,           ///< never: every tile written block by block from registers
  /// never staged, and streamed outputs default to tiles one block tall whose rows are
  /// transpose_options::wide_row_bytes long: each output row is written in one run of that
  /// many bytes, block after block, and each operand line is read once
  wide_rows
};

/// Every tile_staging, in declaration order (a name read back: compare with to_string of each).
inline constexpr std::array<tile_staging, 4> tile_stagings{
    tile_staging::rows_exceed_l2, tile_staging::always, tile_staging::never,
    tile_staging::wide_rows};

/// The choice's name, as tessera-tour and tessera-peers print it and tessera-peers' --staging
/// reads it: "rows-exceed-l2", "always", "never" or "wide-rows".
constexpr const char* to_string(tile_staging s) {
  switch (s) {
    case tile_staging::rows_exceed_l2:
      return "rows-exceed-l2";
    case tile_staging::always:
      return "always";
    case tile_staging::never:
      return "never";
    case tile_staging::wide_rows:
      return "wide-rows";
  }
  return "?";
}

/// How CPU elementwise row loops (sections, shifts, generated operands) that move more than
/// target::row_prefetch_min_bytes read and write memory (codegen::plan_row_prefetch).
enum class row_loop_memory {
  /// each input buffer's leading row prefetched target::row_prefetch_bytes ahead, and outputs
  /// of at least target::streaming_store_min_bytes written with streaming stores (the default)
  prefetch_and_stream,
  prefetch,  ///< the same prefetch, every output stored normally
  plain      ///< neither: the plain row loop whatever the size
};

/// Every row_loop_memory, in declaration order.
inline constexpr std::array<row_loop_memory, 3> row_loop_memories{
    row_loop_memory::prefetch_and_stream, row_loop_memory::prefetch, row_loop_memory::plain};

/// The choice's name: "prefetch-and-stream", "prefetch" or "plain".
constexpr const char* to_string(row_loop_memory m) {
  switch (m) {
    case row_loop_memory::prefetch_and_stream:
      return "prefetch-and-stream";
    case row_loop_memory::prefetch:
      return "prefetch";
    case row_loop_memory::plain:
      return "plain";
  }
  return "?";
}

/// Staged transposes (kernel_family::staged_transpose).
struct transpose_options {
  int tile[2] = {32, 32};  ///< default output tile (rows, cols)
  int block = 0;           ///< CPUs: B x B register blocks moved at a time (0: whole tiles)
  int pad = 1;             ///< GPUs: staged rows padded by this many elements (bank conflicts)
  /// CPUs: outputs written with streaming stores are written in runs of at least this many
  /// bytes per output row (0: one block's row at a time): the default tile is that wide and a
  /// quarter of target::l2_bytes large, assembled in team scratch and streamed row by row.
  int stream_run_bytes = 0;
  /// CPUs: where streamed outputs are assembled in scratch (tessera::set_transpose_staging).
  tile_staging staging = tile_staging::rows_exceed_l2;
  /// CPUs: outputs that stay in cache (not streamed) default to tiles of cached_tile_rows rows
  /// of cached_row_bytes bytes each, whole blocks (0: `tile`): long runs of each output row
  /// written in one pass.
  int cached_tile_rows = 0;
  int cached_row_bytes = 0;
  /// CPUs: under tile_staging::wide_rows, the bytes of each row of a streamed output's default
  /// tile (whole blocks; 0: the rule's tiles)
  int wide_row_bytes = 0;
  /// CPUs: outputs whose rows are not whole blocks (never written with streaming stores) take
  /// the streamed outputs' tiles from this footprint on (output and operands together; 0: from
  /// target::streaming_store_min_bytes, as the others): the last-level cache the machine
  /// reports, where a measured memory threshold (tessera::tune_memory_threshold) counts only
  /// outputs that stream.
  std::size_t unaligned_rows_min_bytes = 0;
};

/// Matrix multiplies (kernel_family::matmul).
struct matmul_options {
  bool packed = false;  ///< CPUs: packed panels for float and double, with the blockings below
  gemm_blocking gemm_float, gemm_double;
  std::string gemm_origin = "cache sizes";  ///< where the blockings come from
  gpu_matmul_params blocked;                ///< GPUs: register-blocked floating-point kernel
  int generic_tile = 16;  ///< the generic tiled form's default tile (other element types)
  /// CPUs: direct matmuls (gemm_params::direct) of at most this many multiply-adds (M N K),
  /// and every direct one where the target has one thread, run on the calling thread without
  /// a Kokkos launch (gemm_params::inline_run; 0: never).
  std::int64_t inline_madds = 0;
};

/// tile_reduce / tile_mean (kernel_family::tile_reduce).
struct tile_reduce_options {
  int team = 128;        ///< GPUs: members per output row
  int line_bytes = 0;    ///< CPUs: input columns combined in vector registers per line (0: no SIMD)
  int vector_bytes = 0;  ///< CPUs: bytes of one vector register
  /// CPUs: tiles whose lines never prefetch ahead, by height (bit tile_rows_class(R) set: no
  /// software prefetch for tiles of R rows; tessera::tune_prefetch measures which).
  unsigned no_prefetch_rows = 0;
  /// CPUs: how many times more the lines of tiles are halved than the cache rule halves them,
  /// by height: two bits per class (bits 2c and 2c + 1 for tile_rows_class(R) = c, 0-3), never
  /// below a tile row or one vector (the kernel has lines of every power of two from one
  /// vector to line_bytes); tessera::tune_prefetch measures which.
  unsigned line_halvings = 0;
  /// CPUs: the software prefetch runs at least this many bytes ahead in each input row of a
  /// tile (0: no such floor), beside target::row_prefetch_bytes over all its rows.
  int row_ahead_bytes = 0;
};

/// The height classes of tile_reduce tiles that tile_reduce_options::no_prefetch_rows tells
/// apart: 0 for at most 2 rows, 1 for 3-4, 2 for 5-8, 3 for more.
inline constexpr int tile_rows_classes = 4;
inline constexpr int tile_rows_class(std::int64_t rows) {
  return rows <= 2 ? 0 : rows <= 4 ? 1 : rows <= 8 ? 2 : 3;
}
/// The extra halvings tile_reduce_options::line_halvings gives height class `c` (0-3).
inline constexpr int line_halvings_of(unsigned packed, int c) {
  return int((packed >> (2 * c)) & 3u);
}

/// Whole-array reductions (kernel_family::reduction).
struct reduction_options {
  std::int64_t chunk = 1;               ///< elements one functor call folds
  std::int64_t reproducible_chunk = 1;  ///< the same in reproducible mode
  /// Reductions of at most this many chunks fold on the calling thread, without a Kokkos
  /// launch (0: never; host backends only: the data must be readable on the host).
  std::int64_t inline_fold_chunks = 0;
  /// Reproducible mode takes its chunks interleaved: chunk c of C holds elements c, c + C,
  /// c + 2C, ... (GPUs: adjacent threads read adjacent elements; a thread walking a contiguous
  /// chunk of 1024 read 15 times the data from DRAM on an H200). Still a fixed grid.
  bool interleaved_reproducible = false;
  /// CPUs: folds reading at least memory_min_bytes (data larger than the caches: it comes
  /// from memory) read their blocks in address order (kernel_plan::reduce_from_memory); those
  /// reading at least prefetch_min_bytes too prefetch each cache line of their input
  /// prefetch_bytes ahead into L2 (0: never).
  std::size_t memory_min_bytes = 0;
  std::size_t prefetch_min_bytes = 0;
  int prefetch_bytes = 0;
  /// CPUs: a fold from memory in one run (one thread) is cut into this many parts, read as
  /// interleaved streams (kernel_plan::reduce_streams; 0 or 1: one part).
  int memory_streams = 0;
};

/// Prefix scans along a dimension (kernel_family::scan).
struct scan_options {
  /// Elements of one line one iteration scans in the segmented form (CPUs: long enough to
  /// amortise an iteration, short enough to balance one long line over the threads; GPUs: a
  /// few dozen, so one long line still fills the device).
  std::int64_t chunk = 1;
  /// The segmented form carries through Tessera's own ordered passes (chunk totals, their
  /// scan, each chunk from its carry) instead of Kokkos parallel_scan: GPUs, whose Kokkos
  /// scans join each thread's strided elements (fine for sums, wrong for a segmented carry or
  /// any non-commutative operator).
  bool carry_passes = false;
  /// CPUs with several threads: the segmented form runs in rounds in one team of this many
  /// members (see kernel_plan::scan_rounds; below 2: not this form), in chunks of about
  /// round_chunk_bytes of the element type (a quarter of a core's L2: a chunk is read again
  /// from there right after its total).
  int round_team = 0;
  std::size_t round_chunk_bytes = 0;
  /// Adjacent lines (consecutive elements of the innermost dimension) one iteration of the
  /// line form walks together: a vector register's worth on CPUs, 1 on GPUs (adjacent threads
  /// take adjacent lines, so their loads coalesce).
  int line_block_bytes = 0;
  /// Scans of at most this many elements run on the calling thread, without a launch (host
  /// backends only).
  std::int64_t inline_elements = 0;
};

/// Histograms (kernel_family::histogram).
struct histogram_options {
  std::int64_t chunk = 1;  ///< elements one team (tile) counts into its private bins
  /// Private bins per team: counted in team scratch while bins x copies x 4 bytes fit this
  /// (0: never; then every count is an atomic add to the result).
  std::size_t private_bins_bytes = 0;
  /// Copies of the private bins per team on CPUs: consecutive elements go to different copies,
  /// so runs of equal values do not wait on one counter's store (1 on GPUs).
  int copies = 1;
  std::size_t copies_bytes = 0;  ///< the copies together fit this (CPUs: half the L1 cache)
};

/// Sorts (kernel_family::sort): tile sorts, then merge passes doubling the sorted runs.
struct sort_options {
  /// Elements one tile sort orders (GPUs: one team's tile in scratch; 0 on CPUs: one tile per
  /// thread of the execution space, each sorted by one member).
  std::int64_t tile = 0;
  /// CPUs: tiles hold at least this many elements (fewer merge passes on small sorts).
  std::int64_t min_tile = 1;
  /// Output elements one merge iteration writes: a merge-path block merged in order (CPUs),
  /// or 1 (GPUs: each element finds its place in the other run by binary search).
  std::int64_t merge_block = 1;
  /// CPUs: arithmetic keys ordered by tessera::less / greater are sorted by an LSD radix sort
  /// over their bytes when they number at least this many (0: never).
  std::int64_t radix_min_elements = 0;
};

/// The target description the passes read (made by backends::backend<Space>::make_target()).
struct target {
  std::string backend = "Serial";
  bool thread_per_logical = false;  ///< GPU mapping: one team member per logical thread
  std::size_t scratch_max[2] = {32768, 20u << 20};  ///< bytes per team, per scratch level
  int max_team_size = 1;                            ///< largest team the default plans use
  int concurrency = 1;
  /// Tier 0: true when tile_local storage is private to each logical thread (GPU registers);
  /// false when one member runs the tile and keeps every logical thread's copy in team scratch
  /// (CPU; the copies also count against the scratch levels).
  bool tile_local_per_thread = false;
  /// Tier 0: tile_local bytes per logical thread, the same on every backend so that a kernel
  /// one backend accepts runs on all of them: what a GPU thread holds in registers before
  /// spilling makes tile_local slower than tile_static (255 32-bit registers on NVIDIA, 512 on
  /// AMD CDNA, i.e. 1-2 KiB), with room for spills of loop state.
  std::size_t tile_local_max = 4 * 1024;
  /// CPUs: the running machine's L1 data and L2 caches per core (bytes; 0: unknown, or a GPU
  /// mapping). Staged transposes walk a tile's operand rows in groups that fit L2 and size
  /// their streamed output tiles from it; tile_reduce sizes its lines to both; scans and
  /// histograms size their chunks and private bins to them (backends/host/backend.hpp).
  std::size_t l1d_bytes = 0;
  std::size_t l2_bytes = 0;
  std::size_t streaming_store_min_bytes = 0;  ///< CPU outputs at least this big stream (0: never)
  /// Element-wise and staged-transpose kernels writing at most this many elements, and
  /// tile_reduce kernels reading at most twice as many, run on the calling thread, without a
  /// Kokkos launch (kernel_plan::inline_run; 0: never; host backends only).
  std::int64_t elementwise_inline_elements = 0;
  /// Copies (an aliased assignment's copy back): elements of a row that one iteration moves
  /// (tessera::impl::copy_runs; 0: one element per iteration, GPUs).
  std::int64_t copy_run_elements = 0;
  /// CPUs: elementwise row loops (sections, shifts, generated operands) moving at least
  /// row_prefetch_min_bytes (inputs and output) prefetch each input buffer's leading row
  /// row_prefetch_bytes ahead (0: never), compiled for vectors of memory_rows_vector_bytes
  /// (0: the build's widest); tile_reduce's lines prefetch at least row_prefetch_bytes over
  /// all the rows of a tile (codegen::tile_reduce_line)
  std::size_t row_prefetch_min_bytes = 0;
  int row_prefetch_bytes = 0;
  /// CPUs: how those row loops read and write memory: prefetching and streaming their
  /// output (the default), prefetching only, or as plain loops whatever their size; for
  /// loops that read each operand row once (row_loops) and for stencils, where some operand is
  /// read over several rows, so that each of its rows is read again from cache by the next
  /// output rows (stencil_row_loops). tile_reduce's lines keep row_prefetch_bytes every way;
  /// tessera::tune_prefetch measures both.
  row_loop_memory row_loops = row_loop_memory::prefetch_and_stream;
  row_loop_memory stencil_row_loops = row_loop_memory::prefetch_and_stream;
  int memory_rows_vector_bytes = 0;
  /// GPU emulation: the scratch level 0 bytes per team a real GPU offers (0: not emulating).
  /// Plans needing more level 0 than the host allows but no more than this note that a GPU
  /// would place them in level 0.
  std::size_t emulated_gpu_scratch_max0 = 0;
  transpose_options transpose;
  matmul_options matmul;
  tile_reduce_options tile_reduce;
  reduction_options reduction;
  scan_options scan;
  histogram_options histogram;
  sort_options sort;
};

}  // namespace tessera::codegen
