#pragma once
// tessera-fuzz: a differential fuzzer of Tier 1. Each case draws an expression pattern from a
// catalogue that covers the whole surface (elementwise chains, where, math functions, matmul
// with epilogues and schedules, transposes, tile_reduce/tile_mean, reductions, scans along a
// dimension, sorts, tile collectives in a Tier 0 kernel, ranks 1-3), an
// element type (float, double, int) — for patterns marked `mixed` operand c of another type and
// destinations of another type —, a `.tile<...>()` schedule of random sizes on the nodes the
// pattern marks with sched(), random shapes (0, 1, primes, non-multiples of every tile),
// operands (arrays, array_views over caller memory, sections) and a way of assigning (existing
// array, eval, constructor, default-constructed array, the output aliasing an operand,
// overlapping sections of one buffer, a section of a wider array whose other elements must stay
// untouched). The same pattern is evaluated by Eigen in double
// precision; results must agree within
//     |tessera - reference| <= 64 u (g + 1) (1 + max |reference|)
// where u is the largest unit roundoff of the element types involved and g the pattern's error
// growth (1 for
// elementwise chains, K for a matmul, n for a sum); integer results must be exact.
//
//   tessera-fuzz [--cases N] [--seed S] [--first K] [--max-dim D] [--verbose]
//
// Case k of seed S is reproducible on its own (--seed S --first k --cases 1). Every failure
// prints such a replay line, then the same case shrunk to the smallest shape that still fails.
// Exit status: 0 when every case passed, 1 otherwise.
#include <tessera/tessera.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace fuzz {

using tessera::index_type;

// --- the reference: Eigen arrays in double precision, with Tessera's vocabulary ---------------

using ref2 = Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Integer element type under test: tile means divide like integer arithmetic.
inline bool& integer_mode() {
  static bool v = false;
  return v;
}

/// A reference value: every operation evaluates at once into a plain Eigen array (no Eigen
/// expression outlives the temporaries it refers to).
struct rv {
  ref2 v;
};
template <class F>
rv map1(const rv& a, F f) {
  return {a.v.unaryExpr(f)};
}
template <class F>
rv map2(const rv& a, const rv& b, F f) {
  return {a.v.binaryExpr(b.v, f)};
}
#define FUZZ_REF_BINARY(op)                                               \
  inline rv operator op(const rv& a, const rv& b) {                       \
    return map2(a, b, [](double x, double y) { return double(x op y); }); \
  }                                                                       \
  inline rv operator op(const rv& a, double s) {                          \
    return map1(a, [s](double x) { return double(x op s); });             \
  }                                                                       \
  inline rv operator op(double s, const rv& a) {                          \
    return map1(a, [s](double x) { return double(s op x); });             \
  }
FUZZ_REF_BINARY(+)
FUZZ_REF_BINARY(-)
FUZZ_REF_BINARY(*)
FUZZ_REF_BINARY(/)
FUZZ_REF_BINARY(<)
FUZZ_REF_BINARY(>)
#undef FUZZ_REF_BINARY
inline rv relu(const rv& a) {
  return map1(a, [](double x) { return x > 0 ? x : 0.0; });
}
inline rv square(const rv& a) {
  return map1(a, [](double x) { return x * x; });
}
inline rv abs(const rv& a) {
  return map1(a, [](double x) { return std::abs(x); });
}
inline rv exp(const rv& a) {
  return map1(a, [](double x) { return std::exp(x); });
}
inline rv sqrt(const rv& a) {
  return map1(a, [](double x) { return std::sqrt(x); });
}
inline rv tanh(const rv& a) {
  return map1(a, [](double x) { return std::tanh(x); });
}
inline rv pow(const rv& a, const rv& b) {
  return map2(a, b, [](double x, double y) { return std::pow(x, y); });
}
inline rv min(const rv& a, const rv& b) {
  return map2(a, b, [](double x, double y) { return y < x ? y : x; });
}
inline rv max(const rv& a, const rv& b) {
  return map2(a, b, [](double x, double y) { return x < y ? y : x; });
}
inline rv where(const rv& c, const rv& a, const rv& b) {
  rv r = a;
  for (Eigen::Index k = 0; k < r.v.size(); ++k)
    r.v.data()[k] = c.v.data()[k] != 0 ? a.v.data()[k] : b.v.data()[k];
  return r;
}
inline rv where(const rv& c, double a, const rv& b) {
  return where(c, map1(b, [a](double) { return a; }), b);
}
inline rv where(const rv& c, const rv& a, double b) {
  return where(c, a, map1(a, [b](double) { return b; }));
}
inline rv where(const rv& c, double a, double b) {
  return map1(c, [a, b](double x) { return x != 0 ? a : b; });
}
inline rv matmul(const rv& a, const rv& b) {
  return {(a.v.matrix() * b.v.matrix()).array()};
}
inline rv transpose(const rv& a) {
  return {a.v.transpose()};
}
template <int R, int C, class Op>
rv tile_reduce(const rv& x, Op op) {
  const ref2& a = x.v;
  ref2 o(a.rows() / R, a.cols() / C);
  for (Eigen::Index i = 0; i < o.rows(); ++i)
    for (Eigen::Index j = 0; j < o.cols(); ++j) {
      double v = a(i * R, j * C);
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c)
          if (r || c) v = op(v, a(i * R + r, j * C + c));
      o(i, j) = v;
    }
  return {o};
}
template <int R, int C>
rv tile_mean(const rv& x) {
  rv s = tile_reduce<R, C>(x, [](double a, double b) { return a + b; });
  if (integer_mode()) return map1(s, [](double v) { return std::trunc(v / double(R * C)); });
  return map1(s, [](double v) { return v / double(R * C); });
}
struct max_op {
  double operator()(double a, double b) const { return a < b ? b : a; }
};
inline double sum(const rv& x) {
  return x.v.sum();
}
inline double max_value(const rv& x) {
  return x.v.maxCoeff();
}

