// Host gemm (backends/host/gemm.hpp) against Eigen: edge and random shapes, float and double,
// padded leading dimensions, several blockings, epilogues, K = 0, shape errors, blockings.
//
// Reference: Eigen's product of the same inputs in double. Tolerance for an M x N x K product
// of entries bounded by max|a|, max|b|:
//   float:  |err| <= 1e-5  * K * max|a| * max|b| + 1e-6
//   double: |err| <= 1e-13 * K * max|a| * max|b| + 1e-14
// (accumulation order differs from Eigen's; bound grows linearly with K).
#include <tessera/backends/host/gemm.hpp>

#include "test_util.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

// `index` alone would also find POSIX ::index(); the using-declaration below hides it.
namespace {
using namespace tessera;
using tessera::index;
namespace host = tessera::backends::host;

/// An M x N x K problem in caller-owned row-major buffers with leading dimensions
/// lda = K + pad_a, ldb = N + pad_b, ldc = N + pad_c. Padding of A and B holds NaN (gemm must
/// not read it); C holds NaN in its M x N part (must be overwritten) and `sentinel` in its
/// padding (must not be written).
template <class T>
struct problem {
  index_type M, N, K, lda, ldb, ldc;
  std::vector<T> a, b, c;
  static constexpr T sentinel = T(12345);

