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
  /// The pairwise tree of rule::merge over the lanes ((s, c)[l] merged with (s, c)[l + w],
  /// w = L/2, ..., 1), computed on the two arrays in place, one level per template instance:
  /// the same operations, so the same bits, as merging copies of them as compensated pairs.
  KOKKOS_INLINE_FUNCTION compensated<T> combine(const rule&) {
    combine_level<L / 2>();
    return {s[0], c[0]};
  }
  template <int W>
  KOKKOS_FORCEINLINE_FUNCTION void combine_level() {
    if constexpr (W > 0) {
      for (int l = 0; l < W; ++l) {  // rule::merge((s, c)[l], (s, c)[l + W])
        c[l] += c[l + W];
        rule::two_sum(s[l], c[l], s[l + W]);
      }
      combine_level<W / 2>();
    }
  }
};

}  // namespace tessera::backends::impl