/// Tier 1 scans along a dimension of the reference (rank 2; ranks 1 and 3 are one row, so
/// only their last dimension), in order, with op.
template <class Op>
rv inclusive_scan(const rv& x, int dim, Op op) {
  rv r{x.v};
  if (dim == 0) {
    for (Eigen::Index i = 1; i < r.v.rows(); ++i)
      for (Eigen::Index j = 0; j < r.v.cols(); ++j) r.v(i, j) = op(r.v(i - 1, j), r.v(i, j));
  } else {
    for (Eigen::Index i = 0; i < r.v.rows(); ++i)
      for (Eigen::Index j = 1; j < r.v.cols(); ++j) r.v(i, j) = op(r.v(i, j - 1), r.v(i, j));
  }
  return r;
}
inline rv inclusive_scan(const rv& x, int dim) {
  return inclusive_scan(x, dim, [](double a, double b) { return a + b; });
}
/// The sum of the elements before each one along dim.
inline rv exclusive_scan(const rv& x, int dim) {
  rv r = inclusive_scan(x, dim);
  r.v -= x.v;
  return r;
}
/// The values of a rank-1 reference (one row) in ascending order.
inline rv sorted(const rv& x) {
  rv r{x.v};
  std::sort(r.v.data(), r.v.data() + r.v.size());
  return r;
}

/// Tier 0 tile collectives: tile (R x C) sums through reduce_over_tile in a tiled kernel over
/// the truncated extent (x materialized first); the reference is tile_reduce's. (A named
/// function with a declared return type: device compilers take kernels' lambdas there.)
template <int R, int C, class V, class X>
tessera::array<V, 2> tile_sums_kernel(const X& x) {
  const tessera::array<V, 2> in = x;
  tessera::array<V, 2> out{tessera::extent<2>(in.extent[0] / R, in.extent[1] / C)};
  if (out.extent.size() == 0) return out;
  tessera::parallel_for_each(
      in.extent.template tile<R, C>().truncate(),
      TESSERA_KERNEL(tessera::basic_tile_group<tessera::execution_space, R, C> & g) {
        using ti = tessera::tiled_index<R, C>;
        const V s = tessera::reduce_over_tile(
            g, [&](const ti& t) { return in[t.global]; }, tessera::plus<>());
        g.for_each([&](const ti& t) {
          if (t.local_linear() == 0) out[t.tile] = s;
        });
      });
  return out;
}
template <int R, int C, class X>
auto tile_sums_over_tile(const X& x) {
  if constexpr (std::is_same_v<std::remove_cvref_t<X>, rv>)
    return tile_reduce<R, C>(x, [](double a, double b) { return a + b; });
  else
    return tile_sums_kernel<R, C,
                            std::remove_const_t<typename tessera::impl::expr_t<X>::value_type>>(x);
}

using tessera::abs;
using tessera::exclusive_scan;
using tessera::exp;
using tessera::inclusive_scan;
using tessera::matmul;
using tessera::max;
using tessera::max_value;
using tessera::min;
using tessera::pow;
using tessera::relu;
using tessera::sorted;
using tessera::sqrt;
using tessera::square;
using tessera::sum;
using tessera::tanh;
using tessera::tile_mean;
using tessera::tile_reduce;
using tessera::transpose;
using tessera::where;

/// ramp(x): the generated operand (i, j) -> i - 2 j (exact in every element type) with x's
/// extent and element type, on both sides.
template <class T>
struct ramp_fn {
  KOKKOS_INLINE_FUNCTION T operator()(const tessera::index<2>& i) const {
    return T(i[0] - 2 * i[1]);
  }
};
template <class X>
auto ramp(const X& x) {
  if constexpr (std::is_same_v<std::remove_cvref_t<X>, rv>) {
    rv r{x.v};
    for (Eigen::Index i = 0; i < r.v.rows(); ++i)
      for (Eigen::Index j = 0; j < r.v.cols(); ++j) r.v(i, j) = double(i - 2 * j);
    return r;
  } else {
    using T = std::remove_const_t<typename tessera::impl::expr_t<X>::value_type>;
    return tessera::generate(x.get_extent(), ramp_fn<T>{});
  }
}
/// shifted(x, di, dj, b): tessera::shift on Tessera operands, the same reads on references.
template <class X>
auto shifted(const X& x, index_type di, index_type dj, tessera::boundary::policy b) {
  if constexpr (std::is_same_v<std::remove_cvref_t<X>, rv>) {
    const index_type m = x.v.rows(), n = x.v.cols();
    auto inside = [&](index_type j, index_type len) -> index_type {
      if (j >= 0 && j < len) return j;
      switch (b.k) {
        case tessera::boundary::kind::clamp:
          return j < 0 ? 0 : len - 1;
        case tessera::boundary::kind::periodic:
          return ((j % len) + len) % len;
        case tessera::boundary::kind::mirror: {
          const index_type q = ((j % (2 * len)) + 2 * len) % (2 * len);
          return q < len ? q : 2 * len - 1 - q;
        }
        default:
          return -1;
      }
    };
    rv r{x.v};
    for (index_type i = 0; i < m; ++i)
      for (index_type j = 0; j < n; ++j) {
        const index_type si = inside(i + di, m), sj = inside(j + dj, n);
        r.v(i, j) = si < 0 || sj < 0 ? (b.k == tessera::boundary::kind::constant ? b.value : 0.0)
                                     : x.v(si, sj);
      }
    return r;
  } else {
    return tessera::shift(x, tessera::index<2>(di, dj), b);
  }
}

/// max works as a tile_reduce operation on both sides.
struct op_max {
  template <class A, class B>
  KOKKOS_INLINE_FUNCTION auto operator()(const A& a, const B& b) const {
    return a < b ? b : a;
  }
};

// --- patterns ------------------------------------------------------------------------------------

/// Extents of the operands a, b, c (rank N; unused operands get a's extent).
template <int N>
struct operand_shapes {
  std::array<index_type, 3> a{}, b{}, c{};
  index_type growth = 1;  ///< error growth g of the tolerance
};

/// mixed: operand c has another element type than a and b (other_t), and in `existing` mode
/// half the cases assign to a destination of another type than the expression's (dest_t).
enum flags : unsigned {
  floating_only = 1,
  rank2_only = 2,
  scalar_result = 4,
  no_alias = 8,
  mixed = 16
};