  problem(index_type m, index_type n, index_type k, index_type pad_a = 0, index_type pad_b = 0,
          index_type pad_c = 0)
      : M(m), N(n), K(k), lda(k + pad_a), ldb(n + pad_b), ldc(n + pad_c) {
    const T nan = std::numeric_limits<T>::quiet_NaN();
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    a.assign(std::size_t(M * lda), nan);
    b.assign(std::size_t(K * ldb), nan);
    c.assign(std::size_t(M * ldc), sentinel);
    for (index_type i = 0; i < M; ++i)
      for (index_type k = 0; k < K; ++k) a[i * lda + k] = T(d(tt::rng()));
    for (index_type k = 0; k < K; ++k)
      for (index_type j = 0; j < N; ++j) b[k * ldb + j] = T(d(tt::rng()));
    for (index_type i = 0; i < M; ++i)
      for (index_type j = 0; j < N; ++j) c[i * ldc + j] = nan;
  }
  using map = Eigen::Map<const eigen_matrix<T>, 0, Eigen::OuterStride<>>;
  map A() const { return map(a.data(), M, K, Eigen::OuterStride<>(lda)); }
  map B() const { return map(b.data(), K, N, Eigen::OuterStride<>(ldb)); }
  map C() const { return map(c.data(), M, N, Eigen::OuterStride<>(ldc)); }
  /// A * B computed by Eigen in double.
  eigen_matrix<double> reference() const {
    eigen_matrix<double> r = A().template cast<double>() * B().template cast<double>();
    return r;
  }
  double tolerance() const {
    const double ma = M && K ? double(A().cwiseAbs().maxCoeff()) : 0.0;
    const double mb = K && N ? double(B().cwiseAbs().maxCoeff()) : 0.0;
    if constexpr (std::is_same_v<T, float>) return 1e-5 * double(K) * ma * mb + 1e-6;
    return 1e-13 * double(K) * ma * mb + 1e-14;
  }
  template <class Ep>
  void run(const Ep& ep, host::gemm_blocking blk) {
    host::gemm<T>(M, N, K, a.data(), lda, b.data(), ldb, c.data(), ldc, ep, blk);
  }
  /// True when no element of C's padding columns changed.
  bool padding_untouched() const {
    for (index_type i = 0; i < M; ++i)
      for (index_type j = N; j < ldc; ++j)
        if (c[i * ldc + j] != sentinel) return false;
    return true;
  }
};

template <class T>
auto identity() {
  return [](index_type, index_type, T v) {
    return v;
  };
}

/// Blockings that force several mc, kc and nc blocks on small shapes, plus the default.
template <class T>
std::vector<host::gemm_blocking> test_blockings() {
  const int mr = host::gemm_mr<T>, nr = host::gemm_nr<T>;
  return {
      host::default_blocking<T>(),
      {mr, 16, nr},                  // one micro-panel per block, K blocks of 16
      {2 * mr + 1, 37, 3 * nr - 5},  // rounded up to (3 mr, -, 3 nr); kc not a multiple of 8
      {2 * mr, 37, 2 * nr, 0, 0, 5}  // A prefetched 5 k steps ahead, past each micro-panel
  };
}

template <class T>
void check_product(problem<T>& p, host::gemm_blocking blk) {
  CAPTURE(p.M);
  CAPTURE(p.N);
  CAPTURE(p.K);
  CAPTURE(host::describe(blk));
  p.run(identity<T>(), blk);
  const double err = tt::max_abs_diff(p.C(), p.reference());
  CHECK(err <= p.tolerance());
  CHECK(p.padding_untouched());
}

template <class T>
void edge_shapes() {
  const std::vector<long> sizes = {0, 1, 2, 7, 13, 17, 31, 64, 97};
  for (const auto& blk : test_blockings<T>())
    for (long m : sizes)
      for (long n : sizes)
        for (long k : sizes) {
          problem<T> p(m, n, k);
          check_product(p, blk);
        }
}

TEST_CASE("gemm<float>: every combination of edge sizes (0, 1, primes) and four blockings") {
  if (tt::cpu_family_unused("host gemm on every shape")) return;
  edge_shapes<float>();
}

TEST_CASE("gemm<double>: every combination of edge sizes (0, 1, primes) and four blockings") {
  if (tt::cpu_family_unused("host gemm on every shape")) return;
  edge_shapes<double>();
}

template <class T>
void random_shapes() {
  // Larger than the default mc and kc, so the default blocking also uses several blocks;
  // random padding of every leading dimension.
  std::vector<std::array<long, 3>> shapes = {{1000, 3, 500}, {3, 1000, 500}, {2000, 17, 1},
                                             {1, 1, 5000},   {5, 701, 9},    {509, 521, 523}};
  for (int trial = 0; trial < 6; ++trial)
    shapes.push_back({tt::random_size(1, 700), tt::random_size(1, 700), tt::random_size(1, 700)});
  for (const auto& s : shapes) {
    const long m = s[0], n = s[1], k = s[2];
    for (const auto& blk : {host::default_blocking<T>(), test_blockings<T>()[2]}) {
      problem<T> p(m, n, k, tt::random_size(0, 9), tt::random_size(0, 9), tt::random_size(0, 9));
      check_product(p, blk);
    }
  }
}

/// The direct form (codegen::direct_gemm_fits: small problems, A and B read in place) on edge
/// shapes around the micro-tile (rows MR / 4, MR / 2, MR and between; columns below, at and
/// past NR, last panels of up to half NR and more), padded leading dimensions (NaN in A's and B's
/// padding, a sentinel in C's), with and without add_to_c and an epilogue, launched and on the
/// calling thread (gemm_params::inline_run): the same bits as the packed form with one K block,
/// within tolerance of Eigen, padding untouched.
template <class T>
void direct_shapes() {
  const int mr = host::gemm_mr<T>, nr = host::gemm_nr<T>;
  const std::vector<long> ms = {1,      2,  mr / 4 + 1, mr / 2,    mr / 2 + 1,
                                mr - 1, mr, mr + 1,     3 * mr + 2};
  // Past the full panels: partial panels of one vector's columns or fewer (nr / 2 on SIMD
  // builds: the kernel with one vector of B per row) and of more.
  const std::vector<long> ns = {1, 3, nr - 1, nr, nr + 1, nr + nr / 2, nr + nr / 2 + 1, 2 * nr + 5};
  const std::vector<long> ks = {1, 2, 17, codegen::direct_gemm_max_k};
  auto ep = [](index_type i, index_type j, T acc) {
    return T(acc * T(0.5) + T(i) - T(j));
  };
  for (long m : ms)
    for (long n : ns)
      for (long k : ks)
        for (bool add : {false, true}) {
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(add);
          problem<T> p(m, n, k, 3, 5, 2);
          if (add)
            for (index_type i = 0; i < m; ++i)
              for (index_type j = 0; j < n; ++j) p.c[std::size_t(i * p.ldc + j)] = T(i - j);
          problem<T> q = p, r = p;
          const host::gemm_blocking blk = host::default_blocking<T>();
          codegen::gemm_params packed = host::plan<T>(m, n, k, blk, 1), direct = packed;
          REQUIRE(k <= packed.kc);
          direct.direct = true;
          direct.m_blocks = (m + mr - 1) / mr;
          codegen::gemm_params on_caller = direct;  // the row blocks on this thread
          on_caller.inline_run = true;
          const Kokkos::DefaultHostExecutionSpace exec;
          host::gemm<T>(exec, m, n, k, p.a.data(), p.lda, p.b.data(), p.ldb, p.c.data(), p.ldc, ep,
                        direct, "direct", add);
          host::gemm<T>(exec, m, n, k, q.a.data(), q.lda, q.b.data(), q.ldb, q.c.data(), q.ldc, ep,
                        packed, "packed", add);
          host::gemm<T>(exec, m, n, k, r.a.data(), r.lda, r.b.data(), r.ldb, r.c.data(), r.ldc, ep,
                        on_caller, "direct on the calling thread", add);
          CHECK(p.c == q.c);  // bits, padding included
          CHECK(r.c == q.c);
          CHECK(p.padding_untouched());
          eigen_matrix<double> want = p.reference();
          for (index_type i = 0; i < m; ++i)
            for (index_type j = 0; j < n; ++j)
              want(i, j) = 0.5 * (want(i, j) + (add ? double(i - j) : 0.0)) + double(i - j);
          // The product's tolerance, plus the epilogue's roundings of values up to |want|.
          const double eps = double(std::numeric_limits<T>::epsilon());
          CHECK(tt::max_abs_diff(p.C(), want) <=
                2 * p.tolerance() + 4 * eps * want.cwiseAbs().maxCoeff());
        }
}

TEST_CASE(
    "gemm<float> and gemm<double>: the direct form, launched or on the calling thread, bit for bit "
    "the packed form") {
  direct_shapes<float>();
  direct_shapes<double>();
}

/// C within one row block (one team on one thread): the team packs each micro-panel of B
/// right before using it, with no packing launch; several row blocks pack the whole panel in a
/// launch first. The same kc and nc, so the same additions in the same order: the same bits.
template <class T>
void one_team_shapes() {
  const int mr = host::gemm_mr<T>, nr = host::gemm_nr<T>;
  for (const auto& s : std::vector<std::array<long, 3>>{
           {1, 3 * nr + 5, 100}, {mr - 1, nr / 2, 45}, {3 * mr - 1, 5 * nr + 1, 130}}) {
    const long m = s[0], n = s[1], k = s[2];
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    problem<T> p(m, n, k, 1, 3, 2);
    problem<T> q = p;
    const host::gemm_blocking one{int(host::impl::round_up(m, mr)), 32, 2 * nr},
        many{mr, 32, 2 * nr};
    const codegen::gemm_params pone = host::plan<T>(m, n, k, one, 1),
                               pmany = host::plan<T>(m, n, k, many, 1);
    REQUIRE(pone.m_blocks * pone.splits == 1);
    CHECK(pmany.m_blocks * pmany.splits == (m + mr - 1) / mr);
    const Kokkos::DefaultHostExecutionSpace exec;
    host::gemm<T>(exec, m, n, k, p.a.data(), p.lda, p.b.data(), p.ldb, p.c.data(), p.ldc,
                  identity<T>(), pone, "one team");
    host::gemm<T>(exec, m, n, k, q.a.data(), q.lda, q.b.data(), q.ldb, q.c.data(), q.ldc,
                  identity<T>(), pmany, "many teams");
    CHECK(p.c == q.c);  // bits, padding included
    CHECK(p.padding_untouched());
    CHECK(tt::max_abs_diff(p.C(), p.reference()) <= p.tolerance());
  }
}

TEST_CASE("gemm: C in one row block packs B in its team, bit for bit the packing launch") {
  if (tt::cpu_family_unused("host gemm on one team")) return;
  one_team_shapes<float>();
  one_team_shapes<double>();
}

TEST_CASE("gemm<float>: random and tall/skinny shapes, padded leading dimensions") {
  if (tt::cpu_family_unused("host gemm on every shape")) return;
  random_shapes<float>();
}

TEST_CASE("gemm<double>: random and tall/skinny shapes, padded leading dimensions") {
  if (tt::cpu_family_unused("host gemm on every shape")) return;
  random_shapes<double>();
}

template <class T>
void epilogue_relu() {
  // C = relu(alpha * A*B + beta * D), D another (padded) matrix read by the epilogue.
  const T alpha = T(1.5), beta = T(-0.75);
  for (const auto& s :
       std::vector<std::array<long, 3>>{{97, 61, 131}, {13, 200, 1}, {300, 7, 700}}) {
    // Plain variables, not structured bindings: CAPTURE's lambda cannot name those in C++17/20
    // as implemented by Clang 14.
    const long m = s[0], n = s[1], k = s[2];
    for (const auto& blk : test_blockings<T>()) {
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(host::describe(blk));
      problem<T> p(m, n, k, 3, 0, 5);
      const index_type ldd = n + 2;
      std::vector<T> d(std::size_t(m * ldd));
      for (auto& x : d) x = T(std::uniform_real_distribution<double>(-4, 4)(tt::rng()));
      const T* dp = d.data();
      p.run(
          [=](index_type i, index_type j, T acc) {
            const T v = alpha * acc + beta * dp[i * ldd + j];
            return v > T(0) ? v : T(0);
          },
          blk);
      Eigen::Map<const eigen_matrix<T>, 0, Eigen::OuterStride<>> D(d.data(), m, n,
                                                                   Eigen::OuterStride<>(ldd));
      eigen_matrix<double> ref =
          (double(alpha) * p.reference() + double(beta) * D.template cast<double>()).cwiseMax(0.0);
      CHECK(tt::max_abs_diff(p.C(), ref) <= 1.5 * p.tolerance());
      CHECK(p.padding_untouched());
    }
  }
}

TEST_CASE("gemm<float>: epilogue relu(alpha*acc + beta*D(i,j)) reading another matrix") {
  epilogue_relu<float>();
}

TEST_CASE("gemm<double>: epilogue relu(alpha*acc + beta*D(i,j)) reading another matrix") {
  epilogue_relu<double>();
}

TEST_CASE("gemm: the epilogue runs exactly once per element, after the full K accumulation") {
  // acc + 1 is not idempotent: applying it twice, or before the last K block, shows up.
  for (const auto& blk : test_blockings<float>())
    for (const auto& s : std::vector<std::array<long, 3>>{{29, 67, 97}, {1, 1, 1}, {40, 3, 300}}) {
      const long m = s[0], n = s[1], k = s[2];
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(host::describe(blk));
      problem<float> p(m, n, k);
      std::vector<std::atomic<int>> calls(std::size_t(m * n));
      std::atomic<int>* cp = calls.data();
      p.run(
          [=](index_type i, index_type j, float acc) {
            cp[i * n + j].fetch_add(1, std::memory_order_relaxed);
            return acc + 1.0f;
          },
          blk);
      int wrong = 0;
      for (auto& c : calls) wrong += c.load() != 1;
      CHECK(wrong == 0);
      eigen_matrix<double> ref = p.reference().array() + 1.0;
      CHECK(tt::max_abs_diff(p.C(), ref) <= p.tolerance());
    }
}

TEST_CASE("gemm: K = 0 stores ep(i, j, 0), M = 0 or N = 0 writes nothing") {
  problem<double> p(13, 7, 0, 0, 0, 3);
  p.run([](index_type i, index_type j, double acc) { return acc + double(100 * i + j); },
        host::default_blocking<double>());
  for (index_type i = 0; i < 13; ++i)
    for (index_type j = 0; j < 7; ++j) CHECK(p.C()(i, j) == double(100 * i + j));
  CHECK(p.padding_untouched());

  problem<float> q(0, 9, 4, 0, 0, 2), r(9, 0, 4, 0, 0, 2);
  std::atomic<int> calls{0};
  auto counting = [&calls](index_type, index_type, float v) {
    return ++calls, v;
  };
  q.run(counting, host::default_blocking<float>());
  r.run(counting, host::default_blocking<float>());
  CHECK(calls == 0);
  CHECK(r.padding_untouched());
}

TEST_CASE("gemm: shape errors throw shape_error before C is touched") {
  problem<float> p(8, 9, 10, 1, 1, 1);
  const std::vector<float> before = p.c;
  const auto blk = host::default_blocking<float>();
  auto id = identity<float>();
  const float *a = p.a.data(), *b = p.b.data();
  float* c = p.c.data();
  CHECK_THROWS_AS(host::gemm<float>(-1, 9, 10, a, 11, b, 10, c, 10, id, blk), shape_error);
  CHECK_THROWS_AS(host::gemm<float>(8, -9, 10, a, 11, b, 10, c, 10, id, blk), shape_error);
  CHECK_THROWS_AS(host::gemm<float>(8, 9, -10, a, 11, b, 10, c, 10, id, blk), shape_error);
  CHECK_THROWS_AS(host::gemm<float>(8, 9, 10, a, 9, b, 10, c, 10, id, blk), shape_error);
  CHECK_THROWS_AS(host::gemm<float>(8, 9, 10, a, 11, b, 8, c, 10, id, blk), shape_error);
  CHECK_THROWS_AS(host::gemm<float>(8, 9, 10, a, 11, b, 10, c, 8, id, blk), shape_error);
  CHECK_THROWS_AS(host::gemm<float>(8, 9, 10, a, 11, b, 10, c, 10, id, {0, 64, 64}), shape_error);
  CHECK_THROWS_AS(host::gemm<float>(8, 9, 10, a, 11, b, 10, c, 10, id, {48, -1, 64}), shape_error);
  // The message names the function and the sizes.
  try {
    host::gemm<float>(8, 9, 10, a, 9, b, 10, c, 10, id, blk);
  } catch (const shape_error& e) {
    CHECK(std::string(e.what()).find("gemm") != std::string::npos);
    CHECK(std::string(e.what()).find("lda=9") != std::string::npos);
  }
  int changed = 0;
  for (std::size_t i = 0; i < before.size(); ++i)
    changed += !(std::isnan(before[i]) ? std::isnan(p.c[i]) : before[i] == p.c[i]);
  CHECK(changed == 0);
}

template <class T>
void check_blocking_shape(const host::gemm_blocking& b) {
  CAPTURE(host::describe(b));
  CHECK(b.mc > 0);
  CHECK(b.kc > 0);
  CHECK(b.nc > 0);
  CHECK(b.mc % host::gemm_mr<T> == 0);
  CHECK(b.nc % host::gemm_nr<T> == 0);
  CHECK(b.mr == host::gemm_mr<T>);
  CHECK(b.nr == host::gemm_nr<T>);
}

// The A prefetch (gemm_blocking::a_prefetch) only moves data between caches: the same
// operations in the same order, so the same bits as without it, for every k step ahead
// (1: inside the micro-panel; 40 with K blocks of 37: past its end, into the next one's).
template <class T>
void prefetch_same_bits() {
  std::mt19937 rng(26);
  std::uniform_int_distribution<int> side(1, 140);
  for (int trial = 0; trial < 6; ++trial) {
    problem<T> p(side(rng), side(rng), side(rng) + 64, 1, 2, 3);
    host::gemm_blocking blk =
        trial % 2 ? host::default_blocking<T>()
                  : host::gemm_blocking{2 * host::gemm_mr<T>, 37, 3 * host::gemm_nr<T>};
    check_product(p, blk);
    const std::vector<T> plain = p.c;
    for (int ahead : {1, 16, 40}) {
      blk.a_prefetch = ahead;
      CAPTURE(ahead);
      check_product(p, blk);
      CHECK(p.c == plain);
    }
  }
}

TEST_CASE("a_prefetch: the same bits as without it (float, double), a negative one throws") {
  if (tt::cpu_family_unused("host gemm's A prefetch")) return;
  prefetch_same_bits<float>();
  prefetch_same_bits<double>();
  host::gemm_blocking blk = host::default_blocking<float>();
  CHECK(host::describe(blk).find("a_prefetch") == std::string::npos);
  blk.a_prefetch = 32;
  CHECK(host::describe(blk).find(" a_prefetch=32") != std::string::npos);
  blk.a_prefetch = -1;
  problem<float> p(5, 6, 7);
  const std::vector<float> before = p.c;
  CHECK_THROWS_WITH_AS(p.run(identity<float>(), blk), doctest::Contains("a_prefetch=-1"),
                       tessera::shape_error);
  CHECK_THROWS_AS(host::set_blocking<float>(blk), tessera::shape_error);
  CHECK(std::memcmp(p.c.data(), before.data(), before.size() * sizeof(float)) == 0);
}

TEST_CASE("default_blocking: positive, multiples of the micro-tile, used by a correct product") {
  check_blocking_shape<float>(host::default_blocking<float>());
  check_blocking_shape<double>(host::default_blocking<double>());
  // At most 192 rows of A per block, whatever the micro-tile's rows (or one micro-panel).
  CHECK(host::default_blocking<float>().mc <= std::max(192, host::gemm_mr<float>));
  CHECK(host::default_blocking<double>().mc <= std::max(192, host::gemm_mr<double>));
  MESSAGE("micro-tiles: float " << host::gemm_mr<float> << " x "
                                << host::gemm_nr<float> << ", double "
                                << host::gemm_mr<double> << " x " << host::gemm_nr<double>);
  problem<float> p(300, 257, 411, 2, 3, 4);
  check_product(p, host::default_blocking<float>());
  problem<double> q(301, 259, 413, 3, 5, 7);
  check_product(q, host::default_blocking<double>());
}

TEST_CASE("tune: explicit, used by later products, set_blocking, default is deterministic") {
  // The default blocking comes from the cache sizes: the same on every call.
  CHECK(host::describe(host::current_blocking<float>()) ==
        host::describe(host::default_blocking<float>()));
  const auto bf = host::tune<float>();
  check_blocking_shape<float>(bf);
  CHECK(host::describe(host::current_blocking<float>()) == host::describe(bf));
  CHECK(std::string(host::blocking_origin<float>()) == "tuned");
  MESSAGE("tuned blocking: float " << host::describe(bf));
  problem<float> p(300, 257, 411, 2, 3, 4);
  check_product(p, bf);
  const host::gemm_blocking mine{48, 128, 512};
  host::set_blocking<double>(mine);
  CHECK(host::describe(host::current_blocking<double>()) == host::describe(mine));
  problem<double> q(123, 456, 789, 1, 0, 2);
  check_product(q, host::current_blocking<double>());
  CHECK_THROWS_AS(host::set_blocking<double>({0, 128, 512}), tessera::shape_error);
  // Back to the defaults for the rest of the suite.
  host::set_blocking<float>(host::default_blocking<float>(), "derived from the cache sizes");
  host::set_blocking<double>(host::default_blocking<double>(), "derived from the cache sizes");
}

#if defined(TESSERA_HOST_SHUFFLE)
// The shuffle tree that combines groups of lanes in the CPU tile_reduce (host/simd.hpp):
// every power-of-two group width G up to the line, lines of 1-16 vectors, integers (exact)
// under + and max, against a scalar left-to-right combination of the same line.
template <int G, int NV, class Op>
void check_fold(const Op& op, int seed) {
  using V = host::simd::vec<int>;
  constexpr int L = host::simd::lanes<int>;
  if constexpr (L > 1 && G <= NV * L) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(-1000, 1000);
    int line[NV * L];
    for (int& x : line) x = d(rng);
    V v[NV];
    for (int k = 0; k < NV; ++k) v[k] = host::simd::load<V>(line + k * L);
    host::simd::fold_groups<G, NV>(v, op);
    constexpr int Q = NV * L / G, M = Q < L ? 1 : Q / L;
    int got[M * L];
    for (int k = 0; k < M; ++k) host::simd::store(got + k * L, v[k]);
    for (int q = 0; q < Q; ++q) {
      int want = line[q * G];
      for (int c = 1; c < G; ++c) want = op(want, line[q * G + c]);
      CHECK_MESSAGE(got[q] == want, "G=" << G << " NV=" << NV << " q=" << q);
    }
  }
}

