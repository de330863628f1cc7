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
#include "reduce_util.hpp"

namespace {

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
  // One thread folds the input from memory in one run, cut into parts read as streams
  // (reduce_streams; the array's parts read together, the expression's one after another:
  // the same bits).
  const bool one_run = p.kernels[0].inline_run && p.kernels[0].league_size > 1;
  const int streams = from_memory && one_run ? t.reduction.memory_streams : 0;
  CHECK(p.kernels[0].reduce_streams == streams);
  CHECK(tt::has(p.kernels[0].mapping, "interleaved streams") == (streams > 1));
  // Streams take no prefetch: the plan keeps its distance for parts read one after another.
  CHECK(tt::has(p.kernels[0].mapping, "where the parts are read one after another") ==
        (streams > 1 && prefetches));
  if (one_run) CHECK(bits(sum(a)) == bits(sum(a * 1.f)));
  // Reproducible on one thread: as many consecutive chunks an iteration, read together by the
  // array (its last chunks, fewer and one short, one after another), each to its own partial.
  const auto pr = plan(reduction::sum, a, reproducible).kernels.at(0);
  CHECK(pr.reduce_streams == streams);
  CHECK(tt::has(pr.mapping, "consecutive chunks an iteration") == (streams > 1));
  if (from_memory && t.reduction.prefetch_min_bytes > t.reduction.memory_min_bytes) {
    const long m = long(t.reduction.memory_min_bytes / sizeof(float)) + 4099;
    const auto mid = make_array(extent<1>(m), std::vector<float>(v.begin(), v.begin() + m));
    CHECK(plan(reduction::sum, mid).kernels.at(0).reduce_from_memory);
    CHECK(plan(reduction::sum, mid).kernels.at(0).reduce_prefetch_bytes == 0);
    CHECK(plan(reduction::sum, mid).kernels.at(0).reduce_streams == streams);
    if (one_run) CHECK(bits(sum(mid)) == bits(sum(mid * 1.f)));
    const reference rm = exact_sum(std::vector<float>(v.begin(), v.begin() + m));
    CHECK(std::fabs(double(sum(mid)) - double(rm.sum)) <= sum_tolerance<float>(rm));
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
  // Compensated lanes fold one run: no streams in the plan, whatever the size.
  CHECK(plan(reduction::sum, ad).kernels.at(0).reduce_streams == 0);
  CHECK_FALSE(tt::has(plan(reduction::sum, ad).kernels.at(0).mapping, "interleaved streams"));
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
  if (one_run) CHECK(bits(sum(a2)) == bits(sum(a2 * 1.f)));
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
