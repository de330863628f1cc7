// Tier 0 tile collectives: reduce_over_tile, inclusive/exclusive_scan_over_tile, tile_broadcast
// and the votes any/all/none_of_tile, on 1-3-D tiles of sizes 1, primes, non-powers of two and
// powers of two over padded extents (random sizes, 1, 0), with integer sums (exact, against a
// host fold and std::inclusive_scan / std::exclusive_scan), float sums (bitwise against the
// documented neighbour-first tree: the same bits on every backend), max, and a non-commutative
// associative operator (composition of affine maps modulo 2^32: checks the rank order); inputs
// from functions and from tile_local, results into tile_local and callables; collectives in a
// loop (workspace reuse across value types); fast and checked mode. Checked mode reports a
// collective inside for_each and a race on the values a collective reads; explain shows the
// workspace and the barriers.
#include "test_util.hpp"

#include <numeric>
#include <string>
#include <vector>

using namespace tessera;

namespace collective_tests {

using tt::affine;
using tt::compose;
TESSERA_INLINE affine affine_of(int v) {
  return {unsigned(2 * v + 3), unsigned(v + 7)};
}

/// The sum of v in the order reduce_over_tile combines: neighbours first (2i with 2i + 1,
/// then pairs of pairs, ...).
template <class V>
V tree_sum(std::vector<V> w) {
  const std::size_t n = w.size();
  for (std::size_t s = 1; s < n; s *= 2)
    for (std::size_t l = 0; l + s < n; l += 2 * s) w[l] = w[l] + w[l + s];
  return w[0];
}

template <int N>
extent<N> random_extent(long lo, long hi) {
  extent<N> e;
  for (int d = 0; d < N; ++d) e[d] = tt::random_size(lo, hi);
  return e;
}
template <int N>
TESSERA_INLINE index_type flat(const extent<N>& e, const tessera::index<N>& i) {
  index_type r = 0;
  for (int d = 0; d < N; ++d) r = r * e[d] + i[d];
  return r;
}

/// Every collective on tiles T... of a padded extent e: per-tile results and per-element scan
/// results compared with host references built from the same values in rank order.
template <int... T>
void check_all(const extent<int(sizeof...(T))>& e, bool use_checked) {
  constexpr int N = sizeof...(T);
  constexpr int L = (T * ...);
  constexpr int dims[N] = {T...};
  CAPTURE(to_string(e));
  CAPTURE(L);
  CAPTURE(use_checked);
  std::vector<int> data(std::size_t(e.size()));
  for (auto& x : data) x = int(tt::random_size(-9, 9));
  std::vector<float> fdata(data.size());
  for (auto& x : fdata) x = float(std::uniform_real_distribution<double>(-1, 1)(tt::rng()));
  const array<int, N> A(e, data.begin(), data.end());
  const array<float, N> F(e, fdata.begin(), fdata.end());
  const auto te = e.template tile<T...>().pad();
  extent<N> tiles;
  for (int d = 0; d < N; ++d) tiles[d] = te.get_extent()[d] / dims[d];
  const index_type ntiles = tiles.size();
  tessera::index<N> from;
  for (int d = 0; d < N; ++d) from[d] = tt::random_size(0, dims[d] - 1);
  // Per tile: sum, max, float sum, affine (a, b), broadcast, votes (3 bits each for any/all/none
  // of three predicates), a sum with init.
  array<int, 1> r_sum(std::max<index_type>(ntiles, 1)), r_max(r_sum.extent), r_bcast(r_sum.extent),
      r_votes(r_sum.extent), r_init(r_sum.extent);
  array<float, 1> r_fsum(r_sum.extent);
  array<unsigned, 1> r_aa(r_sum.extent), r_ab(r_sum.extent);
  // Per element: inclusive and exclusive sums, inclusive affine (a, b), exclusive with init,
  // inclusive sum with init through a callable output.
  array<int, N> s_inc(e), s_exc(e), s_init(e);
  array<unsigned, N> s_aa(e), s_ab(e);
  auto kernel = TESSERA_KERNEL(basic_tile_group<execution_space, T...> & g) {
    using ti = tiled_index<T...>;
    auto val = [&](const ti& t) {
      return A.extent.contains(t.global) ? A[t.global] : 0;
    };
    const int sum = reduce_over_tile(g, val, tessera::plus<>());
    const int mx = reduce_over_tile(
        g, [&](const ti& t) { return A.extent.contains(t.global) ? A[t.global] : -100; },
        tessera::maximum<>());
    const float fs = reduce_over_tile(
        g, [&](const ti& t) { return F.extent.contains(t.global) ? F[t.global] : 0.f; },
        tessera::plus<>());
    const affine af = reduce_over_tile(
        g,
        [&](const ti& t) {
          return A.extent.contains(t.global) ? affine_of(A[t.global]) : affine{1, 0};
        },
        compose());
    const int bc = tile_broadcast(
        g, [&](const ti& t) { return t.local_linear() * 3 + 1; }, from);
    const int with_init = reduce_over_tile(g, val, 1000, tessera::plus<>());
    int votes = 0;
    votes |= any_of_tile(g, [&](const ti& t) { return val(t) > 5; }) ? 1 : 0;
    votes |= all_of_tile(g, [&](const ti& t) { return val(t) > -9; }) ? 2 : 0;
    votes |= none_of_tile(g, [&](const ti& t) { return val(t) == 9; }) ? 4 : 0;
    votes |= any_of_tile(g, [&](const ti& t) { return t.local_linear() == L - 1; }) ? 8 : 0;
    votes |= all_of_tile(g, [&](const ti& t) { return t.local_linear() < L; }) ? 16 : 0;
    votes |= none_of_tile(g, [&](const ti& t) { return t.local_linear() == 0; }) ? 32 : 0;
    // scans: from a function into tile_local; in place in a tile_local; into a callable
    auto inc = g.template tile_local<int>(0, "inc");
    auto exc = g.template tile_local<int>(0, "exc");
    inclusive_scan_over_tile(g, val, inc, tessera::plus<>());
    g.for_each([&](const ti& t) { exc(t) = val(t); });
    exclusive_scan_over_tile(g, exc, exc, 0, tessera::plus<>());
    auto aff = g.template tile_local<affine>(affine{1, 0}, "aff");
    inclusive_scan_over_tile(
        g,
        [&](const ti& t) {
          return A.extent.contains(t.global) ? affine_of(A[t.global]) : affine{1, 0};
        },
        aff, compose());
    exclusive_scan_over_tile(
        g, val,
        [&](const ti& t, const int& v) {
          if (A.extent.contains(t.global)) s_init[t.global] = v;
        },
        -50, tessera::plus<>());
    g.for_each([&](const ti& t) {
      if (A.extent.contains(t.global)) {
        s_inc[t.global] = inc(t);
        s_exc[t.global] = exc(t);
        s_aa[t.global] = aff(t).a;
        s_ab[t.global] = aff(t).b;
      }
      if (t.local_linear() == 0) {
        const index_type k = flat(tiles, t.tile);
        r_sum[k] = sum;
        r_max[k] = mx;
        r_fsum[k] = fs;
        r_aa[k] = af.a;
        r_ab[k] = af.b;
        r_bcast[k] = bc;
        r_votes[k] = votes;
        r_init[k] = with_init;
      }
    });
  };
  if (use_checked)
    parallel_for_each(checked, te, kernel);
  else
    parallel_for_each(te, kernel);
  if (ntiles == 0) return;
  const auto g_sum = r_sum.to_vector(), g_max = r_max.to_vector(), g_bc = r_bcast.to_vector(),
             g_votes = r_votes.to_vector(), g_init = r_init.to_vector();
  const auto g_fsum = r_fsum.to_vector();
  const auto g_aa = r_aa.to_vector(), g_ab = r_ab.to_vector();
  const auto g_inc = s_inc.to_vector(), g_exc = s_exc.to_vector(), g_sinit = s_init.to_vector();
  const auto g_saa = s_aa.to_vector(), g_sab = s_ab.to_vector();
  for (index_type k = 0; k < ntiles; ++k) {
    const tessera::index<N> tile = tessera::impl::unflatten(tiles, k);
    CAPTURE(to_string(tile));
    // the tile's values in rank order
    std::vector<int> v(L);
    std::vector<float> fv(L);
    std::vector<affine> av(L);
    std::vector<bool> inside(L);
    std::vector<index_type> where(L);
    for (int l = 0; l < L; ++l) {
      const tessera::index<N> local = tessera::impl::unflatten(extent<N>(T...), l);
      tessera::index<N> gi;
      for (int d = 0; d < N; ++d) gi[d] = tile[d] * dims[d] + local[d];
      inside[l] = e.contains(gi);
      where[l] = inside[l] ? flat(e, gi) : -1;
      v[l] = inside[l] ? data[std::size_t(where[l])] : 0;
      fv[l] = inside[l] ? fdata[std::size_t(where[l])] : 0.f;
      av[l] = inside[l] ? affine_of(v[l]) : affine{1, 0};
    }
    const std::size_t ks = std::size_t(k);
    CHECK(g_sum[ks] == std::accumulate(v.begin(), v.end(), 0));
    CHECK(g_fsum[ks] == tree_sum(fv));  // bit for bit
    int mx = -100;
    for (int l = 0; l < L; ++l) mx = std::max(mx, inside[l] ? v[l] : -100);
    CHECK(g_max[ks] == mx);
    affine fold{1, 0};
    for (const affine& a : av) fold = compose()(fold, a);
    CHECK(g_aa[ks] == fold.a);
    CHECK(g_ab[ks] == fold.b);
    CHECK(g_bc[ks] == int(flat(extent<N>(T...), from)) * 3 + 1);
    CHECK(g_init[ks] == 1000 + std::accumulate(v.begin(), v.end(), 0));
    int votes = 0;
    bool any5 = false, allm9 = true, none9 = true;
    for (int x : v) {
      any5 = any5 || x > 5;
      allm9 = allm9 && x > -9;
      none9 = none9 && x != 9;
    }
    votes = (any5 ? 1 : 0) | (allm9 ? 2 : 0) | (none9 ? 4 : 0) | 8 | 16 | (L == 0 ? 32 : 0);
    CHECK(g_votes[ks] == votes);
    // scans against the standard library
    std::vector<int> inc(L), exc(L), exci(L);
    std::inclusive_scan(v.begin(), v.end(), inc.begin());
    std::exclusive_scan(v.begin(), v.end(), exc.begin(), 0);
    std::exclusive_scan(v.begin(), v.end(), exci.begin(), -50);
    std::vector<affine> ainc(L);
    std::partial_sum(av.begin(), av.end(), ainc.begin(), compose());
    for (int l = 0; l < L; ++l) {
      if (!inside[l]) continue;
      CAPTURE(l);
      const std::size_t q = std::size_t(where[l]);
      CHECK(g_inc[q] == inc[std::size_t(l)]);
      CHECK(g_exc[q] == exc[std::size_t(l)]);
      CHECK(g_sinit[q] == exci[std::size_t(l)]);
      CHECK(g_saa[q] == ainc[std::size_t(l)].a);
      CHECK(g_sab[q] == ainc[std::size_t(l)].b);
    }
  }
}

}  // namespace collective_tests

