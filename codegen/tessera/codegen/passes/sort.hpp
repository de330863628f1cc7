/// \file passes/sort.hpp
/// \brief The plan of the Tier 1 sort of a 1-D array (sort, sorted): tile sorts, then merge
///        passes. The launches (backends/sort.hpp) read everything from this plan.
///
/// The n elements are cut into tiles of `sort_tile` consecutive elements and every tile is
/// sorted on its own (one Kokkos iteration or team each); then each merge pass merges pairs of
/// adjacent sorted runs into runs twice as long, between two buffers, until one run remains:
/// ceil(log2(tiles)) passes.
/// - GPUs (one team member per logical thread): a team loads its tile into team scratch, and
///   each member counts the elements ordered before its own (a rank sort: no barrier inside,
///   stable, any tile size); a merge pass gives each element its own iteration, which finds
///   the element's place in the other run by binary search.
/// - CPUs: one tile per thread of the execution space (at least `min_tile` elements), sorted
///   by one thread with an LSD radix sort over the bytes of arithmetic keys ordered by
///   tessera::less / greater, std::stable_sort otherwise; a merge pass cuts its output into
///   blocks, each finds where it starts in both runs (merge path: a binary search along the
///   block's first diagonal) and merges in order.
/// Every form is stable: equivalent elements keep their order.
#pragma once

#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/passes/gemm_blocking.hpp>
#include <tessera/codegen/planner_linkage.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::codegen {

/// What a sort orders.
struct sort_desc {
  std::string dtype;  ///< element type, e.g. "float"
  std::size_t elem_bytes = 4;
  std::int64_t elements = 0;
  std::string order;  ///< "ascending (tessera::less)", "a user comparator", ...
  /// The keys can be radix sorted: an arithmetic type ordered by less or greater.
  bool radix_keys = false;
  bool in_place = false;  ///< sort(a): the source is the destination
};

/// The passes a sort of `elements` runs, in `tile`-element tiles, takes to merge the tiles.
inline int sort_merge_passes(std::int64_t elements, std::int64_t tile) {
  int p = 0;
  for (std::int64_t runs = ceil_div(elements, std::max<std::int64_t>(1, tile)); runs > 1;
       runs = ceil_div(runs, 2))
    ++p;
  return p;
}

/// The kernels of a sort: the tile sort, then (with more than one tile) the merge passes.
#ifdef TESSERA_PLANNER_DECLARATIONS_ONLY
std::vector<kernel_plan> plan_sort(const sort_desc& d, const target& t);
#else
TESSERA_PLANNER_LINKAGE std::vector<kernel_plan> plan_sort(const sort_desc& d, const target& t) {
  std::vector<kernel_plan> ks;
  const std::int64_t n = d.elements;
  if (n == 0) return ks;
  const std::string what = std::to_string(n) + " " + d.dtype + ", " + d.order;
  kernel_plan k;
  k.family = kernel_family::sort;
  k.backend = t.backend;
  k.label = "tessera::sort (tiles)";
  std::int64_t tile;
  if (t.thread_per_logical) {
    // A tile of `sort.tile` elements in level 0 while it fits, else in level 1.
    tile = std::max<std::int64_t>(1, t.sort.tile);
    const std::size_t bytes = std::size_t(tile) * d.elem_bytes;
    k.scratch_level = bytes + 64 <= t.scratch_max[0] ? 0 : 1;  // (room to align)
    k.scratch_bytes[k.scratch_level] = bytes;
    k.team_size = int(std::min<std::int64_t>(tile, t.max_team_size));
    k.policy = "TeamPolicy";
    k.mapping = "one team per tile of " + std::to_string(tile) +
                " elements, one element per member per step: it counts the elements ordered " +
                "before it (rank sort)";
    k.phases = 2;
    k.buffers.push_back({"tile", d.dtype + "[" + std::to_string(tile) + "]",
                         k.scratch_level == 0 ? memory_space_kind::scratch_level0
                                              : memory_space_kind::scratch_level1,
                         bytes, 0, "the tile's elements, ranked against each other"});
    k.barriers.push_back({0, "tile_static memory", "tile loaded before ranks are counted"});
  } else {
    tile = std::max(ceil_div(n, std::max(1, t.concurrency)),
                    std::max<std::int64_t>(1, t.sort.min_tile));
    tile = std::min(tile, n);
    k.sort_radix_bits =
        d.radix_keys && t.sort.radix_min_elements > 0 && tile >= t.sort.radix_min_elements ? 8 : 0;
    k.policy = "RangePolicy (parallel_for)";
    k.mapping =
        "one iteration per tile of " + std::to_string(tile) + " elements, sorted by " +
        (k.sort_radix_bits > 0 ? "an LSD radix sort, one pass per byte of the key (bytes every key "
                                 "shares are skipped)"
                               : std::string("std::stable_sort"));
  }
  k.sort_tile = tile;
  k.league_size = ceil_div(n, tile);
  k.name = "sort of " + what + ": tiles";
  const int passes = sort_merge_passes(n, tile);
  k.buffers.push_back({"in", d.dtype, memory_space_kind::global, 0, 0,
                       d.in_place ? "input (the output: sorted in place)" : "input"});
  k.buffers.push_back({passes % 2 == 0 ? "out" : "temporary", d.dtype, memory_space_kind::global,
                       std::size_t(n) * d.elem_bytes, 0, "sorted tiles"});
  k.notes.push_back("stable: equivalent elements keep their order");
  ks.push_back(k);
  if (passes == 0) return ks;
  kernel_plan m;
  m.family = kernel_family::sort;
  m.backend = t.backend;
  m.label = "tessera::sort (merge)";
  m.name = "sort of " + what + ": merge passes";
  m.sort_tile = tile;
  m.sort_merge_passes = passes;
  m.sort_merge_block = t.thread_per_logical ? 1 : std::max<std::int64_t>(1, t.sort.merge_block);
  // (the first pass: pairs of runs x blocks per pair)
  m.league_size = m.sort_merge_block == 1
                      ? n
                      : ceil_div(ceil_div(n, tile), 2) * ceil_div(2 * tile, m.sort_merge_block);
  m.policy = "RangePolicy (parallel_for), one launch per pass";
  m.mapping = m.sort_merge_block == 1
                  ? std::string(
                        "one iteration per element: its place in the other run by "
                        "binary search")
                  : "one iteration per block of " + std::to_string(m.sort_merge_block) +
                        " output elements: where it starts in both runs by binary search "
                        "(merge path), then merged in order";
  m.phases = passes;
  m.buffers.push_back({"temporary", d.dtype, memory_space_kind::global,
                       std::size_t(n) * d.elem_bytes, 0, "one side of the ping-pong"});
  m.buffers.push_back({"out", d.dtype, memory_space_kind::global, 0, 0, "output"});
  m.notes.push_back(std::to_string(passes) + " pass" + (passes == 1 ? "" : "es") + ": runs of " +
                    std::to_string(tile) + " elements merged pairwise, doubling each pass");
  ks.push_back(m);
  return ks;
}
#endif

}  // namespace tessera::codegen