/// The other operand type of a mixed pattern: float <-> double, int -> float.
template <class T>
using other_t = std::conditional_t<std::is_same_v<T, float>, double, float>;
/// The other destination type: float <-> double, int -> double (exact for the fuzzer's values).
template <class V>
using dest_t = std::conditional_t<std::is_same_v<V, double>, float, double>;

/// The schedule of the running case: sched(x) gives a Tessera node this `.tile<...>()`
/// schedule (sizes drawn per case, as a user could write any of them); the reference ignores it.
inline tessera::schedule& current_schedule() {
  static tessera::schedule s;
  return s;
}
template <class X>
auto sched(const X& x) {
  if constexpr (std::is_same_v<std::remove_cvref_t<X>, rv>) {
    return x;
  } else {
    X y = x;
    y.sched = current_schedule();
    return y;
  }
}

using rng_t = std::mt19937_64;
inline index_type pick_dim(rng_t& g, index_type max_dim) {
  static const index_type edge[] = {0, 1, 2, 3, 5, 7, 13, 16, 17, 31, 32, 33, 63, 64, 65, 97};
  if (std::uniform_int_distribution<int>(0, 2)(g) == 0) {
    const index_type e = edge[std::uniform_int_distribution<int>(0, 15)(g)];
    if (e <= max_dim) return e;
  }
  return std::uniform_int_distribution<index_type>(1, max_dim)(g);
}
inline index_type pick_multiple(rng_t& g, index_type m, index_type max_dim) {
  return m * std::uniform_int_distribution<index_type>(0, std::max<index_type>(1, max_dim / m))(g);
}

/// One entry of the catalogue: name, flags, shape generator and the expression (a generic
/// callable used with Tessera operands and with Eigen reference operands alike).
template <int N, unsigned Flags, class Shapes, class F>
struct pattern {
  static constexpr int rank = N;
  static constexpr unsigned flags = Flags;
  const char* name;
  Shapes shapes;  // (rng, max_dim) -> operand_shapes<N>
  F f;            // (a, b, c, s) -> expression or scalar
};
template <int N, unsigned Flags = 0, class Shapes, class F>
pattern<N, Flags, Shapes, F> make_pattern(const char* name, Shapes s, F f) {
  return {name, s, f};
}
template <class X>
inline constexpr bool is_ref = std::is_same_v<std::remove_cvref_t<X>, rv>;

inline auto same_shape(rng_t& g, index_type d) {
  const index_type m = pick_dim(g, d), n = pick_dim(g, d);
  operand_shapes<2> s;
  s.a = s.b = s.c = {m, n, 0};
  return s;
}

