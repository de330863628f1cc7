// Tier 1 sorts (sort in place, sorted into a new array) against std::stable_sort: integers of
// every width, floats and doubles (duplicates, -0 and +0, infinities), ascending and
// descending, a user struct with a comparator on one field (stability checked through the
// other), sizes 0, 1, tile edges and past one tile, fused expressions; every kernel form of
// the plan (GPU rank tiles and per-element merges, CPU tiles with and without the radix sort,
// merge-path blocks) run on the default backend with forced targets; NaNs ordered last;
// plans.
#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

using namespace tessera;

namespace sort_tests {

/// A key and its original position: sorting by key only, a stable sort keeps pos increasing
/// among equal keys.
struct keyed {
  int key;
  int pos;
  friend bool operator==(const keyed& a, const keyed& b) {
    return a.key == b.key && a.pos == b.pos;
  }
};
struct by_key {
  KOKKOS_INLINE_FUNCTION bool operator()(const keyed& a, const keyed& b) const {
    return a.key < b.key;
  }
};

template <class T>
std::vector<T> random_values(std::size_t n) {
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> u(-1000.0, 1000.0);
    std::uniform_int_distribution<int> pick(0, 15);
    for (auto& x : v) {
      const int c = pick(tt::rng());
      // duplicates, signed zeros and infinities among ordinary values
      x = c == 0   ? T(0)
          : c == 1 ? -T(0)
          : c == 2 ? T(std::round(u(tt::rng()) / 100))
          : c == 3 ? (u(tt::rng()) < 0 ? -std::numeric_limits<T>::infinity()
                                       : std::numeric_limits<T>::infinity())
                   : T(u(tt::rng()));
    }
  } else {
    // The widest distribution of T's signedness (std::uniform_int_distribution takes no char
    // types): long long would turn uint64's maximum into -1, an empty range.
    using wide = std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>;
    std::uniform_int_distribution<wide> u(std::numeric_limits<T>::min(),
                                          std::numeric_limits<T>::max());
    std::uniform_int_distribution<int> pick(0, 3);
    for (auto& x : v) x = pick(tt::rng()) == 0 ? T(7) : T(u(tt::rng()));  // runs of one value
  }
  return v;
}

/// Bitwise equality (tells -0 from +0).
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
void check_type(const std::vector<long>& sizes) {
  for (long n : sizes) {
    CAPTURE(n);
    CAPTURE(impl::scalar_type_name<T>());
    const auto v = random_values<T>(std::size_t(n));
    auto up = v, down = v;
    std::stable_sort(up.begin(), up.end(), std::less<>{});
    std::stable_sort(down.begin(), down.end(), std::greater<>{});
    const array<T, 1> a(extent<1>(n), v.begin(), v.end());
    CHECK(same_bits(sorted(a).to_vector(), up));
    CHECK(same_bits(sorted(a, tessera::greater<>{}).to_vector(), down));
    CHECK(same_bits(a.to_vector(), v));  // sorted leaves its source alone
    sort(a);
    CHECK(same_bits(a.to_vector(), up));
  }
}

std::vector<long> test_sizes() {
  std::vector<long> s = {0, 1, 2, 3, 255, 256, 257, 511, 512, 513, 4095, 4097, 70001};
  s.push_back(tt::random_size(1, 300000));
  return s;
}

TEST_CASE("sort and sorted order like std::stable_sort: every integer width, float, double") {
  const auto s = test_sizes();
  check_type<int>(s);
  check_type<float>(s);
  check_type<double>(s);
  const std::vector<long> few = {1, 300, 9000, tt::random_size(1, 100000)};
  check_type<std::int8_t>(few);
  check_type<std::uint8_t>(few);
  check_type<std::int16_t>(few);
  check_type<std::uint32_t>(few);
  check_type<std::int64_t>(few);
  check_type<std::uint64_t>(few);
}

