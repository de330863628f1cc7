// Tier 1 scans along a dimension (inclusive_scan, exclusive_scan) and histograms, against the
// standard library (std::inclusive_scan / std::exclusive_scan per line) and a host histogram
// with the documented bin formula: random ranks 1-3 and shapes (1, 0, past the CPU chunk of
// 2^14), every dimension (and -1), sum / max / min / a non-commutative user operator
// (composition of affine maps modulo 2^32, checks the order), ints exact, float sums within the
// documented double-accumulation bound; in place, overlapping destinations, fused expressions
// (shift, matmul), views; errors before anything runs; plans.
#include "test_util.hpp"

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using namespace tessera;

namespace scan_tests {

using tt::affine;
using tt::compose;

template <int N>
extent<N> random_extent(long hi) {
  extent<N> e;
  for (int d = 0; d < N; ++d) e[d] = tt::random_size(1, hi);
  return e;
}

/// The reference: std::inclusive_scan (or exclusive with init) of every line along d of the
/// row-major data v of extent x.
template <class T, int N, class Op>
std::vector<T> line_scan(const std::vector<T>& v, const extent<N>& x, int d, Op op, bool exclusive,
                         T init) {
  std::vector<T> r(v.size());
  index_type inner = 1, outer = 1;
  for (int q = d + 1; q < N; ++q) inner *= x[q];
  for (int q = 0; q < d; ++q) outer *= x[q];
  const index_type L = x[d];
  std::vector<T> line(static_cast<std::size_t>(L)), out(static_cast<std::size_t>(L));
  for (index_type o = 0; o < outer; ++o)
    for (index_type i = 0; i < inner; ++i) {
      for (index_type k = 0; k < L; ++k)
        line[std::size_t(k)] = v[std::size_t((o * L + k) * inner + i)];
      if (exclusive)
        std::exclusive_scan(line.begin(), line.end(), out.begin(), init, op);
      else
        std::inclusive_scan(line.begin(), line.end(), out.begin(), op);
      for (index_type k = 0; k < L; ++k)
        r[std::size_t((o * L + k) * inner + i)] = out[std::size_t(k)];
    }
  return r;
}

template <class T>
std::vector<T> random_ints(std::size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = T(d(tt::rng()));
  return v;
}

template <int N>
void check_int_scans(const extent<N>& x) {
  const auto v = random_ints<int>(std::size_t(x.size()), -1000, 1000);
  const array<int, N> a(x, v.begin(), v.end());
  for (int d = -1; d < N; ++d) {
    const int dd = d < 0 ? N - 1 : d;
    CAPTURE(to_string(x));
    CAPTURE(d);
    CHECK(inclusive_scan(a, d).to_vector() == line_scan(v, x, dd, std::plus<>{}, false, 0));
    CHECK(exclusive_scan(a, d).to_vector() == line_scan(v, x, dd, std::plus<>{}, true, 0));
    CHECK(exclusive_scan(a, d, 5, tessera::plus<>{}).to_vector() ==
          line_scan(v, x, dd, std::plus<>{}, true, 5));
    const auto mx = [](int p, int q) {
      return p < q ? q : p;
    };
    const auto mn = [](int p, int q) {
      return q < p ? q : p;
    };
    CHECK(inclusive_scan(a, d, maximum<>{}).to_vector() == line_scan(v, x, dd, mx, false, 0));
    CHECK(inclusive_scan(a, d, minimum<>{}).to_vector() == line_scan(v, x, dd, mn, false, 0));
    CHECK(exclusive_scan(a, d, std::numeric_limits<int>::min(), maximum<>{}).to_vector() ==
          line_scan(v, x, dd, mx, true, std::numeric_limits<int>::min()));
  }
}

TEST_CASE("inclusive_scan and exclusive_scan of ints along every dimension are exact") {
  for (long n : {1L, 2L, 7L, 16L, 17L, 100L, 4099L, 16385L, 70001L}) check_int_scans(extent<1>(n));
  check_int_scans(extent<1>(tt::random_size(1, 300000)));
  for (int r = 0; r < 4; ++r) check_int_scans(random_extent<2>(70));
  check_int_scans(extent<2>(3, 40000));
  check_int_scans(extent<2>(40000, 3));
  check_int_scans(extent<2>(1, 1));
  for (int r = 0; r < 3; ++r) check_int_scans(random_extent<3>(20));
  check_int_scans(extent<3>(2, 17, 33));
  // Long lines: many chunks of the segmented forms (CPUs with several threads: rounds of
  // chunks a quarter of L2 long; GPUs: carries through ordered passes, recursively), lines
  // starting mid-round.
  check_int_scans(extent<1>(1000003));
  check_int_scans(extent<2>(5, 200003));
}

TEST_CASE("empty extents scan to empty arrays") {
  const array<float, 2> a(extent<2>(0, 5));
  CHECK(inclusive_scan(a, 0).extent == a.extent);
  CHECK(exclusive_scan(a, 1).extent.size() == 0);
  const array<int, 1> e(0);
  CHECK(inclusive_scan(e).extent.size() == 0);
}

/// Float sums: each prefix is the exact prefix rounded once to float, plus at most
/// (k + 1) 2^-53 of its sum of magnitudes (double accumulation); checked with a margin.
template <int N>
void check_float_sums(const extent<N>& x, int d) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<float> v(std::size_t(x.size()));
  for (auto& f : v) f = float(u(tt::rng()));
  const array<float, N> a(x, v.begin(), v.end());
  std::vector<long double> ld(v.begin(), v.end()), mag(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) mag[i] = std::fabs(ld[i]);
  const auto ref = line_scan(ld, x, d, std::plus<>{}, false, 0.0L);
  const auto refm = line_scan(mag, x, d, std::plus<>{}, false, 0.0L);
  const auto got = inclusive_scan(a, d).to_vector();
  const auto gotx = exclusive_scan(a, d).to_vector();
  const auto refx = line_scan(ld, x, d, std::plus<>{}, true, 0.0L);
  const auto refxm = line_scan(mag, x, d, std::plus<>{}, true, 0.0L);
  const long double L = x[d];
  double worst = 0, worstx = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const long double tol = std::fabs(ref[i]) * 0x1p-24L + (L + 1) * 0x1p-52L * refm[i] + 1e-30L;
    worst = std::max(worst, double(std::fabs(got[i] - ref[i]) / tol));
    const long double tolx = std::fabs(refx[i]) * 0x1p-24L + (L + 1) * 0x1p-52L * refxm[i] + 1e-30L;
    worstx = std::max(worstx, double(std::fabs(gotx[i] - refx[i]) / tolx));
  }
  CAPTURE(to_string(x));
  CAPTURE(d);
  CHECK(worst <= 1.0);
  CHECK(worstx <= 1.0);
}