inline auto catalogue() {
  auto same = [](rng_t& g, index_type d) {
    return same_shape(g, d);
  };
  auto transposed = [](rng_t& g, index_type d) {
    operand_shapes<2> s = same_shape(g, d);
    s.b = s.c = {s.a[1], s.a[0], 0};
    return s;
  };
  auto mm = [](rng_t& g, index_type d) {
    const index_type m = pick_dim(g, d), k = pick_dim(g, d), n = pick_dim(g, d);
    operand_shapes<2> s;
    s.a = {m, k, 0};
    s.b = {k, n, 0};
    s.c = {m, n, 0};
    s.growth = k + 1;
    return s;
  };
  auto mm_summed = [mm](rng_t& g, index_type d) {
    operand_shapes<2> s = mm(g, d);
    s.growth = (s.a[1] + 1) * (s.c[0] * s.c[1] + 1);  // K products per element, M N elements
    return s;
  };
  auto transposed_c = [](rng_t& g, index_type d) {  // c (not b) has the transposed shape
    operand_shapes<2> s = same_shape(g, d);
    s.b = s.a;
    s.c = {s.a[1], s.a[0], 0};
    return s;
  };
  auto mm_c = [](rng_t& g, index_type d) {  // c is the K x N operand
    const index_type m = pick_dim(g, d), k = pick_dim(g, d), n = pick_dim(g, d);
    operand_shapes<2> s;
    s.a = s.b = {m, k, 0};
    s.c = {k, n, 0};
    s.growth = k + 1;
    return s;
  };
  auto square_mm = [](rng_t& g, index_type d) {
    const index_type n = pick_dim(g, d);
    operand_shapes<2> s;
    s.a = s.b = s.c = {n, n, 0};
    s.growth = n + 1;
    return s;
  };
  auto tiled = [](int R, int C) {
    return [R, C](rng_t& g, index_type d) {
      const index_type m = pick_multiple(g, R, d), n = pick_multiple(g, C, d);
      operand_shapes<2> s;
      s.a = s.b = {m, n, 0};
      s.c = {m / R, n / C, 0};
      s.growth = R * C;
      return s;
    };
  };
  auto tiled_t = [](int R, int C) {  // operand transposed before the tile reduction
    return [R, C](rng_t& g, index_type d) {
      const index_type m = pick_multiple(g, R, d), n = pick_multiple(g, C, d);
      operand_shapes<2> s;
      s.a = s.b = {n, m, 0};
      s.c = {m / R, n / C, 0};
      s.growth = R * C;
      return s;
    };
  };
  auto summed = [](rng_t& g, index_type d) {
    operand_shapes<2> s = same_shape(g, d);
    s.growth = s.a[0] * s.a[1] + 1;
    return s;
  };
  auto r1 = [](rng_t& g, index_type d) {
    operand_shapes<1> s;
    s.a = s.b = s.c = {pick_dim(g, d * d), 0, 0};
    return s;
  };
  auto scanned = [](rng_t& g, index_type d) {  // sums along a line of up to d elements
    operand_shapes<2> s = same_shape(g, d);
    s.growth = std::max(s.a[0], s.a[1]) + 1;
    return s;
  };
  auto r3 = [](rng_t& g, index_type d) {
    operand_shapes<3> s;
    const index_type q = std::max<index_type>(2, d / 4);
    s.a = s.b = s.c = {pick_dim(g, q), pick_dim(g, q), pick_dim(g, q)};
    return s;
  };
  return std::make_tuple(
      make_pattern<2>("a + b", same, [](auto a, auto b, auto, auto) { return a + b; }),
      make_pattern<2>("a * s - b", same, [](auto a, auto b, auto, auto s) { return a * s - b; }),
      make_pattern<2>("(a - b) * (a + c)", same,
                      [](auto a, auto b, auto c, auto) { return (a - b) * (a + c); }),
      make_pattern<2>("min(a, b) + max(b, c)", same,
                      [](auto a, auto b, auto c, auto) { return min(a, b) + max(b, c); }),
      make_pattern<2>("where(a > b, a, c)", same,
                      [](auto a, auto b, auto c, auto) { return where(a > b, a, c); }),
      make_pattern<2>("relu(a - s) + square(b)", same,
                      [](auto a, auto b, auto, auto s) { return relu(a - s) + square(b); }),
      make_pattern<2>("abs(a) * s + c", same,
                      [](auto a, auto, auto c, auto s) { return abs(a) * s + c; }),
      make_pattern<2, floating_only>(
          "exp(a) / (abs(b) + 1)", same,
          [](auto a, auto b, auto, auto s) { return exp(a) / (abs(b) + decltype(s)(1)); }),
      make_pattern<2, floating_only>(
          "sqrt(abs(a)) + tanh(b)", same,
          [](auto a, auto b, auto, auto) { return sqrt(abs(a)) + tanh(b); }),
      make_pattern<2, floating_only>(
          "pow(abs(a) + 1, b)", same,
          [](auto a, auto b, auto, auto s) { return pow(abs(a) + decltype(s)(1), b); }),
      make_pattern<2>("transpose(a)", transposed,
                      [](auto a, auto, auto, auto s) { return transpose(a) + decltype(s)(0); }),
      make_pattern<2>("transpose(a) * s + b", transposed,
                      [](auto a, auto b, auto, auto s) { return transpose(a) * s + b; }),
      make_pattern<2>(
          "transpose(a) - transpose(a) * s + c", transposed,
          [](auto a, auto, auto c, auto s) { return transpose(a) - transpose(a) * s + c; }),
      make_pattern<2>("transpose(transpose(b) + a) + c", transposed,
                      [](auto a, auto b, auto c, auto) { return transpose(transpose(b) + a) + c; }),
      make_pattern<2>("six transposes", transposed,
                      [](auto a, auto b, auto, auto s) {
                        return transpose(a) + transpose(a) - transpose(a) + transpose(a) * s -
                               transpose(a) + transpose(a) + b;
                      }),
      make_pattern<2>("matmul(a, b)", mm,
                      [](auto a, auto b, auto, auto s) { return matmul(a, b) + decltype(s)(0); }),
      make_pattern<2>("relu(matmul(a, b) * s + c)", mm,
                      [](auto a, auto b, auto c, auto s) { return relu(matmul(a, b) * s + c); }),
      make_pattern<2>("matmul(a + s, b) - c", mm,
                      [](auto a, auto b, auto c, auto s) { return matmul(a + s, b) - c; }),
      make_pattern<2>("matmul(a, b) + matmul(a, b) * s", mm,
                      [](auto a, auto b, auto, auto s) { return matmul(a, b) + matmul(a, b) * s; }),
      make_pattern<2>("matmul(a, transpose(b)) + c", square_mm,
                      [](auto a, auto b, auto c, auto) { return matmul(a, transpose(b)) + c; }),
      make_pattern<2>(
          "transpose(matmul(a, b)) + transpose(c)", square_mm,
          [](auto a, auto b, auto c, auto) { return transpose(matmul(a, b)) + transpose(c); }),
      make_pattern<2>("(matmul(a, b) + c).tile<8,8>", mm,
                      [](auto a, auto b, auto c, auto) {
                        if constexpr (requires { (matmul(a, b) + c).template tile<8, 8>(); })
                          return (matmul(a, b) + c).template tile<8, 8>();
                        else
                          return matmul(a, b) + c;
                      }),
      make_pattern<2, rank2_only>(
          "tile_mean<2,2>(a)", tiled(2, 2),
          [](auto a, auto, auto, auto s) { return tile_mean<2, 2>(a) + decltype(s)(0); }),
      make_pattern<2, rank2_only>(
          "tile_mean<4,4>(a * s + b) - c", tiled(4, 4),
          [](auto a, auto b, auto c, auto s) { return tile_mean<4, 4>(a * s + b) - c; }),
      make_pattern<2, rank2_only>("tile_reduce<2,3>(a, max) + c", tiled(2, 3),
                                  [](auto a, auto, auto c, auto) {
                                    if constexpr (is_ref<decltype(a)>)
                                      return tile_reduce<2, 3>(a, max_op{}) + c;
                                    else
                                      return tile_reduce<2, 3>(a, op_max{}) + c;
                                  }),
      make_pattern<2, rank2_only>(
          "tile_mean<3,5>(transpose(a))", tiled_t(3, 5),
          [](auto a, auto, auto c, auto) { return tile_mean<3, 5>(transpose(a)) + c; }),
      make_pattern<2, rank2_only>(
          "tile_mean<16,16>(a) * s", tiled(16, 16),
          [](auto a, auto, auto, auto s) { return tile_mean<16, 16>(a) * s; }),
      make_pattern<2, scalar_result>("sum(a * b)", summed,
                                     [](auto a, auto b, auto, auto) { return sum(a * b); }),
      make_pattern<2, scalar_result>("max_value(a - b)", same,
                                     [](auto a, auto b, auto, auto) {
                                       if constexpr (is_ref<decltype(a)>)
                                         return a.v.size() ? max_value(a - b) : 0.0;
                                       else
                                         return a.extent.size() ? max_value(a - b)
                                                                : decltype(max_value(a - b))(0);
                                     }),
      make_pattern<2, scalar_result>("sum(matmul(a, b))", mm_summed,
                                     [](auto a, auto b, auto, auto) { return sum(matmul(a, b)); }),
      // Mixed element types (c of another type; destinations of another type).
      make_pattern<2, mixed>("mixed: a * s + c", same,
                             [](auto a, auto, auto c, auto s) { return a * s + c; }),
      make_pattern<2, mixed>("mixed: transpose(a) + c", transposed_c,
                             [](auto a, auto, auto c, auto) { return transpose(a) + c; }),
      make_pattern<2, mixed>("mixed: transpose(a)", transposed,
                             [](auto a, auto, auto, auto) { return transpose(a); }),
      make_pattern<2, mixed>(
          "mixed: relu(matmul(a, b) * 2.0 + c)", mm,
          [](auto a, auto b, auto c, auto) { return relu(matmul(a, b) * 2.0 + c); }),
      make_pattern<2, mixed>("mixed: matmul(a, b)", mm,
                             [](auto a, auto b, auto, auto) { return matmul(a, b); }),
      make_pattern<2, mixed>("mixed: matmul(a, c)", mm_c,
                             [](auto a, auto, auto c, auto) { return matmul(a, c); }),
      make_pattern<2, mixed | rank2_only>(
          "mixed: tile_mean<2,2>(a) + c",
          tiled(2, 2), [](auto a, auto, auto c, auto) { return tile_mean<2, 2>(a) + c; }),
      make_pattern<2, mixed | scalar_result>("mixed: sum(a * c)", summed,
                                             [](auto a, auto, auto c, auto) { return sum(a * c); }),
      // Schedules of random sizes (sched(): this case's .tile<...>()) on every node taking one.
      make_pattern<2>("sched(matmul(a, b)) * s + c", mm,
                      [](auto a, auto b, auto c, auto s) { return sched(matmul(a, b)) * s + c; }),
      make_pattern<2, mixed>(
          "mixed: relu(sched(matmul(a, b) + c))", mm,
          [](auto a, auto b, auto c, auto) { return relu(sched(matmul(a, b) + c)); }),
      make_pattern<2, scalar_result>(
          "sum(sched(matmul(a, b)))", mm_summed,
          [](auto a, auto b, auto, auto) { return sum(sched(matmul(a, b))); }),
      make_pattern<2>("sched(transpose(a)) * s + b", transposed,
                      [](auto a, auto b, auto, auto s) { return sched(transpose(a)) * s + b; }),
      make_pattern<2>("sched(transpose(a) + b)", transposed,
                      [](auto a, auto b, auto, auto) { return sched(transpose(a) + b); }),
      make_pattern<2, rank2_only>(
          "sched(tile_mean<4,2>(a)) - c", tiled(4, 2),
          [](auto a, auto, auto c, auto) { return sched(tile_mean<4, 2>(a)) - c; }),
      make_pattern<2>("sched(a * s - b)", same,
                      [](auto a, auto b, auto, auto s) { return sched(a * s - b); }),
      // where with scalar branches and comparison masks.
      make_pattern<2>("where(a > b, 1, 0) * c", same,
                      [](auto a, auto b, auto c, auto s) {
                        using S = decltype(s);
                        return where(a > b, S(1), S(0)) * c;
                      }),
      make_pattern<2>("where(a < b, s, c)", same,
                      [](auto a, auto b, auto c, auto s) { return where(a < b, s, c); }),
      make_pattern<2, mixed>("mixed: where(a > c, a, 0.5)", same,
                             [](auto a, auto, auto c, auto) { return where(a > c, a, 0.5); }),
      // Generated operands and stencils (shift with every boundary policy).
      make_pattern<2>("a * s + ramp(a)", same,
                      [](auto a, auto, auto, auto s) { return a * s + ramp(a); }),
      make_pattern<2>("ramp(b) - transpose(c)", transposed_c,
                      [](auto, auto b, auto c, auto) { return ramp(b) - transpose(c); }),
      make_pattern<2>("star: a * s - shifts of b (zero, clamp, periodic, mirror)", same,
                      [](auto a, auto b, auto, auto s) {
                        return a * s - (shifted(b, 1, 0, tessera::boundary::zero) +
                                        shifted(b, -1, 0, tessera::boundary::clamp) +
                                        shifted(b, 0, 2, tessera::boundary::periodic) +
                                        shifted(b, 0, -2, tessera::boundary::mirror));
                      }),
      make_pattern<2>("shifted(a, 3, -1, constant(2)) * c", same,
                      [](auto a, auto, auto c, auto) {
                        return shifted(a, 3, -1, tessera::boundary::constant(2)) * c;
                      }),
      make_pattern<2>("shifted(matmul(a, b), 1, 1, periodic) + c", mm,
                      [](auto a, auto b, auto c, auto) {
                        return shifted(matmul(a, b), 1, 1, tessera::boundary::periodic) + c;
                      }),
      make_pattern<1>("rank 1: where(a < b, a * s, b - c)", r1,
                      [](auto a, auto b, auto c, auto s) { return where(a < b, a * s, b - c); }),
      // Tier 1 scans and sorts (element-wise producers read inside), Tier 0 tile collectives.
      make_pattern<2, rank2_only>(
          "inclusive_scan(a * s - b, 1) + c", scanned,
          [](auto a, auto b, auto c, auto s) { return inclusive_scan(a * s - b, 1) + c; }),
      make_pattern<2, rank2_only>(
          "exclusive_scan(a - c, 0) * s", scanned,
          [](auto a, auto, auto c, auto s) { return exclusive_scan(a - c, 0) * s; }),
      make_pattern<2, rank2_only>(
          "inclusive_scan(b, 0, max) - a", same,
          [](auto a, auto b, auto, auto) { return inclusive_scan(b, 0, op_max{}) - a; }),
      make_pattern<1>("rank 1: sorted(a * s - b) + c", r1,
                      [](auto a, auto b, auto c, auto s) { return sorted(a * s - b) + c; }),
      make_pattern<2, rank2_only>(
          "tile_sums_over_tile<2,3>(a * s - b) + c", tiled(2, 3),
          [](auto a, auto b, auto c, auto s) { return tile_sums_over_tile<2, 3>(a * s - b) + c; }),
      make_pattern<3>("rank 3: relu(a * b - c) + s", r3,
                      [](auto a, auto b, auto c, auto s) { return relu(a * b - c) + s; }));
}
using catalogue_t = decltype(catalogue());
inline constexpr int pattern_count = std::tuple_size_v<catalogue_t>;

