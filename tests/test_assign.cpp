// In-place and initialising assignment and stencils (Tier 1): compound assignment (+= -= *=
// /=) of arrays and array_views from expressions, arrays and scalars; fills (`A = v`, fill());
// generated operands (generate(extent, f)); array::section; plans for a given destination
// (plan(dst, e)); shift(e, d, boundary) against a naive reference (every boundary policy, ranks
// 1-3, offsets inside, at and far beyond the extent), star stencils of radius 1-4 as one
// kernel, shifts of non-elementwise operands, destinations overlapping the shifted operand,
// interior updates through sections, rows of every length and start alignment. References are Eigen
// arrays or naive loops on copies; shapes include 0, 1, primes and tile non-multiples, with seeded
// random data. Elementwise results compare within 1e-6 relative (float); small-integer data
// compares exactly.
#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

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
      const auto& same = A;  // (a second name: clang flags `A -= A` as a self-assignment)
      A -= same;             // the destination on both sides, read at the index written
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
  // matmul accumulating into its destination (BLAS beta = 1): in place on CPUs, where the
  // matmul accumulates in its output anyway; right everywhere.
  array<float, 2> C = from_eigen(eb);
  const auto pm = plan(C, C + matmul(B, B));
  if (pm.kernels.back().packed_matmul) {
    CHECK(pm.kernels.back().matmul_accumulates_output);
    CHECK_FALSE(has(codegen::to_string(pm), "temporary"));
    CHECK(plan(C, matmul(B, B) + C).kernels.back().matmul_accumulates_output);
    // Not that form: C read by the matmul, or scaled, or of another type: a temporary.
    CHECK_FALSE(plan(C, C + matmul(C, B)).kernels.back().matmul_accumulates_output);
    CHECK(has(explain(C, C + matmul(C, B)), "temporary"));
    CHECK(has(explain(C, C * 2.f + matmul(B, B)), "temporary"));
  }
  C += matmul(B, B);
  const Eigen::MatrixXd bb = eb.cast<double>();
  check_close(read_arr(C), (bb + bb * bb).array(), 1e-5);
  C = matmul(B, B) + C;
  check_close(read_arr(C), (bb + 2 * bb * bb).array(), 1e-5);
  C += matmul(C, B);  // C read by the matmul too: through a temporary
  const Eigen::MatrixXd c2 = bb + 2 * bb * bb;
  check_close(read_arr(C), (c2 + c2 * bb).array(), 1e-4);
  for (long k : {0L, 1L, 300L}) {  // K = 0 adds nothing; K > kc spans several K blocks
    CAPTURE(k);
    const auto el = tt::random_matrix<float>(19, k), er = tt::random_matrix<float>(k, 23),
               ec = tt::random_matrix<float>(19, 23);
    array<float, 2> L = from_eigen(el), Rm = from_eigen(er), Cc = from_eigen(ec);
    Cc += matmul(L, Rm);
    const Eigen::MatrixXd want = ec.cast<double>() + el.cast<double>() * er.cast<double>();
    check_close(read_arr(Cc), want.array(), 1e-4);
  }
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
    const auto h = A.to_vector();  // row-major; device memory is not readable on the host
    CHECK(h[2 * 20 + 3 * 5 + 4] == 234);
    CHECK(h[0] == 0);
    CHECK(h[1 * 20 + 2 * 5 + 3] == 123);
  }
  SUBCASE("fused: one kernel reads the generated operand with arrays, a transpose, a matmul") {
    const auto ea = tt::random_matrix<float>(23, 17);
    array<float, 2> A = from_eigen(ea), D(23, 17);
    auto ramp = generate(
        A.extent, TESSERA_KERNEL(const tessera::index<2>& i) { return float(i[1]); });
    const auto p = plan(D, A * 2.f + ramp);
    REQUIRE(p.kernels.size() == 1);
    // CPUs: one iteration per row (the index is needed); the GPU mapping: one per element.
    const bool gpu = backends::backend<execution_space>::make_target().thread_per_logical;
    CHECK(p.kernels[0].league_size == (gpu ? 23 * 17 : 23));
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

// --- stencils -----------------------------------------------------------------------------

namespace {

/// The reference boundary rule (see boundary::policy): j mapped inside [0, n), or -1 when the
/// read is replaced by the policy's value.
long ref_inside(long j, long n, boundary::kind k) {
  if (j >= 0 && j < n) return j;
  switch (k) {
    case boundary::kind::zero:
    case boundary::kind::constant:
      return -1;
    case boundary::kind::clamp:
      return j < 0 ? 0 : n - 1;
    case boundary::kind::periodic:
      return ((j % n) + n) % n;
    case boundary::kind::mirror: {
      const long m = ((j % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
  }
  return -1;
}

/// Random small integers, row-major, for extent e.
template <int N>
std::vector<double> ints(const extent<N>& e) {
  std::uniform_int_distribution<int> d(-9, 9);
  std::vector<double> v(std::size_t(e.size()));
  for (auto& x : v) x = d(tt::rng());
  return v;
}

/// shift(v, off, bc) computed naively.
template <int N>
std::vector<double> ref_shift(const std::vector<double>& v, const extent<N>& e,
                              const tessera::index<N>& off, boundary::policy bc) {
  std::vector<double> out(v.size());
  for (long q = 0; q < long(v.size()); ++q) {
    const tessera::index<N> i = impl::unflatten(e, q);
    long lin = 0;
    bool value = false;
    for (int d = 0; d < N; ++d) {
      const long j = ref_inside(long(i[d] + off[d]), long(e[d]), bc.k);
      if (j < 0) value = true;
      lin = lin * long(e[d]) + (j < 0 ? 0 : j);
    }
    out[std::size_t(q)] =
        value ? (bc.k == boundary::kind::zero ? 0.0 : bc.value) : v[std::size_t(lin)];
  }
  return out;
}

template <int N>
extent<N> random_extent() {
  static const long dims[] = {0, 1, 2, 3, 5, 7, 13, 16, 17};
  std::uniform_int_distribution<int> d(0, 8);
  extent<N> e;
  for (int k = 0; k < N; ++k) e[k] = dims[d(tt::rng())];
  return e;
}
template <int N>
tessera::index<N> random_offset(const extent<N>& e) {
  std::uniform_int_distribution<int> small(-4, 4), pick(0, 5);
  tessera::index<N> o;
  for (int k = 0; k < N; ++k) {
    const int p = pick(tt::rng());
    // Mostly radius <= 4; sometimes at or far beyond the extent (periodic and mirror wrap).
    o[k] = p == 0 ? long(e[k]) : p == 1 ? -3 * long(e[k]) - 1 : small(tt::rng());
  }
  return o;
}

const boundary::policy policies[] = {boundary::zero, boundary::clamp, boundary::periodic,
                                     boundary::mirror, boundary::constant(-7)};

template <class T, int N>
void check_shifts(int cases) {
  for (int c = 0; c < cases; ++c) {
    const extent<N> e = random_extent<N>();
    const auto v = ints(e);
    const array<T, N> A(e, v.begin(), v.end());
    for (const auto& bc : policies) {
      const tessera::index<N> off = random_offset(e);
      CAPTURE(to_string(e));
      CAPTURE(to_string(off));
      CAPTURE(boundary::to_string(bc.k));
      array<T, N> B(e);
      B = shift(A, off, bc);
      const auto want = ref_shift(v, e, off, bc);
      const auto got = B.to_vector();
      for (std::size_t q = 0; q < want.size(); ++q) {
        CAPTURE(q);
        CHECK(double(got[q]) == want[q]);
      }
      // Fused with another operand, and with a second shift of another policy.
      B = shift(A, off, bc) * T(2) + shift(A, -off, boundary::zero) - A;
      const auto want2 = ref_shift(v, e, -off, boundary::zero);
      const auto got2 = B.to_vector();
      for (std::size_t q = 0; q < want.size(); ++q) {
        CAPTURE(q);
        CHECK(double(got2[q]) == want[q] * 2 + want2[q] - v[q]);
      }
    }
  }
}

}  // namespace

TEST_CASE("shift: every boundary policy, ranks 1-3, float, double and int, against a reference") {
  check_shifts<float, 1>(12);
  check_shifts<double, 2>(12);
  check_shifts<int, 2>(6);
  check_shifts<float, 3>(6);
}

TEST_CASE("star stencils of radius 1-4 as one kernel, full grid with boundaries") {
  for (int R = 1; R <= 4; ++R)
    for (long n : {1L, 5L, 31L, 64L}) {
      CAPTURE(R);
      CAPTURE(n);
      const extent<2> e(n, n + 3);
      const auto v = ints(e);
      const array<double, 2> A(e, v.begin(), v.end());
      array<double, 2> B(e);
      // PRK's star stencil weights: +-1 / (2 k R) along each axis at distance k.
      auto term = [&](int k) {
        const double w = 1.0 / (2.0 * k * R);
        return w * (shift(A, tessera::index<2>(0, k), boundary::clamp) -
                    shift(A, tessera::index<2>(0, -k), boundary::clamp) +
                    shift(A, tessera::index<2>(k, 0), boundary::clamp) -
                    shift(A, tessera::index<2>(-k, 0), boundary::clamp));
      };
      std::vector<double> want(v.size(), 0.0);
      for (int k = 1; k <= R; ++k) {
        const double w = 1.0 / (2.0 * k * R);
        const auto xp = ref_shift(v, e, tessera::index<2>(0, k), boundary::clamp),
                   xm = ref_shift(v, e, tessera::index<2>(0, -k), boundary::clamp),
                   yp = ref_shift(v, e, tessera::index<2>(k, 0), boundary::clamp),
                   ym = ref_shift(v, e, tessera::index<2>(-k, 0), boundary::clamp);
        for (std::size_t q = 0; q < v.size(); ++q) want[q] += w * (xp[q] - xm[q] + yp[q] - ym[q]);
      }
      if (R == 1)
        B = term(1);
      else if (R == 2)
        B = term(1) + term(2);
      else if (R == 3)
        B = term(1) + term(2) + term(3);
      else
        B = term(1) + term(2) + term(3) + term(4);
      const auto got = B.to_vector();
      for (std::size_t q = 0; q < want.size(); ++q)
        CHECK(got[q] == doctest::Approx(want[q]).epsilon(1e-12));
      if (R == 2) {
        const auto p = plan(B, term(1) + term(2));
        CHECK(p.kernels.size() == 1);  // one kernel, no temporary
        // One buffer: A, read 8 times, with its halo and boundary.
        const std::string t = codegen::to_string(p);
        CHECK(t.find("A : double -> global  [input; stencil operand: 8 reads, halo -2..+2 x "
                     "-2..+2, boundary clamp]") != std::string::npos);
      }
    }
}

TEST_CASE("stencil operands: staged in team scratch under the GPU mapping, same values") {
  const auto t = backends::backend<execution_space>::make_target();
  // A box stencil with a weight per offset (every neighbour distinguishable), every boundary,
  // ranks 1-3, extents that are not tile multiples, 1 and empty; two constant boundaries of
  // different values on one array; a shift of an expression and a shift of a shift beside them.
  auto check = [&](auto e, int R, boundary::policy bc) {
    constexpr int N = decltype(e)::rank;
    CAPTURE(to_string(e));
    CAPTURE(R);
    CAPTURE(boundary::to_string(bc.k));
    const auto v = ints(e);
    const array<double, N> A(e, v.begin(), v.end());
    array<double, N> B(e);
    std::vector<double> want(v.size(), 0.0);
    tessera::index<N> o;
    // offsets: +-k along each dimension, and the all-(+k) diagonal
    std::vector<tessera::index<N>> offs;
    for (int k = 1; k <= R; ++k)
      for (int d = 0; d < N; ++d) {
        tessera::index<N> p, m;
        p[d] = k;
        m[d] = -k;
        offs.push_back(p);
        offs.push_back(m);
      }
    for (int d = 0; d < N; ++d) o[d] = R;
    offs.push_back(o);
    auto ref = [&](std::size_t q) {
      double w = 0;
      for (std::size_t s = 0; s < offs.size(); ++s)
        w += double(s + 1) * ref_shift(v, e, offs[s], bc)[q];
      return w;
    };
    // star + diagonal, written out to the radius (the expression type depends on it)
    auto S = [&](std::size_t s) {
      return double(s + 1) * shift(A, offs[s], bc);
    };
    if (R == 1 && N == 1)
      B = S(0) + S(1) + S(2);
    else if (R == 1 && N == 2)
      B = S(0) + S(1) + S(2) + S(3) + S(4);
    else if (R == 1 && N == 3)
      B = S(0) + S(1) + S(2) + S(3) + S(4) + S(5) + S(6);
    else if (R == 2 && N == 2)
      B = S(0) + S(1) + S(2) + S(3) + S(4) + S(5) + S(6) + S(7) + S(8);
    else
      return;
    const auto got = B.to_vector();
    for (std::size_t q = 0; q < v.size(); ++q) {
      CAPTURE(q);
      CHECK(got[q] == doctest::Approx(ref(q)).epsilon(1e-12));
    }
  };
  for (const auto& bc : policies) {
    for (long n : {0L, 1L, 7L, 256L, 300L}) check(extent<1>(n), 1, bc);
    for (auto x : {extent<2>(1, 1), extent<2>(9, 33), extent<2>(37, 70), extent<2>(3, 2)}) {
      check(x, 1, bc);
      check(x, 2, bc);
    }
    for (auto x : {extent<3>(2, 5, 40), extent<3>(5, 9, 3)}) check(x, 1, bc);
  }

  const extent<2> e(37, 70);
  const auto v = ints(e);
  const array<double, 2> A(e, v.begin(), v.end());
  array<double, 2> B(e);
  using ix = tessera::index<2>;
  // two constant boundaries of one array (one box: each shift keeps its value), a shift of an
  // expression (A * 2: not an array, read per element) and a shift of a shift (not staged)
  B = shift(A, ix(0, 1), boundary::constant(1)) + shift(A, ix(0, -1), boundary::constant(2)) +
      shift(A * 2.0, ix(1, 0), boundary::zero) +
      shift(shift(A, ix(1, 0), boundary::clamp), ix(0, 1), boundary::clamp);
  const auto a1 = ref_shift(v, e, ix(0, 1), boundary::constant(1)),
             a2 = ref_shift(v, e, ix(0, -1), boundary::constant(2)),
             a3 = ref_shift(v, e, ix(1, 0), boundary::zero),
             inner = ref_shift(v, e, ix(1, 0), boundary::clamp),
             a4 = ref_shift(inner, e, ix(0, 1), boundary::clamp);
  const auto got = B.to_vector();
  for (std::size_t q = 0; q < v.size(); ++q) CHECK(got[q] == a1[q] + a2[q] + 2 * a3[q] + a4[q]);

  // The plan: under the GPU mapping a team per 8 x 32 tile, A's box in scratch, one barrier;
  // on CPUs the rows kernel reading A (cached rows).
  const auto star = shift(A, ix(0, 1), boundary::clamp) + shift(A, ix(0, -2), boundary::clamp) +
                    shift(A, ix(1, 0), boundary::clamp) + shift(A, ix(-1, 0), boundary::clamp);
  const auto p = plan(B, star);
  REQUIRE(p.kernels.size() == 1);
  const auto& k = p.kernels[0];
  const std::string text = codegen::to_string(p);
  CAPTURE(text);
  if (t.thread_per_logical) {
    CHECK(k.policy == "TeamPolicy");
    CHECK(k.tile == std::vector<std::int64_t>{8, 32});
    CHECK(k.league_size == 5 * 3);
    REQUIRE(k.stencil_stages.size() == 1);
    const auto& st = k.stencil_stages[0];
    CHECK(st.shifts.size() == 4);
    CHECK(st.box == std::vector<std::int64_t>{8 + 2, 32 + 3});
    CHECK(st.bytes == std::size_t(10 * 35) * sizeof(double));
    CHECK(k.scratch_bytes[0] >= st.bytes);
    CHECK(k.barriers.size() == 1);
    CHECK(has(text, "A (tile + halo) : double[10x35] -> scratch"));
    CHECK(has(text, "4 shifts read it, halo -1..+1 x -2..+1, boundary clamp"));
    B = star;  // launched as planned (the launcher checks scratch and barriers against the plan)
  } else {
    CHECK(k.stencil_stages.empty());
    CHECK(k.inline_run);  // 37 x 70 elements: on the calling thread
    CHECK(k.policy == "none: run on the calling thread (no Kokkos launch)");
  }
  const auto ws = ref_shift(v, e, ix(0, 1), boundary::clamp);
  const auto ww = ref_shift(v, e, ix(0, -2), boundary::clamp);
  const auto wn = ref_shift(v, e, ix(1, 0), boundary::clamp);
  const auto wq = ref_shift(v, e, ix(-1, 0), boundary::clamp);
  B = star;
  const auto g2 = B.to_vector();
  for (std::size_t q = 0; q < v.size(); ++q) CHECK(g2[q] == ws[q] + ww[q] + wn[q] + wq[q]);
}

TEST_CASE("overlapping sections of one array are one stencil operand in plans") {
  using ix = tessera::index<2>;
  const long n = 40, R = 2;
  const extent<2> in(n - 2 * R, n - 2 * R);
  const auto v = ints(extent<2>(n, n));
  const array<double, 2> A(extent<2>(n, n), v.begin(), v.end()), C(extent<2>(n, n));
  array<double, 2> B(extent<2>(n, n));
  auto S = [&](long di, long dj) {
    return A.section(ix(R + di, R + dj), in);
  };
  const auto star = 0.25 * (S(0, 1) - S(0, -1) + S(1, 0) - S(-1, 0)) +
                    0.125 * (S(0, 2) - S(0, -2) + S(2, 0) - S(-2, 0));
  const std::string t = codegen::to_string(plan(B.section(ix(R, R), in), star));
  CAPTURE(t);
  CHECK(has(t,
            "A : double -> global  [input; stencil operand: 8 reads through 8 overlapping "
            "sections (A..H), halo -2..+2 x -2..+2]"));
  CHECK(!has(t, "B : double -> global"));
  // the plan cache tells the radius apart: the same expression type with sections one apart
  auto S1 = [&](long di, long dj) {
    return A.section(ix(1 + di, 1 + dj), extent<2>(n - 2, n - 2));
  };
  const std::string t1 =
      codegen::to_string(plan(B.section(ix(1, 1), extent<2>(n - 2, n - 2)),
                              0.25 * (S1(0, 1) - S1(0, -1) + S1(1, 0) - S1(-1, 0)) +
                                  0.125 * (S1(0, 1) - S1(0, -1) + S1(1, 0) - S1(-1, 0))));
  CAPTURE(t1);
  CHECK(has(t1, "halo -1..+1 x -1..+1]"));
  // sections of another array, and the whole array beside its own section, stay apart where
  // their extents differ; a section of the same extent one row down is the same operand
  const std::string t2 = codegen::to_string(
      plan(B.section(ix(0, 0), extent<2>(n - 1, n)), A.section(ix(0, 0), extent<2>(n - 1, n)) +
                                                         A.section(ix(1, 0), extent<2>(n - 1, n)) +
                                                         C.section(ix(1, 0), extent<2>(n - 1, n))));
  CAPTURE(t2);
  CHECK(has(t2,
            "A : double -> global  [input; stencil operand: 2 reads through 2 overlapping "
            "sections (A..B), halo 0..+1 x 0..+0]"));
  CHECK(has(t2, "C : double -> global  [input]"));
  // the values: sections read as before
  assign(B.section(ix(R, R), in), star);
  const auto got = B.to_vector();
  for (long i = R; i < n - R; ++i)
    for (long j = R; j < n - R; ++j) {
      auto a = [&](long p, long q) {
        return v[std::size_t(p * n + q)];
      };
      const double want = 0.25 * (a(i, j + 1) - a(i, j - 1) + a(i + 1, j) - a(i - 1, j)) +
                          0.125 * (a(i, j + 2) - a(i, j - 2) + a(i + 2, j) - a(i - 2, j));
      CHECK(got[std::size_t(i * n + j)] == doctest::Approx(want).epsilon(1e-12));
    }
}

TEST_CASE("overlapping sections: staged in team scratch under the GPU mapping, same values") {
  const auto t = backends::backend<execution_space>::make_target();
  // Interior updates B[R:-R] = sum of weighted sections A[R + o : ...] (a weight per offset),
  // star stencils of radius 1-2 in ranks 1-3, interiors of 1, primes and non-multiples of the
  // tile; the rest of B keeps its value.
  auto check = [&](auto inner, long R) {
    constexpr int N = decltype(inner)::rank;
    CAPTURE(to_string(inner));
    CAPTURE(R);
    extent<N> full;
    tessera::index<N> c0;
    for (int d = 0; d < N; ++d) {
      full[d] = inner[d] + 2 * R;
      c0[d] = R;
    }
    const auto v = ints(full);
    const array<double, N> A(full, v.begin(), v.end());
    array<double, N> B(full);
    B = -1.0;
    std::vector<tessera::index<N>> offs(1);  // the centre, then +-k along each dimension
    for (long k = 1; k <= R; ++k)
      for (int d = 0; d < N; ++d) {
        tessera::index<N> p, m;
        p[d] = k;
        m[d] = -k;
        offs.push_back(p);
        offs.push_back(m);
      }
    auto S = [&](std::size_t s) {
      return double(s + 1) * A.section(c0 + offs[s], inner);
    };
    const auto dst = B.section(c0, inner);
    if (R == 1 && N == 1)
      assign(dst, S(0) + S(1) + S(2));
    else if (R == 1 && N == 2)
      assign(dst, S(0) + S(1) + S(2) + S(3) + S(4));
    else if (R == 1 && N == 3)
      assign(dst, S(0) + S(1) + S(2) + S(3) + S(4) + S(5) + S(6));
    else if (R == 2 && N == 2)
      assign(dst, S(0) + S(1) + S(2) + S(3) + S(4) + S(5) + S(6) + S(7) + S(8));
    else
      return;
    const auto got = B.to_vector();
    for (long q = 0; q < long(v.size()); ++q) {
      const tessera::index<N> i = impl::unflatten(full, q);
      bool interior = true;
      for (int d = 0; d < N; ++d) interior = interior && i[d] >= R && i[d] < R + inner[d];
      double want = -1.0;
      if (interior) {
        want = 0.0;
        for (std::size_t s = 0; s < offs.size(); ++s) {
          long lin = 0;
          for (int d = 0; d < N; ++d) lin = lin * long(full[d]) + long(i[d] + offs[s][d]);
          want += double(s + 1) * v[std::size_t(lin)];
        }
      }
      CAPTURE(q);
      CHECK(got[std::size_t(q)] == want);
    }
  };
  for (long n : {1L, 7L, 256L, 300L}) check(extent<1>(n), 1);
  for (auto x : {extent<2>(1, 1), extent<2>(9, 33), extent<2>(37, 70), extent<2>(3, 2)}) {
    check(x, 1);
    check(x, 2);
  }
  for (auto x : {extent<3>(2, 5, 40), extent<3>(5, 9, 3)}) check(x, 1);

  // The buffer's first section under a shift (not staged: it receives another index) and two
  // sections beside it: the box is theirs, offsets from that first section.
  using ix = tessera::index<2>;
  const extent<2> full(41, 75), in(37, 70);
  const auto v = ints(full);
  const array<double, 2> A(full, v.begin(), v.end());
  array<double, 2> B(full);
  B = 0.0;
  const auto e3 = shift(A.section(ix(2, 1), in), ix(1, 0), boundary::zero) +
                  2.0 * A.section(ix(2, 3), in) + 3.0 * A.section(ix(4, 2), in);
  assign(B.section(ix(2, 2), in), e3);
  const auto g3 = B.to_vector();
  for (long i = 0; i < in[0]; ++i)
    for (long j = 0; j < in[1]; ++j) {
      auto a = [&](long p, long q) {
        return v[std::size_t(p * full[1] + q)];
      };
      const double want =
          (i + 1 < in[0] ? a(i + 3, j + 1) : 0.0) + 2 * a(i + 2, j + 3) + 3 * a(i + 4, j + 2);
      CHECK(g3[std::size_t((i + 2) * full[1] + j + 2)] == want);
    }

  // The plan: PRK's star of radius 2 as sections, under the GPU mapping a team per 8 x 32
  // tile and A's box in scratch; on CPUs the rows kernel reading A (cached rows).
  auto P = [&](long di, long dj) {
    return A.section(ix(2 + di, 2 + dj), extent<2>(37, 71));
  };
  const auto star = 0.25 * (P(0, 1) - P(0, -1) + P(1, 0) - P(-1, 0)) +
                    0.125 * (P(0, 2) - P(0, -2) + P(2, 0) - P(-2, 0));
  const auto p = plan(B.section(ix(2, 2), extent<2>(37, 71)), star);
  REQUIRE(p.kernels.size() == 1);
  const auto& k = p.kernels[0];
  const std::string text = codegen::to_string(p);
  CAPTURE(text);
  if (t.thread_per_logical) {
    CHECK(k.policy == "TeamPolicy");
    CHECK(k.tile == std::vector<std::int64_t>{8, 32});
    CHECK(k.league_size == 5 * 3);
    REQUIRE(k.stencil_stages.size() == 1);
    const auto& st = k.stencil_stages[0];
    CHECK(st.sections);
    CHECK(st.shifts.size() == 8);
    CHECK(st.box == std::vector<std::int64_t>{8 + 4, 32 + 4});
    CHECK(st.bytes == std::size_t(12 * 36) * sizeof(double));
    CHECK(k.barriers.size() == 1);
    CHECK(has(text, "A (tile + halo) : double[12x36] -> scratch"));
    CHECK(has(text, "8 overlapping sections read it, halo -2..+2 x -2..+2, inside the array"));
  } else {
    CHECK(k.stencil_stages.empty());
  }
  B = 0.0;
  assign(B.section(ix(2, 2), extent<2>(37, 71)), star);
  const auto g4 = B.to_vector();
  for (long i = 2; i < 39; ++i)
    for (long j = 2; j < 73; ++j) {
      auto a = [&](long p2, long q2) {
        return v[std::size_t(p2 * full[1] + q2)];
      };
      const double want = 0.25 * (a(i, j + 1) - a(i, j - 1) + a(i + 1, j) - a(i - 1, j)) +
                          0.125 * (a(i, j + 2) - a(i, j - 2) + a(i + 2, j) - a(i - 2, j));
      CHECK(g4[std::size_t(i * full[1] + j)] == doctest::Approx(want).epsilon(1e-12));
    }
}

TEST_CASE("shift of non-elementwise operands, aliasing destinations, interior updates") {
  const auto ea = tt::small_ints(13, 9);
  array<double, 2> A = tt::make<double>(ea);
  // A matmul (or a transpose) under a shift is computed into a temporary first.
  array<double, 2> M(13, 13);
  M = shift(matmul(A, transpose(A)), tessera::index<2>(1, -2), boundary::periodic) + 1.0;
  const Eigen::MatrixXd mm = ea * ea.transpose();
  const Eigen::MatrixXd hm = to_eigen(M);
  for (long i = 0; i < 13; ++i)
    for (long j = 0; j < 13; ++j) CHECK(hm(i, j) == mm((i + 1) % 13, (j - 2 + 13) % 13) + 1.0);
  const auto p =
      plan(M, shift(matmul(A, transpose(A)), tessera::index<2>(1, -2), boundary::periodic));
  CHECK(p.kernels.size() >= 2);
  // The destination is the shifted operand: a temporary, then the copy.
  A = shift(A, tessera::index<2>(0, 1), boundary::zero) + A;
  const Eigen::MatrixXd ha = to_eigen(A);
  for (long i = 0; i < 13; ++i)
    for (long j = 0; j < 9; ++j) CHECK(ha(i, j) == (j + 1 < 9 ? ea(i, j + 1) : 0.0) + ea(i, j));
  const std::string t = explain(A, shift(A, tessera::index<2>(0, 1), boundary::zero));
  CHECK(t.find("a shift reads neighbours") != std::string::npos);
  // Interior-only update through sections (no boundary): B[1:-1, 1:-1] = 4 A - neighbours.
  array<double, 2> Ai = tt::make<double>(ea), B(13, 9);
  const extent<2> in(11, 7);
  assign(B.section(tessera::index<2>(1, 1), in),
         4.0 * Ai.section(tessera::index<2>(1, 1), in) - Ai.section(tessera::index<2>(0, 1), in) -
             Ai.section(tessera::index<2>(2, 1), in) - Ai.section(tessera::index<2>(1, 0), in) -
             Ai.section(tessera::index<2>(1, 2), in));
  const Eigen::MatrixXd hb = to_eigen(B);
  for (long i = 0; i < 13; ++i)
    for (long j = 0; j < 9; ++j) {
      const bool interior = i >= 1 && i < 12 && j >= 1 && j < 8;
      const double w =
          interior ? 4 * ea(i, j) - ea(i - 1, j) - ea(i + 1, j) - ea(i, j - 1) - ea(i, j + 1) : 0.0;
      CHECK(hb(i, j) == w);
    }
  // Reductions read shifts too.
  CHECK(sum(shift(Ai, tessera::index<2>(5, 5), boundary::periodic)) == doctest::Approx(ea.sum()));
}

TEST_CASE("rows at every alignment: sections and shifts around the cache-line-aligned loop") {
  // CPU backends start each row's main loop at the first column whose store begins a cache
  // line (rows of at least 128 elements), after the columns before it: every start column and
  // row length around that threshold, float and double, sections and shifts (whose interior
  // columns are the main loop), with exact values and the rest of the destination untouched.
  auto run = [&](auto zero) {
    using T = decltype(zero);
    CAPTURE(sizeof(T));
    for (long cols : {1L, 17L, 127L, 128L, 129L, 143L, 200L})
      for (long c0 = 0; c0 < 18; c0 += (cols > 100 ? 1 : 5)) {
        CAPTURE(cols);
        CAPTURE(c0);
        const extent<2> full(4, cols + c0 + 3), in(2, cols);
        const auto v = ints(full);
        const array<T, 2> A(full, v.begin(), v.end());
        array<T, 2> B(full);
        B = T(-1);
        using ix = tessera::index<2>;
        assign(B.section(ix(1, c0), in), T(2) * A.section(ix(1, c0 + 1), in) -
                                             A.section(ix(0, c0), in) +
                                             A.section(ix(2, c0 + 3), in));
        const auto got = B.to_vector();
        for (long i = 0; i < full[0]; ++i)
          for (long j = 0; j < full[1]; ++j) {
            const bool inside = i >= 1 && i < 3 && j >= c0 && j < c0 + cols;
            const auto at = [&](long r, long c) {
              return v[std::size_t(r * full[1] + c)];
            };
            const double want = inside ? 2 * at(i, j + 1) - at(i - 1, j) + at(i + 1, j + 3) : -1.0;
            CAPTURE(i);
            CAPTURE(j);
            CHECK(double(got[std::size_t(i * full[1] + j)]) == want);
          }
        // Shifts: full rows of cols + c0 + 3 elements, whose interior columns start anywhere.
        array<T, 2> C(full);
        C = shift(A, ix(0, 2), boundary::zero) - shift(A, ix(1, -1), boundary::clamp) + A;
        const auto xp = ref_shift(v, full, ix(0, 2), boundary::zero),
                   xm = ref_shift(v, full, ix(1, -1), boundary::clamp);
        const auto gc = C.to_vector();
        for (std::size_t q = 0; q < v.size(); ++q) {
          CAPTURE(q);
          CHECK(double(gc[q]) == xp[q] - xm[q] + v[q]);
        }
      }
  };
  run(0.0f);
  run(0.0);
}

TEST_CASE(
    "rows whose operands come from memory: each buffer's leading row prefetched, whole output "
    "lines streamed, exact values") {
  // CPU row loops moving at least the target's row_prefetch_min_bytes prefetch each input
  // buffer's leading read (sections of one array: the row furthest down; shifts: the largest
  // offset) ahead of the columns they compute, one output cache line at a time; where the
  // output alone reaches streaming_store_min_bytes and the kernel does not read it, each row's
  // whole output lines are written with streaming stores. The plans list both; the values are
  // exact (small integers in float) for row lengths and section offsets that start and end the
  // line loops anywhere, and the rest of the destination is untouched.
  const codegen::target t = backends::backend<execution_space>::make_target();
  // (The target's rule for both kinds of row loop: tune_prefetch's choices are tested with it.)
  using codegen::row_loop_memory;
  const bool prefetches = t.row_prefetch_bytes > 0 && t.row_prefetch_min_bytes > 0 &&
                          t.row_loops != row_loop_memory::plain &&
                          t.stencil_row_loops != row_loop_memory::plain;
  const bool streams = prefetches && t.streaming_store_min_bytes > 0 &&
                       t.row_loops == row_loop_memory::prefetch_and_stream &&
                       t.stencil_row_loops == row_loop_memory::prefetch_and_stream;
  // Without prefetches (GPU mappings) the same loops at 1 MiB: the values, not the sizes,
  // are what those backends check here (the emulation runs 256 threads on two cores).
  const std::size_t min_bytes = prefetches ? t.row_prefetch_min_bytes : std::size_t(1) << 20;
  using ix = tessera::index<2>;
  for (long cols : {2803L, 4101L})
    for (long c0 : {0L, 5L}) {
      CAPTURE(cols);
      CAPTURE(c0);
      // One buffer read, one written: (rows x cols) x 8 bytes reach the threshold; where the
      // output streams, the output alone reaches that threshold too.
      const std::size_t out_min =
          streams ? std::max(min_bytes / 2, t.streaming_store_min_bytes) : min_bytes / 2;
      const long rows = long(out_min / sizeof(float) / std::size_t(cols)) + 2;
      const extent<2> full(rows + 2, cols + c0 + 3), in(rows, cols);
      const auto v = ints(full);
      const array<float, 2> A(full, v.begin(), v.end());
      array<float, 2> B(full);
      B = -1.f;
      auto rhs = 2.f * A.section(ix(1, c0 + 1), in) - A.section(ix(0, c0), in) +
                 A.section(ix(2, c0 + 3), in);
      if (prefetches) {
        const auto p = plan(B.section(ix(1, c0), in), rhs);
        REQUIRE(p.kernels.size() == 1);
        REQUIRE(p.kernels[0].row_prefetches.size() == 1);
        // Offsets from the first section (1, c0 + 1): rows -1..+1, columns -1..+2.
        CHECK(p.kernels[0].row_prefetches[0].offset == std::vector<std::int64_t>{1, 2});
        CHECK(p.kernels[0].row_prefetch_bytes == t.row_prefetch_bytes);
        CHECK(has(p.kernels[0].mapping, "prefetches the leading row of A"));
        CHECK(p.kernels[0].streaming_stores == streams);
        CHECK(has(p.kernels[0].mapping, "non-temporal stores") == streams);
        // In place (the destination is an operand): its lines are in cache, never streamed.
        const auto in_place =
            plan(B.section(ix(1, c0), in), B.section(ix(1, c0), in) + A.section(ix(0, c0), in));
        REQUIRE(in_place.kernels.size() == 1);
        CHECK_FALSE(in_place.kernels[0].streaming_stores);
        CHECK_FALSE(has(in_place.kernels[0].mapping, "non-temporal"));
      }
      assign(B.section(ix(1, c0), in), rhs);
      const auto got = B.to_vector();
      const auto at = [&](long r, long c) {
        return v[std::size_t(r * full[1] + c)];
      };
      long wrong = 0;
      for (long i = 0; i < full[0]; ++i)
        for (long j = 0; j < full[1]; ++j) {
          const bool inside = i >= 1 && i <= rows && j >= c0 && j < c0 + cols;
          const double want = inside ? 2 * at(i, j + 1) - at(i - 1, j) + at(i + 1, j + 3) : -1.0;
          wrong += double(got[std::size_t(i * full[1] + j)]) != want;
        }
      CHECK(wrong == 0);
      // Shifts of one array and the array itself: one buffer, led by the largest offset.
      auto sh = shift(A, ix(0, 2), boundary::zero) - shift(A, ix(1, -1), boundary::clamp) + A;
      if (prefetches) {
        const auto p = plan(sh);
        REQUIRE(p.kernels.size() == 1);
        REQUIRE(p.kernels[0].row_prefetches.size() == 1);
        CHECK(p.kernels[0].row_prefetches[0].offset == std::vector<std::int64_t>{1, 2});
        CHECK(p.kernels[0].streaming_stores == streams);
      }
      array<float, 2> C(full);
      C = sh;
      const auto xp = ref_shift(v, full, ix(0, 2), boundary::zero),
                 xm = ref_shift(v, full, ix(1, -1), boundary::clamp);
      const auto gc = C.to_vector();
      wrong = 0;
      for (std::size_t q = 0; q < v.size(); ++q) wrong += double(gc[q]) != xp[q] - xm[q] + v[q];
      CHECK(wrong == 0);
    }
  if (!prefetches) return;
  // Sections of three arrays: three streams; small arrays, or more buffers than
  // max_row_prefetches: none.
  const long n = long(std::sqrt(double(t.row_prefetch_min_bytes / (4 * sizeof(float))))) + 8;
  const extent<2> e(n, n), in(n - 1, n - 1);
  const array<float, 2> X(e), Y(e), Z(e), W(e), V(e);
  array<float, 2> O(e);
  const ix o(1, 1);
  const auto three = plan(O.section(o, in), X.section(o, in) + Y.section(o, in) - Z.section(o, in));
  REQUIRE(three.kernels.size() == 1);
  CHECK(three.kernels[0].row_prefetches.size() == 3);
  const auto five = plan(O.section(o, in), X.section(o, in) + Y.section(o, in) - Z.section(o, in) +
                                               W.section(o, in) * V.section(o, in));
  REQUIRE(five.kernels.size() == 1);
  CHECK(five.kernels[0].row_prefetches.empty());
  const array<float, 2> s1(extent<2>(64, 64)), s2(extent<2>(64, 64));
  array<float, 2> s3(extent<2>(64, 64));
  const auto small =
      plan(s3.section(o, extent<2>(63, 63)),
           s1.section(o, extent<2>(63, 63)) + s2.section(ix(0, 0), extent<2>(63, 63)));
  REQUIRE(small.kernels.size() == 1);
  CHECK(small.kernels[0].row_prefetches.empty());
  CHECK_FALSE(has(small.kernels[0].mapping, "prefetch"));
  // Rows shorter than the prefetch distance: none, however large the arrays.
  const long narrow = t.row_prefetch_bytes / long(sizeof(float)) / 2;
  const extent<2> tall(long(t.row_prefetch_min_bytes / sizeof(float)) / narrow + 2, narrow + 1);
  const extent<2> tin(tall[0] - 1, narrow);
  const array<float, 2> T1(tall);
  array<float, 2> T2(tall);
  const auto skinny = plan(T2.section(o, tin), 2.f * T1.section(ix(0, 1), tin));
  REQUIRE(skinny.kernels.size() == 1);
  CHECK(skinny.kernels[0].row_prefetches.empty());
}

TEST_CASE("a section destination of contiguous operands: every kernel family, rest untouched") {
  // The destination's row stride differs from its width: a kernel that stored it as one flat
  // run wrote past each row (into the gap) and left later rows unwritten. Elementwise chains,
  // fills, generated values, transposes, matmuls, tile_mean, a destination its own operand
  // overlaps (temporary, then the copy), and float into double; sizes 1, primes and
  // non-multiples of the tile.
  for (const auto& rc : std::vector<std::array<long, 2>>{{1, 1}, {2, 3}, {7, 13}, {33, 65}}) {
    const long r = rc[0], c = rc[1];  // not a structured binding: lambdas below capture them
    CAPTURE(r);
    CAPTURE(c);
    using ix = tessera::index<2>;
    const ix o(1, 2);
    const extent<2> in(r, c), full(r + 3, c + 5);
    const auto ea = tt::small_ints(r, c), eb = tt::small_ints(r, c), et = tt::small_ints(c, r);
    const array<double, 2> A = tt::make<double>(ea), Bm = tt::make<double>(eb),
                           At = tt::make<double>(et);
    const array<float, 2> Af = tt::make<float>(ea);
    // want(i, j) inside the section, -1 outside.
    auto check = [&](const array<double, 2>& D, const auto& want) {
      const Eigen::MatrixXd h = to_eigen(D);
      for (long i = 0; i < full[0]; ++i)
        for (long j = 0; j < full[1]; ++j) {
          CAPTURE(i);
          CAPTURE(j);
          const bool inside = i >= o[0] && i < o[0] + r && j >= o[1] && j < o[1] + c;
          CHECK(h(i, j) == (inside ? double(want(i - o[0], j - o[1])) : -1.0));
        }
    };
    array<double, 2> D(full);
    D = -1.0;
    assign(D.section(o, in), 2.0 * A + Bm);
    check(D, [&](long i, long j) { return 2 * ea(i, j) + eb(i, j); });
    if (r > 1)  // one row of a wider array is contiguous
      CHECK(has(explain(D.section(o, in), 2.0 * A + Bm), "(the destination is a section)"));
    D = -1.0;
    assign(D.section(o, in), Af * 2.f);  // float expression, double destination
    check(D, [&](long i, long j) { return 2 * ea(i, j); });
    D = -1.0;
    fill(D.section(o, in), 5.0);
    check(D, [&](long, long) { return 5.0; });
    D = -1.0;
    assign(D.section(o, in), generate(
                                 in, TESSERA_KERNEL(const tessera::index<2>& i) {
                                       return double(i[0] * 100 + i[1]);
                                     }) +
                                 A);
    check(D, [&](long i, long j) { return double(i * 100 + j) + ea(i, j); });
    D = -1.0;
    assign(D.section(o, in), transpose(At));
    check(D, [&](long i, long j) { return et(j, i); });
    D = -1.0;
    if (r == c) {
      D = -1.0;
      assign(D.section(o, in), matmul(A, Bm) + A);
      const Eigen::MatrixXd mm = ea * eb + ea;
      check(D, [&](long i, long j) { return mm(i, j); });
    }
    // tile_mean of a (2r x 2c) array into the r x c section.
    const auto eq = tt::small_ints(2 * r, 2 * c);
    const array<double, 2> Q = tt::make<double>(eq);
    D = -1.0;
    assign(D.section(o, in), tile_mean<2, 2>(Q));
    check(D, [&](long i, long j) {
      return (eq(2 * i, 2 * j) + eq(2 * i + 1, 2 * j) + eq(2 * i, 2 * j + 1) +
              eq(2 * i + 1, 2 * j + 1)) /
             4.0;
    });
    // The destination overlaps its operand at other indices: a temporary, then the copy.
    array<double, 2> E(full);
    E = -1.0;
    assign(E.section(o, in), 1.0 * A);
    assign(E.section(o, in), E.section(ix(o[0], o[1] + 1), in) + A);
    const Eigen::MatrixXd he = to_eigen(E);
    CHECK(he(0, 0) == -1.0);
    for (long i = 0; i < r; ++i)
      for (long j = 0; j < c; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        const double right = j + 1 < c ? ea(i, j + 1) : -1.0;
        CHECK(he(o[0] + i, o[1] + j) == right + ea(i, j));
      }
  }
}

TEST_CASE("shift: offsets out of range are rejected before any kernel runs") {
  array<float, 1> A(4);
  CHECK_THROWS_WITH_AS(shift(A, tessera::index<1>(1 << 20), boundary::zero),
                       doctest::Contains("tessera::shift"), shape_error);
}

// --- untiled per-element kernels ----------------------------------------------------------------

TEST_CASE("untiled parallel_for_each(extent, kernel(index)): every element once, ranks 1-3") {
  for (long n : {0L, 1L, 4095L, 4096L, 4097L, 10001L}) {
    CAPTURE(n);
    array<int, 1> A(n), B(n);
    B = generate(
        B.extent, TESSERA_KERNEL(const tessera::index<1>& i) { return int(i[0] % 97); });
    A = 1;
    parallel_for_each(
        A.extent, TESSERA_KERNEL(const tessera::index<1>& i) { A[i] += 2 * B[i]; });
    const auto a = A.to_vector();
    for (long i = 0; i < n; ++i) CHECK(a[std::size_t(i)] == 1 + 2 * int(i % 97));
  }
  for (long r : {1L, 3L, 17L})
    for (long c : {1L, 5L, 66L}) {
      CAPTURE(r);
      CAPTURE(c);
      array<long, 2> M(r, c);
      parallel_for_each(
          M.extent, TESSERA_KERNEL(const tessera::index<2>& i) { M[i] += i[0] * 1000 + i[1]; });
      const auto m = M.to_vector();
      for (long q = 0; q < r * c; ++q) CHECK(m[std::size_t(q)] == (q / c) * 1000 + q % c);
      array<long, 3> T(2, r, c);
      parallel_for_each(
          T.extent, TESSERA_KERNEL(const tessera::index<3>& i) {
            T[i] = i[0] * 1000000 + i[1] * 1000 + i[2];
          });
      const auto t = T.to_vector();
      for (long q = 0; q < 2 * r * c; ++q)
        CHECK(t[std::size_t(q)] == (q / (r * c)) * 1000000 + ((q / c) % r) * 1000 + q % c);
    }
}
