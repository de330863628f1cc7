/// \file reduce.hpp
/// \brief Whole-array reductions of any `readable` (array, array_view, array expressions):
///        `sum`, `mean`, `min_value`, `max_value`, `reduce(e, init, op)`, and
///        bitwise-reproducible variants of sum, mean and reduce; each is one Kokkos launch
///        (reduce/launch.hpp), folding chunks (reduce/fold.hpp) with an accumulation rule
///        (reduce/rules.hpp).
///
/// Scheme (seed 004's huge-array sum, without its inter-work-group locks). The row-major
/// element order is cut into fixed chunks (2^16 consecutive elements on CPUs, 2^14 in
/// reproducible mode). One call of the Kokkos functor folds one chunk into L independent
/// accumulator lanes (element k of a contiguous run feeds lane k mod L), which the compiler
/// keeps in SIMD registers; the lanes are merged by a fixed pairwise tree. Chunk results are
/// combined by the Kokkos reduction (a custom reducer), or, in reproducible mode, written to a View
/// of per-chunk partials and combined pairwise in chunk order. No chunk or tile ever waits for
/// another: the only synchronisation is the end of the `parallel_reduce` / `parallel_for`, which
/// Kokkos provides.
///
/// Accumulators: float sums go through float blocks of 16 (a pairwise tree, 4 roundings) into
/// double lanes; double sums through blocks of 16 (4 roundings) into compensated (TwoSum)
/// lanes; integer sums use 64-bit modular lanes; min, max and user operations stay in the
/// element type.
#pragma once

#include <tessera/backends/reduce/launch.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/expr/ops.hpp>
#include <tessera/dsl/readable.hpp>

#include <string>
#include <type_traits>