using namespace collective_tests;

TEST_CASE("tile collectives on 1-D tiles of sizes 1, primes, non-powers and powers of two") {
  for (const bool c : {false, true}) {
    for (long n : tt::edge_sizes()) {
      check_all<1>(extent<1>(n), c);
      check_all<5>(extent<1>(n), c);
      check_all<64>(extent<1>(n), c);
    }
    check_all<100>(extent<1>(tt::random_size(1, 700)), c);
    check_all<33>(extent<1>(tt::random_size(1, 700)), c);
    check_all<256>(extent<1>(tt::random_size(1, 1500)), c);
  }
}

TEST_CASE("tile collectives on 2-D and 3-D tiles over padded extents") {
  for (const bool c : {false, true}) {
    for (int rep = 0; rep < 3; ++rep) {
      check_all<3, 5>(random_extent<2>(1, 40), c);
      check_all<4, 4>(random_extent<2>(1, 40), c);
      check_all<8, 16>(random_extent<2>(1, 60), c);
      check_all<2, 3, 4>(random_extent<3>(1, 12), c);
    }
    check_all<4, 4>(extent<2>(0, 5), c);
    check_all<1, 1>(extent<2>(3, 2), c);
  }
}

TEST_CASE("collectives in a tile-uniform loop reuse one workspace across value types") {
  constexpr int L = 48;
  const long n = tt::random_size(1, 500);
  std::vector<double> data(static_cast<std::size_t>(n));
  for (auto& x : data) x = double(tt::random_size(-20, 20));
  const array<double, 1> A(extent<1>(n), data.begin(), data.end());
  array<double, 1> out(A.extent);
  auto kernel = TESSERA_KERNEL(tile_group<L> & g) {
    using ti = tiled_index<L>;
    auto x = g.tile_local<double>(0.0, "x");
    g.for_each([&](const ti& t) { x(t) = A.extent.contains(t.global) ? A[t.global] : 0.0; });
    for (int it = 0; it < 3; ++it) {
      // x <- x - mean(x) over the tile, then the running maximum of |x| as an int scan
      const double s = reduce_over_tile(g, x, tessera::plus<>());
      g.for_each([&](const ti& t) { x(t) = x(t) - s / L; });
      auto m = g.tile_local<int>(0, "m");
      inclusive_scan_over_tile(
          g, [&](const ti& t) { return int(x(t) < 0 ? -x(t) : x(t)); }, m, tessera::maximum<>());
      const int last = tile_broadcast(g, m, tessera::index<1>(L - 1));
      g.for_each([&](const ti& t) { x(t) = x(t) + double(last - m(t)); });
    }
    g.for_each([&](const ti& t) {
      if (A.extent.contains(t.global)) out[t.global] = x(t);
    });
  };
  for (const bool c : {false, true}) {
    CAPTURE(c);
    if (c)
      parallel_for_each(checked, A.extent.tile<L>().pad(), kernel);
    else
      parallel_for_each(A.extent.tile<L>().pad(), kernel);
    const auto got = out.to_vector();
    for (long t0 = 0; t0 < n; t0 += L) {
      std::vector<double> x(L, 0.0);
      for (int l = 0; l < L; ++l)
        if (t0 + l < n) x[std::size_t(l)] = data[std::size_t(t0 + l)];
      for (int it = 0; it < 3; ++it) {
        const double s = tree_sum(x);  // the order the collective combines in: same bits
        for (auto& v : x) v -= s / L;
        std::vector<int> m(L);
        int run = 0;
        for (int l = 0; l < L; ++l) {
          run = std::max(run, int(std::abs(x[std::size_t(l)])));
          m[std::size_t(l)] = run;
        }
        for (int l = 0; l < L; ++l) x[std::size_t(l)] += double(m[L - 1] - m[std::size_t(l)]);
      }
      for (int l = 0; l < L && t0 + l < n; ++l)
        CHECK(got[std::size_t(t0 + l)] == x[std::size_t(l)]);
    }
  }
  // one workspace: the int scan and the broadcast fit in the double reduction's
  const auto p = plan(A.extent.tile<L>().pad(), kernel);
  std::size_t workspaces = 0;
  for (const auto& b : p.buffers) workspaces += b.name == "tile collectives" ? 1 : 0;
  CHECK(workspaces == 1);
}