TEST_CASE("float sums accumulate in double: every prefix within one float rounding") {
  for (long n : {1L, 9L, 1000L, 16384L, 16385L, 200003L, 1000003L})
    check_float_sums(extent<1>(n), 0);
  for (int d = 0; d < 2; ++d) check_float_sums(random_extent<2>(300), d);
  check_float_sums(extent<2>(2, 100000), 1);
  for (int d = 0; d < 3; ++d) check_float_sums(random_extent<3>(40), d);
  // double: accumulated in double, checked against the long double reference
  const std::size_t n = 50000;
  std::vector<double> v(n);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (auto& f : v) f = u(tt::rng());
  const array<double, 1> a(extent<1>(index_type(n)), v.begin(), v.end());
  const auto got = inclusive_scan(a).to_vector();
  long double s = 0;
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    s += v[i];
    worst = std::max(worst, double(std::fabs(got[i] - s) / (s * 0x1p-53L * (i + 2))));
  }
  CHECK(worst <= 1.0);
}

TEST_CASE("outputs larger than the caches are streamed out and stay exact") {
  // An output as large as the last-level cache that the scan does not read: CPU plans stream
  // the stores (from registers, after the first 64-byte boundary of the destination)
  const auto t = backends::backend<execution_space>::make_target();
  const long n = long(t.streaming_store_min_bytes > 0 ? t.streaming_store_min_bytes : 32 << 20) /
                     long(sizeof(int)) +
                 13;
  const auto v = random_ints<int>(std::size_t(n), 0, 3);
  const array<int, 1> a(extent<1>(n), v.begin(), v.end());
  if (!t.thread_per_logical && t.streaming_store_min_bytes > 0)
    CHECK(plan(scan_kind::inclusive, a).kernels.at(0).streaming_stores);
  const auto ref = line_scan(v, extent<1>(n), 0, std::plus<>{}, false, 0);
  const auto refx = line_scan(v, extent<1>(n), 0, std::plus<>{}, true, 0);
  CHECK(inclusive_scan(a).to_vector() == ref);
  CHECK(exclusive_scan(a).to_vector() == refx);
  // a destination that starts off a 64-byte boundary (a section at element 3)
  array<int, 1> big(extent<1>(n + 8));
  auto dst = big.section(tessera::index<1>(3), extent<1>(n));
  inclusive_scan(a, dst, 0, tessera::plus<>{});
  CHECK(dst.to_vector() == ref);
  exclusive_scan(a, dst, 0, 0, tessera::plus<>{});
  CHECK(dst.to_vector() == refx);
  inclusive_scan(a, dst, 0, tessera::maximum<>{});
  CHECK(dst.to_vector() ==
        line_scan(
            v, extent<1>(n), 0, [](int p, int q) { return std::max(p, q); }, false, 0));
  // float data, double accumulation: within one float rounding of the exact prefix
  std::vector<float> f(static_cast<std::size_t>(n));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : f) x = u(tt::rng());
  const array<float, 1> fa(extent<1>(n), f.begin(), f.end());
  const auto got = inclusive_scan(fa).to_vector();
  long double s = 0, m = 0;
  double worst = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    s += f[i];
    m += std::fabs(f[i]);
    const long double tol = std::fabs(s) * 0x1p-24L + (n + 1) * 0x1p-52L * m + 1e-30L;
    worst = std::max(worst, double(std::fabs(got[i] - s) / tol));
  }
  CHECK(worst <= 1.0);
}

