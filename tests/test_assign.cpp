// In-place and initialising assignment (Tier 1): compound assignment (+= -= *= /=) of arrays
// and array_views from expressions, arrays and scalars; fills (`A = v`, fill()); generated
// operands (generate(extent, f)); array::section; plans for a given destination (plan(dst, e)).
// References are Eigen arrays computed on copies; shapes are the edge sizes of test_util.hpp
// (0, 1, primes, tile non-multiples) with seeded random data. Elementwise results compare
// within 1e-6 relative (float; exact where every value is a small integer).
#include "test_util.hpp"

#include <string>

using namespace tessera;
using emat = Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

emat read_arr(const array<float, 2>& a) {
  return tt::read(a).array();
}
void check_close(const emat& got, const emat& want, double tol = 1e-6) {
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  for (Eigen::Index i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got.data()[i] - want.data()[i]) <= tol * (1.0 + std::abs(want.data()[i])));
  }
}
bool has(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

}  // namespace

TEST_CASE("compound assignment: += -= *= /= from expressions, arrays and scalars") {
  for (long r : tt::edge_sizes())
    for (long c : {1L, 7L, 33L}) {
      CAPTURE(r);
      CAPTURE(c);
      const auto ea = tt::random_matrix<float>(r, c), eb = tt::random_matrix<float>(r, c);
      array<float, 2> A = from_eigen(ea), B = from_eigen(eb);
      emat a = ea.cast<double>().array(), b = eb.cast<double>().array();
      A += B;
      a += b;
      check_close(read_arr(A), a);
      A -= B * 2.f;
      a -= b * 2.0;
      check_close(read_arr(A), a);
      A *= B + 1.5f;
      a *= b + 1.5;
      check_close(read_arr(A), a);
      A /= abs(B) + 1.f;
      a /= b.abs() + 1.0;
      check_close(read_arr(A), a);
      A += 2.5;
      a += 2.5;
      check_close(read_arr(A), a);
      A *= 0.5f;
      a *= 0.5;
      check_close(read_arr(A), a);
      A -= A;  // the destination on both sides, read at the index written
      check_close(read_arr(A), emat::Zero(r, c));
    }
}

TEST_CASE("compound assignment: mixed element types and an integer destination (exact)") {
  const auto m = tt::small_ints(13, 9), k = tt::small_ints(13, 9);
  array<int, 2> I = tt::make<int>(m);
  array<double, 2> D = tt::make<double>(k);
  I += D;  // converted to int, exact for small integers
  I *= 3;  // scalar
  I -= tt::make<float>(k);
  CHECK(tt::read(I) == ((m + k) * 3 - k).eval());
}

TEST_CASE("compound assignment: in place where the access pattern allows it") {
  const auto ea = tt::random_matrix<float>(31, 31), eb = tt::random_matrix<float>(31, 31);
  array<float, 2> A = from_eigen(ea), B = from_eigen(eb);
  // Read at the index written: one kernel, no temporary.
  const auto p = plan(A, A + B);
  REQUIRE(p.kernels.size() == 1);
  CHECK_FALSE(has(codegen::to_string(p), "temporary"));
  // Read at other indices: a temporary and a copy, with the reason.
  const std::string t = explain(A, A + transpose(A));
  CHECK(has(t, "temporary"));
  A += transpose(A);
  const emat a = ea.cast<double>().array();
  check_close(read_arr(A), a + a.transpose());
  // matmul accumulating into its destination (BLAS beta = 1) is right.
  array<float, 2> C = from_eigen(eb);
  C += matmul(B, B);
  const Eigen::MatrixXd bb = eb.cast<double>();
  check_close(read_arr(C), (bb + bb * bb).array(), 1e-5);
}