// --- one case ------------------------------------------------------------------------------------

enum class mode {
  existing,
  eval,
  construct,
  empty_array,
  alias_output,
  overlapping_views,
  compound,
  section_destination,
  count
};
inline const char* to_string(mode m) {
  switch (m) {
    case mode::existing:
      return "existing array";
    case mode::eval:
      return "eval";
    case mode::construct:
      return "constructor";
    case mode::empty_array:
      return "default-constructed array";
    case mode::alias_output:
      return "output aliases operand a";
    case mode::overlapping_views:
      return "overlapping sections of one buffer";
    case mode::compound:
      return "D = 3 (fill), D -= e, D *= 2";
    case mode::section_destination:
      return "a section of a wider array (the rest must stay untouched)";
    case mode::count:
      break;
  }
  return "?";
}
enum class elem { f32, f64, i32, count };
inline const char* to_string(elem e) {
  return e == elem::f32 ? "float" : e == elem::f64 ? "double" : "int";
}

struct case_desc {
  int pattern = 0;
  elem type = elem::f32;
  mode how = mode::existing;
  index_type max_dim = 64;
  std::uint64_t data_seed = 0;
  bool b_is_section = false;
  bool dest_other = false;  ///< mixed patterns, existing mode: a destination of dest_t<V>
  int tile[3] = {0, 0, 0};  ///< the schedule sched() gives (0: the backend's default)
};
inline std::string schedule_text(const case_desc& cd) {
  if (!cd.tile[0]) return "";
  std::string t = ", tile<" + std::to_string(cd.tile[0]);
  for (int k = 1; k < 3 && cd.tile[k]; ++k) t += "," + std::to_string(cd.tile[k]);
  return t + ">";
}