TEST_CASE("a non-commutative operator keeps the order of every line") {
  for (int r = 0; r < 3; ++r) {
    const auto x = random_extent<2>(60);
    const auto ints = random_ints<int>(std::size_t(x.size()), 0, 1 << 20);
    std::vector<affine> v(ints.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = {unsigned(2 * ints[i] + 3), unsigned(ints[i] + 7)};
    const array<affine, 2> a(x, v.begin(), v.end());
    for (int d = 0; d < 2; ++d) {
      CAPTURE(d);
      CHECK(inclusive_scan(a, d, compose{}).to_vector() ==
            line_scan(v, x, d, compose{}, false, affine{1, 0}));
      CHECK(exclusive_scan(a, d, affine{1, 0}, compose{}).to_vector() ==
            line_scan(v, x, d, compose{}, true, affine{1, 0}));
    }
  }
  // long lines (the segmented forms on threaded spaces and GPUs)
  for (long n : {50001L, 600007L}) {
    CAPTURE(n);
    const auto ints = random_ints<int>(std::size_t(n), 0, 1 << 20);
    std::vector<affine> v(ints.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = {unsigned(ints[i] | 1), unsigned(ints[i])};
    const array<affine, 1> a(extent<1>(n), v.begin(), v.end());
    CHECK(inclusive_scan(a, 0, compose{}).to_vector() ==
          line_scan(v, extent<1>(n), 0, compose{}, false, affine{1, 0}));
    CHECK(exclusive_scan(a, 0, affine{3, 1}, compose{}).to_vector() ==
          line_scan(v, extent<1>(n), 0, compose{}, true, affine{3, 1}));
  }
}

TEST_CASE("inclusive_scan with an initial value, into views and in place") {
  const extent<2> x(37, 41);
  const auto v = random_ints<int>(std::size_t(x.size()), -50, 50);
  const array<int, 2> a(x, v.begin(), v.end());
  array<int, 2> out(x);
  inclusive_scan(a, out, 1, tessera::plus<>{}, 100);
  auto ref = line_scan(v, x, 1, std::plus<>{}, false, 0);
  for (index_type i = 0; i < x[0]; ++i)
    for (index_type j = 0; j < x[1]; ++j) ref[std::size_t(i * x[1] + j)] += 100;
  CHECK(out.to_vector() == ref);

  // in place, both dimensions
  for (int d = 0; d < 2; ++d) {
    array<int, 2> b(x, v.begin(), v.end());
    inclusive_scan(b, b, d);
    CHECK(b.to_vector() == line_scan(v, x, d, std::plus<>{}, false, 0));
    array<int, 2> c(x, v.begin(), v.end());
    exclusive_scan(c, c, d);
    CHECK(c.to_vector() == line_scan(v, x, d, std::plus<>{}, true, 0));
  }
  // a destination overlapping the source shifted by one element: through a temporary
  std::vector<int> buf(v.begin(), v.end());
  buf.push_back(0);
  array_view<int, 1> src(extent<1>(index_type(v.size())), buf.data());
  array_view<int, 1> dst(extent<1>(index_type(v.size())), buf.data() + 1);
  inclusive_scan(src, dst);
  dst.synchronize();
  const auto r1 = line_scan(v, extent<1>(index_type(v.size())), 0, std::plus<>{}, false, 0);
  CHECK(std::equal(r1.begin(), r1.end(), buf.begin() + 1));
  // a section of an array as destination
  array<int, 2> big(extent<2>(50, 50));
  fill(big, -1);
  inclusive_scan(a.section(tessera::index<2>(0, 0), extent<2>(10, 41)),
                 big.section(tessera::index<2>(5, 3), extent<2>(10, 41)), 0);
  const auto bv = big.to_vector();
  const auto r2 = line_scan(std::vector<int>(v.begin(), v.begin() + 10 * 41), extent<2>(10, 41), 0,
                            std::plus<>{}, false, 0);
  bool ok = true;
  for (index_type i = 0; i < 50; ++i)
    for (index_type j = 0; j < 50; ++j) {
      const bool in = i >= 5 && i < 15 && j >= 3 && j < 44;
      const int want = in ? r2[std::size_t((i - 5) * 41 + j - 3)] : -1;
      ok = ok && bv[std::size_t(i * 50 + j)] == want;
    }
  CHECK(ok);
  // Sections whose trailing extents are 1: a line along dimension 1 of a (n, L, 1) section of
  // an (n, L, 3) array has no element after it in its row, yet its elements are 3 apart.
  for (long L : {7L, 40000L}) {
    CAPTURE(L);
    const extent<3> xs(3, L, 1), xb(3, L, 3);
    const auto vb = random_ints<int>(std::size_t(xb.size()), -50, 50);
    const array<int, 3> wide(xb, vb.begin(), vb.end());
    std::vector<int> vs(std::size_t(xs.size()));
    for (index_type i = 0; i < 3; ++i)
      for (index_type k = 0; k < L; ++k)
        vs[std::size_t(i * L + k)] = vb[std::size_t((i * L + k) * 3 + 1)];
    const auto sec = wide.section(tessera::index<3>(0, 0, 1), xs);
    CHECK(inclusive_scan(sec, 1).to_vector() == line_scan(vs, xs, 1, std::plus<>{}, false, 0));
    array<int, 3> out(xb);
    exclusive_scan(sec, out.section(tessera::index<3>(0, 0, 2), xs), 1, 4, tessera::plus<>{});
    const auto ov = out.to_vector();
    const auto want = line_scan(vs, xs, 1, std::plus<>{}, true, 4);
    bool same = true;
    for (index_type i = 0; i < 3; ++i)
      for (index_type k = 0; k < L; ++k)
        same = same && ov[std::size_t((i * L + k) * 3 + 2)] == want[std::size_t(i * L + k)] &&
               ov[std::size_t((i * L + k) * 3)] == 0;
    CHECK(same);
  }
}

TEST_CASE("scans of expressions fuse their element-wise producers") {
  const extent<2> x(23, 301);
  const auto va = random_ints<int>(std::size_t(x.size()), -9, 9);
  const auto vb = random_ints<int>(std::size_t(x.size()), -9, 9);
  const array<int, 2> a(x, va.begin(), va.end()), b(x, vb.begin(), vb.end());
  std::vector<int> e(va.size());
  for (std::size_t i = 0; i < e.size(); ++i) e[i] = 2 * va[i] - vb[i];
  for (int d = 0; d < 2; ++d) {
    CHECK(inclusive_scan(2 * a - b, d).to_vector() == line_scan(e, x, d, std::plus<>{}, false, 0));
    CHECK(exclusive_scan(2 * a - b, d, 0, maximum<>{}).to_vector() ==
          line_scan(
              e, x, d, [](int p, int q) { return p < q ? q : p; }, true, 0));
  }
  // a shift of the destination itself: reads neighbours, so a temporary
  array<int, 2> c(x, va.begin(), va.end());
  std::vector<int> sh(va.size());
  for (index_type i = 0; i < x[0]; ++i)
    for (index_type j = 0; j < x[1]; ++j)
      sh[std::size_t(i * x[1] + j)] = j + 1 < x[1] ? va[std::size_t(i * x[1] + j + 1)] : 0;
  inclusive_scan(shift(c, tessera::index<2>(0, 1), boundary::zero), c, 1);
  CHECK(c.to_vector() == line_scan(sh, x, 1, std::plus<>{}, false, 0));
  // a matmul operand is computed first; its scan fuses the epilogue
  const auto ea = tt::random_matrix<double>(13, 9), eb = tt::random_matrix<double>(9, 11);
  const array<double, 2> ma = from_eigen(ea), mb = from_eigen(eb);
  Eigen::MatrixXd want(13, 11);  // the product plus 1, by a plain loop
  for (Eigen::Index i = 0; i < 13; ++i)
    for (Eigen::Index j = 0; j < 11; ++j) {
      double s = 1.0;
      for (Eigen::Index q = 0; q < 9; ++q) s += ea(i, q) * eb(q, j);
      want(i, j) = s;
    }
  const auto got = to_eigen(inclusive_scan(matmul(ma, mb) + 1.0, 0));
  for (Eigen::Index i = 1; i < want.rows(); ++i) want.row(i) += want.row(i - 1);
  CHECK(tt::max_abs_diff(got, want) <= 1e-12);
  const std::string p = explain(scan_kind::inclusive, matmul(ma, mb) + 1.0, 0);
  CHECK(tt::has(p, "2 kernels"));
  CHECK(tt::has(p, "inclusive_scan (sum) of double 13x11 along dimension 0"));
}

TEST_CASE("bad scans are errors before anything runs, naming the function and sizes") {
  const std::vector<int> v{1, 2, 3, 4, 5, 6};
  const array<int, 2> a(extent<2>(2, 3), v.begin(), v.end());
  const std::string m = tt::message_of<shape_error>([&] { (void)inclusive_scan(a, 2); });
  CHECK(tt::has(m, "tessera::inclusive_scan: dimension 2 is not a dimension of extent"));
  CHECK(tt::has(tt::message_of<shape_error>([&] { (void)exclusive_scan(a, -3); }),
                "tessera::exclusive_scan: dimension -3"));
  array<int, 2> wrong(extent<2>(3, 2));
  fill(wrong, 7);
  CHECK(tt::has(tt::message_of<shape_error>([&] { inclusive_scan(a, wrong, 0); }),
                "differs from the source's"));
  CHECK(wrong.to_vector() == std::vector<int>(6, 7));
  CHECK(tt::has(tt::message_of<shape_error>([&] { (void)plan(scan_kind::inclusive, a, 5); }),
                "tessera::plan(inclusive_scan): dimension 5"));
}

TEST_CASE("scan plans say the form, the accumulation and where it runs") {
  const array<float, 1> a(extent<1>(1 << 20));
  const auto p = plan(scan_kind::inclusive, a);
  REQUIRE(p.kernels.size() == 1);
  const auto& k = p.kernels[0];
  CHECK(k.family == kernel_family::scan);
  CHECK(tt::has(codegen::to_string(p), "double accumulator"));
  const auto t = backends::backend<execution_space>::make_target();
  if (!t.thread_per_logical && t.concurrency == 1) {
    CHECK(k.inline_run);
  } else if (!t.thread_per_logical && t.scan.round_team > 1) {
    // CPUs with several threads: one team walks chunks of a quarter of L2 in rounds
    CHECK(k.scan_rounds);
    CHECK(k.league_size == 1);
    CHECK(k.team_size == t.scan.round_team);
    CHECK(k.reduce_chunk * 4 <=
          std::int64_t(std::max<std::size_t>(t.scan.round_chunk_bytes, 4096)));
    CHECK(k.barriers.size() == 2);
    CHECK(k.scratch_bytes[0] ==
          std::size_t(k.team_size) * sizeof(backends::impl::scan_carry<double>));
  } else {  // one long line: chunks of it, carried across iterations
    CHECK(k.scan_line_block == 0);
    CHECK(k.league_size == (1 << 20) / t.scan.chunk);
    // GPUs carry through ordered passes of Tessera's own (Kokkos' GPU scans need commutative
    // joins); host spaces through Kokkos parallel_scan
    CHECK(k.scan_carry_passes == t.scan.carry_passes);
    CHECK(k.phases == (t.scan.carry_passes ? 3 : 2));
  }
  // lines enough to fill the execution space, or no longer than a chunk: the line form
  const int lines = std::max(1, t.concurrency);
  const array<float, 2> b(extent<2>(lines, 100));
  const auto q = plan(scan_kind::exclusive, b, 1).kernels.at(0);
  CHECK(q.scan_line_block == 1);
  CHECK(q.league_size == lines);
  const array<float, 2> b2(extent<2>(3, t.scan.chunk));
  CHECK(plan(scan_kind::exclusive, b2, 1).kernels.at(0).scan_line_block == 1);
  CHECK(tt::has(explain(scan_kind::exclusive, b, 1, maximum<>{}), "exclusive_scan (max)"));
  CHECK(plan(scan_kind::inclusive, array<float, 1>(0)).kernels.empty());
}

/// The documented bin of x, or -1.
template <class T>
long ref_bin(T x, long bins, double lo, double hi) {
  const double v = double(x);
  if (!(v >= lo && v < hi)) return -1;
  const long b = long((v - lo) * (double(bins) / (hi - lo)));
  return b < bins ? b : bins - 1;
}
template <class T>
std::vector<index_type> ref_histogram(const std::vector<T>& v, long bins, double lo, double hi) {
  std::vector<index_type> h(std::size_t(bins), 0);
  for (const T& x : v)
    if (const long b = ref_bin(x, bins, lo, hi); b >= 0) ++h[std::size_t(b)];
  return h;
}

TEST_CASE("histogram counts like a host loop: bins of every size, out-of-range values, NaN") {
  std::uniform_real_distribution<double> u(-0.25, 1.25);
  for (long n : {0L, 1L, 5L, 1000L, 65537L, 300001L}) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& f : v) f = float(u(tt::rng()));
    if (n > 10) {
      v[3] = std::numeric_limits<float>::quiet_NaN();
      v[4] = 1.0f;                                                             // == hi: not counted
      v[5] = 0.0f;                                                             // == lo: bin 0
      for (long i = 6; i < std::min(n, 4000L); ++i) v[std::size_t(i)] = 0.5f;  // a long run
    }
    const array<float, 1> a(extent<1>(n), v.begin(), v.end());
    for (long bins : {1L, 7L, 256L, 5000L, 300000L}) {
      CAPTURE(n);
      CAPTURE(bins);
      CHECK(histogram(a, bins, {0.0, 1.0}).to_vector() == ref_histogram(v, bins, 0.0, 1.0));
    }
  }
  // integers, a 2-D input, a fused expression, counts into an int32 view
  const extent<2> x(77, 131);
  const auto iv = random_ints<int>(std::size_t(x.size()), -20, 300);
  const array<int, 2> ia(x, iv.begin(), iv.end());
  CHECK(histogram(ia, 64, {0, 256}).to_vector() == ref_histogram(iv, 64, 0, 256));
  std::vector<int> doubled(iv.size());
  for (std::size_t i = 0; i < iv.size(); ++i) doubled[i] = iv[i] * 2 - 5;
  std::vector<std::int32_t> counts(100, -1);
  array_view<std::int32_t, 1> cv(extent<1>(100), counts);
  histogram(ia * 2 - 5, cv, {-100.0, 700.0});
  cv.synchronize();
  const auto want = ref_histogram(doubled, 100, -100.0, 700.0);
  CHECK(std::vector<index_type>(counts.begin(), counts.end()) == want);
}

