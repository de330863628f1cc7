/// \file reduce/rules.hpp
/// \brief Accumulation rules of whole-array reductions: how elements of type T are folded
///        (integer sums in 64-bit lanes, float sums through float blocks into double lanes,
///        double sums into compensated lanes, min/max/user operations in T).
#pragma once

#include <tessera/dsl/config.hpp>

#include <cstdint>
#include <type_traits>

namespace tessera::backends::impl {

// --- accumulation rules ---------------------------------------------------------------------
// A rule says how elements of type T are folded: acc_type; lift(x), an element as an
// accumulator; optionally identity(), then the lanes start from it, else from the chunk's first
// L elements; step(a, x): a <- a (+) x; merge(a, b): a <- a (+) b. And three tuning constants:
// `lanes` (accumulators per chunk, to fill the vector registers), `block` (elements first
// added in T per lane step: 1, or a power of two for floating sums) and `unroll` (unroll the
// lane loop fully, so that GCC keeps the lanes in registers: best for the float and integer
// sums; min/max and the compensated lanes vectorize better as a plain loop). They were tuned
// with GCC 12, -O3 -march=native, on x86-64 with AVX-512. Rules are small values (a user's op
// may carry state).

/// Integer sums: 64-bit modular arithmetic (unsigned, so overflow is defined); the result is
/// exact whenever the true sum fits in the 64-bit accumulator, and converted modulo 2^bits.
template <class T>
struct int_sum_rule {
  static constexpr const char* describe = "64-bit integer lanes (exact while the sum fits)";
  using acc_type = std::uint64_t;
  static constexpr int lanes = 16;
  static constexpr int block = 1;
  static constexpr bool unroll = true;
  KOKKOS_INLINE_FUNCTION acc_type identity() const { return 0; }
  KOKKOS_INLINE_FUNCTION acc_type lift(const T& x) const { return static_cast<acc_type>(x); }
  KOKKOS_INLINE_FUNCTION void step(acc_type& a, const T& x) const { a += static_cast<acc_type>(x); }
  KOKKOS_INLINE_FUNCTION void merge(acc_type& a, const acc_type& b) const { a += b; }
  static T result(const acc_type& a) { return static_cast<T>(a); }
  static T mean(const acc_type& a, index_type n) {
    if constexpr (std::is_signed_v<T>)
      return static_cast<T>(static_cast<std::int64_t>(a) / n);
    else
      return static_cast<T>(a / static_cast<acc_type>(n));
  }
};

/// Rules whose lane step is a plain a += acc_type(x) (a rule's `lane_add`): a backend may then
/// add whole runs of blocks into the lanes with its own vector code (reduce/fold.hpp).
template <class R>
concept lane_add_rule = requires {
  requires R::lane_add;
};

/// Rules whose lanes are compensated (TwoSum) sums of the element type, stored as separate
/// sum and error arrays (a rule's `two_sum_lanes`): a backend may then add whole runs of blocks
/// into them with its own vector code (reduce/fold.hpp).
template <class R>
concept two_sum_lanes_rule = requires {
  requires R::two_sum_lanes;
};

/// Sums of floating types narrower than double (float): blocks of 16 elements, one per lane
/// and 16 lanes apart, are added in float by a pairwise tree (4 roundings of 2^-24), then
/// converted to double and added into double lanes (roundings of 2^-53). The float blocks keep
/// conversions to one per 16 elements, which is what lets the loop run at memory bandwidth.
template <class T>
struct widening_sum_rule {
  static constexpr const char* describe =
      "blocks of 16 added pairwise in the element type, then into double lanes";
  using acc_type = double;
  static constexpr int lanes = 16;
  static constexpr int block = 16;
  static constexpr bool unroll = true;
  static constexpr bool lane_add = true;  ///< step(a, x) is a += acc_type(x)
  KOKKOS_INLINE_FUNCTION acc_type identity() const { return 0.0; }
  KOKKOS_INLINE_FUNCTION acc_type lift(const T& x) const { return static_cast<double>(x); }
  KOKKOS_INLINE_FUNCTION void step(acc_type& a, const T& x) const { a += static_cast<double>(x); }
  KOKKOS_INLINE_FUNCTION void merge(acc_type& a, const acc_type& b) const { a += b; }
  static T result(const acc_type& a) { return static_cast<T>(a); }
  static T mean(const acc_type& a, index_type n) {
    return static_cast<T>(a / static_cast<double>(n));
  }
};

/// A compensated sum: s + c, where c collects the rounding errors of the additions into s.
template <class D>
struct compensated {
  D s, c;
};

/// Sums of double (and wider) types: blocks of 16 elements, one per lane and 8 lanes apart,
/// added in T by a pairwise tree (4 roundings), then folded into 8 compensated lanes. Each lane
/// addition s + x is split exactly into the rounded sum and its error with Knuth's branch-free
/// TwoSum (6 flops) and the errors are accumulated apart (Ogita, Rump & Oishi, "Accurate sum
/// and dot product", SIAM J. Sci. Comput. 26(6), 2005, algorithm Sum2), so the lanes add as if
/// in twice the precision. Blocks of 16 into 8 lanes, not of 8 into 16: per 16 elements 15
/// tree additions and one TwoSum (7 operations) instead of 14 and two (14), and the block's
/// tree, the lanes and their errors fit 16 vector registers (x86-64-v3). Double sums of 2^12 /
/// 2^16 / 2^20 elements on a Zen 5 core, against OpenBLAS' dasum (a plain sum of |x|):
/// x86-64-v3 0.84x / 0.86-0.87x / 1.00-1.04x -> 0.89-0.99x / 0.99-1.00x / 0.99-1.01x, AVX-512
/// against Eigen 1.00x / 0.82-0.99x / 1.02-1.11x -> 1.08-1.15x / 0.97-1.00x / 0.95-1.19x
/// (tessera-peers, several runs; a 2^12 call is about 170 ns, 20 of them fixed costs).
template <class T>
struct compensated_sum_rule {
  static constexpr const char* describe =
      "blocks of 16 added pairwise, then into compensated (TwoSum) lanes";
  using acc_type = compensated<T>;
  static constexpr int lanes = 8;
  static constexpr int block = 16;
  static constexpr bool unroll = false;
  static constexpr bool two_sum_lanes = true;  ///< the lanes: sums s[L] and errors c[L]
  KOKKOS_INLINE_FUNCTION acc_type identity() const { return {T(0), T(0)}; }
  KOKKOS_INLINE_FUNCTION acc_type lift(const T& x) const { return {x, T(0)}; }
  /// s + c += x by TwoSum; V: T, or a vector of T (the same operations lane by lane, as the
  /// CPU backends' block_fold_two_sum runs them).
  template <class V>
  KOKKOS_INLINE_FUNCTION static void two_sum(V& s, V& c, const V& x) {
    const V t = s + x;
    const V z = t - s;
    c += (s - (t - z)) + (x - z);
    s = t;
  }
  KOKKOS_INLINE_FUNCTION void step(acc_type& a, const T& x) const { two_sum(a.s, a.c, x); }
  KOKKOS_INLINE_FUNCTION void merge(acc_type& a, const acc_type& b) const {
    a.c += b.c;
    two_sum(a.s, a.c, b.s);
  }
  static T result(const acc_type& a) { return a.s + a.c; }
  static T mean(const acc_type& a, index_type n) { return (a.s + a.c) / static_cast<T>(n); }
};

template <class T>
using sum_rule_t =
    std::conditional_t<std::is_integral_v<T>, int_sum_rule<T>,
                       std::conditional_t<(sizeof(T) < sizeof(double)), widening_sum_rule<T>,
                                          compensated_sum_rule<T>>>;

/// Folds with a binary operation `op` in the element type (min, max, a user's op). The op must
/// be associative and commutative: elements are grouped into lanes and chunks.
template <class T, class Op>
struct op_rule {
  static constexpr const char* describe = "the operation applied in the element type";
  using acc_type = T;
  using op_type = Op;
  static constexpr int lanes = sizeof(T) <= 4 ? 64 : 32;
  static constexpr int block = 1;
  static constexpr bool unroll = false;
  Op op;
  KOKKOS_INLINE_FUNCTION acc_type lift(const T& x) const { return x; }
  KOKKOS_INLINE_FUNCTION void step(acc_type& a, const T& x) const { a = static_cast<T>(op(a, x)); }
  KOKKOS_INLINE_FUNCTION void merge(acc_type& a, const acc_type& b) const {
    a = static_cast<T>(op(a, b));
  }
};

template <class R>
inline constexpr bool is_op_rule = false;
template <class T, class Op>
inline constexpr bool is_op_rule<op_rule<T, Op>> = true;

}  // namespace tessera::backends::impl
