/// \file ops.hpp
/// \brief The operator vocabulary, once: device-callable functors for elementwise expressions
///        (each listed once, with the builder that makes its node: TESSERA_BINARY_OPS,
///        TESSERA_UNARY_OPS, expanded by nodes.hpp), and the reduction operators, which are
///        the same objects for elementwise min/max, tile_reduce and whole-array reduce:
///        `tile_reduce<2,2>(A, ops::max{})`, `tile_reduce<2,2>(A, maximum<>{})`,
///        `reduce(a, init, ops::max{})` and `reduce(a, init, maximum<>{})` all mean the same.
#pragma once

#include <tessera/dsl/config.hpp>

#include <cmath>
#include <type_traits>

/// Every binary elementwise operation: X(functor name, builder, result expression of a and b,
/// symbol in plans). Adding one is one line here (nodes.hpp builds the node, evaluators need
/// nothing new).
#define TESSERA_BINARY_OPS(X)                          \
  X(add, operator+, a + b, "+")                        \
  X(sub, operator-, a - b, "-")                        \
  X(mul, operator*, a* b, "*")                         \
  X(div, operator/, a / b, "/")                        \
  X(min, min, (b < a ? b : a), "min")                  \
  X(max, max, (a < b ? b : a), "max")                  \
  X(less, operator<, a < b, "<")                       \
  X(less_equal, operator<=, a <= b, "<=")              \
  X(greater, operator>, a > b, ">")                    \
  X(greater_equal, operator>=, a >= b, ">=")           \
  X(equal, operator==, a == b, "==")                   \
  X(not_equal, operator!=, a != b, "!=")               \
  X(logical_and, operator&&, bool(a) && bool(b), "&&") \
  X(logical_or, operator||, bool(a) || bool(b), "||")  \
  X(pow, pow, kmath::pow(a, b), "pow")

/// Every unary elementwise operation: X(functor name, builder, result expression of a, symbol).
#define TESSERA_UNARY_OPS(X)                   \
  X(negate, operator-, -a, "-")                \
  X(logical_not, operator!, !bool(a), "!")     \
  X(exp, exp, kmath::exp(a), "exp")            \
  X(log, log, kmath::log(a), "log")            \
  X(sqrt, sqrt, kmath::sqrt(a), "sqrt")        \
  X(abs, abs, (a < A(0) ? A(-a) : a), "abs")   \
  X(sin, sin, kmath::sin(a), "sin")            \
  X(cos, cos, kmath::cos(a), "cos")            \
  X(tanh, tanh, kmath::tanh(a), "tanh")        \
  X(relu, relu, (a > A(0) ? a : A(0)), "relu") \
  X(square, square, a* a, "square")

namespace tessera::ops {

#define TESSERA_DEFINE_BINARY_OP(name, builder, expr, sym)              \
  struct name {                                                         \
    static constexpr const char* symbol = sym;                          \
    template <class A, class B>                                         \
    TESSERA_FORCEINLINE auto operator()(const A& a, const B& b) const { \
      return expr;                                                      \
    }                                                                   \
  };
TESSERA_BINARY_OPS(TESSERA_DEFINE_BINARY_OP)
#undef TESSERA_DEFINE_BINARY_OP

#define TESSERA_DEFINE_UNARY_OP(name, builder, expr, sym)   \
  struct name {                                             \
    static constexpr const char* symbol = sym;              \
    template <class A>                                      \
    TESSERA_FORCEINLINE auto operator()(const A& a) const { \
      return expr;                                          \
    }                                                       \
  };
TESSERA_UNARY_OPS(TESSERA_DEFINE_UNARY_OP)
#undef TESSERA_DEFINE_UNARY_OP

/// Conversion to T (inserted by matmul around operands of another element type).
template <class T>
struct cast {
  static constexpr const char* symbol = "cast";
  template <class A>
  TESSERA_FORCEINLINE T operator()(const A& a) const {
    return static_cast<T>(a);
  }
};

}  // namespace tessera::ops

