/// \file passes/mapping.hpp
/// \brief Pass 5: thread mapping — Kokkos policy, league, team and vector sizes of a kernel.
#pragma once

#include <tessera/codegen/passes/phases.hpp>

namespace tessera::codegen {

inline void map_threads(kernel_plan& k, const expr_graph& g, const kernel_spec& s,
                        const target& t) {
  const graph_node& root = g.nodes[s.root];
  std::int64_t n = 1;
  for (auto e : root.extent) n *= e;
  auto ceil_div = [](std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
  };
  switch (s.kind) {
    case kernel_spec::elementwise:
      k.policy = "RangePolicy";
      k.league_size = n;
      k.mapping = "one iteration per element, flat contiguous index (vectorizable)";
      break;
    case kernel_spec::staged_transpose: {
      const tile2 ts = staged_tile(g, s, t);
      k.tile = {ts.rows, ts.cols};
      k.tiles = {ceil_div(root.extent[0], ts.rows), ceil_div(root.extent[1], ts.cols)};
      k.league_size = k.tiles[0] * k.tiles[1];
      k.logical_threads = ts.rows * ts.cols;
      k.team_size = t.thread_per_logical ? std::min(ts.rows * ts.cols, t.max_team_size) : 1;
      k.mapping = t.thread_per_logical ? "one team member per tile element"
                                       : "one team member per tile, vector loops along rows";
      break;
    }
    case kernel_spec::matmul: {
      const graph_node& mm = g.nodes[s.core];
      if (uses_packed_matmul(t, mm)) {
        k.policy = "TeamPolicy (host)";
        k.mapping = "one team per output block; micro-tiles of the block in registers";
        k.league_size = t.gemm_mc > 0 ? ceil_div(mm.extent[0], t.gemm_mc) : 1;
      } else {
        const int ts = mm.tile[0] > 0 ? mm.tile[0] : t.matmul_tile;
        k.tile = {ts, ts};
        k.tiles = {ceil_div(mm.extent[0], ts), ceil_div(mm.extent[1], ts)};
        k.league_size = k.tiles[0] * k.tiles[1];
        k.logical_threads = ts * ts;
        k.team_size = t.thread_per_logical ? ts * ts : 1;
        k.mapping = t.thread_per_logical ? "one team member per output element of the tile"
                                         : "one team member per tile";
      }
      break;
    }
    case kernel_spec::tile_reduce:
      k.league_size = root.extent[0];
      k.team_size = 1;
      if (!t.thread_per_logical) k.policy = "RangePolicy";
      k.mapping = t.thread_per_logical ? "one team per output row; TeamThreadRange over columns"
                                       : "one team member per output row; vector loop over columns";
      break;
  }
}

}  // namespace tessera::codegen
