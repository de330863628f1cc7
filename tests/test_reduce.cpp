// Whole-array reductions (sum, mean, min_value, max_value, reduce, reproducible mode) against
// Eigen and against a long double reference, on ranks 1-3 and sizes 0, 1, primes and
// non-multiples of the 2^14-element chunk and of every lane/block width.
//
// Tolerances, with s the exact sum, A = sum |x_i| and u = unit roundoff of T:
//  * sum, float:  |sum - s| <= u |s| + 4.01 u A (the documented bound: float blocks of 16 added
//    pairwise, then double lanes); double: u |s| + 4.01 u A (blocks of 16, then compensated
//    lanes).
//  * against Eigen's own float/double sum (recursive, up to (n - 1) u A from s): our bound plus
//    (n - 1) u A.
//  * mean: the sum's tolerance / n plus u |mean|.
//  * reduce(e, init, plus<>) on floating types computes in T: (n + 1) u A.
//  * min_value / max_value, integer sums and means, integer reduce: exact.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
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

/// A readable that is not an array: element (i, j, k) computed on the fly (as array
/// expressions are).
struct iota3 {
  static constexpr int rank = 3;
  extent<3> ext;
  extent<3> get_extent() const { return ext; }
  KOKKOS_INLINE_FUNCTION double operator()(index_type i, index_type j, index_type k) const {
    return double(i * 10000 + j * 100 + k);
  }
};
/// Bitwise or: an associative, commutative user operation.
struct bit_or {
  KOKKOS_INLINE_FUNCTION unsigned operator()(unsigned a, unsigned b) const { return a | b; }
};

/// Sizes for rank 1: edges, primes and non-multiples around the 2^14 chunk and the 256-element
/// float block, and a few random ones.
std::vector<long> rank1_sizes() {
  std::vector<long> s = tt::edge_sizes();
  for (long n :
       {127L, 255L, 256L, 257L, 1021L, 4099L, 16381L, 16384L, 16385L, 40009L, 49157L, 65536L + 17})
    s.push_back(n);
  for (int k = 0; k < 4; ++k) s.push_back(tt::random_size(2, 200000));
  return s;
}

// --- the concept -----------------------------------------------------------------------------