TEST_CASE("simd::fold_groups: every group width and line length, + and max, exact") {
  auto widths = [](auto nv, const auto& op) {
    constexpr int NV = decltype(nv)::value;
    check_fold<1, NV>(op, 1);
    check_fold<2, NV>(op, 2);
    check_fold<4, NV>(op, 3);
    check_fold<8, NV>(op, 4);
    check_fold<16, NV>(op, 5);
    check_fold<32, NV>(op, 6);
    check_fold<64, NV>(op, 7);
    check_fold<256, NV>(op, 8);
  };
  for (int o = 0; o < 2; ++o) {
    auto run = [&](const auto& op) {
      widths(std::integral_constant<int, 1>{}, op);
      widths(std::integral_constant<int, 2>{}, op);
      widths(std::integral_constant<int, 4>{}, op);
      widths(std::integral_constant<int, 8>{}, op);
      widths(std::integral_constant<int, 16>{}, op);
    };
    if (o == 0)
      run(tessera::ops::add{});
    else
      run(tessera::ops::max{});
  }
}
#endif

TEST_CASE("describe: mc kc nc, then mr nr when recorded") {
  CHECK(host::describe({96, 256, 2048, 6, 16}) == "mc=96 kc=256 nc=2048 mr=6 nr=16");
  CHECK(host::describe({96, 256, 2048}) == "mc=96 kc=256 nc=2048");
}

}  // namespace