namespace tessera {

/// Which whole-array reduction plan(r, e) and explain(r, e) describe: sum(e), mean(e),
/// min_value(e), max_value(e), or reduce(e, init, op) (give the op: plan(reduction::reduce, e,
/// op)).
enum class reduction { sum, mean, min_value, max_value, reduce };

namespace backends::impl {
template <class T>
inline constexpr bool summable = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

template <class E, class U, class Op>
inline constexpr bool reducible = std::is_convertible_v<const U&, readable_value_t<E>>&&
    std::is_invocable_v<const Op&, const readable_value_t<E>&, const readable_value_t<E>&>;

/// The kernel plan of reduction r of n > 0 elements of type T on exec (op: reduce's operator).
template <class T, class Space, class Op>
codegen::kernel_plan reduction_kernel_plan(const Space& exec, reduction r, index_type n, const Op&,
                                           bool reproducible) {
  switch (r) {
    case reduction::sum:
      return reduction_plan<Space, T, sum_rule_t<T>>(exec, "sum", n, reproducible);
    case reduction::mean:
      return reduction_plan<Space, T, sum_rule_t<T>>(exec, "mean", n, reproducible);
    case reduction::min_value:
      return reduction_plan<Space, T, op_rule<T, minimum<T>>>(exec, "min_value", n, false);
    case reduction::max_value:
      return reduction_plan<Space, T, op_rule<T, maximum<T>>>(exec, "max_value", n, false);
    case reduction::reduce:
      return reduction_plan<Space, T, op_rule<T, Op>>(exec, "reduce", n, reproducible);
  }
  return {};
}
}  // namespace backends::impl

/// The plan of reduction r of a readable e (array, array_view, ...) on exec, as the reduction
/// runs it: its one kernel (none for an empty extent), with chunk size, league, accumulation,
/// where it runs. Nothing runs. `op` is reduce's operator (reduction::reduce); `reproducible`
/// plans the reproducible variant (sum, mean, reduce). \throws shape_error on a negative
/// extent. Expressions: execute.hpp adds the kernels that materialize their non-elementwise
/// parts first.
template <launchable_space Space, readable E, class Op = ops::add>
codegen::program_plan plan(const Space& exec, reduction r, const E& e, const Op& op = {},
                           bool reproducible = false) {
  tessera::impl::require_runtime("tessera::plan(reduction)");
  const auto x = backends::impl::checked_extent("tessera::plan(reduction)", e);
  codegen::program_plan p;
  if (x.size() > 0)
    p.kernels.push_back(backends::impl::reduction_kernel_plan<readable_value_t<E>>(
        exec, r, x.size(), op, reproducible));
  return p;
}
template <readable E>
codegen::program_plan plan(reduction r, const E& e) {
  return plan(tessera::impl::default_instance(), r, e);
}
template <readable E>
codegen::program_plan plan(reduction r, const E& e, reproducible_t) {
  return plan(tessera::impl::default_instance(), r, e, ops::add{}, true);
}
template <readable E, class Op>
requires(!std::is_same_v<Op, reproducible_t>) codegen::program_plan
    plan(reduction r, const E& e, const Op& op) {
  return plan(tessera::impl::default_instance(), r, e, op);
}
/// The same plan as text (explain(reduction::sum, A): one reduction kernel, its chunks,
/// accumulation and where it runs).
template <readable E, class... Args>
std::string explain(reduction r, const E& e, const Args&... args) {
  return codegen::to_string(plan(r, e, args...));
}

/// Sum of every element of `e`.
///
/// \tparam E a readable (array, array_view, array expression) of rank 1..3 whose element type
///         T is arithmetic (not bool)
/// \param e [in] the values: n = e.get_extent().size() elements, any extent; n = 0 gives T(0)
/// \return the sum, as T.
///         Accuracy, float: with s the exact sum and A = sum |x_i|, the error is at most
///         2^-24 |s| (the final rounding) + 4 * 2^-24 A (float blocks of 16, pairwise) +
///         (2^8 + 4 + n / 2^16) * 2^-53 A (double lanes and chunk combine; 2^6 and n / 2^14
///         in reproducible mode): for n = 2^28 that is 2^-24 |s| + 4.0001 * 2^-24 A, against
///         ceil(log2 n) * 2^-24 A = 28 * 2^-24 A for pairwise float summation and
///         (n - 1) * 2^-24 A for a plain float loop; for every n >= 256 (the smallest with a
///         float block) 4 <= log2 n, and below that the error is the final rounding plus
///         n * 2^-53 A.
///         double: 2^-53 |s| + 4 * 2^-53 A + (n 2^-53)^2 A (blocks of 16, then compensated
///         lanes). Integers: exact while the sum fits in 64 bits, then converted to T (modulo
///         2^bits when T is narrower).
/// \throws shape_error on a negative extent (before any kernel runs)
/// Cost: one Kokkos parallel_reduce over ceil(n / 2^16) chunks on CPUs, each one vectorized
/// loop, and the sum runs at memory bandwidth (2^28 floats, 1 thread: within a
/// few percent of Eigen's `VectorXf::sum()`, see examples/05_huge_sum). The grouping of chunk
/// results depends on the thread count, so the last bit may change with it: see
/// sum(e, reproducible).
/// Source: seed 004 (sum of 1024*1024*256 floats over many levels of tiles), done with a Kokkos
/// reduction instead of inter-tile locks; compensated lanes after Ogita, Rump & Oishi, SIAM J.
/// Sci. Comput. 26(6), 2005.
/// \code
///   tessera::array<float, 1> a(1 << 28);   // ... filled ...
///   float s = tessera::sum(a);
/// \endcode
template <launchable_space Space, readable E>
readable_value_t<E> sum(const Space& exec, const E& e) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::sum(e): e's element type must be arithmetic (and not bool)");
  const auto x = backends::impl::checked_extent("tessera::sum", e);
  if (x.size() == 0) return T(0);
  using rule = backends::impl::sum_rule_t<T>;
  return rule::result(backends::impl::fold_all(exec, "sum", e, x, rule{}));
}

