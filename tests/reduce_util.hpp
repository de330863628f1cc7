// Helpers shared by the units of test_reduce (one executable, its cases compiled in several
// units: test_reduce*.cpp): fixed-seed data, the long double reference, the bits of a value,
// and the check that reductions of expressions give the bits of their values materialized.
// Tolerances: test_reduce.cpp's header.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "test_util.hpp"

namespace {
using namespace tessera;
using tessera::index;

// --- helpers ---------------------------------------------------------------------------------

/// n values uniform in [-1, 1) from the fixed-seed generator.
template <class T>
std::vector<T> random_data(index_type n) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(d(tt::rng()));
  return v;
}

template <class T, int N>
array<T, N> make_array(const extent<N>& e, const std::vector<T>& v) {
  return array<T, N>(e, v.begin(), v.end());
}

/// Rank-2 operands of the expression folds' checks: a, b float and c, d double, of one extent,
/// random values drawn in that order (test_reduce_expr_rank2.cpp, test_reduce_expr_sections.cpp).
struct rank2_operands {
  array<float, 2> a, b;
  array<double, 2> c, d;
};
inline rank2_operands random_rank2_operands(const extent<2>& x) {
  const long n = x.size();
  auto a = make_array(x, random_data<float>(n));
  auto b = make_array(x, random_data<float>(n));
  auto c = make_array(x, random_data<double>(n));
  auto d = make_array(x, random_data<double>(n));
  return {std::move(a), std::move(b), std::move(c), std::move(d)};
}
/// The (rows, cols) those checks run on: single elements, rows shorter and longer than the
/// lanes and blocks, one row block of many.
inline std::vector<std::pair<long, long>> expression_rank2_shapes() {
  return {{1, 1}, {5, 3}, {33, 17}, {7, 257}, {64, 64}, {3, 1000}, {300, 301}};
}

struct reference {
  long double sum = 0, abs_sum = 0;
};
/// The sum in long double with Neumaier's compensation: for these sizes, exact to far below
/// any tolerance used here.
template <class T>
reference exact_sum(const std::vector<T>& v) {
  reference r;
  long double c = 0;
  for (T x : v) {
    const long double y = x, t = r.sum + y;
    c += std::fabs(r.sum) >= std::fabs(y) ? (r.sum - t) + y : (y - t) + r.sum;
    r.sum = t;
    r.abs_sum += std::fabs(y);
  }
  r.sum += c;
  return r;
}

template <class T>
constexpr double unit_roundoff() {
  return std::numeric_limits<T>::epsilon() / 2;
}
/// The documented bound of sum(e) for float and double (4 block roundings each).
template <class T>
double sum_tolerance(const reference& r) {
  const double u = unit_roundoff<T>();
  const double blocks = 4.01;  // float and double: blocks of 16, 4 roundings
  return u * std::fabs(double(r.sum)) + blocks * u * double(r.abs_sum) + 1e-300;
}

template <class T>
std::uint64_t bits(T x) {
  std::uint64_t b = 0;
  std::memcpy(&b, &x, sizeof(T));
  return b;
}

/// Reductions of expression e against the same reductions of its values materialized in an
/// array: the same bits. Every reduction (sum, mean, reduce with +, min, max) with All, else
/// sum and max (fewer instantiations for the device builds).
template <bool All = false, class E>
void check_folds_as_materialized(const E& e) {
  using T = typename E::value_type;
  array<T, E::rank> m(e.get_extent());
  m = e;
  CHECK(bits(sum(e)) == bits(sum(m)));
  CHECK(bits(max_value(e)) == bits(max_value(m)));
  if constexpr (All) {
    CHECK(bits(mean(e)) == bits(mean(m)));
    CHECK(bits(reduce(e, T(0), plus<>{})) == bits(reduce(m, T(0), plus<>{})));
    CHECK(bits(min_value(e)) == bits(min_value(m)));
  }
}

/// The expressions of check_expression_folds on operands a, b (float) and c, d (double) of one
/// extent: products (a fold that fused a product into its sum would round differently; every
/// reduction), comparisons and where, a unary function of a difference, a conversion, and
/// (rank >= 2) a shifted operand.
template <class A, class C>
void check_expression_set(const A& a, const A& b, const C& c, const C& d) {
  check_folds_as_materialized<true>(a * b);
  check_folds_as_materialized<true>(c * d);
  check_folds_as_materialized(where(a > b, a, b * 2.f));
  check_folds_as_materialized(relu(a - b));
  check_folds_as_materialized(a * 0.1);  // float * double: a double expression
  if constexpr (A::rank >= 2) {
    index<A::rank> off;
    off[A::rank - 1] = 1;
    check_folds_as_materialized(shift(a, off, boundary::clamp) * b);
  }
}
}  // namespace