struct outcome {
  bool ok = true;
  bool skipped = false;
  std::string what;
  std::string shape;
};

template <int N>
tessera::extent<N> ext_of(const std::array<index_type, 3>& d) {
  tessera::extent<N> e;
  for (int k = 0; k < N; ++k) e[k] = d[std::size_t(k)];
  return e;
}
template <int N>
std::string shape_text(const operand_shapes<N>& s) {
  auto one = [](const std::array<index_type, 3>& d) {
    std::string t = "(";
    for (int k = 0; k < N; ++k) t += (k ? "," : "") + std::to_string(d[std::size_t(k)]);
    return t + ")";
  };
  return "a" + one(s.a) + " b" + one(s.b) + " c" + one(s.c);
}

template <class T>
std::vector<T> random_values(std::size_t n, rng_t& g) {
  std::vector<T> v(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int> d(-9, 9);
    for (auto& x : v) x = T(d(g));
  } else {
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    for (auto& x : v) x = T(d(g));
  }
  return v;
}

/// The reference operand of rank N: rank 2 as a row-major matrix; ranks 1 and 3 (elementwise
/// patterns only) as one row.
template <int N, class T>
ref2 to_ref(const std::vector<T>& v, const std::array<index_type, 3>& d) {
  if constexpr (N == 2) {
    ref2 r(d[0], d[1]);
    for (std::size_t k = 0; k < v.size(); ++k) r.data()[k] = double(v[k]);
    return r;
  } else {
    ref2 r(1, Eigen::Index(v.size()));
    for (std::size_t k = 0; k < v.size(); ++k) r.data()[k] = double(v[k]);
    return r;
  }
}

template <class T>
double unit_roundoff() {
  if constexpr (std::is_integral_v<T>)
    return 0.0;
  else
    return std::numeric_limits<T>::epsilon() / 2;
}

/// Compares a Tessera result (row-major values) with the reference; u: the largest unit
/// roundoff of the element types the result went through.
template <class T>
outcome compare(const std::vector<T>& got, const ref2& want, index_type growth, double u) {
  outcome o;
  if (std::size_t(want.size()) != got.size()) {
    o.ok = false;
    o.what = "result has " + std::to_string(got.size()) + " elements, reference " +
             std::to_string(want.size());
    return o;
  }
  const double scale = want.size() ? want.abs().maxCoeff() : 0.0;
  const double tol = 64 * u * double(growth + 1) * (1 + scale);
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double g = double(got[k]), w = want.data()[k];
    const bool same = (std::isnan(g) && std::isnan(w)) || std::abs(g - w) <= tol;
    if (!same) {
      o.ok = false;
      o.what = "element " + std::to_string(k) + ": tessera " + std::to_string(g) + ", reference " +
               std::to_string(w) + " (tolerance " + std::to_string(tol) + ")";
      return o;
    }
  }
  return o;
}