/// Bitwise-reproducible sum: the same bits for any number of threads and any scheduling, on a
/// given backend and build (other builds or devices may round differently).
///
/// Shapes, accuracy and errors as sum(e). The elements are cut into fixed chunks of 2^14 (1024
/// on GPUs) in row-major order; a parallel_for folds each chunk, deterministically, into a
/// View of per-chunk partials (ceil(n / 2^14) accumulators of 8 bytes for float and integers,
/// 16 for double), and the host combines the partials in a fixed pairwise order.
/// Cost: the partials' allocation and the O(n / 2^14) host combine (on GPUs also their copy
/// to the host); for 2^28 floats 16384 partials (128 KiB), measured within a few percent of
/// sum(e) on host backends (examples/05_huge_sum prints both).
/// \throws shape_error on a negative extent
template <launchable_space Space, readable E>
readable_value_t<E> sum(const Space& exec, const E& e, reproducible_t) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::sum(e, reproducible): e's element type must be arithmetic (and not "
                "bool)");
  const auto x = backends::impl::checked_extent("tessera::sum(reproducible)", e);
  if (x.size() == 0) return T(0);
  using rule = backends::impl::sum_rule_t<T>;
  return rule::result(backends::impl::fold_all(exec, reproducible, "sum", e, x, rule{}));
}

/// Arithmetic mean of every element of `e`: the sum, accumulated as in sum(e), divided by n in
/// the accumulator's precision (double for float; compensated double for double), then
/// rounded to T. Integers: the 64-bit sum divided by n, truncated toward zero.
/// \param e [in] readable of rank 1..3 with an arithmetic element type and n >= 1 elements
/// \return the mean as T; error as sum(e) / n plus one rounding
/// \throws shape_error "tessera::mean: empty extent (...)" when n == 0, or on a negative
///         extent, before any kernel runs
template <launchable_space Space, readable E>
readable_value_t<E> mean(const Space& exec, const E& e) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::mean(e): e's element type must be arithmetic (and not bool)");
  const auto x = backends::impl::checked_nonempty_extent("tessera::mean", e);
  using rule = backends::impl::sum_rule_t<T>;
  return rule::mean(backends::impl::fold_all(exec, "mean", e, x, rule{}), x.size());
}

/// Bitwise-reproducible mean (see sum(e, reproducible)). \throws as mean(e)
template <launchable_space Space, readable E>
readable_value_t<E> mean(const Space& exec, const E& e, reproducible_t) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::mean(e, reproducible): e's element type must be arithmetic (and not "
                "bool)");
  const auto x = backends::impl::checked_nonempty_extent("tessera::mean(reproducible)", e);
  using rule = backends::impl::sum_rule_t<T>;
  return rule::mean(backends::impl::fold_all(exec, reproducible, "mean", e, x, rule{}), x.size());
}

/// Smallest element of `e`, exact (always one of the elements, whatever the thread count).
/// \param e [in] readable of rank 1..3 with an arithmetic element type and n >= 1 elements
/// \return the minimum as T. With NaNs the result is unspecified (as Eigen's minCoeff());
///         between -0.0 and +0.0 either may be returned.
/// \throws shape_error "tessera::min_value: empty extent (...)" when n == 0, or on a negative
///         extent, before any kernel runs
/// Cost: one parallel_reduce; at memory bandwidth on host backends.
template <launchable_space Space, readable E>
readable_value_t<E> min_value(const Space& exec, const E& e) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::min_value(e): e's element type must be arithmetic (and not bool)");
  const auto x = backends::impl::checked_nonempty_extent("tessera::min_value", e);
  using rule = backends::impl::op_rule<T, minimum<T>>;
  return backends::impl::fold_all(exec, "min_value", e, x, rule{});
}

/// Largest element of `e`; the contract of min_value(e) with "largest".
/// \throws shape_error "tessera::max_value: empty extent (...)" when n == 0, or on a negative
///         extent, before any kernel runs
template <launchable_space Space, readable E>
readable_value_t<E> max_value(const Space& exec, const E& e) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::max_value(e): e's element type must be arithmetic (and not bool)");
  const auto x = backends::impl::checked_nonempty_extent("tessera::max_value", e);
  using rule = backends::impl::op_rule<T, maximum<T>>;
  return backends::impl::fold_all(exec, "max_value", e, x, rule{});
}

