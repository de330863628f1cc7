// index<N>, extent<N>, tiled_extent<T...>: sizes, contains, pad/truncate (seed 003's numbers).
#include "test_util.hpp"

// `index` alone would also find POSIX ::index(); the using-declaration below hides it.
namespace {
using namespace tessera;
using tessera::index;

TEST_CASE("extent: size, operator[], contains") {
  extent<2> e(3, 4);
  CHECK(e.size() == 12);
  CHECK(e[0] == 3);
  CHECK(e[1] == 4);
  CHECK(e.contains(index<2>(0, 0)));
  CHECK(e.contains(index<2>(2, 3)));
  CHECK_FALSE(e.contains(index<2>(3, 0)));
  CHECK_FALSE(e.contains(index<2>(0, 4)));
  CHECK_FALSE(e.contains(index<2>(-1, 0)));
  CHECK(extent<1>(0).size() == 0);
  CHECK(extent<3>(2, 3, 5).size() == 30);
  CHECK(extent<3>(2, 0, 5).size() == 0);
  // 64-bit sizes: 1024*1024*256 * 16 overflows 32 bits.
  CHECK(extent<3>(1024 * 1024, 256, 16).size() == 4294967296LL);
  CHECK(to_string(e) == "(3,4)");
}

TEST_CASE("index arithmetic") {
  index<2> a(1, 2), b(10, 20);
  CHECK(a + b == index<2>(11, 22));
  CHECK(b - a == index<2>(9, 18));
}

TEST_CASE("tiled_extent pad/truncate: seed 003's extent<2>(999,666).tile<16,16>()") {
  extent<2> e(999, 666);
  tiled_extent<16, 16> te = e.tile<16, 16>();
  CHECK(te[0] == 999);
  CHECK(te[1] == 666);
  CHECK_FALSE(te.is_even());
  auto p = te.pad();
  CHECK(p[0] == 1008);
  CHECK(p[1] == 672);
  CHECK(p.is_even());
  CHECK(p.tile_count() == 63 * 42);
  auto t = te.truncate();
  CHECK(t[0] == 992);
  CHECK(t[1] == 656);
  CHECK(t.is_even());
  CHECK(t.tile_counts() == extent<2>(62, 41));
}

TEST_CASE("tiled_extent ranks 1 and 3, random shapes") {
  for (int trial = 0; trial < 50; ++trial) {
    const long n0 = tt::random_size(0, 200), n1 = tt::random_size(0, 50),
               n2 = tt::random_size(0, 50);
    auto t1 = extent<1>(n0).tile<32>();
    CHECK(t1.pad()[0] == (n0 + 31) / 32 * 32);
    CHECK(t1.truncate()[0] == n0 / 32 * 32);
    auto t3 = extent<3>(n0, n1, n2).tile<4, 2, 8>();
    const auto p = t3.pad(), t = t3.truncate();
    CHECK(p[0] % 4 == 0);
    CHECK(p[1] % 2 == 0);
    CHECK(p[2] % 8 == 0);
    CHECK(p[0] - n0 < 4);
    CHECK(p[2] - n2 < 8);
    CHECK(n0 - t[0] < 4);
    CHECK(n2 - t[2] < 8);
    CHECK(t3.tile_size == 64);
  }
}

TEST_CASE("tiled_index::local_linear is row-major") {
  tiled_index<2, 4> t;
  t.local = index<2>(1, 3);
  CHECK(t.local_linear() == 7);
  tiled_index<2, 3, 4> u;
  u.local = index<3>(1, 2, 3);
  CHECK(u.local_linear() == 1 * 12 + 2 * 4 + 3);
}

// --- the index arithmetic C++ AMP samples use --------------------------------------------------

TEST_CASE("index and extent arithmetic, conversions and tile constants") {
  index<2> i(3, 4);
  i += index<2>(1, 1);
  CHECK(i == index<2>(4, 5));
  i -= 2;
  CHECK(i == index<2>(2, 3));
  i *= 3;
  CHECK(i == index<2>(6, 9));
  CHECK(-i == index<2>(-6, -9));
  const int comps[3] = {1, 2, 3};
  CHECK(index<3>(comps) == index<3>(1, 2, 3));
  CHECK(extent<3>(comps).size() == 6);
  extent<2> e(10, 20);
  CHECK(e + index<2>(1, 2) == extent<2>(11, 22));
  CHECK(e / 5 == extent<2>(2, 4));
  using te_t = tiled_extent<16, 8>;
  static_assert(te_t::tile_dim0 == 16 && te_t::tile_dim1 == 8);
  constexpr extent<2> tile = te_t::tile_extent;
  static_assert(tile[0] == 16 && tile[1] == 8);
  static_assert(tiled_index<4, 2>::tile_dim1 == 2);
  // tiled_index converts to its global index: c[tidx] reads c at t.global.
  array<int, 2> c(8, 8), d(8, 8);
  parallel_for_each(
      c.extent, TESSERA_KERNEL(const index<2>& x) { c[x] = int(x[0] * 8 + x[1]); });
  parallel_for_each(
      c.extent.tile<4, 4>(), TESSERA_KERNEL(tile_group<4, 4>& g) {
        g.for_each([&](const tiled_index<4, 4>& t) { d[t] = c[t] + 1; });
      });
  const auto dv = d.to_vector();
  for (int k = 0; k < 64; ++k) CHECK(dv[std::size_t(k)] == k + 1);
}

}  // namespace