TEST_CASE("compound assignment: array_view and overlapping sections of one array") {
  for (long n : {1L, 2L, 17L, 64L}) {
    CAPTURE(n);
    const auto ea = tt::random_matrix<float>(n + 2, n + 3);
    array<float, 2> A = from_eigen(ea);
    emat a = ea.cast<double>().array();
    // The interior updated from its neighbour one row down: sections of one buffer that
    // overlap at other indices (a temporary decides nothing is read after it is written).
    A.section(tessera::index<2>(0, 1), extent<2>(n + 1, n + 1)) +=
        A.section(tessera::index<2>(1, 1), extent<2>(n + 1, n + 1));
    const emat below = a.block(1, 1, n + 1, n + 1);
    a.block(0, 1, n + 1, n + 1) += below;
    check_close(read_arr(A), a);
    // A view of caller memory.
    std::vector<float> host(std::size_t((n + 2) * (n + 3)), 1.f);
    array_view<float, 2> v(extent<2>(n + 2, n + 3), host.data());
    v += A;
    v *= 2;
    v.synchronize();
    const emat got =
        Eigen::Map<Eigen::Array<float, -1, -1, Eigen::RowMajor>>(host.data(), n + 2, n + 3)
            .cast<double>();
    check_close(got, (a + 1.0) * 2.0);
  }
}

TEST_CASE("fill: A = v, fill(A, v), fill of a section, an empty array, converted values") {
  for (long r : tt::edge_sizes()) {
    CAPTURE(r);
    array<float, 2> A(r, r + 1);
    A = 2.0;
    CHECK(read_arr(A).isApproxToConstant(2.0));
    fill(A, -3);
    CHECK(read_arr(A).isApproxToConstant(-3.0));
    if (r >= 3) {
      fill(A.section(tessera::index<2>(1, 1), extent<2>(r - 2, r - 1)), 7.5f);
      emat want = emat::Constant(r, r + 1, -3.0);
      want.block(1, 1, r - 2, r - 1).setConstant(7.5);
      CHECK((read_arr(A) == want).all());
    }
  }
  array<int, 2> I(3, 4);
  I = 2.9;  // converted as static_cast<int>
  CHECK((tt::read(I).array() == 2.0).all());
  array<double, 3> E;  // default: empty
  E = 1.0;
  CHECK(E.size() == 0);
  array<float, 1> V(0);
  fill(V, 1.f);
  CHECK(V.size() == 0);
  array<float, 2> F(3, 3);
  CHECK(has(explain(F, generate(F.extent, impl::constant_fn<float>{1.f})), "fill"));
}