/// Runs pattern P on element type T as described; shapes from `rng`.
template <class P, class T>
outcome run_typed(const P& p, const case_desc& cd, rng_t& shape_rng) {
  constexpr int N = P::rank;
  operand_shapes<N> sh = p.shapes(shape_rng, cd.max_dim);
  outcome o;
  o.shape = shape_text(sh);
  rng_t g(cd.data_seed);
  auto size_of = [](const std::array<index_type, 3>& d) {
    index_type s = 1;
    for (int k = 0; k < N; ++k) s *= d[std::size_t(k)];
    return std::size_t(s);
  };
  // Operand c of a mixed pattern has another type; its values are T's (exact in both types).
  using CT = std::conditional_t<(P::flags & mixed) != 0, other_t<T>, T>;
  auto va = random_values<T>(size_of(sh.a), g);
  auto vb = random_values<T>(size_of(sh.b), g);
  const auto vt = random_values<T>(size_of(sh.c), g);
  const std::vector<CT> vc(vt.begin(), vt.end());
  const T s = std::is_integral_v<T> ? T(3) : T(0.75);
  integer_mode() = std::is_integral_v<T>;
  current_schedule() = tessera::schedule{};
  for (int k = 0; k < 3; ++k) current_schedule().tile[k] = cd.tile[k];
  auto u_of = [](auto... x) {
    return std::max({unit_roundoff<decltype(x)>()...});
  };

  // Reference.
  const rv ra{to_ref<N>(va, sh.a)}, rb{to_ref<N>(vb, sh.b)}, rc{to_ref<N>(vc, sh.c)};
  // Operands (one expression type per pattern and element type): a is an array_view over an
  // array (or, for overlapping assignments, over a section of a buffer the output also lies
  // in), b an array_view over caller memory (optionally a strided section of a larger
  // buffer), c an array.
  tessera::array<T, N> A(ext_of<N>(sh.a), va.begin(), va.end());
  std::vector<T> overlap_buf;
  tessera::array_view<T, N> Aw(A);
  if constexpr (N == 2) {
    if (cd.how == mode::overlapping_views && sh.a[0] > 0) {
      // A buffer of rows + 1 rows: a is rows 0..m-1, the output rows 1..m.
      overlap_buf.assign(std::size_t((sh.a[0] + 1) * sh.a[1]), T(0));
      for (std::size_t k = 0; k < va.size(); ++k) overlap_buf[k] = va[k];
      tessera::array_view<T, 2> whole(tessera::extent<2>(sh.a[0] + 1, sh.a[1]), overlap_buf.data());
      Aw = whole.section(tessera::index<2>(0, 0), ext_of<2>(sh.a));
    }
  }
  const tessera::array_view<const T, N> Av = Aw;
  std::vector<T> b_store;
  tessera::array_view<const T, N> B;
  bool section = false;
  if constexpr (N == 2) {
    if (cd.b_is_section) {
      section = true;
      const index_type pad = 3;
      b_store.assign(std::size_t((sh.b[0] + 1) * (sh.b[1] + pad)), T(99));
      for (index_type i = 0; i < sh.b[0]; ++i)
        for (index_type j = 0; j < sh.b[1]; ++j)
          b_store[std::size_t((i + 1) * (sh.b[1] + pad) + j + 1)] =
              vb[std::size_t(i * sh.b[1] + j)];
      tessera::array_view<const T, N> whole(ext_of<N>({sh.b[0] + 1, sh.b[1] + pad, 0}),
                                            b_store.data());
      tessera::index<N> origin;
      origin[0] = 1;
      origin[1] = 1;
      B = whole.section(origin, ext_of<N>(sh.b));
    }
  }
  if (!section) {
    b_store = vb;
    B = tessera::array_view<const T, N>(ext_of<N>(sh.b), b_store.data());
  }
  const tessera::array<CT, N> C(ext_of<N>(sh.c), vc.begin(), vc.end());

  if constexpr ((P::flags & scalar_result) != 0) {
    const auto got = p.f(Av, B, C, s);
    using G = std::remove_cvref_t<decltype(got)>;
    ref2 want(1, 1);
    want(0, 0) = double(p.f(ra, rb, rc, double(s)));  // a scalar
    outcome r = compare<G>(std::vector<G>{got}, want, sh.growth, u_of(T{}, CT{}, G{}));
    r.shape = o.shape;
    return r;
  } else {
    const auto e = p.f(Av, B, C, s);
    using E = std::remove_cvref_t<decltype(e)>;
    using V = typename E::value_type;
    const ref2 want = p.f(ra, rb, rc, double(s)).v;
    std::vector<V> got;
    double u = u_of(T{}, CT{}, V{});
    switch (cd.how) {
      case mode::existing: {
        if constexpr ((P::flags & mixed) != 0) {
          if (cd.dest_other) {
            // A destination of another type than the expression's.
            tessera::array<dest_t<V>, N> D(e.get_extent());
            D = e;
            const auto d = D.to_vector();
            got.assign(d.begin(), d.end());
            u = std::max(u, unit_roundoff<dest_t<V>>());
            break;
          }
        }
        tessera::array<V, N> D(e.get_extent());
        D = e;
        got = D.to_vector();
        break;
      }
      case mode::eval:
        got = tessera::eval(e).to_vector();
        break;
      case mode::construct: {
        tessera::array<V, N> D = e;
        got = D.to_vector();
        break;
      }
      case mode::empty_array: {
        tessera::array<V, N> D;
        D = e;
        got = D.to_vector();
        break;
      }
      case mode::alias_output: {
        // A = f(A, ...): only when the output has a's extent and type.
        if constexpr (std::is_same_v<V, T>) {
          if (e.get_extent() == A.extent) {
            A = e;
            got = A.to_vector();
            break;
          }
        }
        o.skipped = true;
        return o;
      }
      case mode::overlapping_views: {
        // The output section starts one row below a's: they overlap unless a has one row.
        if constexpr (N == 2 && std::is_same_v<V, T>) {
          const auto x = e.get_extent();
          if (!overlap_buf.empty() && x == A.extent) {
            tessera::array_view<T, 2> whole(tessera::extent<2>(x[0] + 1, x[1]), overlap_buf.data());
            auto out = whole.section(tessera::index<2>(1, 0), x);
            tessera::assign(out, e);
            out.synchronize();
            got = out.to_vector();
            break;
          }
        }
        o.skipped = true;
        return o;
      }
      case mode::compound: {
        // A fill and two compound assignments: D = 3; D -= e; D *= 2 (reference: 2 (3 - e)).
        if constexpr (std::is_same_v<V, bool>) {
          o.skipped = true;
          return o;
        }
        tessera::array<V, N> D(e.get_extent());
        D = 3;
        D -= e;
        D *= 2;
        got = D.to_vector();
        const ref2 w = (3.0 - want) * 2.0;
        outcome r = compare<V>(got, w, sh.growth, u);
        r.shape = o.shape;
        return r;
      }
      case mode::section_destination: {
        // The output is rows 1.. and columns 2.. of an array two rows and five columns larger,
        // filled with 7 first: the section gets e, every other element keeps its 7.
        if constexpr (N == 2 && !std::is_same_v<V, bool>) {
          const auto x = e.get_extent();
          tessera::array<V, 2> W(tessera::extent<2>(x[0] + 2, x[1] + 5));
          W = 7;
          tessera::assign(W.section(tessera::index<2>(1, 2), x), e);
          const auto all = W.to_vector();
          const index_type wc = x[1] + 5;
          for (index_type i = 0; i < x[0] + 2; ++i)
            for (index_type j = 0; j < wc; ++j) {
              const bool inside = i >= 1 && i < x[0] + 1 && j >= 2 && j < x[1] + 2;
              const V v = all[std::size_t(i * wc + j)];
              if (inside) {
                got.push_back(v);
              } else if (v != V(7)) {
                o.ok = false;
                o.what = "element (" + std::to_string(i) + ", " + std::to_string(j) +
                         ") outside the destination section changed";
                return o;
              }
            }
          break;
        }
        o.skipped = true;
        return o;
      }
      case mode::count:
        break;
    }
    outcome r = compare<V>(got, want, sh.growth, u);
    r.shape = o.shape;
    return r;
  }
  return o;
}