TEST_CASE("checked mode: a collective inside for_each, a race on the values it reads") {
  array<int, 1> out(extent<1>(64));
  try {
    parallel_for_each(
        checked, out.extent.tile<16>(), TESSERA_KERNEL(tile_group<16> & g) {
          g.for_each([&](const tiled_index<16>& t) {
            out[t.global] = reduce_over_tile(
                g, [](const tiled_index<16>& u) { return u.local[0]; }, tessera::plus<>());
          });
        });
    FAIL("no error reported");
  } catch (const usage_error& e) {
    CHECK(std::string(e.what()).find("reduce_over_tile inside for_each") != std::string::npos);
  }
  auto racy = [&](bool with_barrier) {
    parallel_for_each(
        checked, out.extent.tile<16>(), TESSERA_KERNEL(tile_group<16> & g) {
          auto s = g.tile_static<int[16]>("s");
          g.for_each([&](const tiled_index<16>& t) { s[t.local[0]] = t.global[0]; });
          if (with_barrier) g.barrier.wait();
          const int total = reduce_over_tile(
              g, [&](const tiled_index<16>& t) { return int(s[(t.local[0] + 1) % 16]); },
              tessera::plus<>());
          g.for_each([&](const tiled_index<16>& t) { out[t.global] = total; });
        });
  };
  try {
    racy(false);
    FAIL("no race reported");
  } catch (const race_error& e) {
    CHECK(std::string(e.what()).find("'s'") != std::string::npos);
  }
  racy(true);
  const auto got = out.to_vector();
  for (int i = 0; i < 64; ++i) CHECK(got[std::size_t(i)] == (i / 16) * 256 + 120);
  // a broadcast from outside the tile: reported before any kernel runs, in both modes
  for (const bool c : {false, true}) {
    auto k = TESSERA_KERNEL(tile_group<16> & g) {
      const int v = tile_broadcast(
          g, [](const tiled_index<16>& t) { return t.local[0]; }, tessera::index<1>(16));
      g.for_each([&](const tiled_index<16>& t) { out[t.global] = v; });
    };
    CHECK_THROWS_AS(c ? parallel_for_each(checked, out.extent.tile<16>(), k)
                      : parallel_for_each(out.extent.tile<16>(), k),
                    usage_error);
  }
}

TEST_CASE("explain: the collectives' workspace and barriers") {
  array<float, 1> A(extent<1>(1000)), B(extent<1>(1000));
  auto k = TESSERA_KERNEL(tile_group<128> & g) {
    const float s = reduce_over_tile(
        g,
        [&](const tiled_index<128>& t) { return A.extent.contains(t.global) ? A[t.global] : 0.f; },
        tessera::plus<>());
    g.for_each([&](const tiled_index<128>& t) {
      if (B.extent.contains(t.global)) B[t.global] = s;
    });
  };
  const auto te = A.extent.tile<128>().pad();
  const std::string s = explain(te, k);
  CAPTURE(s);
  CHECK(s.find("tile collectives") != std::string::npos);
  CHECK(s.find("float[128]") != std::string::npos);
  CHECK(s.find("reduce_over_tile") != std::string::npos);
  const auto p = plan(te, k);
  CHECK(p.barriers.size() == 7 + 2);  // first step, 7 tree levels (the last reads), reuse
}