static_assert(readable<array<float, 1>>);
static_assert(readable<array<double, 2>>);
static_assert(readable<array<int, 3>>);
static_assert(readable<array_view<const float, 2>>);
static_assert(readable<array_view<float, 1>>);
static_assert(readable<iota3>);
static_assert(!readable<int>);
static_assert(!readable<std::vector<float>>);
static_assert(!readable<Kokkos::View<float*>>);
static_assert(std::is_same_v<readable_value_t<array_view<const float, 2>>, float>);
static_assert(std::is_same_v<readable_value_t<iota3>, double>);
}  // namespace
// Probe types with external linkage: their members are declared only (the concept checks
// signatures), which a device compiler would flag as unreferenced in an unnamed namespace.
namespace reduce_concept_probe {
struct rank4 {
  static constexpr int rank = 4;
  extent<3> get_extent() const;  // declarations only: the concept checks signatures
  double operator()(index_type, index_type, index_type, index_type) const;
};

struct wrong_arity {
  static constexpr int rank = 2;
  extent<2> get_extent() const;
  double operator()(index_type) const;
};
}  // namespace reduce_concept_probe
namespace {
static_assert(!readable<reduce_concept_probe::rank4>);
static_assert(!readable<reduce_concept_probe::wrong_arity>);

// --- sum, mean, min, max ---------------------------------------------------------------------

template <class T>
void check_floating_rank1(long n) {
  {
    CAPTURE(n);
    const auto v = random_data<T>(n);
    const auto a = make_array(extent<1>(n), v);
    const reference r = exact_sum(v);
    const double tol = sum_tolerance<T>(r);
    const T s = sum(a);
    CHECK(std::fabs(double(s) - double(r.sum)) <= tol);
    const Eigen::Map<const eigen_vector<T>> ev(v.data(), n);
    const double eigen_tol = tol + (n > 0 ? n - 1 : 0) * unit_roundoff<T>() * double(r.abs_sum);
    CHECK(std::fabs(double(s) - double(ev.sum())) <= eigen_tol);
    CHECK(std::fabs(double(sum(a, reproducible)) - double(r.sum)) <= tol);
    const double plus_tol = (n + 1) * unit_roundoff<T>() * double(r.abs_sum);
    CHECK(std::fabs(double(reduce(a, T(0), plus<>{})) - double(r.sum)) <= plus_tol);
    if (n == 0) {
      CHECK(s == T(0));
      return;
    }
    const double m = double(mean(a));
    CHECK(std::fabs(m - double(r.sum / n)) <= tol / n + unit_roundoff<T>() * std::fabs(m));
    CHECK(min_value(a) == ev.minCoeff());
    CHECK(max_value(a) == ev.maxCoeff());
    CHECK(reduce(a, std::numeric_limits<T>::infinity(), minimum<>{}) == ev.minCoeff());
    CHECK(reduce(a, -std::numeric_limits<T>::infinity(), maximum<T>{}) == ev.maxCoeff());
  }
}

TEST_CASE("float: sum, mean, min, max, reduce on rank-1 sizes 0, 1, primes, non-multiples") {
  for (long n : rank1_sizes()) check_floating_rank1<float>(n);
}
TEST_CASE("double: sum, mean, min, max, reduce on rank-1 sizes 0, 1, primes, non-multiples") {
  for (long n : rank1_sizes()) check_floating_rank1<double>(n);
}

// A chunk of fewer than two lane widths (sums: 16 lanes for float, 8 for double; min and max:
// 64 for float, 32 for double) folds in order below one lane width and in lanes from there, on
// every backend (GPU chunks of such sizes too); from 2^7 doubles and 2^8 floats on, CPUs fold whole
// blocks into the lanes in vector registers, then the run's leftover rows of lanes. Every size up
// to 300 meets each of these paths and their edges, on rank 1 and on rank 2 (3 rows).
TEST_CASE("every size from 1 to 300: sums, min, max and reduce in order, in lanes, in blocks") {
  for (long n = 1; n <= 300; ++n) {
    CAPTURE(n);
    check_floating_rank1<float>(n);
    check_floating_rank1<double>(n);
    std::vector<int> iv(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> d(-1000000, 1000000);
    for (auto& x : iv) x = d(tt::rng());
    const auto ia = make_array(extent<1>(n), iv);
    long long want = 0;
    for (int x : iv) want += x;
    CHECK(static_cast<long long>(sum(ia)) == want);
    CHECK(min_value(ia) == *std::min_element(iv.begin(), iv.end()));
    if (n % 3 == 0) {
      const auto m = tt::random_matrix<double>(3, n / 3);
      const array<double, 2> a2 = from_eigen(m);
      const std::vector<double> flat(m.data(), m.data() + m.size());
      const reference r = exact_sum(flat);
      CHECK(std::fabs(double(sum(a2)) - double(r.sum)) <= sum_tolerance<double>(r));
      CHECK(max_value(a2) == m.maxCoeff());
      CHECK(min_value(a2) == m.minCoeff());
    }
  }
}

TEST_CASE("rank 2 and rank 3: arrays and array_views match Eigen and the reference") {
  std::vector<std::array<long, 3>> shapes = {{0, 5, 3},    {3, 0, 1},     {1, 1, 1},
                                             {1, 17, 1},   {13, 1, 97},   {7, 31, 2},
                                             {64, 16, 16}, {3, 5, 16385}, {2, 1, 40009}};
  for (int k = 0; k < 5; ++k)
    shapes.push_back({tt::random_size(1, 60), tt::random_size(1, 60), tt::random_size(1, 300)});
  for (const auto& shape : shapes) {
    const long d0 = shape[0], d1 = shape[1], d2 = shape[2];
    CAPTURE(d0);
    CAPTURE(d1);
    CAPTURE(d2);
    // rank 2: d0 x (d1 * d2)
    const auto m = tt::random_matrix<float>(d0, d1 * d2);
    const array<float, 2> a2 = from_eigen(m);
    const array_view<const float, 2> v2(extent<2>(d0, d1 * d2), m.data());
    const std::vector<float> flat(m.data(), m.data() + m.size());
    const reference r = exact_sum(flat);
    const double tol = sum_tolerance<float>(r);
    CHECK(std::fabs(double(sum(a2)) - double(r.sum)) <= tol);
    CHECK(bits(sum(a2)) == bits(sum(v2)));
    CHECK(std::fabs(double(sum(v2)) - double(m.cast<double>().sum())) <= tol + 1e-12);
    // rank 3: d0 x d1 x d2, same data
    const auto a3 = make_array(extent<3>(d0, d1, d2), flat);
    const array_view<const float, 3> v3(extent<3>(d0, d1, d2), flat.data());
    CHECK(bits(sum(a3, reproducible)) == bits(sum(v3, reproducible)));
    CHECK(std::fabs(double(sum(a3)) - double(r.sum)) <= tol);
    if (m.size() == 0) {
      CHECK_THROWS_AS(mean(a3), shape_error);
      continue;
    }
    CHECK(min_value(a2) == m.minCoeff());
    CHECK(max_value(v2) == m.maxCoeff());
    CHECK(min_value(a3) == m.minCoeff());
    CHECK(max_value(a3) == m.maxCoeff());
    const double n = double(m.size());
    CHECK(std::fabs(double(mean(a3)) - double(r.sum) / n) <=
          tol / n + unit_roundoff<float>() * std::fabs(double(r.sum) / n));
  }
}

TEST_CASE("integer sums, means and reductions are exact (int, unsigned, short, int8, int64)") {
  for (long n : rank1_sizes()) {
    CAPTURE(n);
    std::vector<int> vi(n);
    std::vector<unsigned> vu(n);
    std::vector<short> vs(n);
    std::vector<std::int8_t> v8(n);
    std::vector<std::int64_t> vl(n);
    std::int64_t si = 0, sl = 0;
    std::uint64_t su = 0;
    unsigned ou = 0;
    for (long i = 0; i < n; ++i) {
      vi[i] = int(tt::random_size(-1000000, 1000000));
      vu[i] = unsigned(tt::random_size(0, 4000000000L));
      vs[i] = short(tt::random_size(-300, 300));
      v8[i] = std::int8_t(tt::random_size(-100, 100));
      vl[i] = tt::random_size(-(1L << 40), 1L << 40);
      si += vi[i];
      su += vu[i];
      sl += vl[i];
      ou |= vu[i];
    }
    const auto ai = make_array(extent<1>(n), vi);
    const auto au = make_array(extent<1>(n), vu);
    const auto as = make_array(extent<1>(n), vs);
    const auto a8 = make_array(extent<1>(n), v8);
    const auto al = make_array(extent<1>(n), vl);
    std::int64_t ss = 0, s8 = 0;
    for (long i = 0; i < n; ++i) {
      ss += vs[i];
      s8 += v8[i];
    }
    CHECK(sum(ai) == static_cast<int>(si));  // modulo 2^32 when the sum leaves int's range
    CHECK(sum(au) == static_cast<unsigned>(su));
    CHECK(sum(as) == static_cast<short>(ss));
    CHECK(sum(a8) == static_cast<std::int8_t>(s8));
    CHECK(sum(al) == sl);
    CHECK(sum(al, reproducible) == sl);
    CHECK(reduce(ai, 7, plus<>{}) == static_cast<int>(si + 7));
    CHECK(reduce(au, 0u, bit_or{}) == ou);
    if (n == 0) continue;
    CHECK(mean(ai) == static_cast<int>(si / n));
    CHECK(mean(al) == sl / n);
    CHECK(mean(au) == static_cast<unsigned>(su / std::uint64_t(n)));
    const Eigen::Map<const eigen_vector<int>> ev(vi.data(), n);
    CHECK(min_value(ai) == ev.minCoeff());
    CHECK(max_value(ai) == ev.maxCoeff());
    CHECK(min_value(a8) == *std::min_element(v8.begin(), v8.end()));
  }
  // Products: +-1 and a few 2s, exact in int64.
  std::vector<std::int64_t> p(40000, 1);
  for (long i = 0; i < 40000; i += 997) p[i] = -1;
  for (long i = 5; i < 40000; i += 4001) p[i] = 2;
  std::int64_t want = 3;
  for (auto x : p) want *= x;
  CHECK(reduce(make_array(extent<1>(40000), p), std::int64_t(3), multiplies<>{}) == want);
}

// CPUs sum 4-byte integers as pairs in 64-bit lanes (an accumulator of the pairs and one of
// their upper halves), signed ones biased to unsigned first, and read arrays of at least the
// last-level cache's size as four streams: the result is the exact sum modulo 2^64, converted
// to T. Values at both extremes make every carry and the bias matter.
TEST_CASE("32-bit integer sums at the extremes, in cache and from memory, exact modulo 2^bits") {
  const long big = long(tt::streaming_bytes() / sizeof(int)) + 13;
  for (long n : {1L, 15L, 16L, 31L, 32L, 33L, 255L, 1000L, 4099L, 65536L + 7, big}) {
    CAPTURE(n);
    std::vector<int> vi(static_cast<std::size_t>(n));
    std::vector<unsigned> vu(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> di(std::numeric_limits<int>::min(),
                                          std::numeric_limits<int>::max());
    std::int64_t si = 0;
    std::uint64_t su = 0;
    for (long i = 0; i < n; ++i) {
      const int k = int(i % 7);
      vi[i] = k == 0   ? std::numeric_limits<int>::min()
              : k == 1 ? std::numeric_limits<int>::max()
              : k == 2 ? -1
                       : di(tt::rng());
      vu[i] = k == 0 ? std::numeric_limits<unsigned>::max() : unsigned(vi[i]);
      si += vi[i];
      su += vu[i];
    }
    const auto ai = make_array(extent<1>(n), vi);
    const auto au = make_array(extent<1>(n), vu);
    CHECK(sum(ai) == static_cast<int>(si));
    CHECK(sum(au) == static_cast<unsigned>(su));
    CHECK(sum(ai, reproducible) == static_cast<int>(si));
    CHECK(mean(ai) == static_cast<int>(si / n));
    CHECK(mean(au) == static_cast<unsigned>(su / std::uint64_t(n)));
  }
}

// Lane l of a block at q: its elements k0..k1-1 (stride L) added as block_sums' pairwise tree,
// in the element type.
template <int L, class T>
T lane_tree(const T* q, int l, int k0, int k1) {
  if (k1 - k0 == 1) return q[k0 * L + l];
  const int mid = (k0 + k1) / 2;
  return lane_tree<L>(q, l, k0, mid) + lane_tree<L>(q, l, mid, k1);
}

// CPU backends fold runs of whole blocks into compensated lanes in vector registers (each
// block's tree of additions on the multiply-add units where the target has them and they fit):
// the bits of compensated_sum_rule's steps, lane by lane and block after block, the order every
// other backend computes. Values spread over 60 binary orders make every rounding error count.
template <class T, int K, int L, class Space = Kokkos::DefaultHostExecutionSpace>
void check_block_fold_two_sum() {
  using rule = backends::impl::compensated_sum_rule<T>;
  if constexpr (backends::impl::has_block_fold_two_sum<Space, T, K, L>) {
    std::uniform_real_distribution<T> u(T(-1), T(1));
    std::uniform_int_distribution<int> e(-30, 30);
    for (long groups : {0L, 1L, 2L, 3L, 7L, 64L}) {
      CAPTURE(groups);
      std::vector<T> x(static_cast<std::size_t>(groups * K * L));
      for (auto& v : x) v = std::ldexp(u(tt::rng()), e(tt::rng()));
      std::array<T, L> s{}, c{};
      for (int l = 0; l < L; ++l) {
        s[l] = std::ldexp(u(tt::rng()), 12);
        c[l] = std::ldexp(u(tt::rng()), -44);
      }
      std::array<T, L> want_s = s, want_c = c;
      for (long g = 0; g < groups; ++g)
        for (int l = 0; l < L; ++l)
          rule::two_sum(want_s[l], want_c[l], lane_tree<L>(x.data() + g * K * L, l, 0, K));
      // Each mode of the fold: an input in cache, from memory, prefetching ahead (every mode
      // reads the blocks in address order).
      for (const auto& mode :
           {std::pair<index_type, bool>{0, false}, std::pair<index_type, bool>{0, true},
            std::pair<index_type, bool>{64, true}}) {
        const index_type ahead = mode.first;
        const bool from_memory = mode.second;
        CAPTURE(ahead);
        CAPTURE(from_memory);
        std::array<T, L> fs = s, fc = c;
        backends::backend<Space>::template block_fold_two_sum<K, L>(
            x.data(), groups * K * L, fs.data(), fc.data(), ahead, from_memory);
        for (int l = 0; l < L; ++l) {
          CAPTURE(l);
          CHECK(std::memcmp(&fs[l], &want_s[l], sizeof(T)) == 0);
          CHECK(std::memcmp(&fc[l], &want_c[l], sizeof(T)) == 0);
        }
      }
    }
  } else {
    MESSAGE("this host backend folds compensated lanes one element at a time (no vector fold)");
  }
}

TEST_CASE("compensated lanes folded in vector registers give the bits of the rule's steps") {
  constexpr int L = backends::impl::compensated_sum_rule<double>::lanes;
  constexpr int K = backends::impl::compensated_sum_rule<double>::block;
  check_block_fold_two_sum<double, K, L>();
  check_block_fold_two_sum<double, 1, L>();
  check_block_fold_two_sum<double, 2 * K, L>();
  check_block_fold_two_sum<float, K, L>();
  check_block_fold_two_sum<float, K, 2 * L>();
}

// CPU backends also fold float blocks into double lanes in vector registers (block_fold:
// each block's tree in float, on the multiply-add units where the target's registers are 256
// bits wide), with the bits of widening_sum_rule's steps: the float tree per lane, converted
// and added into the lane, block after block.
template <int K, int L, class Space = Kokkos::DefaultHostExecutionSpace>
void check_block_fold_widening() {
  if constexpr (backends::impl::has_block_fold<Space, float, double, K, L>) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::uniform_int_distribution<int> e(-20, 20);
    for (long groups : {0L, 1L, 3L, 64L}) {
      CAPTURE(groups);
      std::vector<float> x(static_cast<std::size_t>(groups * K * L));
      for (auto& v : x) v = std::ldexp(u(tt::rng()), e(tt::rng()));
      std::array<double, L> acc{};
      for (auto& a : acc) a = std::ldexp(double(u(tt::rng())), 10);
      std::array<double, L> want = acc;
      for (long g = 0; g < groups; ++g)
        for (int l = 0; l < L; ++l) want[l] += double(lane_tree<L>(x.data() + g * K * L, l, 0, K));
      for (index_type ahead : {index_type(0), index_type(64)}) {
        CAPTURE(ahead);
        std::array<double, L> got = acc;
        backends::backend<Space>::template block_fold<K, L>(x.data(), groups * K * L, got.data(),
                                                            ahead);
        for (int l = 0; l < L; ++l) {
          CAPTURE(l);
          CHECK(std::memcmp(&got[l], &want[l], sizeof(double)) == 0);
        }
      }
    }
  } else {
    MESSAGE("this host backend folds float blocks one lane at a time (no vector fold)");
  }
}

TEST_CASE("float blocks folded into double lanes in vector registers give the rule's bits") {
  constexpr int L = backends::impl::widening_sum_rule<float>::lanes;
  constexpr int K = backends::impl::widening_sum_rule<float>::block;
  check_block_fold_widening<K, L>();
  check_block_fold_widening<K / 2, L>();
  check_block_fold_widening<K, 2 * L>();
}

// The chunk fold takes the row-major range [lo, hi) of a rank-2 or rank-3 operand as one run,
// the association of a rank-1 array of the same elements: host backends fold arrays without
// gaps in one call of their vector folds (block_fold, block_fold_two_sum, op_fold), sections a
// buffer of gathered rows at a time, expressions a buffer of evaluated elements at a time; a
// backend without vector folds steps the lanes itself, reading rows in place and gathering the
// groups that cross a row's end. All must give the bits of the
// rank-1 fold. Rows of every length around the lane count and the block, with gaps between
// rows (sections) and without, and ranges [lo, hi) that start and end inside rows.

// The host backends' folds themselves, called directly: host compilers only (nvcc and hipcc
// would also compile their device side, which calls the host backend's vector kernels).
#if !defined(__CUDACC__) && !defined(__HIPCC__)
/// The elements of strided memory, read through a plain readable (the chunk fold's generic
/// path): a section of an array, as an expression would see it.
template <class T, int N>
struct strided_reader {
  static constexpr int rank = N;
  const T* p;
  std::array<index_type, N> s;  // strides; s[N - 1] = 1
  extent<N> ext;
  extent<N> get_extent() const { return ext; }
  T operator()(index_type i, index_type j) const requires(N == 2) { return p[i * s[0] + j]; }
  T operator()(index_type i, index_type j, index_type k) const requires(N == 3) {
    return p[i * s[0] + j * s[1] + k];
  }
};

/// An execution space whose backend has no vector folds: the chunk fold's own lane steps.
struct generic_fold_space {};
}  // namespace
template <>
struct tessera::backends::backend<generic_fold_space> {};
namespace {

template <class A>
bool same_acc(const A& a, const A& b) {
  if constexpr (std::is_arithmetic_v<A>)
    return std::memcmp(&a, &b, sizeof(A)) == 0;
  else
    return bits(a.s) == bits(b.s) && bits(a.c) == bits(b.c);
}

template <class T, class Rule, int N, class Space = Kokkos::DefaultHostExecutionSpace>
void check_rows_fold(const Rule& rule, const extent<N>& x, index_type gap) {
  using raw = backends::impl::raw_operand<T, N>;
  using reader = strided_reader<T, N>;
  const index_type cols = x[N - 1], ld = cols + gap;
  std::array<index_type, N> st{};
  st[N - 1] = 1;
  st[N - 2] = ld;
  if constexpr (N == 3) st[0] = ld * x[1] + gap;  // a gap between slabs too
  const index_type len = (x[0] - 1) * st[0] + (N == 3 ? (x[1] - 1) * st[1] : 0) + cols;
  std::vector<T> data(static_cast<std::size_t>(len));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> e(-12, 12), z(0, 15);
  for (auto& v : data) {
    if constexpr (std::is_floating_point_v<T>)
      v = z(tt::rng()) == 0 ? T(-0.0) : T(std::ldexp(u(tt::rng()), e(tt::rng())));
    else
      v = T(static_cast<long long>(std::ldexp(u(tt::rng()), 30)));  // modulo 2^32 for unsigned
  }
  // Only signed zeros, NaNs and +-1 in some arrays: min and max then depend on the order in
  // which each lane meets them.
  if constexpr (std::is_floating_point_v<T>)
    if (cols % 4 == 2) {
      const T special[] = {T(-0.0), T(0.0), std::numeric_limits<T>::quiet_NaN(), T(1), T(-1)};
      std::uniform_int_distribution<int> w(0, 4);
      for (auto& v : data) v = special[w(tt::rng())];
    }
  // An infinity in some arrays: a lane that holds one must not take steps for the lanes past
  // a row's last element (inf - inf would make its error NaN).
  if constexpr (std::is_floating_point_v<T>)
    if (cols % 3 == 1)
      data[std::uniform_int_distribution<std::size_t>(0, data.size() - 1)(tt::rng())] =
          std::numeric_limits<T>::infinity();
  tessera::impl::strided_ref<const T, N> r{data.data(), {}};
  for (int d = 0; d < N; ++d) r.s[d] = st[std::size_t(d)];
  const index_type n = x.size();
  std::vector<std::pair<index_type, index_type>> ranges = {{0, n}};
  std::uniform_int_distribution<index_type> pick(0, n);
  for (int k = 0; k < 6; ++k) {
    index_type a = pick(tt::rng()), b = pick(tt::rng());
    if (a > b) std::swap(a, b);
    if (a < b) ranges.push_back({a, b});
  }
  if (cols > 3 && n > cols + 3) ranges.push_back({cols - 2, n - 1});
  // The same elements in row-major order, without gaps, as a rank-1 array.
  std::vector<T> flat;
  flat.reserve(static_cast<std::size_t>(n));
  for (index_type q = 0; q < n; ++q) {
    index_type off = q % cols, rest = q / cols;
    for (int d = N - 2; d >= 0; --d) {
      off += rest % x[d] * st[std::size_t(d)];
      rest /= x[d];
    }
    flat.push_back(data[std::size_t(off)]);
  }
  using raw1 = backends::impl::raw_operand<T, 1>;
  tessera::impl::strided_ref<const T, 1> r1{flat.data(), {1}};
  for (const auto& [lo, hi] : ranges) {
    const index_type rlo = lo, rhi = hi;
    CAPTURE(rlo);
    CAPTURE(rhi);
    const auto want =
        backends::impl::chunk_folder<Space, raw1, Rule>{raw1{r1}, rule, extent<1>(n)}.fold(lo, hi);
    CHECK(same_acc(
        backends::impl::chunk_folder<Space, reader, Rule>{reader{data.data(), st, x}, rule, x}.fold(
            lo, hi),
        want));
    CHECK(same_acc(
        backends::impl::chunk_folder<generic_fold_space, reader, Rule>{reader{data.data(), st, x},
                                                                       rule, x}
            .fold(lo, hi),
        want));
    for (const index_type ahead : {index_type(0), index_type(256)})
      for (const bool from_memory : {false, true}) {
        CAPTURE(ahead);
        CAPTURE(from_memory);
        const auto got =
            backends::impl::chunk_folder<Space, raw, Rule>{raw{r}, rule, x, ahead, from_memory}
                .fold(lo, hi);
        CHECK(same_acc(got, want));
      }
  }
}

template <class T, class Rule>
void check_rows_folds(const Rule& rule) {
  constexpr int L = Rule::lanes, G = L * (Rule::block > 1 ? Rule::block : 1);
  std::vector<index_type> widths = {1,     2, 3,     L - 1,        L, L + 1, 2 * L + 5,
                                    G - 1, G, G + 1, 2 * G + L + 3};
  for (int k = 0; k < 3; ++k) widths.push_back(tt::random_size(1, 3 * G));
  for (const index_type cols : widths)
    for (const index_type rows : {index_type(1), index_type(2), index_type(7), index_type(40)})
      for (const index_type gap : {index_type(0), index_type(3)}) {
        CAPTURE(cols);
        CAPTURE(rows);
        CAPTURE(gap);
        check_rows_fold<T>(rule, extent<2>(rows, cols), gap);
        if (rows > 1) check_rows_fold<T>(rule, extent<3>(3, rows, cols), gap);
      }
}

TEST_CASE("rank 2 and 3: arrays, sections and expressions fold to the bits of rank 1") {
  using namespace backends::impl;
  check_rows_folds<float>(widening_sum_rule<float>{});
  check_rows_folds<double>(compensated_sum_rule<double>{});
  check_rows_folds<int>(int_sum_rule<int>{});
  check_rows_folds<unsigned>(int_sum_rule<unsigned>{});
  check_rows_folds<float>(op_rule<float, maximum<float>>{});
  check_rows_folds<double>(op_rule<double, minimum<double>>{});
  check_rows_folds<float>(op_rule<float, plus<float>>{});  // rounding: the order shows
  check_rows_folds<int>(op_rule<int, ops::max>{});
  check_rows_folds<short>(op_rule<short, plus<short>>{});
}

#endif  // !__CUDACC__ && !__HIPCC__

// The same through the public functions: sum over an array, a section of a larger one (rows
// apart in memory) and an expression of either (the generic fold) agree to the bit.
TEST_CASE("rank 2: sums of arrays, sections and expressions of them agree bitwise") {
  for (const auto& [rows, cols] : std::vector<std::pair<long, long>>{
           {1, 1}, {5, 3}, {100, 10}, {33, 17}, {64, 64}, {7, 257}, {3, 1000}, {2, 4099}}) {
    const long r = rows, c = cols;  // (Clang 14 cannot capture structured bindings)
    CAPTURE(r);
    CAPTURE(c);
    const auto m = tt::random_matrix<float>(rows, cols + 5);
    const array<float, 2> big = from_eigen(m);
    const auto sec = big.section(index<2>(0, 2), extent<2>(rows, cols));  // rows apart
    array<float, 2> a(extent<2>(rows, cols));                             // contiguous
    tessera::copy(sec, a);
    CHECK(bits(sum(a)) == bits(sum(sec)));
    CHECK(bits(sum(a)) == bits(sum(a * 1.f)));
    const auto md = tt::random_matrix<double>(rows, cols);
    const array<double, 2> ad = from_eigen(md);
    CHECK(bits(sum(ad)) == bits(sum(ad * 1.0)));
  }
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

// Reductions read an expression's elements where they are computed (the CPU backends compute
// W consecutive elements into one vector register when every operand is contiguous, and
// otherwise evaluate them into a buffer; GPU backends one element at a time): whatever the
// path, every reduction of an expression gives the bits of the same reduction of its values
// materialized in an array, at every rank and length (lanes, blocks and chunks cut anywhere),
// on contiguous operands and on sections of larger arrays (rows apart in memory).
TEST_CASE("expressions fold to the bits of their values materialized: ranks 1-3, sections") {
  for (long n : {1L, 3L, 16L, 17L, 255L, 256L, 257L, 1023L, 4099L, 65536L + 77, 3 * 65536L + 5}) {
    CAPTURE(n);
    const extent<1> x(n);
    check_expression_set(make_array(x, random_data<float>(n)), make_array(x, random_data<float>(n)),
                         make_array(x, random_data<double>(n)),
                         make_array(x, random_data<double>(n)));
  }
  for (const auto& [rows, cols] : std::vector<std::pair<long, long>>{
           {1, 1}, {5, 3}, {33, 17}, {7, 257}, {64, 64}, {3, 1000}, {300, 301}}) {
    const long r = rows, c = cols;  // (Clang 14 cannot capture structured bindings)
    CAPTURE(r);
    CAPTURE(c);
    const extent<2> x(r, c), wide(r, c + 3);
    const auto a = make_array(x, random_data<float>(r * c));
    const auto b = make_array(x, random_data<float>(r * c));
    const auto cd = make_array(x, random_data<double>(r * c));
    const auto dd = make_array(x, random_data<double>(r * c));
    check_expression_set(a, b, cd, dd);
    // The same values in sections of wider arrays: the same bits again.
    array<float, 2> a2(wide), b2(wide);
    array<double, 2> c2(wide), d2(wide);
    const auto sec = [&](const auto& big) {
      return big.section(index<2>(0, 2), x);
    };
    tessera::copy(a, sec(a2));
    tessera::copy(b, sec(b2));
    tessera::copy(cd, sec(c2));
    tessera::copy(dd, sec(d2));
    check_expression_set(sec(a2), sec(b2), sec(c2), sec(d2));
    CHECK(bits(sum(sec(a2) * sec(b2))) == bits(sum(a * b)));
    CHECK(bits(sum(sec(c2) * sec(d2))) == bits(sum(cd * dd)));
    CHECK(bits(max_value(sec(a2) * sec(b2))) == bits(max_value(a * b)));
  }
  for (const auto& x : {extent<3>(2, 3, 17), extent<3>(4, 5, 300), extent<3>(1, 1, 70001)}) {
    CAPTURE(to_string(x));
    const long n = x.size();
    const auto a = make_array(x, random_data<float>(n)), b = make_array(x, random_data<float>(n));
    check_folds_as_materialized<true>(a * b);
    check_folds_as_materialized(shift(a, index<3>(0, 1, -1), boundary::clamp) * b);
  }
}

TEST_CASE("any readable: a computed rank-3 value (no storage) sums exactly") {
  for (auto e :
       {extent<3>(1, 1, 1), extent<3>(3, 7, 11), extent<3>(17, 13, 97), extent<3>(2, 3, 16411)}) {
    CAPTURE(to_string(e));
    const iota3 x{e};
    // sum of i*10000 + j*100 + k over the box, computed in closed form.
    auto tri = [](long m) {
      return double(m) * double(m - 1) / 2;
    };
    const double n0 = double(e[0]), n1 = double(e[1]), n2 = double(e[2]);
    const double want =
        10000 * tri(e[0]) * n1 * n2 + 100 * tri(e[1]) * n0 * n2 + tri(e[2]) * n0 * n1;
    CHECK(sum(x) == want);  // integers below 2^53: every addition is exact
    CHECK(sum(x, reproducible) == want);
    CHECK(min_value(x) == 0.0);
    CHECK(max_value(x) == double((e[0] - 1) * 10000 + (e[1] - 1) * 100 + (e[2] - 1)));
  }
}

// --- reproducible mode ------------------------------------------------------------------------

/// Portable data (no std distribution): values in [-0.5, 0.5) with mixed magnitudes.
std::vector<float> hashed_data(long n) {
  std::vector<float> v(n);
  for (long i = 0; i < n; ++i) {
    const std::uint64_t h = (std::uint64_t(i) * 0x9E3779B97F4A7C15ull) >> 40;  // 24 bits
    v[i] = (float(h) / float(1 << 24) - 0.5f) * (i % 7 == 0 ? 1000.f : 1.f);
  }
  return v;
}

std::string hex(std::uint64_t b) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%llx", static_cast<unsigned long long>(b));
  return s;
}
/// Bits of sum(hashed_data(n), reproducible) on host backends, from the Serial build.
struct golden_bits {
  long n;
  std::uint64_t float_bits, double_bits;
};
constexpr golden_bits golden[] = {
    {1, 0xc3fa0000u, 0xc07f400000000000ull},
    {1000, 0xc34e34b0u, 0xc069c696ef800000ull},
    {16384 * 5 + 3, 0x44efb255u, 0x409df649d7240000ull},
    {1L << 20, 0x4540abe3u, 0x40a8157c7ff40000ull},
};

TEST_CASE("sum(e, reproducible): identical bits on repeated calls, arrays and views alike") {
  // Thread-count independence (same bits with 1 and 2 OpenMP threads) is checked by running
  // this test in the OpenMP build with OMP_NUM_THREADS=1 and =2: the golden values below were
  // produced by the Serial build, and hold on every host backend because the result is fixed
  // by the chunk (2^14), lane and block structure of reduce.hpp and IEEE arithmetic alone
  // (additions only, so no FMA contraction). Changing that structure changes them; the test
  // prints the new bits.
  for (long n : {1L, 1000L, 16384L * 5 + 3, 1L << 20}) {
    CAPTURE(n);
    const auto v = hashed_data(n);
    const auto a = make_array(extent<1>(n), v);
    const array_view<const float, 1> av(extent<1>(n), v.data());
    const float first = sum(a, reproducible);
    for (int rep = 0; rep < 3; ++rep) {
      CHECK(bits(sum(a, reproducible)) == bits(first));
      CHECK(bits(sum(av, reproducible)) == bits(first));
    }
    const std::vector<double> vd(v.begin(), v.end());
    const auto ad = make_array(extent<1>(n), vd);
    const double firstd = sum(ad, reproducible);
    CHECK(bits(sum(ad, reproducible)) == bits(firstd));
    CHECK(bits(mean(ad, reproducible)) == bits(mean(ad, reproducible)));
    CHECK(bits(reduce(a, 0.f, plus<>{}, reproducible)) ==
          bits(reduce(av, 0.f, plus<>{}, reproducible)));
    MESSAGE("reproducible sum n=" << n << ": float bits " << hex(bits(first)) << ", double bits "
                                  << hex(bits(firstd)));
    if constexpr (backends::impl::reproducible_chunk_elements<execution_space> == (1 << 14)) {
      const auto it = std::find_if(std::begin(golden), std::end(golden),
                                   [&](const golden_bits& g) { return g.n == n; });
      REQUIRE(it != std::end(golden));
      CHECK(hex(bits(first)) == hex(it->float_bits));
      CHECK(hex(bits(firstd)) == hex(it->double_bits));
    }
    const reference r = exact_sum(v);
    CHECK(std::fabs(double(first) - double(r.sum)) <= sum_tolerance<float>(r));
  }
}

// Folds reading more than the caches hold come from memory on CPU targets
// (kernel_plan::reduce_from_memory: blocks read in address order) and where the target says so
// prefetch each input line ahead (reduce_prefetch_bytes); the additions are those of every
// other fold: an array (vector block folds) and the same values as an expression (the generic
// fold, never prefetching) give the same reproducible bits, and the plain sum stays within the
// bound.
TEST_CASE(
    "sums from memory: CPU plans read in address order and prefetch, the bits are those of the "
    "generic fold") {
  const codegen::target t = backends::backend<execution_space>::make_target();
  const bool from_memory = t.reduction.memory_min_bytes > 0;
  const bool prefetches = from_memory && t.reduction.prefetch_bytes > 0;
  // From prefetch_min_bytes (twice the last-level cache on CPUs) on, where the target
  // prefetches at all; from memory_min_bytes on, the blocks in address order.
  const std::size_t min_bytes =
      std::max(t.reduction.memory_min_bytes, t.reduction.prefetch_min_bytes);
  const long n = from_memory ? long(min_bytes / sizeof(float)) + 4099 : (1L << 18) + 4099;
  const auto v = hashed_data(n);
  const auto a = make_array(extent<1>(n), v);
  const auto p = plan(reduction::sum, a);
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].reduce_from_memory == from_memory);
  CHECK(tt::has(p.kernels[0].mapping, "comes from memory") == from_memory);
  CHECK(p.kernels[0].reduce_prefetch_bytes == (prefetches ? t.reduction.prefetch_bytes : 0));
  CHECK(tt::has(p.kernels[0].mapping, "prefetched") == prefetches);
  CHECK(plan(reduction::sum, a, reproducible).kernels.at(0).reduce_prefetch_bytes ==
        p.kernels[0].reduce_prefetch_bytes);
  if (from_memory && t.reduction.prefetch_min_bytes > t.reduction.memory_min_bytes) {
    const long m = long(t.reduction.memory_min_bytes / sizeof(float)) + 4099;
    const auto mid = make_array(extent<1>(m), std::vector<float>(v.begin(), v.begin() + m));
    CHECK(plan(reduction::sum, mid).kernels.at(0).reduce_from_memory);
    CHECK(plan(reduction::sum, mid).kernels.at(0).reduce_prefetch_bytes == 0);
  }
  const auto small = make_array(extent<1>(4099), hashed_data(4099));
  CHECK_FALSE(plan(reduction::sum, small).kernels.at(0).reduce_from_memory);
  CHECK(plan(reduction::sum, small).kernels.at(0).reduce_prefetch_bytes == 0);
  CHECK(bits(sum(a, reproducible)) == bits(sum(a * 1.f, reproducible)));
  // Doubles (compensated lanes, from memory and in cache): the same bits either way.
  std::vector<double> vd(v.begin(), v.end());
  if (from_memory) vd.resize(t.reduction.memory_min_bytes / sizeof(double) + 4099, 0.25);
  const auto ad = make_array(extent<1>(long(vd.size())), vd);
  CHECK(plan(reduction::sum, ad).kernels.at(0).reduce_from_memory == from_memory);
  CHECK(bits(sum(ad, reproducible)) == bits(sum(ad * 1.0, reproducible)));
  const auto ads = make_array(extent<1>(4099), std::vector<double>(vd.begin(), vd.begin() + 4099));
  CHECK(bits(sum(ads, reproducible)) == bits(sum(ads * 1.0, reproducible)));
  const reference r = exact_sum(v);
  CHECK(std::fabs(double(sum(a)) - double(r.sum)) <= sum_tolerance<float>(r));
  // Rank 2: runs row by row, each prefetching past its row's end into the next.
  const long cols = 4099, rows = n / cols;
  const std::vector<float> v2(v.begin(), v.begin() + rows * cols);
  const auto a2 = make_array(extent<2>(rows, cols), v2);
  CHECK(bits(sum(a2, reproducible)) == bits(sum(a2 * 1.f, reproducible)));
  const reference r2 = exact_sum(v2);
  CHECK(std::fabs(double(sum(a2)) - double(r2.sum)) <= sum_tolerance<float>(r2));
}

