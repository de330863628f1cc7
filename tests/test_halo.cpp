// Tier 0 halos and sub-domains: launches over a sub-domain (untiled and tiled, ranks 1-3, with
// origins, padded tiles, empty and one-point domains) touch exactly its points; load_halo
// fills a tile plus a halo of radius R with what a naive read under each boundary policy gives
// (ranks 1-3, R = 0-3, shapes 1, primes and tile non-multiples, float and int, fast and
// checked mode), checked out by box stencils whose weights differ at every offset (integer
// data: exact; float: 1e-6 relative); checked mode reports halo reads outside the halo, a
// reload racing with the reads of the previous load, and global reads a sub-domain's origin
// puts outside the operand; for_each(dom, f) runs a phase for exactly the logical threads
// inside a sub-domain (ranks 1-3, padded tiles, fast and checked); explain shows the halo
// buffer and its barrier.
#include "test_util.hpp"

#include <string>
#include <vector>

using namespace tessera;

namespace halo_tests {

template <int N>
TESSERA_INLINE index_type flat(const extent<N>& e, const tessera::index<N>& i) {
  index_type r = 0;
  for (int d = 0; d < N; ++d) r = r * e[d] + i[d];
  return r;
}
template <int N>
extent<N> random_extent(long lo, long hi) {
  extent<N> e;
  for (int d = 0; d < N; ++d) e[d] = tt::random_size(lo, hi);
  return e;
}
/// Index j of a dimension of extent n mapped by the policy (naive: a loop, not a formula).
long ref_inside(long j, long n, boundary::kind k) {
  if (k == boundary::kind::clamp) return j < 0 ? 0 : n - 1;
  if (k == boundary::kind::periodic) {
    while (j < 0) j += n;
    while (j >= n) j -= n;
    return j;
  }
  // mirror: walk the reflections one edge at a time
  while (j < 0 || j >= n) j = j < 0 ? -1 - j : 2 * n - 1 - j;
  return j;
}
/// Element i of the row-major data v of extent e under policy b.
template <class T, int N>
double ref_read(const std::vector<T>& v, const extent<N>& e, tessera::index<N> i,
                boundary::policy b) {
  bool in = true;
  for (int d = 0; d < N; ++d) in = in && i[d] >= 0 && i[d] < e[d];
  if (!in) {
    if (b.k == boundary::kind::zero) return 0.0;
    if (b.k == boundary::kind::constant) return static_cast<double>(static_cast<T>(b.value));
    for (int d = 0; d < N; ++d)
      if (i[d] < 0 || i[d] >= e[d]) i[d] = ref_inside(i[d], e[d], b.k);
  }
  return static_cast<double>(v[std::size_t(flat(e, i))]);
}
/// A weight per offset of a box of radius R (all distinct).
template <int N>
TESSERA_INLINE double weight(const tessera::index<N>& d, int R) {
  double w = 0;
  for (int k = 0; k < N; ++k) w = w * (2 * R + 1) + (d[k] + R);
  return w + 1;
}
template <class T>
std::vector<T> random_data(index_type n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_integral_v<T>)
      x = static_cast<T>(tt::random_size(-4, 4));
    else
      x = static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(tt::rng()));
  }
  return v;
}
const boundary::policy policies[] = {boundary::zero, boundary::constant(2.5), boundary::clamp,
                                     boundary::periodic, boundary::mirror};

