// Mixed element types: every kernel family (elementwise, staged transpose, matmul packed / tile
// program / run-time tile, tile_reduce) with operands of float, double and int and destinations
// of each type (test_schedules.cpp: schedules of every size).
// Data are small integers, so every type computes exact values: the checks are exact against a
// double reference converted to the destination type (tolerance 0), except where a float
// product of up to K terms is compared (exact too: |values| <= 4, K <= 97, sums < 2^24).
#include "test_util.hpp"

#include <cmath>

namespace {
using namespace tessera;
using tt::max_abs_diff;
using MD = eigen_matrix<double>;
using tt::make;
using tt::read;
using tt::small_ints;

/// The reference as the destination type D stores it (a double value converted to D).
template <class D>
MD stored(const MD& m) {
  return m.cast<D>().template cast<double>();
}

template <class TA, class TB, class TD>
void check_families(long r, long c, long k) {
  CAPTURE(r);
  CAPTURE(c);
  CAPTURE(k);
  const MD a = small_ints(r, k), b = small_ints(k, c), x = small_ints(r, c), y = small_ints(c, r);
  const MD xr = small_ints(2 * r, 2 * c);
  const array<TA, 2> A = make<TA>(a), Y = make<TA>(y), XA = make<TA>(x);
  const array<TA, 2> Bm = make<TA>(b);
  const array<TB, 2> X = make<TB>(x), XR = make<TB>(xr);
  array<TD, 2> D(r, c);

  // elementwise
  D = XA * 2 + X;
  CHECK(max_abs_diff(read(D), stored<TD>(2 * x + x)) == 0.0);
  // staged transpose, alone and in an expression (the D = transpose(A) + B)
  D = transpose(Y);
  CHECK(max_abs_diff(read(D), stored<TD>(y.transpose())) == 0.0);
  D = transpose(Y) + X;
  CHECK(max_abs_diff(read(D), stored<TD>(MD(y.transpose() + x))) == 0.0);
  // matmul, alone and with an epilogue of another type
  D = matmul(A, Bm);
  CHECK(max_abs_diff(read(D), stored<TD>(a * b)) == 0.0);
  D = relu(matmul(A, Bm) * 2.0 + X);
  CHECK(max_abs_diff(read(D), stored<TD>(MD((2 * (a * b) + x).cwiseMax(0.0)))) == 0.0);
  D = matmul(A, Bm).template tile<8, 8>() - X;
  CHECK(max_abs_diff(read(D), stored<TD>(MD(a * b - x))) == 0.0);
  D = matmul(A, Bm).template tile<24, 40, 8>() + X;
  CHECK(max_abs_diff(read(D), stored<TD>(MD(a * b + x))) == 0.0);
  // tile_reduce: sums of 2x2 tiles, with an epilogue of the other type
  D = tile_reduce<2, 2>(XR, ops::add{}) * TA(3);
  MD ref(r, c);
  for (long i = 0; i < r; ++i)
    for (long j = 0; j < c; ++j) ref(i, j) = 3 * xr.block(2 * i, 2 * j, 2, 2).sum();
  CHECK(max_abs_diff(read(D), stored<TD>(ref)) == 0.0);
}

TEST_CASE_TEMPLATE("every kernel family with mixed operand and destination types", TD, float,
                   double, int) {
  const std::vector<std::array<long, 3>> shapes = {
      {1, 1, 1}, {7, 5, 3}, {17, 33, 9}, {40, 16, 97}, {3, 70, 20}};
  for (const auto& s : shapes) {
    check_families<float, double, TD>(s[0], s[1], s[2]);
    check_families<double, float, TD>(s[0], s[1], s[2]);
    check_families<int, float, TD>(s[0], s[1], s[2]);
  }
}

}  // namespace
