/// \file ops.hpp
/// \brief Device-callable functors used by expression nodes (elementwise and reduction ops).
#pragma once

#include <tessera/dsl/config.hpp>

#include <cmath>

namespace tessera::ops {

#define TESSERA_BINARY_OP(name, expr, sym)                              \
  struct name {                                                         \
    static constexpr const char* symbol = sym;                          \
    template <class A, class B>                                         \
    TESSERA_FORCEINLINE auto operator()(const A& a, const B& b) const { \
      return expr;                                                      \
    }                                                                   \
  };
TESSERA_BINARY_OP(add, a + b, "+")
TESSERA_BINARY_OP(sub, a - b, "-")
TESSERA_BINARY_OP(mul, a* b, "*")
TESSERA_BINARY_OP(div, a / b, "/")
TESSERA_BINARY_OP(min, (b < a ? b : a), "min")
TESSERA_BINARY_OP(max, (a < b ? b : a), "max")
TESSERA_BINARY_OP(less, a < b, "<")
TESSERA_BINARY_OP(less_equal, a <= b, "<=")
TESSERA_BINARY_OP(greater, a > b, ">")
TESSERA_BINARY_OP(greater_equal, a >= b, ">=")
TESSERA_BINARY_OP(equal, a == b, "==")
TESSERA_BINARY_OP(pow, kmath::pow(a, b), "pow")
#undef TESSERA_BINARY_OP

#define TESSERA_UNARY_OP(name, expr, sym)                   \
  struct name {                                             \
    static constexpr const char* symbol = sym;              \
    template <class A>                                      \
    TESSERA_FORCEINLINE auto operator()(const A& a) const { \
      return expr;                                          \
    }                                                       \
  };
TESSERA_UNARY_OP(negate, -a, "-")
TESSERA_UNARY_OP(exp, kmath::exp(a), "exp")
TESSERA_UNARY_OP(log, kmath::log(a), "log")
TESSERA_UNARY_OP(sqrt, kmath::sqrt(a), "sqrt")
TESSERA_UNARY_OP(abs, (a < A(0) ? A(-a) : a), "abs")
TESSERA_UNARY_OP(sin, kmath::sin(a), "sin")
TESSERA_UNARY_OP(cos, kmath::cos(a), "cos")
TESSERA_UNARY_OP(tanh, kmath::tanh(a), "tanh")
TESSERA_UNARY_OP(relu, (a > A(0) ? a : A(0)), "relu")
TESSERA_UNARY_OP(square, a* a, "square")
#undef TESSERA_UNARY_OP

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