/// Box stencil of radius R through load_halo over the points of `dom` (tiles T..., padded),
/// compared with the naive reference; every other point of the output keeps -7.
template <class E, int R, int... T>
void check_box(const extent<sizeof...(T)>& e, const sub_domain<sizeof...(T)>& dom,
               boundary::policy b, bool use_checked) {
  constexpr int N = sizeof...(T);
  CAPTURE(to_string(e));
  CAPTURE(to_string(dom.origin));
  CAPTURE(to_string(dom.extent));
  CAPTURE(R);
  CAPTURE(boundary::to_string(b.k));
  CAPTURE(use_checked);
  const std::vector<E> v = random_data<E>(e.size());
  array<E, N> A(e, v.begin(), v.end());
  std::vector<double> init(std::size_t(e.size()), -7.0);
  array<double, N> out(e, init.begin(), init.end());
  auto kernel = TESSERA_KERNEL(basic_tile_group<execution_space, T...> & g) {
    auto h = g.template load_halo<R>(A, b, "a");
    g.for_each([&](const tiled_index<T...>& t) {
      if (!dom.contains(t.global) || !out.extent.contains(t.global)) return;
      double s = 0;
      tessera::index<N> d;
      for (int k = 0; k < N; ++k) d[k] = -R;
      for (;;) {
        s += weight(d, R) * static_cast<double>(static_cast<E>(h[t.local + d]));
        int k = N - 1;
        while (k >= 0 && d[k] == R) d[k--] = -R;
        if (k < 0) break;
        ++d[k];
      }
      out[t.global] = s;
    });
  };
  const auto te = dom.template tile<T...>().pad();
  if (use_checked)
    parallel_for_each(checked, te, kernel);
  else
    parallel_for_each(te, kernel);
  const std::vector<double> got = out.to_vector();
  for (index_type f = 0; f < e.size(); ++f) {
    const tessera::index<N> i = tessera::impl::unflatten(e, f);
    double want = -7.0;
    if (dom.contains(i)) {
      want = 0;
      tessera::index<N> d;
      for (int k = 0; k < N; ++k) d[k] = -R;
      for (;;) {
        want += weight(d, R) * ref_read(v, e, i + d, b);
        int k = N - 1;
        while (k >= 0 && d[k] == R) d[k--] = -R;
        if (k < 0) break;
        ++d[k];
      }
    }
    CAPTURE(to_string(i));
    const double tol = std::is_integral_v<E> ? 0.0 : 1e-6 * (1 + std::abs(want)) * 64;
    CHECK(std::abs(got[std::size_t(f)] - want) <= tol);
  }
}

/// Untiled launch over dom writes its points' flat indices; everything else keeps -1.
template <int N>
void check_untiled(const extent<N>& e, const sub_domain<N>& dom) {
  CAPTURE(to_string(e));
  CAPTURE(to_string(dom.origin));
  CAPTURE(to_string(dom.extent));
  std::vector<int> init(std::size_t(e.size()), -1);
  array<int, N> out(e, init.begin(), init.end());
  const extent<N> x = e;
  parallel_for_each(
      dom, TESSERA_KERNEL(const tessera::index<N>& i) { out[i] = int(flat(x, i)); });
  const auto got = out.to_vector();
  for (index_type f = 0; f < e.size(); ++f) {
    const tessera::index<N> i = tessera::impl::unflatten(e, f);
    CHECK(got[std::size_t(f)] == (dom.contains(i) ? int(f) : -1));
  }
}

template <int N>
sub_domain<N> random_sub_domain(const extent<N>& e) {
  sub_domain<N> s;
  for (int d = 0; d < N; ++d) {
    s.origin[d] = tt::random_size(0, e[d]);
    s.extent[d] = tt::random_size(0, e[d] - s.origin[d]);
  }
  return s;
}

}  // namespace halo_tests

using namespace halo_tests;

TEST_CASE("sub_domain and interior: contains, tiles, origins") {
  const sub_domain<2> s = interior(extent<2>(10, 5), 2);
  CHECK(s.origin == tessera::index<2>(2, 2));
  CHECK(s.extent == extent<2>(6, 1));
  CHECK(s.contains(tessera::index<2>(2, 2)));
  CHECK(s.contains(tessera::index<2>(7, 2)));
  CHECK_FALSE(s.contains(tessera::index<2>(8, 2)));
  CHECK_FALSE(s.contains(tessera::index<2>(2, 3)));
  CHECK_FALSE(s.contains(tessera::index<2>(1, 2)));
  CHECK(interior(extent<2>(3, 4), 2).extent == extent<2>(0, 0));
  CHECK(interior(extent<1>(4), 2).extent.size() == 0);
  const auto te = s.tile<4, 4>().pad();
  CHECK(te.get_origin() == tessera::index<2>(2, 2));
  CHECK(te.get_extent() == extent<2>(8, 4));
  CHECK(s.tile<4, 4>().truncate().get_extent() == extent<2>(4, 0));
  CHECK(extent<2>(3, 3).tile<1, 1>().get_origin() == tessera::index<2>(0, 0));
  CHECK(sub_domain<3>(extent<3>(2, 3, 4)).contains(tessera::index<3>(1, 2, 3)));
}

