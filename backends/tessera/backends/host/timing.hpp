/// \file host/timing.hpp
/// \brief The timing protocol of the explicit CPU tunings (the matmul's blocking, the
///        transpose's kernels and staging, the prefetch, the memory threshold): every choice
///        timed in interleaved rounds, so that drifting machine load hits all alike.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tessera::backends::host::impl {

/// Times run() under each of `count` choices: `use(0)` then run() once (warm-up: plans, first
/// touch, scratch), the best of `first` runs under each choice i (`use(i)` first) in turn, then
/// `rounds` rounds of one run under each, round r starting at choice r % count (so that no
/// choice always runs right after the same other). Each run is timed with a Kokkos::Timer up to
/// a Kokkos::fence. Returns the best seconds under each choice, in index order; `use` is left
/// at the choice timed last. count >= 1, first >= 1 or rounds >= 1.
/// \throws what use or run throws
template <class Use, class Run>
std::vector<double> best_seconds_each(std::size_t count, const Use& use, const Run& run, int first,
                                      int rounds) {
  auto best_of = [&](std::size_t i, int reps) {
    use(i);
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
      Kokkos::Timer timer;
      run();
      Kokkos::fence();
      best = std::min(best, timer.seconds());
    }
    return best;
  };
  (void)best_of(0, 1);
  std::vector<double> t(count, 1e300);
  for (std::size_t i = 0; i < count; ++i) t[i] = best_of(i, first);
  for (int r = 0; r < rounds; ++r)
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t i = (j + std::size_t(r)) % count;
      t[i] = std::min(t[i], best_of(i, 1));
    }
  return t;
}

}  // namespace tessera::backends::host::impl