TEST_CASE("a user comparator on a struct sorts stably, in place and into views") {
  for (long n : {1L, 2L, 300L, 1000L, 65537L}) {
    std::uniform_int_distribution<int> k(0, 20);
    std::vector<keyed> v(static_cast<std::size_t>(n));
    for (int i = 0; i < int(n); ++i) v[std::size_t(i)] = {k(tt::rng()), i};
    auto want = v;
    std::stable_sort(want.begin(), want.end(), by_key{});
    const array<keyed, 1> a(extent<1>(n), v.begin(), v.end());
    CHECK(sorted(a, by_key{}).to_vector() == want);
    // an array_view over host memory, sorted in place
    auto h = v;
    array_view<keyed, 1> hv(extent<1>(n), h);
    sort(hv, by_key{});
    hv.synchronize();
    CHECK(h == want);
  }
}

TEST_CASE("sorted reads element-wise producers inside the tile sort") {
  const long n = 50001;
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(static_cast<std::size_t>(n)), y(x.size()), want(x.size());
  for (auto& f : x) f = u(tt::rng());
  for (auto& f : y) f = u(tt::rng());
  for (long i = 0; i < n; ++i) want[std::size_t(i)] = x[std::size_t(i)] * 2.0f - y[std::size_t(i)];
  std::stable_sort(want.begin(), want.end(), std::greater<>{});
  const array<float, 1> a(extent<1>(n), x.begin(), x.end()), b(extent<1>(n), y.begin(), y.end());
  CHECK(sorted(a * 2.0f - b, tessera::greater<>{}).to_vector() == want);
  // a row of a matmul's result (a rank-1 projection)
  const auto M = tt::make<float>(tt::small_ints(3, 5)), N = tt::make<float>(tt::small_ints(5, 700));
  const array<float, 2> P = matmul(M, N);
  const auto ref = tt::read(P);
  std::vector<float> r;
  for (Eigen::Index j = 0; j < ref.cols(); ++j) r.push_back(float(ref(1, j)));
  std::stable_sort(r.begin(), r.end());
  const array_view<float, 2> pv(P);
  CHECK(sorted(pv[1]).to_vector() == r);
}

TEST_CASE("NaNs sort after every number (less) or before (greater), in their order") {
  for (long n : {5000L, 70001L}) {
    std::vector<float> v = random_values<float>(std::size_t(n));
    for (std::size_t i = 0; i < v.size(); i += 97)
      v[i] = i % 2 ? std::numeric_limits<float>::quiet_NaN()
                   : -std::numeric_limits<float>::quiet_NaN();
    auto up = v, down = v;
    std::stable_sort(up.begin(), up.end(),
                     [](float a, float b) { return a < b || (std::isnan(b) && !std::isnan(a)); });
    std::stable_sort(down.begin(), down.end(),
                     [](float a, float b) { return a > b || (std::isnan(a) && !std::isnan(b)); });
    const array<float, 1> a(extent<1>(n), v.begin(), v.end());
    CHECK(same_bits(sorted(a, tessera::greater<>{}).to_vector(), down));
    sort(a);
    CHECK(same_bits(a.to_vector(), up));
  }
}

/// Runs sorted(a, comp) through the plan `target t` gives (forced forms on the default backend).
template <class T, class Comp>
std::vector<T> sort_with_target(const std::vector<T>& v, const codegen::target& t,
                                const Comp& comp) {
  using Space = execution_space;
  const index_type n = index_type(v.size());
  const array<T, 1> a(extent<1>(n), v.begin(), v.end()), out{extent<1>(n)}, tmp{extent<1>(n)};
  codegen::sort_desc d;
  d.dtype = impl::scalar_type_name<T>();
  d.elem_bytes = sizeof(T);
  d.elements = n;
  d.radix_keys = backends::impl::radix_sortable<T, Comp>;
  const auto ks = codegen::plan_sort(d, t);
  backends::impl::with_source(Space(), a, [&](const auto& src) {
    backends::impl::run_sort(Space(), ks, src, out.ref().p, tmp.ref().p, n, comp);
  });
  return out.to_vector();
}

