/// \file passes/phases.hpp
/// \brief Pass 2: the phase program (scratch buffers and who touches them, phase by phase) of
///        every fused kernel, per family and target mapping. Scratch placement and barrier
///        insertion read it; the backends' kernels run exactly these phases.
#pragma once

#include <tessera/codegen/expr_graph.hpp>
#include <tessera/codegen/passes/barriers.hpp>
#include <tessera/codegen/passes/fusion.hpp>
#include <tessera/codegen/passes/gemm_blocking.hpp>

#include <algorithm>

namespace tessera::codegen {

/// A kernel's scratch buffers (before placement) and phases.
struct kernel_body {
  struct scratch_buffer {
    std::string name, type;
    std::size_t bytes = 0;
    std::size_t align = 1;
    std::string role;
  };
  std::vector<scratch_buffer> scratch;
  std::vector<buffer_plan> private_buffers;
  std::vector<buffer_plan> global_buffers;  ///< buffers the kernel allocates in global memory
  phase_program program;
  std::vector<std::string> notes;
};

inline std::string tile_type(const graph_node& n, int r, int c) {
  return n.dtype + "[" + std::to_string(r) + "][" + std::to_string(c) + "]";
}

/// Bytes of one element kernel `k` stores: the destination's, or its root's for a temporary.
inline std::size_t stored_elem_bytes(const expr_graph& g, const kernel_spec& k) {
  return k.writes_temporary ? g.nodes[k.root].elem_bytes : g.out_elem_bytes;
}

/// True when a staged transpose's output is written with streaming stores: a CPU target
/// (one member per team) where the output and the operands it transposes take at least
/// target::streaming_store_min_bytes together. The operands count: a transpose reads as many
/// elements as it writes, and once both pass the last-level cache the output's first lines are
/// gone by its end. On an Intel Xeon guest reporting 480 MiB of L3, 8192^2 floats (256 MiB
/// out) took the cached tiles, 64 x 256, at 3.6-4.0 GB/s read + written; streamed in 128 x 32
/// tiles, 19.9-21.3 GB/s (best of 7). Outputs whose rows are not whole blocks count against
/// transpose_options::unaligned_rows_min_bytes where it is set: a threshold measured with
/// streaming stores says nothing of them (999 x 666 floats on that guest, with 4 MiB measured:
/// 221 us in the cached tiles, 312 in the streamed ones).
inline bool staged_output_streams(const expr_graph& g, const kernel_spec& k, const target& t) {
  if (t.thread_per_logical || t.streaming_store_min_bytes == 0) return false;
  const graph_node& root = g.nodes[k.root];
  std::size_t n = 1;
  for (auto e : root.extent) n *= std::size_t(e);
  std::size_t bytes = n * stored_elem_bytes(g, k);
  for (int s : k.staged) bytes += n * g.nodes[s].elem_bytes;
  const int b = t.transpose.block;
  const bool whole_blocks = b > 0 && root.extent.size() == 2 && root.extent[1] % b == 0;
  return bytes >= (whole_blocks || t.transpose.unaligned_rows_min_bytes == 0
                       ? t.streaming_store_min_bytes
                       : t.transpose.unaligned_rows_min_bytes);
}

struct tile2 {
  int rows, cols;
};

/// Bytes between consecutive operand rows that a staged transpose's tile reads: the output's
/// rows x the element size (a contiguous operand).
inline std::int64_t staged_operand_row_bytes(const expr_graph& g, const kernel_spec& k) {
  const graph_node& root = g.nodes[k.root];
  return root.extent[0] * std::int64_t(root.elem_bytes);
}

/// True when the `cols` operand rows a CPU tile of that width reads do not fit in L2 together
/// (256 KiB where L2 is unknown), so that the tile walks them in groups (the mapping pass's
/// staged_row_group) and writes each output row in runs of one group's width at a time (one
/// block, 64 bytes of floats, where no more than 16 rows fit). Streamed outputs are then assembled
/// in scratch (staged_output_tile); where the rows fit, the tile writes runs of its whole width
/// from registers and staging costs more than it saves. Measured (8192^2 floats, streaming stores,
/// alternated runs): a Zen 3 core (512 KiB L2: 32 rows of 32 KiB do not fit) 7.8-8.5 GB/s written
/// block by block, 12.2-12.9 staged; a Zen 5 core (1 MiB L2: they fit) 24.6-27.4 block by
/// block, 19.4 staged in 1024 x 64 tiles, 16-18 in every other staged tile tried (32 or 64 columns,
/// 64-2048 rows). Not settled: on that Zen 5, rows that exceed its L2 too (8192^2 doubles, 16384^2
/// floats) read 25-28.5 and 23.7-25.3 GB/s block by block against 21.5-22 and 19.4-22.4 staged
/// (three alternated runs); no cache size tells that core from the Zen 3 (whose memory was the
/// slower, 11-16 GB/s), so the rule keeps the measured Zen 3 gain and the Zen 5 case that the tour
/// times, and tessera::tune_transpose times the choice on the running machine.
inline bool staged_rows_exceed_l2(const expr_graph& g, const kernel_spec& k, const target& t,
                                  int cols) {
  const std::int64_t l2 = t.l2_bytes > 0 ? std::int64_t(t.l2_bytes) : std::int64_t(256) << 10;
  return std::int64_t(cols) * staged_operand_row_bytes(g, k) > l2;
}

/// True when streamed tiles `cols` wide are assembled in scratch under the target's
/// transpose.staging: always, never (wide_rows: never), or where staged_rows_exceed_l2 (the
/// default).
inline bool stages_output_tiles(const expr_graph& g, const kernel_spec& k, const target& t,
                                int cols) {
  switch (t.transpose.staging) {
    case tile_staging::always:
      return true;
    case tile_staging::never:
    case tile_staging::wide_rows:
      return false;
    case tile_staging::rows_exceed_l2:
      break;
  }
  return staged_rows_exceed_l2(g, k, t, cols);
}

/// A CPU staged transpose's default tile side `side` (whole blocks of b) for an output side of
/// `extent`, made at most side / 2 smaller where that leaves no last tile narrower than a block:
/// the first of side, side - b, ... whose last tile is whole or at least b wide, else side. A
/// last tile narrower than a block has no full block of its own, so every block of it is written
/// element by element; one at least a block wide writes its edge blocks whole (the full block
/// ending at the edge, within the tile). Measured on a Zen 4 core (x86-64-v3, floats in L2, one
/// call, best of 1,000): a 259 x 257 transpose (tiles of 64 x 256: last tiles of 1 row and 3
/// columns) spent 19 % of its time in those tiles; fitted (48 x 240) it took 10.4 us, not 10.9.
/// \param extent output side (elements)  \param side default tile side, a multiple of b
/// \param b the block side (elements; 0: no blocks, side returned as is)
inline int edge_fitted_tile(std::int64_t extent, int side, int b) {
  if (b <= 0 || extent <= side) return side;
  for (int s = side; s >= b && s >= side / 2; s -= b)
    if (extent % s == 0 || extent % s >= b) return s;
  return side;
}

/// Output tile (rows x cols) of a staged-transpose kernel: the root's .tile<>(), else the first
/// staged transpose's, else the target's default. Each staged operand tile is cols x rows of
/// the operand, read row by row (rows contiguous elements at a time). Streamed outputs on CPUs
/// (target.transpose.stream_run_bytes) that the target stages (stages_output_tiles: by default
/// where the default tile's operand rows exceed L2) default to tiles whose rows are one such run
/// (whole blocks), as many rows as fit a quarter of L2 (128 KiB where L2 is unknown): each tile is
/// assembled in scratch and written row by row (staged_output_tile). Under
/// tile_staging::wide_rows streamed outputs default to tiles of one block row whose rows are
/// target.transpose.wide_row_bytes long (whole blocks), never staged. Outputs that stay in cache
/// default on CPUs to target.transpose.cached_tile_rows rows of cached_row_bytes (whole blocks),
/// each side fitted to the output's (edge_fitted_tile).
inline tile2 staged_tile(const expr_graph& g, const kernel_spec& k, const target& t) {
  auto from = [](const graph_node& n) {
    return tile2{n.tile[0], n.tile[1] > 0 ? n.tile[1] : n.tile[0]};
  };
  if (g.nodes[k.root].tile[0] > 0) return from(g.nodes[k.root]);
  for (int n : k.staged)
    if (g.nodes[n].tile[0] > 0) return from(g.nodes[n]);
  const int b = t.transpose.block;
  if (b > 0 && t.transpose.staging == tile_staging::wide_rows && t.transpose.wide_row_bytes > 0 &&
      staged_output_streams(g, k, t)) {
    const std::int64_t e = std::int64_t(stored_elem_bytes(g, k));
    return {b, int(std::max<std::int64_t>(b, t.transpose.wide_row_bytes / e / b * b))};
  }
  if (b > 0 && t.transpose.stream_run_bytes > 0 && staged_output_streams(g, k, t) &&
      stages_output_tiles(g, k, t, t.transpose.tile[1])) {
    const std::int64_t e = std::int64_t(stored_elem_bytes(g, k));
    const std::int64_t run = (t.transpose.stream_run_bytes + e - 1) / e;
    const int cols = int(std::max<std::int64_t>(b, (run + b - 1) / b * b));
    const std::int64_t bytes = t.l2_bytes > 0 ? std::int64_t(t.l2_bytes / 4) : 128 << 10;
    const int rows = int(std::max<std::int64_t>(b, bytes / (cols * e) / b * b));
    return {rows, cols};
  }
  if (b > 0 && t.transpose.cached_tile_rows > 0 && t.transpose.cached_row_bytes > 0 &&
      !t.thread_per_logical && !staged_output_streams(g, k, t)) {
    const std::int64_t e = std::int64_t(stored_elem_bytes(g, k));
    const std::int64_t run = (t.transpose.cached_row_bytes + e - 1) / e;
    const int cols = int(std::max<std::int64_t>(b, (run + b - 1) / b * b));
    const int rows = std::max(b, t.transpose.cached_tile_rows / b * b);
    const graph_node& root = g.nodes[k.root];
    tile2 ts{edge_fitted_tile(root.extent[0], rows, b), edge_fitted_tile(root.extent[1], cols, b)};
    // An output side shorter than a block (a vector, a few rows or columns): the tiles along
    // the other side hold as many elements as a default tile, whole blocks long, so the short
    // side does not multiply the tiles (5000 x 1: 79 tiles of 64 x 256, one of 16384 x 256).
    const std::int64_t elems = std::int64_t(rows) * cols, cap = std::int64_t(1) << 30;
    auto longer = [&](std::int64_t other) {
      return int(std::min(cap, std::max<std::int64_t>(b, elems / other / b * b)));
    };
    if (root.extent[1] > 0 && root.extent[1] < b)
      ts.rows = std::max(ts.rows, longer(root.extent[1]));
    if (root.extent[0] > 0 && root.extent[0] < b)
      ts.cols = std::max(ts.cols, longer(root.extent[0]));
    return ts;
  }
  return {t.transpose.tile[0], t.transpose.tile[1]};
}

/// True when a staged transpose assembles each full output tile in team scratch and streams it
/// out row by row (kernel_plan::staged_output_tile): a CPU target with B x B blocks and
/// stream runs, a streamed output, a tile the target stages (stages_output_tiles), and a tile
/// of whole blocks that fits L2 (256 KiB where L2 is unknown).
inline bool staged_output_tile(const expr_graph& g, const kernel_spec& k, const target& t,
                               const tile2& ts) {
  const int b = t.transpose.block;
  if (b <= 0 || t.transpose.stream_run_bytes <= 0 || !staged_output_streams(g, k, t) ||
      ts.rows % b != 0 || ts.cols % b != 0 || !stages_output_tiles(g, k, t, ts.cols))
    return false;
  const std::size_t bytes = std::size_t(ts.rows) * std::size_t(ts.cols) * stored_elem_bytes(g, k);
  return bytes <= (t.l2_bytes > 0 ? t.l2_bytes : std::size_t(256) << 10);
}

/// True when a matmul node lowers to the register-blocked GPU kernel (floating point, no
/// .tile<> override, its team of (bm/tm) x (bn/tn) members within the target's teams).
inline bool uses_blocked_gpu_matmul(const target& t, const graph_node& mm) {
  const gpu_matmul_params& b = t.matmul.blocked;
  return t.thread_per_logical && b.bm > 0 && mm.tile[0] == 0 && mm.floating &&
         (b.bm / b.tm) * (b.bn / b.tn) <= t.max_team_size;
}
/// Square tiles for which the generic tiled matmul runs as a compiled Tier 2 tile program
/// (kernels/operands.hpp instantiates exactly these); every other schedule runs its team-loop
/// form, whose tiles are run-time values.
inline constexpr int program_matmul_tiles[] = {8, 16, 32};

/// The generic tiled matmul's output tile tm x tn and K step tk: the .tile<TM[, TN[, TK]]>()
/// schedule (TN defaults to TM; TK to the larger side, at most 32), else the target's square
/// default; `program` when it runs as the compiled tile program (a square tile of
/// program_matmul_tiles with TK = the tile, and under the GPU mapping a member per output
/// within the target's team limit).
struct matmul_tiles {
  int tm = 0, tn = 0, tk = 0;
  bool program = false;
};
inline matmul_tiles generic_matmul_tiles(const target& t, const graph_node& mm) {
  matmul_tiles r;
  r.tm = mm.tile[0] > 0 ? mm.tile[0] : t.matmul.generic_tile;
  r.tn = mm.tile[1] > 0 ? mm.tile[1] : r.tm;
  const int side = r.tm > r.tn ? r.tm : r.tn;
  r.tk = mm.tile[2] > 0 ? mm.tile[2] : side < 32 ? side : 32;
  for (int ts : program_matmul_tiles) r.program |= r.tm == ts && r.tn == ts && r.tk == ts;
  // Under the GPU mapping the program needs a member per output; a tile larger than the
  // backend's teams runs in the team-loop form (members stride over the outputs).
  if (t.thread_per_logical && r.tm * r.tn > t.max_team_size) r.program = false;
  return r;
}

/// The line of the CPU tile_reduce (R x C tiles): bytes of each input row combined in vector
/// registers per step, and how many lines ahead each load prefetches the same row into L2. The
/// target's line (16 vectors where 32 registers hold the accumulators), halved (at most twice,
/// never below a tile row) while the R rows of one line would span more than a third of L1d:
/// rows a power-of-two stride apart share L1 sets, and the lines of many rows then evict each
/// other before the hardware prefetcher's next ones arrive. The software prefetch goes to L2,
/// not L1, for the same reason (in L1 it evicts the lines being combined), at least two lines
/// ahead and, over the R rows, at least the bytes one core's memory bandwidth brings in during
/// one memory latency (target::row_prefetch_bytes, 4 KiB); only for inputs larger than the
/// last-level cache, while those lines fit in an eighth of L2, and not for tiles whose height
/// class the target turns it off for
/// (tile_reduce_options::no_prefetch_rows: what tessera::tune_prefetch measured). Outside
/// crowded L2, at least tile_reduce_options::row_ahead_bytes (2 KiB on CPUs) ahead in each
/// row too: the 4 KiB over all rows left 16 rows of 512-byte lines 1 KiB ahead each, where
/// the 2x2 and 4x4 tiles (and 16x16 on a 48 KiB L1d) already ran 2 KiB ahead. The line is
/// then halved as many more times as tile_reduce_options::line_halvings gives the tiles'
/// height class (while it holds a tile row and one vector; the kernel has every such line):
/// on a 2-core AMD EPYC Zen 4 (AVX-512 executed as two 256-bit halves, 32 KiB L1d; 8192^2
/// floats, Tessera and Eigen interleaved run by run, best of 30, four runs) 2x2 tiles read
/// 1.06-1.15x Eigen with 512-byte lines against 0.86-1.03x with 1 KiB ones, 16x16 0.91-1.03x
/// with 256-byte lines against 0.86-0.94x with 512-byte ones, while 4x4 and 8x8 came out
/// even; 16x16 then read 0.90-0.98x with 512 / 256-byte lines, 0.99-1.11x with 256 / 128 and
/// 1.04-1.13x with 128 / 64 (three runs each); a Zen 5 core's 2x2 read 1.27-1.33x with 1 KiB
/// lines. No cache size tells those apart either: tessera::tune_prefetch times the lines.
/// Measured on a 2-core AMD EPYC Zen 4 (32 KiB L1d, 1 MiB L2, 8192^2 floats, one core, a loop
/// nest like line_rows'): tile_mean 16x16 17 -> 21.6 GB/s with 512-byte instead of 1 KiB
/// lines (256 B alike); against no prefetch, two lines ahead into L2: 16x16 22.0 -> 24.3-26.8,
/// 4x4 23.3 -> 28.5, 2x2 18.8 -> 22.2 GB/s, while a prefetch into L1 costs 2x2 and 16x16 up to
/// 15 %. On a Zen 5 core (48 KiB L1d), 16 rows of 1 KiB lines (a third of L1d) are faster than
/// 512-byte ones: 16x16 1.02-1.04x Eigen instead of 0.98-1.00x (tessera-peers, 512-bit
/// vectors, three alternated runs). Its x86-64-v3 build (256-byte lines): two lines ahead left
/// 4x4 at 0.90-0.95x Eigen (1 KiB in flight per step of its 4 rows), four 1.02-1.04x; 2x2
/// 1.03-1.11x at two lines, 1.34-1.35x at eight (4 KiB); 16x16 1.01-1.06x at two to eight.
/// On a Zen 3 core (512 KiB L2; AVX2, 256-byte lines), where 16 rows 32 KiB apart fill L2's
/// sets for them: tile_mean 16x16 of 8192^2 floats 0.57-0.68x Eigen with 256-byte lines,
/// 0.95-1.03x with 64-byte lines (three rounds, Tessera's kernel, same process as Eigen).
/// The prefetch is not always a gain: on that Zen 5 core's native build (1 KiB lines) tile_mean
/// 4x4 read 0.95-0.97x Eigen with it (one, two or four lines ahead alike) and 1.12-1.16x
/// without, while 2x2 read 1.27-1.33x with it and 0.92-0.96x without (16x16: 1.11-1.13 /
/// 1.13-1.20); the Zen 4 core above gained at every height. No cache size tells those apart:
/// tessera::tune_prefetch times both and turns it off per height class where that is faster.
struct reduce_line {
  int bytes = 0;
  int prefetch_lines = 0;
};
inline reduce_line tile_reduce_line(const target& t, const graph_node& tr) {
  reduce_line l;
  l.bytes = t.tile_reduce.line_bytes;
  if (l.bytes <= 0) return l;
  const std::size_t rows = std::size_t(tr.reduce_tile[0]);
  const int row_bytes = tr.reduce_tile[1] * int(tr.elem_bytes);
  // The R input rows lie one input row apart (the output's columns x C elements for a
  // contiguous operand): where R of those strides span more than half of L2, rows that share
  // cache sets leave no room for the lines prefetched ahead, and the line is as narrow as the
  // kernel allows (one cache line where the target's line is at most four).
  const std::size_t stride =
      tr.extent.size() == 2 ? std::size_t(tr.extent[1]) * std::size_t(row_bytes) : 0;
  const bool crowded = t.l2_bytes > 0 && rows * stride > t.l2_bytes / 2;
  auto halvable = [&] {
    return l.bytes / 2 >= row_bytes && l.bytes / 2 >= t.tile_reduce.vector_bytes;
  };
  // The rule: at most a quarter of the target's line.
  for (int halved = 0; halved < 2; ++halved)
    if (((crowded && l.bytes / 2 >= 64) ||
         (t.l1d_bytes > 0 && rows * std::size_t(l.bytes) > t.l1d_bytes / 3)) &&
        halvable())
      l.bytes /= 2;
    else
      break;
  const int rows_class = tile_rows_class(tr.reduce_tile[0]);
  for (int more = line_halvings_of(t.tile_reduce.line_halvings, rows_class); more > 0 && halvable();
       --more)
    l.bytes /= 2;
  const std::size_t step = rows * std::size_t(l.bytes);
  int ahead = 2;
  if (t.row_prefetch_bytes > 0)
    ahead = std::max(ahead, int((std::size_t(t.row_prefetch_bytes) + step - 1) / step));
  if (t.tile_reduce.row_ahead_bytes > 0 && !crowded)
    ahead = std::max(ahead, (t.tile_reduce.row_ahead_bytes + l.bytes - 1) / l.bytes);
  const bool tuned_off = (t.tile_reduce.no_prefetch_rows >> rows_class) & 1u;
  // Only inputs larger than the last-level cache (target::row_prefetch_min_bytes, as the row
  // loops and the folds from memory): from L2 or L3 the hardware prefetchers keep up, and the
  // software prefetches are loads and cache traffic of their own. tile_mean of n^2 floats on a
  // Zen 4 core (32 MiB L3), 2x2 / 4x4 / 16x16, per call, with -> without: n = 256 4.44 / 3.67 /
  // 2.89 -> 3.70 / 2.99 / 2.48 us (Eigen 2.84 / 3.25 / 2.25), n = 1024 85 / 64 / 58 -> 70 / 57
  // / 53 us; n = 4096 (64 MiB) 5.9 / 2.42 / 2.60 ms with it, 7.1 / 2.45 / 2.82 without.
  // The input: the output's rows x R rows of `stride` bytes.
  const bool from_memory = tr.extent.size() != 2 || t.row_prefetch_min_bytes == 0 ||
                           std::size_t(tr.extent[0]) * rows * stride >= t.row_prefetch_min_bytes;
  if (from_memory && !tuned_off && std::size_t(ahead + 1) * step <= t.l2_bytes / 8)
    l.prefetch_lines = ahead;
  return l;
}

inline kernel_body describe_kernel(const expr_graph& g, const kernel_spec& k, const target& t) {
  kernel_body b;
  auto scratch = [&](std::string name, std::string type, std::size_t bytes, std::string role) {
    b.scratch.push_back({std::move(name), std::move(type), bytes, 64, std::move(role)});
  };
  switch (k.family) {
    case kernel_family::tile_kernel:
    case kernel_family::copy:
    case kernel_family::reduction:
    case kernel_family::scan:
    case kernel_family::histogram:
    case kernel_family::sort:
      break;
    case kernel_family::elementwise:
      b.program.prologue.push_back({"evaluate and store", {}});
      b.notes.push_back(
          "fused elementwise chain: one load per input read (a stencil operand's reads at "
          "several offsets each count), one store per element, no temporaries");
      break;
    case kernel_family::staged_transpose: {
      const tile2 ts = staged_tile(g, k, t);
      phase_desc stage{"stage transposed tiles", {}}, store{"evaluate and store", {}};
      // GPUs stage the whole tile (cols x rows of the operand, rows padded against bank
      // conflicts); host backends one B x B block at a time, stored in output order.
      const int sr = t.transpose.block > 0 ? t.transpose.block : ts.cols;
      const int sc = t.transpose.block > 0 ? t.transpose.block : ts.rows + t.transpose.pad;
      int s = 0;
      for (int n : k.staged) {
        const std::string name = "staged_T" + std::to_string(s++);
        scratch(name, tile_type(g.nodes[n], sr, sc), std::size_t(sr) * sc * g.nodes[n].elem_bytes,
                "staging of transpose(" + g.nodes[g.nodes[n].children[0]].label + ")");
        stage.accesses.push_back({name, true, false});
        store.accesses.push_back({name, false, false});
      }
      if (staged_output_tile(g, k, t, ts)) {
        scratch(kernel_plan::staged_output_tile,
                stored_dtype(g, k.root, k.writes_temporary) + "[" + std::to_string(ts.rows) + "][" +
                    std::to_string(ts.cols) + "]",
                std::size_t(ts.rows) * std::size_t(ts.cols) * stored_elem_bytes(g, k),
                "output tile: assembled block by block, then streamed to memory row by row");
        store.accesses.push_back({kernel_plan::staged_output_tile, true, false});
      }
      b.program.prologue.push_back(stage);
      b.program.epilogue.push_back(store);
      if (t.transpose.block > 0)
        b.notes.push_back("transpose staged through scratch in " +
                          std::to_string(t.transpose.block) + "x" +
                          std::to_string(t.transpose.block) +
                          " blocks transposed in vector registers; output rows stored as whole "
                          "cache lines");
      else
        b.notes.push_back("transpose staged through scratch: coalesced reads and writes");
      break;
    }
    case kernel_family::matmul: {
      const graph_node& mm = g.nodes[k.core];
      if (uses_packed_matmul(t, mm)) {
        // Sized as launched: mc x kc of A per team, kc x nc of B shared (packed_gemm_params).
        const gemm_params gp = packed_gemm_params(g, mm, t);
        if (gp.direct) {
          // Small: no packed buffers; the micro-kernels read A and B in place.
          b.program.loop.push_back({"register-blocked micro-kernels on A and B in place", {}});
        } else {
          scratch(
              "a_pack",
              mm.dtype + "[mc][kc] (" + std::to_string(gp.mc) + "x" + std::to_string(gp.kc) + ")",
              std::size_t(gp.mc) * gp.kc * mm.elem_bytes, "packed A block");
          b.global_buffers.push_back(
              {"b_pack",
               mm.dtype + "[kc][nc] (" + std::to_string(gp.kc) + "x" + std::to_string(gp.nc) + ")",
               memory_space_kind::global, std::size_t(gp.kc) * gp.nc * mm.elem_bytes, 0,
               "packed B panel, shared by all teams"});
          b.program.loop.push_back({"pack the A block", {{"a_pack", true, false}}});
          b.program.loop.push_back({"register-blocked micro-kernels", {{"a_pack", false, false}}});
        }
        const std::string& stored = stored_dtype(g, k.root, k.writes_temporary);
        if (stored != mm.dtype) {
          // The micro-kernels accumulate in the matmul's type; the output has another, so they
          // accumulate in a workspace and the epilogue stores each element once, converted.
          std::int64_t elems = 1;
          for (auto e : mm.extent) elems *= e;
          b.global_buffers.push_back(
              {"c_work",
               mm.dtype + " (" + std::to_string(mm.extent[0]) + "x" + std::to_string(mm.extent[1]) +
                   ")",
               memory_space_kind::global, std::size_t(elems) * mm.elem_bytes, 0,
               "accumulator: the output is " + stored + ", the matmul " + mm.dtype});
          b.program.epilogue.push_back(
              {"epilogue on the workspace, stored as " + stored + " (one RangePolicy launch)", {}});
        } else {
          b.program.epilogue.push_back({"epilogue on the output tile and store", {}});
        }
        b.notes.push_back(
            "CPU matmul: packed panels + register-blocked vectorized micro-kernel; one team "
            "member per block, so barriers are program order; the last K block applies the "
            "epilogue");
      } else if (uses_blocked_gpu_matmul(t, mm)) {
        const gpu_matmul_params& bp = t.matmul.blocked;
        const int bm = bp.bm, bn = bp.bn, bk = bp.bk;
        // A tiles are stored k-major with rows padded by 4 elements (bank conflicts of the
        // transposing stores); scratch order a_tile0, a_tile1, b_tile0, b_tile1.
        for (int s = 0; s < 2; ++s)
          scratch("a_tile" + std::to_string(s), tile_type(mm, bk, bm + 4),
                  std::size_t(bk) * (bm + 4) * mm.elem_bytes,
                  "A tile (k-major), buffer " + std::to_string(s));
        for (int s = 0; s < 2; ++s)
          scratch("b_tile" + std::to_string(s), tile_type(mm, bk, bn),
                  std::size_t(bk) * bn * mm.elem_bytes, "B tile, buffer " + std::to_string(s));
        b.private_buffers.push_back(
            {"acc", mm.dtype + "[" + std::to_string(bp.tm) + "][" + std::to_string(bp.tn) + "]",
             memory_space_kind::private_memory, std::size_t(bp.tm) * bp.tn * mm.elem_bytes, 0,
             "accumulators"});
        b.program.prologue.push_back(
            {"load the first k-tiles", {{"a_tile0", true, false}, {"b_tile0", true, false}}});
        b.program.loop.push_back({"multiply-accumulate buffers 0, load buffers 1",
                                  {{"a_tile0", false, false},
                                   {"b_tile0", false, false},
                                   {"a_tile1", true, false},
                                   {"b_tile1", true, false}}});
        b.program.loop.push_back({"multiply-accumulate buffers 1, load buffers 0",
                                  {{"a_tile1", false, false},
                                   {"b_tile1", false, false},
                                   {"a_tile0", true, false},
                                   {"b_tile0", true, false}}});
        b.program.epilogue.push_back({"epilogue on the micro-tiles and store", {}});
        b.notes.push_back("GPU matmul: register-blocked micro-tiles, double-buffered scratch");
      } else if (const matmul_tiles mt = generic_matmul_tiles(t, mm); mt.program) {
        const int ts = mt.tm;
        scratch("a_tile", tile_type(mm, ts, ts), std::size_t(ts) * ts * mm.elem_bytes, "A tile");
        scratch("b_tile", tile_type(mm, ts, ts), std::size_t(ts) * ts * mm.elem_bytes, "B tile");
        // The accumulator is tile_local: a register per logical thread on GPUs, one copy per
        // logical thread in team scratch where one member runs the tile (as Tier 0 places it).
        if (t.tile_local_per_thread)
          b.private_buffers.push_back({"acc", mm.dtype, memory_space_kind::private_memory,
                                       mm.elem_bytes, 0, "accumulator"});
        else
          scratch("acc", mm.dtype + "[" + std::to_string(ts * ts) + "]",
                  std::size_t(ts) * ts * mm.elem_bytes,
                  "tile_local accumulator: one per logical thread");
        b.program.loop.push_back(
            {"load A and B tiles", {{"a_tile", true, false}, {"b_tile", true, false}}});
        b.program.loop.push_back(
            {"multiply-accumulate", {{"a_tile", false, false}, {"b_tile", false, false}}});
        b.program.epilogue.push_back({"epilogue and store (in-range elements only)", {}});
        b.notes.push_back("tiled matmul (seed 002) as a Tier 2 tile program");
      } else {
        // Run-time tiles: team members stride over each phase's elements, every member keeping
        // the same output elements in every phase (so the accumulators need no barrier).
        scratch("a_tile", tile_type(mm, mt.tm, mt.tk), std::size_t(mt.tm) * mt.tk * mm.elem_bytes,
                "A tile");
        scratch("b_tile", tile_type(mm, mt.tk, mt.tn), std::size_t(mt.tk) * mt.tn * mm.elem_bytes,
                "B tile");
        scratch("acc", tile_type(mm, mt.tm, mt.tn), std::size_t(mt.tm) * mt.tn * mm.elem_bytes,
                "accumulators: one per output element of the tile");
        b.program.prologue.push_back({"zero the accumulators", {{"acc", true, true}}});
        b.program.loop.push_back(
            {"load A and B tiles", {{"a_tile", true, false}, {"b_tile", true, false}}});
        b.program.loop.push_back({"multiply-accumulate",
                                  {{"a_tile", false, false},
                                   {"b_tile", false, false},
                                   {"acc", false, true},
                                   {"acc", true, true}}});
        b.program.epilogue.push_back(
            {"epilogue and store (in-range elements only)", {{"acc", false, true}}});
        b.notes.push_back("tiled matmul with a run-time tile of " + std::to_string(mt.tm) + "x" +
                          std::to_string(mt.tn) + ", K step " + std::to_string(mt.tk) +
                          " (team loops; the compiled tile program covers square tiles of 8, "
                          "16 and 32)");
      }
      if (k.root != k.core)
        b.notes.push_back(
            "epilogue fused: elementwise ops above the matmul run on its output tile");
      break;
    }
    case kernel_family::tile_reduce: {
      const graph_node& tr = g.nodes[k.core];
      const std::int64_t in_cols =
          g.nodes[tr.children[0]].extent.size() > 1 ? g.nodes[tr.children[0]].extent[1] : 1;
      if (t.thread_per_logical) {
        scratch("row_acc", tr.dtype + "[" + std::to_string(in_cols) + "]",
                std::size_t(in_cols) * tr.elem_bytes,
                "the R input rows combined element by element");
        b.program.prologue.push_back({"first input row", {{"row_acc", true, true}}});
        b.program.loop.push_back(
            {"combine the next input row", {{"row_acc", true, true}, {"row_acc", false, true}}});
        b.program.epilogue.push_back(
            {"combine each tile's C entries, epilogue and store", {{"row_acc", false, false}}});
      } else {
        const int c = tr.reduce_tile[1];
        const int line = tile_reduce_line(t, tr).bytes / int(tr.elem_bytes);
        const bool in_registers = line >= c;
        const int w = in_registers ? line : c >= 64 ? c : (64 / c) * c;
        b.private_buffers.push_back(
            {"acc_chunk", tr.dtype + "[" + std::to_string(w) + "]",
             memory_space_kind::private_memory, std::size_t(w) * tr.elem_bytes, 0,
             in_registers ? "W input columns combined over the R rows in vector registers, row "
                            "after row (plain operands under + * min max)"
                          : "W input columns accumulated over the R rows"});
        b.program.loop.push_back({"accumulate R rows of a W-column chunk", {}});
        b.program.epilogue.push_back({"combine each tile's C entries, epilogue and store", {}});
      }
      b.notes.push_back("tile_reduce: input rows read once, contiguously");
      if (k.root != k.core)
        b.notes.push_back("epilogue fused: elementwise ops above the reduction");
      break;
    }
  }
  return b;
}

}  // namespace tessera::codegen
