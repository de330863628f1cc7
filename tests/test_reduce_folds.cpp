// Whole-array reductions, the host backends' folds: compensated and widening lanes folded in
// vector registers, and rank-2 and rank-3 chunk folds, bit for bit the rank-1 fold (a unit
// of test_reduce; helpers in reduce_util.hpp).
#include "reduce_util.hpp"

namespace {
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

// CPU backends fold several runs from memory at once (block_fold_streams: S streams in
// flight): each run gets the bits block_fold gives it alone, from memory, and the rule's
// steps: the float tree per lane, converted and added into the lane, block after block.
template <int K, int L, int S, class Space = Kokkos::DefaultHostExecutionSpace>
void check_block_fold_streams() {
  if constexpr (backends::impl::has_block_fold_streams<Space, float, double, K, L>) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::uniform_int_distribution<int> e(-20, 20);
    for (long groups : {0L, 1L, 3L, 64L}) {
      CAPTURE(groups);
      const long len = groups * K * L;
      // The runs 5 elements apart beyond their ends: loads off a line as well.
      std::vector<float> x(static_cast<std::size_t>(S * (len + 5)));
      for (auto& v : x) v = std::ldexp(u(tt::rng()), e(tt::rng()));
      std::array<std::array<double, L>, S> got, alone, want;
      const float* at[S];
      double* acc[S];
      for (int s = 0; s < S; ++s) {
        for (auto& a : got[std::size_t(s)]) a = std::ldexp(double(u(tt::rng())), 10);
        alone[std::size_t(s)] = want[std::size_t(s)] = got[std::size_t(s)];
        at[s] = x.data() + s * (len + 5);
        acc[s] = got[std::size_t(s)].data();
        for (long g = 0; g < groups; ++g)
          for (int l = 0; l < L; ++l)
            want[std::size_t(s)][std::size_t(l)] +=
                double(lane_tree<L>(at[s] + g * K * L, l, 0, K));
        backends::backend<Space>::template block_fold<K, L>(
            at[s], len, alone[std::size_t(s)].data(), index_type(0), true);
      }
      backends::backend<Space>::template block_fold_streams<K, L, S>(at, groups, acc);
      for (int s = 0; s < S; ++s)
        for (int l = 0; l < L; ++l) {
          CAPTURE(s);
          CAPTURE(l);
          const double g = got[std::size_t(s)][std::size_t(l)];
          CHECK(std::memcmp(&g, &alone[std::size_t(s)][std::size_t(l)], sizeof(double)) == 0);
          CHECK(std::memcmp(&g, &want[std::size_t(s)][std::size_t(l)], sizeof(double)) == 0);
        }
    }
  } else {
    MESSAGE("this host backend folds runs one at a time (no multi-stream fold)");
  }
}

