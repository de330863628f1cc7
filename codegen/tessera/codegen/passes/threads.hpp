/// \file passes/threads.hpp
/// \brief Pass 5: thread mapping — Kokkos policy, league, team and vector sizes of a kernel, and
///        the family's launch parameters (cache blocking of the CPU matmul, register blocking
///        of the GPU one, rows per team of tile_reduce), from the target description.
#pragma once

#include <tessera/codegen/passes/gemm_blocking.hpp>
#include <tessera/codegen/passes/phases.hpp>

#include <algorithm>

namespace tessera::codegen {

/// True when kernel `s` reads the memory it writes: an operand that is the destination itself
/// (A = A + B, A += B). Such a kernel has its output lines in cache already; streaming stores
/// would only evict them.
inline bool reads_own_output(const expr_graph& g, const kernel_spec& s) {
  for (int in : s.inputs)
    if (g.nodes[in].traits.kind == node_kind::terminal && g.nodes[in].with_output == overlap::same)
      return true;
  return false;
}

/// Small kernels on host backends: the league in order on the calling thread, without a
/// Kokkos launch, where the kernel's `elements` (what it counts: elements written, or read)
/// are at most `limit` (0: never). A Kokkos 4.6 OpenMP launch costs about 0.5 us even on one
/// thread (the policy's instance handles, a parallel region, the instance's mutex), a Serial
/// one about 40 ns: d = 2a + 3b - c of 16 floats took 0.71 us on one OpenMP thread, of which
/// the kernel is a few ns.
inline void run_inline_if_small(kernel_plan& k, const target& t, std::int64_t elements,
                                std::int64_t limit, const char* counted) {
  k.inline_run = !t.thread_per_logical && limit > 0 && elements <= limit;
  if (k.inline_run) {
    k.policy = "none: run on the calling thread (no Kokkos launch)";
    k.notes.push_back("no launch: a fence of the execution space, then the " +
                      std::to_string(k.league_size) +
                      " iterations in order on the calling thread (at most " +
                      std::to_string(limit) + " elements " + counted + ")");
  }
}

inline void map_threads(kernel_plan& k, const expr_graph& g, const kernel_spec& s,
                        const target& t) {
  const graph_node& root = g.nodes[s.root];
  std::int64_t n = 1;
  for (auto e : root.extent) n *= e;
  k.family = s.family;
  switch (s.family) {
    case kernel_family::tile_kernel:
    case kernel_family::copy:
    case kernel_family::reduction:
    case kernel_family::scan:
    case kernel_family::histogram:
    case kernel_family::sort:
      break;
    case kernel_family::elementwise: {
      k.policy = "RangePolicy";
      // Streaming stores skip the read for ownership of lines the kernel would otherwise load;
      // a kernel that reads its own output (A = A + B, A += B) has those lines in cache
      // already, and streaming them out only evicts them (PRK nstream, 2^25 doubles, was
      // reported at 35 GB/s streamed against 47 for Kokkos' loop; unstreamed, `tessera-peers
      // --only prk_nstream` measures 1.30x the best loop on a Zen 4 core). Row loops (not
      // flat) stream only where they also prefetch their operands (lower.hpp,
      // plan_row_prefetch).
      k.streaming_stores = k.flat_index && !reads_own_output(g, s) &&
                           t.streaming_store_min_bytes > 0 &&
                           std::size_t(n) * root.elem_bytes >= t.streaming_store_min_bytes;
      if (!k.flat_index && !t.thread_per_logical && !root.extent.empty()) {
        k.league_size = root.extent.back() > 0 ? n / root.extent.back() : 0;
        k.mapping = "one iteration per row of the last dimension, each a contiguous loop";
      } else if (k.streaming_stores) {
        k.league_size = ceil_div(n, 4096);
        k.mapping =
            "one iteration per chunk of 4096 elements, evaluated into a buffer held in the "
            "first-level data cache and streamed "
            "out with non-temporal stores (the output is larger than the cache)";
      } else if (k.flat_index) {
        k.league_size = n;
        k.mapping = "one iteration per element, flat contiguous index (vectorizable)";
      } else {
        k.league_size = n;
        k.mapping = "one iteration per element, at its index";
      }
      run_inline_if_small(k, t, n, t.elementwise_inline_elements, "written");
      break;
    }
    case kernel_family::staged_transpose: {
      const tile2 ts = staged_tile(g, s, t);
      k.tile = {ts.rows, ts.cols};
      k.tiles = {ceil_div(root.extent[0], ts.rows), ceil_div(root.extent[1], ts.cols)};
      k.league_size = k.tiles[0] * k.tiles[1];
      k.logical_threads = ts.rows * ts.cols;
      k.staged_block = t.transpose.block;
      k.staged_ld = t.transpose.block > 0 ? t.transpose.block : ts.rows + t.transpose.pad;
      if (t.thread_per_logical) {
        k.team_size = std::min(ts.rows * ts.cols, t.max_team_size);
        k.mapping =
            "team members stride over the tile's elements: row-contiguous, coalesced "
            "loads and stores";
      } else {
        k.team_size = 1;
        k.streaming_stores = staged_output_streams(g, s, t);
        if (k.streaming_stores) {
          // Each team ends with a store fence, which waits for its streaming stores to reach
          // memory: a team walks a whole column of tiles (fewer while that leaves fewer than 4
          // teams per thread), so fences are rare.
          std::int64_t per = k.tiles[0];
          while (per > 1 &&
                 k.tiles[1] * ceil_div(k.tiles[0], per) < 4 * std::int64_t(t.concurrency))
            per = ceil_div(per, 2);
          k.tiles_per_team = per;
          k.league_size = k.tiles[1] * ceil_div(k.tiles[0], per);
        }
        // A tile reads ts.cols operand rows, one operand row stride apart (the output's rows
        // x the element size for a contiguous operand), a line of each per block column. Rows
        // a power-of-two stride apart share cache sets: where ts.cols of them span more than
        // L2 (a 32 KiB stride x 32 rows on a core with 512 KiB of L2), the lines the
        // prefetchers bring for one row evict another's before they are read. The tile's rows
        // are then walked in groups that fit (multiples of the block, at least one block).
        // Measured on a 2-core AMD EPYC Zen 3 (512 KiB L2, 8-way; 8192^2 floats, 128 x 32
        // tiles, streaming stores): 6.4-7.2 GB/s walking all 32 rows per block column,
        // 10.4-10.6 GB/s in two groups of 16.
        const std::int64_t row_bytes = staged_operand_row_bytes(g, s);
        const int b = t.transpose.block;
        if (b > 0 && t.l2_bytes > 0 && row_bytes > 0 &&
            std::int64_t(ts.cols) * row_bytes > std::int64_t(t.l2_bytes)) {
          const std::int64_t fit = std::int64_t(t.l2_bytes) / row_bytes / b * b;
          k.staged_row_group = int(std::max<std::int64_t>(b, fit));
        }
        // A plain transpose (an operand of the output's type, nothing else) whose output has
        // a side shorter than a block has no full block: the host kernel copies its lines
        // directly (staged_narrow_copy; kernels.hpp, plain_narrow_tile).
        const bool plain =
            root.traits.kind == node_kind::transpose && root.children.size() == 1 &&
            g.nodes[root.children[0]].traits.kind == node_kind::terminal &&
            g.nodes[root.children[0]].dtype == (s.writes_temporary ? root.dtype : g.out_dtype);
        if (plain && b > 0 && (root.extent[0] < b || root.extent[1] < b)) {
          k.staged_narrow_copy = true;
          k.streaming_stores = false;  // plain stores: lines shorter than a cache line's run
          k.mapping =
              "one team member per tile, copying the operand's lines directly, four "
              "at a time (an output side shorter than a " +
              std::to_string(b) + "x" + std::to_string(b) + " block: no full block)";
          run_inline_if_small(k, t, n, t.elementwise_inline_elements, "written");
          break;
        }
        k.mapping =
            "one team member per " +
            (k.tiles_per_team > 1 ? std::to_string(k.tiles_per_team) +
                                        " consecutive tiles down a column of the output"
                                  : std::string("tile")) +
            ", walking each in " + std::to_string(t.transpose.block) + "x" +
            std::to_string(t.transpose.block) + " blocks" +
            (k.staged_row_group > 0 && k.staged_row_group < ts.cols
                 ? ", " + std::to_string(k.staged_row_group) + " operand rows at a time (rows of " +
                       std::to_string(row_bytes) + " B: more do not fit in L2 together)"
                 : std::string()) +
            (!k.streaming_stores ? std::string()
             : staged_output_tile(g, s, t, ts)
                 ? "; each tile assembled in scratch, then written row by row (runs of " +
                       std::to_string(ts.cols) +
                       " elements) with non-temporal stores, one store fence per team"
                 : std::string("; output lines written with non-temporal stores, one store "
                               "fence per team"));
        run_inline_if_small(k, t, n, t.elementwise_inline_elements, "written");
      }
      break;
    }
    case kernel_family::matmul: {
      const graph_node& mm = g.nodes[s.core];
      const std::int64_t M = mm.extent[0], N = mm.extent[1];
      if (uses_packed_matmul(t, mm)) {
        k.packed_matmul = true;
        k.gemm = packed_gemm_params(g, mm, t);
        k.gemm.scratch_level = k.scratch_level;  // placed by the scratch pass
        k.policy = k.gemm.inline_run ? "none: run on the calling thread (no Kokkos launch)"
                   : k.gemm.direct   ? "RangePolicy (host)"
                                     : "TeamPolicy (host)";
        k.inline_run = k.gemm.inline_run;
        k.league_size = k.gemm.m_blocks * k.gemm.splits;
        if (k.inline_run)
          k.notes.push_back(
              "no launch: a fence of the execution space, then the " +
              std::to_string(k.league_size) + " row blocks in order on the calling thread (" +
              (t.concurrency == 1
                   ? std::string("one thread")
                   : "at most " + std::to_string(t.matmul.inline_madds) + " multiply-adds") +
              ")");
        const std::string tiles = std::to_string(k.gemm.mr) + "x" + std::to_string(k.gemm.nr);
        k.mapping = k.gemm.direct
                        ? "one iteration per row block of " + std::to_string(k.gemm.mr) +
                              " rows of C; micro-tiles of " + tiles +
                              " in registers reading A and B in place (A, B and C fit half of "
                              "L2: no packing), " +
                              (k.gemm.inline_run ? std::string("in order on the calling thread")
                                                 : std::string("one launch"))
                    : k.league_size == 1
                        ? "one team (C is one row block of at most " + std::to_string(k.gemm.mc) +
                              " rows); micro-tiles of " + tiles +
                              " in registers; one launch per (column panel, K block), the team "
                              "packing each micro-panel of B right before its micro-kernels"
                        : "one team per (row block, column range) of C; micro-tiles of " + tiles +
                              " in registers; one launch per (column panel, K block), each "
                              "after a RangePolicy launch packing the B panel";
        k.matmul_workspace = stored_dtype(g, s.root, s.writes_temporary) != mm.dtype;
        k.matmul_accumulates_output = s.accumulates_output;
        if (s.accumulates_output)
          k.mapping +=
              "; the first K block adds into the output's prior contents (C + A B in "
              "place, BLAS beta = 1)";
        if (k.matmul_workspace)
          k.mapping += "; then one iteration per output row storing the epilogue of the " +
                       mm.dtype + " workspace as " + stored_dtype(g, s.root, s.writes_temporary);
      } else if (uses_blocked_gpu_matmul(t, mm)) {
        const gpu_matmul_params& bp = t.matmul.blocked;
        k.gpu_mm = bp;
        k.gpu_mm.double_buffered = true;
        k.tile = {bp.bm, bp.bn};
        k.tiles = {ceil_div(M, bp.bm), ceil_div(N, bp.bn)};
        k.league_size = k.tiles[0] * k.tiles[1];
        k.logical_threads = (bp.bm / bp.tm) * (bp.bn / bp.tn);
        k.team_size = k.logical_threads;
        k.mapping = "one team member per logical thread, each computing " + std::to_string(bp.tm) +
                    "x" + std::to_string(bp.tn) + " outputs; coalesced tile loads";
      } else {
        const matmul_tiles mt = generic_matmul_tiles(t, mm);
        k.tile = {mt.tm, mt.tn};
        k.tiles = {ceil_div(M, mt.tm), ceil_div(N, mt.tn)};
        k.league_size = k.tiles[0] * k.tiles[1];
        k.logical_threads = mt.tm * mt.tn;
        if (mt.program) {
          k.team_size = t.thread_per_logical ? mt.tm * mt.tn : 1;
          k.mapping = t.thread_per_logical ? "one team member per output element of the tile"
                                           : "one team member per tile; phases are loop nests";
        } else {
          k.k_step = mt.tk;
          const std::int64_t outs = std::int64_t(mt.tm) * mt.tn;
          k.team_size =
              t.thread_per_logical ? int(outs < t.max_team_size ? outs : t.max_team_size) : 1;
          k.mapping = k.team_size == 1 ? "one team member per tile; phases are loop nests"
                                       : "team members stride over the tile's elements (" +
                                             std::to_string(ceil_div(outs, k.team_size)) +
                                             " outputs per member)";
        }
      }
      break;
    }
    case kernel_family::tile_reduce: {
      const graph_node& tr = g.nodes[s.core];
      const std::int64_t rows = root.extent[0];
      if (t.thread_per_logical) {
        k.league_size = rows;
        k.team_size = t.tile_reduce.team;
        k.mapping = "one team per output row; team members stride over the row's columns";
      } else {
        const int R = tr.reduce_tile[0];
        k.rows_per_team = R >= 8 ? 1 : 8 / R;
        k.policy = "RangePolicy";
        k.league_size = ceil_div(rows, k.rows_per_team);
        k.streaming_stores = t.streaming_store_min_bytes > 0 &&
                             std::size_t(n) * root.elem_bytes >= t.streaming_store_min_bytes;
        const reduce_line line = tile_reduce_line(t, tr);
        k.line_bytes = line.bytes;
        k.prefetch_lines = line.prefetch_lines;
        k.mapping =
            "one iteration per group of " + std::to_string(k.rows_per_team) +
            " output rows; vector loops over columns" +
            (line.bytes > 0
                 ? " in lines of " + std::to_string(line.bytes) + " B per input row" +
                       (line.prefetch_lines > 0
                            ? ", each load prefetching " + std::to_string(line.prefetch_lines) +
                                  " lines ahead into L2"
                            : std::string())
                 : std::string()) +
            std::string(k.streaming_stores ? "; output lines written with non-temporal stores"
                                           : "");
        // Up to twice the element-wise limit, counted in elements read: an element of a tile
        // mean costs about a third of one of 2a + 3b - c (0.037 against 0.105 ns inline), and
        // on two OpenMP threads (Kokkos 4.6, Zen 5) tile_mean<4, 4> of 128 x 256 floats took
        // 1.25 us inline, 1.37 launched; 256 x 256: 2.43 inline, 1.99 launched.
        run_inline_if_small(k, t, n * tr.reduce_tile[0] * tr.reduce_tile[1],
                            2 * t.elementwise_inline_elements, "read");
      }
      break;
    }
  }
}

}  // namespace tessera::codegen
