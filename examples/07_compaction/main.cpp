// Stream compaction with tile collectives: keep the elements of an array above a threshold, in
// order. Pass 1 counts each tile's kept elements (reduce_over_tile) and finds its largest
// element; the tile offsets are a Tier 1 exclusive_scan of the counts; pass 2 gives every kept
// element its position inside its tile (exclusive_scan_over_tile of the keep flags) and writes
// it to offset + position. Checked against std::copy_if; pass 2 also runs in checked mode.
// The size (default 1,000,003) is not a multiple of the 256-element tiles.
//
//   example_07_compaction [n]
#include "../common/report.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  const long n = argc > 1 ? std::atol(argv[1]) : 1000003;
  constexpr int T = 256;
  const float threshold = 0.5f;
  using ti = tessera::tiled_index<T>;

  std::mt19937 gen(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> host(static_cast<std::size_t>(n));
  for (auto& x : host) x = d(gen);
  tessera::array<float, 1> A(tessera::extent<1>(n), host.begin(), host.end());
  const auto tiles = A.extent.tile<T>().pad();
  const long ntiles = tiles.get_extent()[0] / T;

  // Pass 1: per tile, how many elements are kept, and the largest element.
  tessera::array<int, 1> counts(std::max(ntiles, 1L));
  tessera::array<float, 1> largest(counts.extent);
  tessera::parallel_for_each(
      tiles, TESSERA_KERNEL(tessera::tile_group<T> & g) {
        const int kept = tessera::reduce_over_tile(
            g, [&](const ti& t) { return A.extent.contains(t.global) && A[t.global] > threshold; },
            0, tessera::plus<>());
        const float top = tessera::reduce_over_tile(
            g, [&](const ti& t) { return A.extent.contains(t.global) ? A[t.global] : -2.f; },
            tessera::maximum<>());
        g.for_each([&](const ti& t) {
          if (t.local[0] == 0) {
            counts[t.tile] = kept;
            largest[t.tile] = top;
          }
        });
      });

  // The tiles' offsets in the output: a Tier 1 exclusive scan of the counts.
  const tessera::array<int, 1> offset = tessera::exclusive_scan(counts);
  const std::vector<int> c = counts.to_vector(), offsets = offset.to_vector();
  const long total = ntiles > 0 ? long(offsets.back()) + c.back() : 0;
  std::vector<int> want_offsets(c.size());
  std::exclusive_scan(c.begin(), c.end(), want_offsets.begin(), 0);

  // Pass 2: each kept element's position inside its tile, then the scatter.
  tessera::array<float, 1> out(std::max(total, 1L));
  auto compact = TESSERA_KERNEL(tessera::tile_group<T> & g) {
    auto pos = g.tile_local<int>(0, "pos");
    auto keep = [&](const ti& t) {
      return A.extent.contains(t.global) && A[t.global] > threshold;
    };
    tessera::exclusive_scan_over_tile(
        g, [&](const ti& t) { return keep(t) ? 1 : 0; }, pos, 0, tessera::plus<>());
    g.for_each([&](const ti& t) {
      if (keep(t)) out[offset[t.tile] + pos(t)] = A[t.global];
    });
  };
  tessera::parallel_for_each(tiles, compact);

  // Reference.
  std::vector<float> want;
  std::copy_if(host.begin(), host.end(), std::back_inserter(want),
               [&](float x) { return x > threshold; });
  bool ok = true;
  ok &= workloads::verdict("tile offsets == std::exclusive_scan", offsets == want_offsets);
  ok &= workloads::verdict("kept count == std::copy_if", total == long(want.size()),
                           std::to_string(total) + " of " + std::to_string(n));
  std::vector<float> got = out.to_vector();
  got.resize(static_cast<std::size_t>(total));
  ok &= workloads::verdict("compacted elements == std::copy_if (in order)", got == want);
  const std::vector<float> top = largest.to_vector();
  bool tops = true;
  for (long k = 0; k < ntiles; ++k) {
    const auto first = host.begin() + k * T, last = host.begin() + std::min(n, (k + 1) * T);
    tops = tops && top[std::size_t(k)] == *std::max_element(first, last);
  }
  ok &= workloads::verdict("per-tile maxima == std::max_element", tops);

  tessera::parallel_for_each(tessera::checked, tiles, compact);
  got = out.to_vector();
  got.resize(static_cast<std::size_t>(total));
  ok &= workloads::verdict("pass 2 in checked mode (race-free), same result", got == want);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