// --- accuracy at scale ------------------------------------------------------------------------

TEST_CASE(
    "2^24 floats of magnitude ~1 plus a few large: error below a naive float loop's and "
    "within the pairwise bound") {
  const long n = 1L << 24;
  std::vector<float> v(n);
  for (long i = 0; i < n; ++i) {
    const std::uint64_t h = (std::uint64_t(i) * 0x9E3779B97F4A7C15ull) >> 41;  // 23 bits
    v[i] = 1.0f + float(h) / float(1 << 23);                                   // [1, 2)
  }
  for (long i : {5L, n / 3, n / 2 + 1, n - 2}) v[i] = 3.0e7f;
  const reference r = exact_sum(v);
  float naive = 0;
  for (float x : v) naive += x;
  const auto a = make_array(extent<1>(n), v);
  const float s = sum(a), sr = sum(a, reproducible);
  const float eig = Eigen::Map<const eigen_vector<float>>(v.data(), n).sum();
  const double err = std::fabs(double(s) - double(r.sum));
  const double err_naive = std::fabs(double(naive) - double(r.sum));
  const double u = unit_roundoff<float>();
  const double pairwise_bound = std::ceil(std::log2(double(n))) * u * double(r.abs_sum);
  MESSAGE("exact " << double(r.sum) << ": tessera error " << err << ", reproducible "
                   << std::fabs(double(sr) - double(r.sum)) << ", naive float loop " << err_naive
                   << ", Eigen " << std::fabs(double(eig) - double(r.sum)) << ", pairwise bound "
                   << pairwise_bound);
  CHECK(err < err_naive);
  CHECK(err <= pairwise_bound);
  CHECK(err <= sum_tolerance<float>(r));
  // In practice: the final rounding plus a millionth of the worst case.
  CHECK(err <= u * std::fabs(double(r.sum)) + 1e-6 * u * double(r.abs_sum));
  CHECK(std::fabs(double(sr) - double(r.sum)) <= sum_tolerance<float>(r));
  CHECK(std::fabs(double(mean(a)) - double(r.sum / n)) <=
        sum_tolerance<float>(r) / n + u * double(r.sum / n));
}