TEST_CASE("generate: index expressions of rank 1-3, fused with arrays, reduced") {
  SUBCASE("rank 1") {
    for (long n : {0L, 1L, 100L, 4099L}) {
      array<double, 1> v(n);
      v = generate(
          v.extent, TESSERA_KERNEL(const tessera::index<1>& i) { return 2.0 * double(i[0]) + 1; });
      const auto h = v.to_vector();
      for (long i = 0; i < n; ++i) CHECK(h[std::size_t(i)] == 2.0 * double(i) + 1);
      CHECK(sum(generate(
                    extent<1>(n), TESSERA_KERNEL(const tessera::index<1>& i) {
                      return double(i[0]);
                    })) == double(n) * double(n - 1) / 2);
    }
  }
  SUBCASE("rank 2: A(i, j) = i * n + j, exact, as PRK initialises its arrays") {
    for (long r : tt::edge_sizes())
      for (long c : {1L, 5L, 66L}) {
        CAPTURE(r);
        CAPTURE(c);
        array<long, 2> A(r, c);
        const long n = c;
        A = generate(
            A.extent, TESSERA_KERNEL(const tessera::index<2>& i) { return i[0] * n + i[1]; });
        const auto h = A.to_vector();
        for (long k = 0; k < r * c; ++k) CHECK(h[std::size_t(k)] == k);
      }
  }
  SUBCASE("rank 3") {
    array<int, 3> A(3, 4, 5);
    A = generate(
        A.extent,
        TESSERA_KERNEL(const tessera::index<3>& i) { return int(i[0] * 100 + i[1] * 10 + i[2]); });
    CHECK(A(2, 3, 4) == 234);
    CHECK(A(0, 0, 0) == 0);
    CHECK(A(1, 2, 3) == 123);
  }
  SUBCASE("fused: one kernel reads the generated operand with arrays, a transpose, a matmul") {
    const auto ea = tt::random_matrix<float>(23, 17);
    array<float, 2> A = from_eigen(ea), D(23, 17);
    auto ramp = generate(
        A.extent, TESSERA_KERNEL(const tessera::index<2>& i) { return float(i[1]); });
    const auto p = plan(D, A * 2.f + ramp);
    REQUIRE(p.kernels.size() == 1);
    CHECK(p.kernels[0].league_size == 23);  // one iteration per row: the index is needed
    CHECK(has(p.kernels[0].mapping, "generated"));
    D = A * 2.f + ramp;
    emat want = ea.cast<double>().array() * 2.0;
    for (long i = 0; i < 23; ++i)
      for (long j = 0; j < 17; ++j) want(i, j) += double(j);
    check_close(read_arr(D), want);
    array<float, 2> T(17, 23);
    T = transpose(A) +
        generate(
            T.extent, TESSERA_KERNEL(const tessera::index<2>& i) { return float(i[0]); });
    const emat at = ea.cast<double>().transpose().array();
    emat wt = at;
    for (long i = 0; i < 17; ++i) wt.row(i) += double(i);
    check_close(read_arr(T), wt);
    array<float, 2> M(23, 23);
    M = matmul(A, transpose(A)) + generate(
                                      M.extent, TESSERA_KERNEL(const tessera::index<2>& i) {
                                        return i[0] == i[1] ? 1.f : 0.f;
                                      });
    const Eigen::MatrixXd am = ea.cast<double>();
    check_close(read_arr(M), (am * am.transpose() + Eigen::MatrixXd::Identity(23, 23)).array(),
                1e-5);
  }
}

TEST_CASE("bad input: errors before any kernel, destination untouched") {
  array<float, 2> A(4, 5), B(5, 4);
  A = 1.f;
  CHECK_THROWS_WITH_AS(A += B, doctest::Contains("operator+="), shape_error);
  CHECK_THROWS_WITH_AS(A.section(tessera::index<2>(1, 1)).operator-=(B),
                       doctest::Contains("operator-="), shape_error);
  CHECK((read_arr(A) == 1.0).all());
  CHECK_THROWS_WITH_AS(A.section(tessera::index<2>(3, 0), extent<2>(2, 5)),
                       doctest::Contains("tessera::array::section"), shape_error);
  CHECK_THROWS_AS(A.section(tessera::index<2>(-1, 0), extent<2>(1, 1)), shape_error);
  CHECK_THROWS_AS(generate(
      extent<2>(-1, 3), TESSERA_KERNEL(const tessera::index<2>&) { return 0.f; }), shape_error);
  CHECK_THROWS_WITH_AS(plan(A, B + 1.f), doctest::Contains("tessera::plan(dst, e)"), shape_error);
}

TEST_CASE("streaming stores only for outputs the kernel does not read") {
  const codegen::target t = backends::backend<execution_space>::make_target();
  if (t.streaming_store_min_bytes == 0) return;  // this backend never streams
  const long n = long(t.streaming_store_min_bytes / sizeof(float)) + 1;
  array<float, 1> A(n), B(n), C(n), D(n);
  const auto fresh = plan(D, A + B + 3.f * C);
  REQUIRE(fresh.kernels.size() == 1);
  CHECK(fresh.kernels[0].streaming_stores);
  const auto in_place = plan(A, A + B + 3.f * C);  // nstream: A read where it is written
  REQUIRE(in_place.kernels.size() == 1);
  CHECK_FALSE(in_place.kernels[0].streaming_stores);
}