template <class P>
outcome run_pattern(const P& p, const case_desc& cd, rng_t& shape_rng) {
  try {
    if (cd.type == elem::f32) return run_typed<P, float>(p, cd, shape_rng);
    if (cd.type == elem::f64 || (P::flags & floating_only))
      return run_typed<P, double>(p, cd, shape_rng);
    if constexpr ((P::flags & floating_only) == 0) return run_typed<P, int>(p, cd, shape_rng);
  } catch (const std::exception& ex) {
    outcome o;
    o.ok = false;
    o.what = std::string("unexpected exception: ") + ex.what();
    return o;
  }
  return {};
}

/// Calls f(pattern) for pattern number `id` of the catalogue.
template <class F, std::size_t... I>
void with_pattern(const catalogue_t& cat, int id, F&& f, std::index_sequence<I...>) {
  ((I == std::size_t(id) ? (f(std::get<I>(cat)), 0) : 0), ...);
}
template <class F>
void with_pattern(const catalogue_t& cat, int id, F&& f) {
  with_pattern(cat, id, f, std::make_index_sequence<pattern_count>{});
}

/// The runner of every pattern is compiled in one of `part_count` translation units
/// (fuzz_part_K.cpp, made by CMake: pattern I in part I % part_count), so the fuzzer's build
/// runs in parallel.
inline constexpr int part_count = 4;
template <int Part, std::size_t I, class F>
void visit_if_in_part(const catalogue_t& cat, int id, F& f) {
  if constexpr (I % part_count == std::size_t(Part))
    if (I == std::size_t(id)) f(std::get<I>(cat));
}
template <int Part, class F, std::size_t... I>
void with_pattern_in_part(const catalogue_t& cat, int id, F&& f, std::index_sequence<I...>) {
  (visit_if_in_part<Part, I>(cat, id, f), ...);
}

/// Runs case `cd` when its pattern is in part `Part` (shapes drawn from `shape_seed` with its
/// max_dim); explicitly instantiated in fuzz_part_<Part>.cpp.
template <int Part>
outcome run_case_part(const case_desc& cd, std::uint64_t shape_seed) {
  const auto cat = catalogue();
  outcome o;
  rng_t g(shape_seed);
  with_pattern_in_part<Part>(
      cat, cd.pattern, [&](const auto& p) { o = run_pattern(p, cd, g); },
      std::make_index_sequence<pattern_count>{});
  return o;
}
extern template outcome run_case_part<0>(const case_desc&, std::uint64_t);
extern template outcome run_case_part<1>(const case_desc&, std::uint64_t);
extern template outcome run_case_part<2>(const case_desc&, std::uint64_t);
extern template outcome run_case_part<3>(const case_desc&, std::uint64_t);

/// Case `k` of `seed`: pattern, type, mode, operands; independent of every other case.
inline case_desc describe_case(std::uint64_t seed, std::uint64_t k, index_type max_dim) {
  rng_t g(seed * 0x9E3779B97F4A7C15ull + k * 0xBF58476D1CE4E5B9ull + 1);
  case_desc cd;
  cd.pattern = std::uniform_int_distribution<int>(0, pattern_count - 1)(g);
  cd.type = elem(std::uniform_int_distribution<int>(0, int(elem::count) - 1)(g));
  cd.how = mode(std::uniform_int_distribution<int>(0, int(mode::count) - 1)(g));
  cd.b_is_section = std::uniform_int_distribution<int>(0, 3)(g) == 0;
  // Mostly small shapes (fast, edge-heavy), sometimes larger ones (several tiles, blocks).
  cd.max_dim = std::uniform_int_distribution<int>(0, 7)(g) == 0 ? 3 * max_dim : max_dim;
  cd.data_seed = g();
  cd.dest_other = std::uniform_int_distribution<int>(0, 1)(g) == 1;
  // Half the cases schedule sched() nodes: tile sizes a user could write, compiled and not.
  static const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 24, 31, 32, 33, 48, 64};
  auto size = [&] {
    return sizes[std::uniform_int_distribution<int>(0, 14)(g)];
  };
  if (std::uniform_int_distribution<int>(0, 1)(g)) {
    cd.tile[0] = size();
    if (std::uniform_int_distribution<int>(0, 1)(g)) cd.tile[1] = size();
    if (cd.tile[1] && std::uniform_int_distribution<int>(0, 2)(g) == 0) cd.tile[2] = size();
  }
  return cd;
}

inline std::string pattern_name(const catalogue_t& cat, int id) {
  std::string n;
  with_pattern(cat, id, [&](const auto& p) { n = p.name; });
  return n;
}

/// Runs case `cd`; shapes drawn from `shape_seed` with its max_dim.
inline outcome run_case(const case_desc& cd, std::uint64_t shape_seed) {
  static_assert(part_count == 4, "one case per part below");
  switch (cd.pattern % part_count) {
    case 0:
      return run_case_part<0>(cd, shape_seed);
    case 1:
      return run_case_part<1>(cd, shape_seed);
    case 2:
      return run_case_part<2>(cd, shape_seed);
    default:
      return run_case_part<3>(cd, shape_seed);
  }
}

}  // namespace fuzz