// --- errors -----------------------------------------------------------------------------------

TEST_CASE("empty extents: sum is 0 and reduce is init, mean/min/max throw naming the function") {
  const array<float, 1> e1(0);
  const array<double, 2> e2(3, 0);
  const array<int, 3> e3(0, 2, 5);
  CHECK(sum(e1) == 0.f);
  CHECK(sum(e2, reproducible) == 0.0);
  CHECK(sum(e3) == 0);
  CHECK(reduce(e1, 2.5f, plus<>{}) == 2.5f);
  CHECK(reduce(e3, 9, multiplies<>{}, reproducible) == 9);
  CHECK_THROWS_WITH_AS(mean(e1), doctest::Contains("tessera::mean: empty extent (0)"), shape_error);
  CHECK_THROWS_WITH_AS(mean(e2, reproducible), doctest::Contains("(3,0)"), shape_error);
  CHECK_THROWS_WITH_AS(min_value(e2), doctest::Contains("tessera::min_value: empty extent (3,0)"),
                       shape_error);
  CHECK_THROWS_WITH_AS(max_value(e3), doctest::Contains("tessera::max_value: empty extent (0,2,5)"),
                       shape_error);
  const iota3 neg{extent<3>(2, -1, 3)};
  CHECK_THROWS_WITH_AS(sum(neg), doctest::Contains("tessera::sum: negative extent (2,-1,3)"),
                       shape_error);
}

}  // namespace