TEST_CASE("untiled launches over a sub-domain touch exactly its points (ranks 1-3)") {
  for (long n : tt::edge_sizes()) {
    check_untiled(extent<1>(n), random_sub_domain(extent<1>(n)));
    check_untiled(extent<1>(n), interior(extent<1>(n), 1));
  }
  check_untiled(extent<1>(10000),
                sub_domain<1>(tessera::index<1>(3), extent<1>(9990)));  // 3 chunks
  for (int rep = 0; rep < 8; ++rep) {
    const auto e2 = random_extent<2>(0, 40);
    check_untiled(e2, random_sub_domain(e2));
    check_untiled(e2, interior(e2, 2));
    const auto e3 = random_extent<3>(0, 12);
    check_untiled(e3, random_sub_domain(e3));
    check_untiled(e3, interior(e3, 1));
  }
  CHECK_THROWS_AS(parallel_for_each(sub_domain<2>(tessera::index<2>(0, 0), extent<2>(-1, 2)),
                                    TESSERA_KERNEL(const tessera::index<2>&){}),
                                    shape_error);
}

TEST_CASE("tiled launches over a sub-domain: tile_origin = origin + tile * tile_extent") {
  for (const bool use_checked : {false, true})
    for (int rep = 0; rep < 6; ++rep) {
      const auto e = random_extent<2>(1, 37);
      const auto dom = rep == 0 ? interior(e, 3) : random_sub_domain(e);
      CAPTURE(to_string(e));
      CAPTURE(to_string(dom.origin));
      CAPTURE(to_string(dom.extent));
      std::vector<int> init(std::size_t(e.size()), -1);
      array<int, 2> out(e, init.begin(), init.end());
      auto k = TESSERA_KERNEL(tile_group<4, 8> & g) {
        g.for_each([&](const tiled_index<4, 8>& t) {
          if (dom.contains(t.global))
            out[t.global] =
                int(t.tile[0] * 1000 + t.tile[1] +
                    100000 * (t.tile_origin == dom.origin + t.tile * tessera::index<2>(4, 8)));
        });
      };
      if (use_checked)
        parallel_for_each(checked, dom.tile<4, 8>().pad(), k);
      else
        parallel_for_each(dom.tile<4, 8>().pad(), k);
      const auto got = out.to_vector();
      for (long i = 0; i < e[0]; ++i)
        for (long j = 0; j < e[1]; ++j) {
          const tessera::index<2> p(i, j);
          const long want = dom.contains(p)
                                ? 100000 + (i - dom.origin[0]) / 4 * 1000 + (j - dom.origin[1]) / 8
                                : -1;
          CHECK(got[std::size_t(i * e[1] + j)] == want);
        }
    }
}

TEST_CASE("load_halo: tile plus halo under every boundary policy (rank 2, R = 0-3)") {
  for (const bool use_checked : {false, true})
    for (const auto& b : policies)
      for (int rep = 0; rep < 3; ++rep) {
        const extent<2> e = rep == 0 ? extent<2>(1, 1) : random_extent<2>(1, use_checked ? 19 : 45);
        const sub_domain<2> whole(e);
        check_box<float, 0, 4, 8>(e, whole, b, use_checked);
        check_box<float, 1, 4, 8>(e, whole, b, use_checked);
        check_box<int, 2, 4, 8>(e, whole, b, use_checked);
        check_box<double, 3, 8, 4>(e, whole, b, use_checked);
        // interior launches: tiles inside the operand, padded tiles past its end
        check_box<int, 2, 4, 8>(e, interior(e, 2), b, use_checked);
        check_box<float, 1, 4, 4>(e, random_sub_domain(e), b, use_checked);
      }
}

