// Schedules and plans of mixed types: `.tile<...>()` schedules of many sizes (not only the
// compiled ones) on every node that takes one, inside whole expressions and reductions; the
// plan of a matmul stored as another type; where() with masks and scalar branches.
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

TEST_CASE("the plan says where a matmul accumulates when the output has another type") {
  array<float, 2> A(9, 5), B(5, 7);
  array<double, 2> E(9, 7);
  array<float, 2> F(9, 7);
  const std::string fresh = explain(relu(matmul(A, B) * 2.0));
  // A fresh destination has the expression's type (double); the float accumulator then needs
  // a workspace on the CPU kernel family, never on the GPU family (it converts per element).
  if (backends::backend<execution_space>::make_target().matmul.packed) {
    CHECK(tt::has(fresh, "c_work"));
    CHECK(tt::has(fresh, "workspace as double"));
  }
  CHECK(tt::has(fresh, "out : double"));
  E = relu(matmul(A, B) * 2.0);
  F = relu(matmul(A, B) * 2.0);  // same expression type, a float destination: another plan
  CHECK(max_abs_diff(read(E), read(F)) == 0.0);
}

TEST_CASE("matmul schedules of every tile size, in expressions and reductions") {
  // Square, rectangular and three-size tiles; the compiled tile programs (8, 16, 32) and
  // run-time tiles (everything else), on shapes that are and are not tile multiples.
  const MD a = tt::random_matrix<double>(45, 70), b = tt::random_matrix<double>(70, 33);
  const array<float, 2> A = make<float>(a), B = make<float>(b);
  const array<double, 2> Ad = make<double>(a), Bd = make<double>(b);
  const MD ab = a.cast<float>().cast<double>() * b.cast<float>().cast<double>();
  array<float, 2> C(45, 33);
  array<double, 2> Cd(45, 33);
  auto check = [&](auto scheduled, auto scheduled_d, const char* what) {
    CAPTURE(what);
    C = scheduled;
    CHECK(max_abs_diff(read(C), ab) <= 1e-5 * 71);
    Cd = scheduled_d;
    CHECK(max_abs_diff(read(Cd), a * b) <= 1e-12 * 71);
    // inside an expression and a whole-array reduction
    C = relu(scheduled) + 1.f;
    CHECK(max_abs_diff(read(C), MD(ab.cwiseMax(0.0).array() + 1.0)) <= 1e-5 * 71);
    CHECK(std::abs(sum(scheduled_d) - (a * b).sum()) <= 1e-10 * 45 * 33);
  };
  check(matmul(A, B).tile<64, 64>(), matmul(Ad, Bd).tile<64, 64>(), "64x64");
  check(matmul(A, B).tile<1>(), matmul(Ad, Bd).tile<1>(), "1x1");
  check(matmul(A, B).tile<3, 5>(), matmul(Ad, Bd).tile<3, 5>(), "3x5");
  check(matmul(A, B).tile<7, 2, 13>(), matmul(Ad, Bd).tile<7, 2, 13>(), "7x2, K step 13");
  check(matmul(A, B).tile<8>(), matmul(Ad, Bd).tile<8>(), "8 (tile program)");
  check(matmul(A, B).tile<16, 16>(), matmul(Ad, Bd).tile<16, 16>(), "16 (tile program)");
  check(matmul(A, B).tile<32>(), matmul(Ad, Bd).tile<32>(), "32");
  check(matmul(A, B).tile<33, 47>(), matmul(Ad, Bd).tile<33, 47>(), "33x47");
  check(matmul(A, B).tile<128, 16, 4>(), matmul(Ad, Bd).tile<128, 16, 4>(), "128x16x4");
  // integers: the generic kernels only
  const MD ia = small_ints(31, 19), ib = small_ints(19, 26);
  const array<int, 2> IA = make<int>(ia), IB = make<int>(ib);
  array<int, 2> IC(31, 26);
  IC = matmul(IA, IB).tile<5, 9>();
  CHECK(max_abs_diff(read(IC), ia * ib) == 0.0);
  IC = matmul(IA, IB).tile<48>();
  CHECK(max_abs_diff(read(IC), ia * ib) == 0.0);
}

TEST_CASE("transpose and elementwise schedules of many sizes") {
  const MD a = small_ints(53, 38), b = small_ints(38, 53);
  const array<float, 2> A = make<float>(a), B = make<float>(b);
  array<float, 2> T(38, 53);
  T = transpose(A).tile<5, 7>() + B;
  CHECK(max_abs_diff(read(T), MD(a.transpose() + b)) == 0.0);
  T = transpose(A).tile<64>();
  CHECK(max_abs_diff(read(T), MD(a.transpose())) == 0.0);
  T = (transpose(A) * 2.f).tile<1, 3>() - B;
  CHECK(max_abs_diff(read(T), MD(2 * a.transpose() - b)) == 0.0);
  T = (B + 1.f).tile<13>();
  CHECK(max_abs_diff(read(T), MD(b.array() + 1.0)) == 0.0);
  CHECK(sum(transpose(A).tile<24, 8>()) == doctest::Approx(a.sum()));
}

TEST_CASE("where with a comparison mask and scalar branches") {
  const MD a = small_ints(19, 23), b = small_ints(19, 23);
  const array<float, 2> A = make<float>(a), B = make<float>(b);
  array<float, 2> M(19, 23);
  M = where(A > B, 1.f, 0.f);
  CHECK(max_abs_diff(read(M), MD((a.array() > b.array()).cast<double>())) == 0.0);
  array<double, 2> W(19, 23);
  W = where(A == B, A, 0.5);
  CHECK(max_abs_diff(read(W), MD((a.array() == b.array()).select(a, 0.5))) == 0.0);
  CHECK(sum(where(A < B, 2, 0)) == 2 * (a.array() < b.array()).count());
}

}  // namespace
