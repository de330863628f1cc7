/// \file reduce/lanes.hpp
/// \brief The SIMD lanes of a chunk fold: L accumulators merged by a fixed pairwise tree.
#pragma once

#include <tessera/backends/reduce/rules.hpp>

namespace tessera::backends::impl {

// --- SIMD lanes -------------------------------------------------------------------------------

/// L accumulators, one per SIMD lane: lane l receives elements l, l + L, l + 2L, ... of a run.
/// combine() merges them by a fixed pairwise tree (l += l + L/2 for l < L/2, then L/4, ...),
/// one level per template instance: constant trip counts, so the compiler keeps the lanes in
/// registers (a runtime loop over the levels went through the stack: 15 % of a sum of 2^12
/// floats from L1).
template <class Rule, int L>
struct lane_block {
  typename Rule::acc_type a[L];
  KOKKOS_INLINE_FUNCTION void clear(const Rule& r, int l) { a[l] = r.identity(); }
  template <class T>
  KOKKOS_INLINE_FUNCTION void init(const Rule& r, int l, const T& x) {
    a[l] = r.lift(x);
  }
  template <class T>
  KOKKOS_INLINE_FUNCTION void step(const Rule& r, int l, const T& x) {
    r.step(a[l], x);
  }
  KOKKOS_INLINE_FUNCTION typename Rule::acc_type combine(const Rule& r) {
    combine_level<L / 2>(r);
    return a[0];
  }
  template <int W>
  KOKKOS_FORCEINLINE_FUNCTION void combine_level(const Rule& r) {
    if constexpr (W > 0) {
      for (int l = 0; l < W; ++l) r.merge(a[l], a[l + W]);
      combine_level<W / 2>(r);
    }
  }
};

/// Compensated lanes stored as two arrays (sums, errors) so each is one set of vector
/// registers.
template <class T, int L>
struct lane_block<compensated_sum_rule<T>, L> {
  using rule = compensated_sum_rule<T>;
  T s[L], c[L];
  KOKKOS_INLINE_FUNCTION void clear(const rule&, int l) {
    s[l] = T(0);
    c[l] = T(0);
  }
  KOKKOS_INLINE_FUNCTION void init(const rule&, int l, const T& x) {
    s[l] = x;
    c[l] = T(0);
  }
  KOKKOS_INLINE_FUNCTION void step(const rule&, int l, const T& x) { rule::two_sum(s[l], c[l], x); }
  KOKKOS_INLINE_FUNCTION compensated<T> combine(const rule& r) {
    compensated<T> a[L];
    for (int l = 0; l < L; ++l) a[l] = {s[l], c[l]};
    for (int w = L / 2; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) r.merge(a[l], a[l + w]);
    return a[0];
  }
};

}  // namespace tessera::backends::impl