TEST_CASE("every kernel form sorts: rank tiles, per-element merges, CPU tiles, merge paths") {
  const codegen::target base = backends::backend<execution_space>::make_target();
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, execution_space::memory_space>::accessible;
  for (long n : {1L, 2L, 37L, 38L, 1000L, 4096L, 9999L, tt::random_size(1, 40000)}) {
    CAPTURE(n);
    const auto v = random_values<float>(std::size_t(n));
    auto up = v, down = v;
    std::stable_sort(up.begin(), up.end(), std::less<>{});
    std::stable_sort(down.begin(), down.end(), std::greater<>{});
    std::vector<keyed> kv(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> key(0, 12);
    for (int i = 0; i < int(n); ++i) kv[std::size_t(i)] = {key(tt::rng()), i};
    auto kwant = kv;
    std::stable_sort(kwant.begin(), kwant.end(), by_key{});
    // GPU mapping: tiles ranked in scratch, per-element merges
    for (long tile : {1L, 37L, 256L}) {
      CAPTURE(tile);
      codegen::target t = base;
      t.thread_per_logical = true;
      t.sort.tile = tile;
      t.sort.merge_block = 1;
      CHECK(same_bits(sort_with_target(v, t, tessera::less<>{}), up));
      CHECK(same_bits(sort_with_target(v, t, tessera::greater<>{}), down));
      CHECK(sort_with_target(kv, t, by_key{}) == kwant);
    }
    // CPU family (host backends): tiles per "thread", radix or std::stable_sort, merge-path
    // blocks
    if constexpr (host) {
      for (int threads : {3, 8}) {
        for (long block : {1L, 5L, 64L}) {
          for (bool radix : {false, true}) {
            CAPTURE(threads);
            CAPTURE(block);
            CAPTURE(radix);
            codegen::target t = base;
            t.thread_per_logical = false;
            t.concurrency = threads;
            t.sort.tile = 0;
            t.sort.min_tile = 1;
            t.sort.merge_block = block;
            t.sort.radix_min_elements = radix ? 1 : 0;
            CHECK(same_bits(sort_with_target(v, t, tessera::less<>{}), up));
            CHECK(same_bits(sort_with_target(v, t, tessera::greater<>{}), down));
            CHECK(sort_with_target(kv, t, by_key{}) == kwant);
          }
        }
      }
    }
  }
}

TEST_CASE("sort plans: tiles, radix or comparison, merge passes") {
  const array<float, 1> a(extent<1>(1 << 20));
  const auto p = plan_sort(a);
  REQUIRE(!p.kernels.empty());
  const auto& k = p.kernels[0];
  CHECK(k.family == kernel_family::sort);
  CHECK(k.sort_tile >= 1);
  CHECK(k.league_size == ((1 << 20) + k.sort_tile - 1) / k.sort_tile);
  const int passes = codegen::sort_merge_passes(1 << 20, k.sort_tile);
  CHECK(p.kernels.size() == (passes > 0 ? 2u : 1u));
  if (passes > 0) CHECK(p.kernels[1].sort_merge_passes == passes);
  CHECK(tt::has(explain_sort(a), "stable"));
  CHECK(plan_sort(array<float, 1>(0)).kernels.empty());
  // the forms by target
  codegen::sort_desc d;
  d.dtype = "float";
  d.elements = 100000;
  d.radix_keys = true;
  codegen::target cpu;
  cpu.concurrency = 4;
  cpu.sort.min_tile = 4096;
  cpu.sort.merge_block = 1 << 14;
  cpu.sort.radix_min_elements = 512;
  const auto c = codegen::plan_sort(d, cpu);
  REQUIRE(c.size() == 2);
  CHECK(c[0].sort_tile == 25000);
  CHECK(c[0].sort_radix_bits == 8);
  CHECK(c[1].sort_merge_passes == 2);
  CHECK(c[1].sort_merge_block == 1 << 14);
  d.radix_keys = false;
  CHECK(codegen::plan_sort(d, cpu)[0].sort_radix_bits == 0);
  codegen::target gpu;
  gpu.thread_per_logical = true;
  gpu.max_team_size = 256;
  gpu.sort.tile = 256;
  const auto g = codegen::plan_sort(d, gpu);
  REQUIRE(g.size() == 2);
  CHECK(g[0].team_size == 256);
  CHECK(g[0].scratch_bytes[0] == 256 * 4);
  CHECK(g[0].barriers.size() == 1);
  CHECK(g[1].sort_merge_passes == 9);  // 391 tiles
  CHECK(g[1].sort_merge_block == 1);
  CHECK(tt::has(codegen::to_string(g[1]), "binary search"));
}

}  // namespace sort_tests