/// Generalised reduction, like std::reduce: `op(T(init), x_0 (op) x_1 (op) ... (op) x_n-1)`,
/// the elements grouped in an unspecified (but fixed for a given n) order.
///
/// \tparam E readable of rank 1..3; T = readable_value_t<E>, trivially copyable
/// \tparam Op callable inside kernels as op(T, T), result convertible to T; it must be
///         associative and commutative (elements are spread over SIMD lanes and chunks), e.g.
///         tessera::plus<>, multiplies<>, minimum<>, maximum<> (the same operators as ops::add,
///         ops::mul, ops::min, ops::max of tile_reduce and elementwise expressions)
/// \param e [in] the values (n elements); \param init [in] used once, converted to T
/// \param op [in] the operation, copied into the kernel
/// \return T; T(init) when n == 0. Every step is computed in T (no wider accumulator: use
///         sum() for accurate floating sums); integer ops are exact as T's arithmetic is.
/// \throws shape_error on a negative extent
/// Cost: one parallel_reduce; at memory bandwidth on host backends for simple ops.
/// \code
///   int p = tessera::reduce(a, 1, tessera::multiplies<>{});
/// \endcode
template <launchable_space Space, readable E, class U, class Op>
readable_value_t<E> reduce(const Space& exec, const E& e, const U& init, const Op& op) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::reducible<E, U, Op>,
                "tessera::reduce(e, init, op): init must convert to e's element type T and op "
                "must be callable as op(T, T)");
  static_assert(std::is_trivially_copyable_v<T>,
                "tessera::reduce(e, init, op): e's element type must be trivially copyable");
  const auto x = backends::impl::checked_extent("tessera::reduce", e);
  if (x.size() == 0) return static_cast<T>(init);
  using rule = backends::impl::op_rule<T, Op>;
  const T r = backends::impl::fold_all(exec, "reduce", e, x, rule{op});
  return static_cast<T>(op(static_cast<T>(init), r));
}

/// Bitwise-reproducible reduce: one fixed grouping of the elements (fixed chunks, partials
/// combined pairwise), independent of the number of threads. Otherwise as
/// reduce(e, init, op); cost as sum(e, reproducible).
template <launchable_space Space, readable E, class U, class Op>
readable_value_t<E> reduce(const Space& exec, const E& e, const U& init, const Op& op,
                           reproducible_t) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::reducible<E, U, Op>,
                "tessera::reduce(e, init, op, reproducible): init must convert to e's element "
                "type T and op must be callable as op(T, T)");
  static_assert(std::is_trivially_copyable_v<T>,
                "tessera::reduce(e, init, op, reproducible): e's element type must be "
                "trivially copyable");
  const auto x = backends::impl::checked_extent("tessera::reduce(reproducible)", e);
  if (x.size() == 0) return static_cast<T>(init);
  using rule = backends::impl::op_rule<T, Op>;
  const T r = backends::impl::fold_all(exec, reproducible, "reduce", e, x, rule{op});
  return static_cast<T>(op(static_cast<T>(init), r));
}

/// The reductions above on the default execution space.
template <readable E>
readable_value_t<E> sum(const E& e) {
  return sum(tessera::impl::default_instance(), e);
}
template <readable E>
readable_value_t<E> sum(const E& e, reproducible_t r) {
  return sum(tessera::impl::default_instance(), e, r);
}
template <readable E>
readable_value_t<E> mean(const E& e) {
  return mean(tessera::impl::default_instance(), e);
}
template <readable E>
readable_value_t<E> mean(const E& e, reproducible_t r) {
  return mean(tessera::impl::default_instance(), e, r);
}
template <readable E>
readable_value_t<E> min_value(const E& e) {
  return min_value(tessera::impl::default_instance(), e);
}
template <readable E>
readable_value_t<E> max_value(const E& e) {
  return max_value(tessera::impl::default_instance(), e);
}
template <readable E, class U, class Op>
readable_value_t<E> reduce(const E& e, const U& init, const Op& op) {
  return reduce(tessera::impl::default_instance(), e, init, op);
}
template <readable E, class U, class Op>
readable_value_t<E> reduce(const E& e, const U& init, const Op& op, reproducible_t r) {
  return reduce(tessera::impl::default_instance(), e, init, op, r);
}

}  // namespace tessera