TEST_CASE("load_halo: ranks 1 and 3, radii larger than the operand") {
  for (const bool use_checked : {false, true})
    for (const auto& b : policies) {
      for (long n : {1L, 2L, 7L, 13L, 64L, 97L}) {
        const extent<1> e(n);
        check_box<float, 2, 8>(e, sub_domain<1>(e), b, use_checked);
        check_box<int, 3, 4>(e, interior(e, 3), b, use_checked);
        check_box<int, 9, 4>(e, sub_domain<1>(e), b, use_checked);
      }
      for (int rep = 0; rep < 2; ++rep) {
        const extent<3> e = rep == 0 ? extent<3>(1, 2, 3) : random_extent<3>(1, 11);
        check_box<int, 1, 2, 4, 4>(e, sub_domain<3>(e), b, use_checked);
        check_box<float, 2, 4, 2, 4>(e, interior(e, 1), b, use_checked);
      }
    }
}

TEST_CASE("checked mode: halo bounds, a reload racing with reads, sub-domain origins") {
  const auto ea = tt::random_matrix<float>(16, 16);
  array<float, 2> A = from_eigen(ea);
  array<float, 2> out(16, 16);
  // A read one point past the halo.
  CHECK_THROWS_AS(parallel_for_each(
      checked, A.extent.tile<4, 4>(),
      TESSERA_KERNEL(tile_group<4, 4> & g) {
                       auto h = g.load_halo<1>(A, boundary::zero, "a");
                       g.for_each([&](const tiled_index<4, 4>& t) {
                         out[t.global] = h(t.local[0] - 2, t.local[1]);
                       });
                     }),
      bounds_error);
  // A second load into the buffer without a barrier after the phase that read it.
  CHECK_THROWS_AS(parallel_for_each(
      checked, A.extent.tile<4, 4>(),
      TESSERA_KERNEL(tile_group<4, 4> & g) {
                       auto h = g.tile_static_halo<float, 1>("a");
                       g.load_halo(h, A, boundary::clamp);
                       g.for_each([&](const tiled_index<4, 4>& t) {
                         out[t.global] = h(t.local[0] + 1, t.local[1]);
                       });
                       g.load_halo(h, out, boundary::clamp);
                     }),
      race_error);
  // ...and with the barrier it passes and matches the reference.
  parallel_for_each(
      checked, A.extent.tile<4, 4>(), TESSERA_KERNEL(tile_group<4, 4> & g) {
        auto h = g.tile_static_halo<float, 1>("a");
        g.load_halo(h, A, boundary::clamp);
        g.for_each([&](const tiled_index<4, 4>& t) {
          out[t.global] = h(t.local[0] + 1, t.local[1]) - h(t.local[0], t.local[1] - 1);
        });
        g.barrier.wait();
        g.load_halo(h, A, boundary::zero);
      });
  const auto o = tt::read(out);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      CHECK(o(i, j) == doctest::Approx(double(ea(std::min(i + 1, 15), j)) -
                                       double(ea(i, std::max(j - 1, 0)))));
  // A 5-point stencil reading A directly: outside A on the whole grid, inside on its interior.
  auto star = TESSERA_KERNEL(tile_group<2, 2> & g) {
    g.for_each([&](const tiled_index<2, 2>& t) {
      const index_type i = t.global[0], j = t.global[1];
      out[t.global] = A(i - 1, j) + A(i + 1, j) + A(i, j - 1) + A(i, j + 1);
    });
  };
  CHECK_THROWS_AS(parallel_for_each(checked, A.extent.tile<2, 2>(), star), bounds_error);
  CHECK_THROWS_AS(parallel_for_each(A.extent.tile<2, 2>(), star), bounds_error);  // dry run
  parallel_for_each(checked, interior(A.extent, 1).tile<2, 2>(), star);
  parallel_for_each(interior(A.extent, 1).tile<2, 2>(), star);
}