TEST_CASE("float runs folded together as streams give each run's bits") {
  constexpr int L = backends::impl::widening_sum_rule<float>::lanes;
  constexpr int K = backends::impl::widening_sum_rule<float>::block;
  check_block_fold_streams<K, L, 2>();
  check_block_fold_streams<K, L, 4>();
  check_block_fold_streams<K, L, 8>();
  check_block_fold_streams<K / 2, L, 4>();
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

// A fold cut into parts read as streams (chunk_folder::fold_streams, kernel_plan::
// reduce_streams): the parts' folds merged in order, bit for bit, whether the parts are read
// together (an array without gaps from memory, prefetching or not: the streams take no
// prefetch), one after another (in cache), or through a section or rank 2; one part where the parts
// would hold fewer than two blocks, where the number of streams is not 2, 4 or 8, and for rules
// without streams (a double sum). The same for fold_ranges, the reproducible mode's consecutive
// chunks an iteration.
template <class T, class Rule, class Space = Kokkos::DefaultHostExecutionSpace>
void check_fold_streams(const Rule& rule) {
  using namespace backends::impl;
  using raw1 = raw_operand<T, 1>;
  using raw2 = raw_operand<T, 2>;
  using folder1 = chunk_folder<Space, raw1, Rule>;
  constexpr index_type G = index_type(Rule::lanes) * (Rule::block > 1 ? Rule::block : 1);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> e(-12, 12);
  for (const int streams : {1, 2, 3, 4, 8}) {
    std::vector<index_type> sizes = {2 * G * streams - 1, 2 * G * streams, 2 * G * streams + 5,
                                     3 * G * streams + G / 2 + 7, 8 * G * streams + 13};
    sizes.push_back(tt::random_size(1, 40 * G));
    for (const index_type n : sizes) {
      CAPTURE(streams);
      CAPTURE(n);
      // Rows of 13 with a gap of 3 (a section), holding the same n' = n / 13 * 13 elements.
      const index_type cols = 13, rows = n / cols, m = rows * cols;
      std::vector<T> flat(static_cast<std::size_t>(n)), gapped(std::size_t(rows * (cols + 3)));
      for (auto& v : flat) v = T(std::ldexp(u(tt::rng()), e(tt::rng())));
      for (index_type i = 0; i < rows; ++i)
        for (index_type j = 0; j < cols; ++j)
          gapped[std::size_t(i * (cols + 3) + j)] = flat[std::size_t(i * cols + j)];
      // What fold_streams promises: the parts of [lo, hi), each folded alone, merged in order.
      auto parts = [&](index_type lo, index_type hi) {
        const folder1 f{raw1{{flat.data(), {1}}}, rule, extent<1>(n)};
        const index_type per = (hi - lo) / streams / G * G;
        if (!folder1::streams_rule || (streams != 2 && streams != 4 && streams != 8) || per < 2 * G)
          return f.fold(lo, hi);
        auto a = f.fold(lo, lo + per);
        for (int s = 1; s < streams; ++s)
          rule.merge(a, f.fold(lo + s * per, s + 1 < streams ? lo + (s + 1) * per : hi));
        return a;
      };
      for (const auto& mode :
           {std::pair<index_type, bool>{0, true}, std::pair<index_type, bool>{256, true},
            std::pair<index_type, bool>{0, false}}) {
        const index_type ahead = mode.first;
        const bool from_memory = mode.second;
        CAPTURE(ahead);
        CAPTURE(from_memory);
        const folder1 f1{raw1{{flat.data(), {1}}}, rule, extent<1>(n), ahead, from_memory};
        CHECK(same_acc(f1.fold_streams(0, n, streams), parts(0, n)));
        if (n > 5) CHECK(same_acc(f1.fold_streams(3, n - 2, streams), parts(3, n - 2)));
        if (m == 0) continue;
        const extent<2> x(rows, cols);
        const chunk_folder<Space, raw2, Rule> dense{raw2{{flat.data(), {cols, 1}}}, rule, x, ahead,
                                                    from_memory};
        const chunk_folder<Space, raw2, Rule> section{raw2{{gapped.data(), {cols + 3, 1}}}, rule, x,
                                                      ahead, from_memory};
        CHECK(same_acc(dense.fold_streams(0, m, streams), parts(0, m)));
        CHECK(same_acc(section.fold_streams(0, m, streams), parts(0, m)));
        // fold_ranges (the reproducible mode's chunks, `streams` an iteration): each range's
        // fold, whether read together (whole groups, all before hi) or not.
        for (const index_type len : {G, 2 * G, G + 5}) {
          const int count = int(std::min<index_type>(streams, (m + len - 1) / len));
          for (const index_type hi : {m, std::min(m, count * len), std::min(m, count * len - 3)}) {
            CAPTURE(len);
            CAPTURE(hi);
            if (hi <= (count - 1) * len) continue;  // every range non-empty
            typename Rule::acc_type want[8], got[8], got2[8], got3[8];
            for (int i = 0; i < count; ++i) want[i] = f1.fold(i * len, std::min(hi, (i + 1) * len));
            f1.fold_ranges(0, len, count, hi, got);
            dense.fold_ranges(0, len, count, hi, got2);
            section.fold_ranges(0, len, count, hi, got3);
            for (int i = 0; i < count; ++i) {
              CHECK(same_acc(got[i], want[i]));
              CHECK(same_acc(got2[i], want[i]));
              CHECK(same_acc(got3[i], want[i]));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("a sum cut into parts read as streams folds to its parts' bits, merged in order") {
  using namespace backends::impl;
  CHECK(chunk_folder<Kokkos::DefaultHostExecutionSpace, raw_operand<double, 1>,
                     compensated_sum_rule<double>>::streams_rule == false);
  // The plan asks for streams exactly where the fold takes them (reduction_desc::streams).
  using host = Kokkos::DefaultHostExecutionSpace;
  CHECK_FALSE(folds_streams<host, double, compensated_sum_rule<double>>);
  CHECK(folds_streams<host, float, widening_sum_rule<float>> ==
        chunk_folder<host, raw_operand<float, 1>, widening_sum_rule<float>>::streams_rule);
  CHECK(folds_streams<host, float, widening_sum_rule<float>> ==
        has_block_fold_streams<host, float, double, 16, 16>);
  check_fold_streams<float>(widening_sum_rule<float>{});
  check_fold_streams<double>(compensated_sum_rule<double>{});
}

#endif  // !__CUDACC__ && !__HIPCC__

}  // namespace