namespace tessera {

/// The reduction operators by their standard-library names (std::plus, ...), callable inside
/// kernels. `plus<>` is ops::add, `multiplies<>` ops::mul, `minimum<>` ops::min and
/// `maximum<>` ops::max (transparent: argument types deduced); `plus<float>` etc. fix the type.
template <class T = void>
struct plus {
  KOKKOS_INLINE_FUNCTION constexpr T operator()(const T& a, const T& b) const { return a + b; }
};
/// `a * b`.
template <class T = void>
struct multiplies {
  KOKKOS_INLINE_FUNCTION constexpr T operator()(const T& a, const T& b) const { return a * b; }
};
/// The smaller of a and b (`a` when neither is smaller).
template <class T = void>
struct minimum {
  KOKKOS_INLINE_FUNCTION constexpr T operator()(const T& a, const T& b) const {
    return b < a ? b : a;
  }
};
/// The larger of a and b (`a` when neither is larger).
template <class T = void>
struct maximum {
  KOKKOS_INLINE_FUNCTION constexpr T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
  }
};
/// The orders of tessera::sort by their standard-library names, callable inside kernels:
/// `a < b` (ascending) and `a > b` (descending); `less<>` and `greater<>` deduce the types.
template <class T = void>
struct less {
  KOKKOS_INLINE_FUNCTION constexpr bool operator()(const T& a, const T& b) const { return a < b; }
};
template <class T = void>
struct greater {
  KOKKOS_INLINE_FUNCTION constexpr bool operator()(const T& a, const T& b) const { return a > b; }
};
template <>
struct less<void> {
  template <class A, class B>
  KOKKOS_INLINE_FUNCTION constexpr bool operator()(const A& a, const B& b) const {
    return a < b;
  }
};
template <>
struct greater<void> {
  template <class A, class B>
  KOKKOS_INLINE_FUNCTION constexpr bool operator()(const A& a, const B& b) const {
    return a > b;
  }
};
template <>
struct plus<void> : ops::add {};
template <>
struct multiplies<void> : ops::mul {};
template <>
struct minimum<void> : ops::min {};
template <>
struct maximum<void> : ops::max {};

namespace ops {
/// What a reduction operator computes, whichever spelling it has: kernels that combine lanes in
/// vector registers (tile_reduce on CPUs) recognise these; any other associative operator is
/// called as written.
enum class reduction_kind { sum, product, min, max, other };
template <class Op>
inline constexpr reduction_kind reduction_of = reduction_kind::other;
template <>
inline constexpr reduction_kind reduction_of<add> = reduction_kind::sum;
template <>
inline constexpr reduction_kind reduction_of<mul> = reduction_kind::product;
template <>
inline constexpr reduction_kind reduction_of<min> = reduction_kind::min;
template <>
inline constexpr reduction_kind reduction_of<max> = reduction_kind::max;
template <class T>
inline constexpr reduction_kind reduction_of<tessera::plus<T>> = reduction_kind::sum;
template <class T>
inline constexpr reduction_kind reduction_of<tessera::multiplies<T>> = reduction_kind::product;
template <class T>
inline constexpr reduction_kind reduction_of<tessera::minimum<T>> = reduction_kind::min;
template <class T>
inline constexpr reduction_kind reduction_of<tessera::maximum<T>> = reduction_kind::max;
/// The ops:: functor of a recognised reduction operator (ops::add for plus<float>, ...): it
/// also applies lane by lane to GCC/Clang vectors. Op itself for any other operator.
template <class Op>
using canonical_reduction = std::conditional_t<
    reduction_of<Op> == reduction_kind::sum, add,
    std::conditional_t<
        reduction_of<Op> == reduction_kind::product, mul,
        std::conditional_t<reduction_of<Op> == reduction_kind::min, min,
                           std::conditional_t<reduction_of<Op> == reduction_kind::max, max, Op>>>>;
}  // namespace ops

}  // namespace tessera