TEST_CASE("for_each(dom, f): a phase of the logical threads inside a sub-domain or extent") {
  // Every logical thread inside dom adds its tile's number once (two phases around a barrier
  // through a tile_static counter); the others do nothing; tiles outside dom run nothing.
  for (const bool use_checked : {false, true})
    for (int rep = 0; rep < 8; ++rep) {
      const auto e = random_extent<2>(1, 40);
      const sub_domain<2> dom = rep == 0 ? sub_domain<2>(e) : random_sub_domain(e);
      CAPTURE(to_string(e));
      CAPTURE(to_string(dom.origin));
      CAPTURE(to_string(dom.extent));
      CAPTURE(use_checked);
      std::vector<int> init(std::size_t(e.size()), -1);
      array<int, 2> out(e, init.begin(), init.end());
      auto k = TESSERA_KERNEL(tile_group<4, 8> & g) {
        auto n = g.tile_static<int[4][8]>("n");
        g.for_each([&](const tiled_index<4, 8>& t) { n(t.local[0], t.local[1]) = 0; });
        g.barrier.wait();
        g.for_each(dom, [&](const tiled_index<4, 8>& t) {
          n(t.local[0], t.local[1]) += int(t.tile[0] * 100 + t.tile[1]) + 1;
        });
        g.barrier.wait();
        g.for_each(out.extent, [&](const tiled_index<4, 8>& t) {
          if (n(t.local[0], t.local[1]) != 0) out[t.global] = n(t.local[0], t.local[1]);
        });
      };
      // Tiles over the whole extent: padded, and the domain's tiles start at (0, 0).
      const auto te = e.tile<4, 8>().pad();
      if (use_checked)
        parallel_for_each(checked, te, k);
      else
        parallel_for_each(te, k);
      const auto got = out.to_vector();
      for (long i = 0; i < e[0]; ++i)
        for (long j = 0; j < e[1]; ++j) {
          const tessera::index<2> p(i, j);
          CHECK(got[std::size_t(i * e[1] + j)] ==
                (dom.contains(p) ? int(i / 4 * 100 + j / 8) + 1 : -1));
        }
    }
  // Rank 1 and 3, through load_halo's box stencil over random sub-domains: the clipped phase
  // (no contains test in the kernel) writes exactly the domain.
  for (int rep = 0; rep < 4; ++rep) {
    const auto e1 = random_extent<1>(1, 70);
    const auto d1 = random_sub_domain(e1);
    std::vector<float> init(std::size_t(e1.size()), -7.f);
    array<float, 1> o1(e1, init.begin(), init.end());
    parallel_for_each(
        e1.tile<8>().pad(), TESSERA_KERNEL(tile_group<8> & g) {
          g.for_each(d1, [&](const tiled_index<8>& t) { o1[t.global] = float(t.global[0]); });
        });
    const auto g1 = o1.to_vector();
    for (long i = 0; i < e1[0]; ++i)
      CHECK(g1[std::size_t(i)] == (d1.contains(tessera::index<1>(i)) ? float(i) : -7.f));
    const auto e3 = random_extent<3>(1, 9);
    const auto d3 = random_sub_domain(e3);
    std::vector<int> i3(std::size_t(e3.size()), -1);
    array<int, 3> o3(e3, i3.begin(), i3.end());
    parallel_for_each(
        e3.tile<2, 2, 4>().pad(), TESSERA_KERNEL(tile_group<2, 2, 4> & g) {
          g.for_each(d3, [&](const tiled_index<2, 2, 4>& t) { o3[t.global] = 1; });
        });
    const auto g3 = o3.to_vector();
    for (index_type f = 0; f < e3.size(); ++f)
      CHECK(g3[std::size_t(f)] == (d3.contains(tessera::impl::unflatten(e3, f)) ? 1 : -1));
  }
}

TEST_CASE("explain: the halo buffer and the barrier of its load") {
  array<float, 2> A(64, 64), B(64, 64);
  auto k = TESSERA_KERNEL(tile_group<16, 16> & g) {
    auto a = g.load_halo<2>(A, boundary::clamp, "a_halo");
    g.for_each([&](const tiled_index<16, 16>& t) {
      B[t.global] = a(t.local[0] - 2, t.local[1]) + a(t.local[0] + 2, t.local[1]);
    });
  };
  const std::string s = explain(interior(A.extent, 2).tile<16, 16>().pad(), k);
  CAPTURE(s);
  CHECK(s.find("a_halo") != std::string::npos);
  CHECK(s.find("float[20][20]") != std::string::npos);
  const auto p = plan(interior(A.extent, 2).tile<16, 16>().pad(), k);
  CHECK(p.barriers.size() == 1);
  CHECK(p.scratch_bytes[0] + p.scratch_bytes[1] >= 20 * 20 * sizeof(float));
}