TEST_CASE("bad histograms are errors before anything runs") {
  const array<float, 1> a(extent<1>(10));
  CHECK(tt::has(tt::message_of<shape_error>([&] {
                  (void)histogram(a, 0, {0.0, 1.0});
                }),
                "tessera::histogram: bins must be at least 1, got 0"));
  CHECK(tt::has(tt::message_of<usage_error>([&] {
                  (void)histogram(a, 4, {1.0, 1.0});
                }),
                "tessera::histogram: the range"));
  CHECK(!tt::message_of<usage_error>([&] {
           (void)histogram(a, 4, {0.0, std::numeric_limits<double>::infinity()});
         }).empty());
  std::vector<index_type> keep(4, 9);
  array_view<index_type, 1> kv(extent<1>(4), keep);
  CHECK(!tt::message_of<usage_error>([&] { histogram(a, kv, {2.0, 1.0}); }).empty());
  CHECK(keep == std::vector<index_type>(4, 9));
}

TEST_CASE("histogram plans show private bins and their phases") {
  const array<float, 1> a(extent<1>(1 << 20));
  const auto k = plan_histogram(a, 256, {0.0, 1.0}).kernels.at(0);
  CHECK(k.family == kernel_family::histogram);
  CHECK(k.histogram_copies >= 1);
  CHECK(k.scratch_bytes[0] == std::size_t(256 * 4 * k.histogram_copies));
  CHECK(k.barriers.size() == 2);
  CHECK(tt::has(explain_histogram(a, 256, {0.0, 1.0}), "private bins"));
  const auto big = plan_histogram(a, 1 << 22, {0.0, 1.0}).kernels.at(0);
  CHECK(big.histogram_copies == 0);
  CHECK(big.scratch_bytes[0] == 0);
}

}  // namespace scan_tests
