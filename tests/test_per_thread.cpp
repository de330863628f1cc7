// Per-thread tiled kernels (C++ AMP's form: kernel(const tiled_index<T...>&) with tile_static
// declarations and t.barrier.wait() in the kernel's own control flow): results against the same
// computation in phase form and against Eigen, on 1-3-D tiles, with 1-3 barriers, barriers in
// loops, pad/truncate, tile_static arrays of several types, an execution space instance first;
// plans; checked mode (races between barriers, divergent barriers, out-of-bounds accesses).
#include "test_util.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace {
using namespace tessera;
using tessera::index;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

/// True when this build runs no per-thread tiled kernels: they need Boost.Context (CMake option
/// TESSERA_FIBERS, on wherever Boost.Context is found; a cross build without the target's Boost
/// has none). A case then checks what such a build must do instead, and returns: a per-thread
/// launch throws the usage_error naming Boost.Context before any kernel runs, and leaves its
/// output untouched.
bool per_thread_unavailable() {
  if (tessera::backends::impl::fibers_available) return false;
  array<int, 1> out(extent<1>(8));
  out = 7;
  CHECK_THROWS_WITH_AS(parallel_for_each(
      out.extent.tile<4>(), TESSERA_KERNEL(const tiled_index<4>& t) { out[t.global] = 1; }),
      doctest::Contains("needs Boost.Context"), usage_error);
  for (const int v : out.to_vector()) CHECK(v == 7);
  MESSAGE(
      "per-thread kernels not run (this build has no Boost.Context); checked the "
      "usage_error a launch gives instead");
  return true;
}

/// Seed 000's tile averages, per thread: each logical thread stores its element into
/// tile_static memory, waits, and logical thread (0, 0) averages the tile.
template <int R, int C>
eigen_matrix<float> tile_averages_per_thread(const eigen_matrix<float>& m) {
  const array<float, 2> a = from_eigen(m);
  array<float, 2> out(m.rows() / R, m.cols() / C);
  parallel_for_each(
      a.extent.template tile<R, C>().truncate(), TESSERA_KERNEL(const tiled_index<R, C>& t) {
        auto vals = t.template tile_static<float[R][C]>("vals");
        vals(t.local[0], t.local[1]) = a[t.global];
        t.barrier.wait();
        if (t.local[0] == 0 && t.local[1] == 0) {
          float sum = 0;
          for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) sum += vals[i][j];
          out[t.tile] = sum / float(R * C);
        }
      });
  return to_eigen(out);
}

/// Seed 002's tiled matrix multiply, per thread: a loop over K tiles with two barriers each.
/// Extents padded to the tile; reads outside the operands give 0.
template <int TS, class V>
eigen_matrix<V> matmul_per_thread(const eigen_matrix<V>& ma, const eigen_matrix<V>& mb) {
  const array<V, 2> a = from_eigen(ma), b = from_eigen(mb);
  array<V, 2> c(ma.rows(), mb.cols());
  const index_type K = ma.cols();
  parallel_for_each(
      c.extent.template tile<TS, TS>().pad(), TESSERA_KERNEL(const tiled_index<TS, TS>& t) {
        const index_type row = t.local[0], col = t.local[1];
        V sum = 0;
        auto la = t.template tile_static<V[TS][TS]>("la");
        auto lb = t.template tile_static<V[TS][TS]>("lb");
        for (index_type k0 = 0; k0 < K; k0 += TS) {
          const index<2> ia(t.global[0], k0 + col), ib(k0 + row, t.global[1]);
          la(row, col) = a.extent.contains(ia) ? a[ia] : V(0);
          lb(row, col) = b.extent.contains(ib) ? b[ib] : V(0);
          t.barrier.wait();
          for (int k = 0; k < TS; ++k) sum += la(row, k) * lb(k, col);
          t.barrier.wait();
        }
        if (c.extent.contains(t.global)) c[t.global] = sum;
      });
  return to_eigen(c);
}

}  // namespace

TEST_CASE("per-thread tile averages (seed 000) match the phase form and Eigen") {
  if (per_thread_unavailable()) return;
  for (const auto& [r, c] : {std::pair<long, long>{8, 8}, {6, 10}, {1, 1}, {0, 4}, {33, 17}}) {
    const auto m = tt::random_matrix(r, c);
    const auto got = tile_averages_per_thread<2, 2>(m);
    REQUIRE(got.rows() == r / 2);
    REQUIRE(got.cols() == c / 2);
    for (long i = 0; i < got.rows(); ++i)
      for (long j = 0; j < got.cols(); ++j) {
        const float want = (m(2 * i, 2 * j) + m(2 * i, 2 * j + 1) + m(2 * i + 1, 2 * j) +
                            m(2 * i + 1, 2 * j + 1)) /
                           4;
        CHECK(got(i, j) == doctest::Approx(want).epsilon(1e-6));
      }
  }
}

TEST_CASE("per-thread tiled matmul (seed 002): barriers in a loop, padded extents") {
  if (per_thread_unavailable()) return;
  for (const auto& [m, k, n] :
       {std::array<long, 3>{32, 32, 32}, {17, 31, 13}, {1, 1, 1}, {40, 7, 50}, {0, 5, 3}}) {
    const auto a = tt::random_matrix(m, k), b = tt::random_matrix(k, n);
    const eigen_matrix<float> want = a * b;
    const auto got = matmul_per_thread<16>(a, b);
    REQUIRE(got.rows() == m);
    REQUIRE(got.cols() == n);
    // K products per element, float: |error| <= K u max|a||b| with room.
    CHECK(tt::max_abs_diff(got, want) <= 1e-5 * double(k + 1));
    const auto ad = tt::random_matrix<double>(m, k), bd = tt::random_matrix<double>(k, n);
    const eigen_matrix<double> wd = ad * bd;
    CHECK(tt::max_abs_diff(matmul_per_thread<8>(ad, bd), wd) <= 1e-13 * double(k + 1));
  }
}

TEST_CASE("per-thread kernels on 1-D and 3-D tiles: a tile reversal and a tile rotation") {
  if (per_thread_unavailable()) return;
  // 1-D: reverse each tile of 32 ints through tile_static memory (one barrier), then add the
  // neighbour's value after a second barrier.
  const index_type n = 32 * 5;
  std::vector<int> in(n);
  for (index_type i = 0; i < n; ++i) in[std::size_t(i)] = int(3 * i - 7);
  const array<int, 1> a(extent<1>(n), in.begin(), in.end());
  array<int, 1> o{extent<1>(n)};
  parallel_for_each(
      a.extent.tile<32>(), TESSERA_KERNEL(const tiled_index<32>& t) {
        auto s = t.tile_static<int[32]>("s");
        auto total = t.tile_static<long>("total");
        s[t.local[0]] = a[t.global];
        if (t.local[0] == 0) total = 0;
        t.barrier.wait();
        const int mine = s[31 - t.local[0]];
        t.barrier.wait_with_tile_static_memory_fence();
        s[t.local[0]] = mine;
        t.barrier.wait();
        if (t.local[0] == 0) {
          long sum = 0;
          for (int i = 0; i < 32; ++i) sum += s[i];
          total = sum;
        }
        t.barrier.wait();
        o[t.global] = mine + int(total().get() % 1000);
      });
  const auto got = o.to_vector();
  for (index_type tile = 0; tile < 5; ++tile) {
    long sum = 0;
    for (int i = 0; i < 32; ++i) sum += in[std::size_t(tile * 32 + i)];
    for (int i = 0; i < 32; ++i)
      CHECK(got[std::size_t(tile * 32 + i)] ==
            in[std::size_t(tile * 32 + 31 - i)] + int(sum % 1000));
  }
  // 3-D: each 2x4x4 tile of doubles rotated along its last dimension by one.
  const extent<3> e(4, 8, 12);
  std::vector<double> v(std::size_t(e.size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * double(i) - 3;
  const array<double, 3> x(e, v.begin(), v.end());
  array<double, 3> y(e);
  parallel_for_each(
      e.tile<2, 4, 4>(), TESSERA_KERNEL(const tiled_index<2, 4, 4>& t) {
        auto s = t.tile_static<double[2][4][4]>();
        s(t.local[0], t.local[1], t.local[2]) = x[t.global];
        t.barrier.wait();
        y[t.global] = s(t.local[0], t.local[1], (t.local[2] + 1) % 4);
      });
  const auto yv = y.to_vector();
  for (index_type i = 0; i < e[0]; ++i)
    for (index_type j = 0; j < e[1]; ++j)
      for (index_type k = 0; k < e[2]; ++k) {
        const index_type k2 = (k / 4) * 4 + (k % 4 + 1) % 4;
        CHECK(yv[std::size_t((i * e[1] + j) * e[2] + k)] ==
              v[std::size_t((i * e[1] + j) * e[2] + k2)]);
      }
}

TEST_CASE(
    "per-thread tile reduction by halving, truncated extent, on an execution space instance") {
  if (per_thread_unavailable()) return;
  // A tree reduction with log2(64) barriers inside a loop, as CUDA/C++ AMP samples write it.
  const long n = 64 * 9 + 13;  // truncated: the last 13 elements are not summed
  const auto m = tt::random_matrix<double>(1, n);
  std::vector<double> in(m.data(), m.data() + n);
  const array<double, 1> a(extent<1>(n), in.begin(), in.end());
  array<double, 1> sums{extent<1>(n / 64)};
  parallel_for_each(
      execution_space(), a.extent.tile<64>().truncate(), TESSERA_KERNEL(const tiled_index<64>& t) {
        auto s = t.tile_static<double[64]>("partial");
        const int l = int(t.local[0]);
        s[l] = a[t.global];
        t.barrier.wait();
        for (int stride = 32; stride > 0; stride /= 2) {
          if (l < stride) s[l] = s[l] + s[l + stride];
          t.barrier.wait();
        }
        if (l == 0) sums[t.tile] = s[0];
      });
  const auto got = sums.to_vector();
  REQUIRE(got.size() == 9);
  for (int tile = 0; tile < 9; ++tile) {
    double want = 0;
    for (int i = 0; i < 64; ++i) want += in[std::size_t(tile * 64 + i)];
    CHECK(got[std::size_t(tile)] == doctest::Approx(want).epsilon(1e-12));
  }
}

TEST_CASE("a per-thread kernel's plan: tile_static bytes, barriers, the form") {
  if (per_thread_unavailable()) return;
  array<float, 2> o(32, 32);
  auto k = TESSERA_KERNEL(const tiled_index<16, 16>& t) {
    auto x = t.tile_static<float[16][16]>("x");
    auto y = t.tile_static<double[16]>("y");
    x(t.local[0], t.local[1]) = 1.f;
    if (t.local[0] == 0) y[t.local[1]] = 2.0;
    t.barrier.wait();
    o[t.global] = x(t.local[1], t.local[0]) + float(y[t.local[1]]);
  };
  const auto p = plan(o.extent.tile<16, 16>(), k);
  CHECK(p.league_size == 4);
  CHECK(p.logical_threads == 256);
  CHECK(p.scratch_bytes[p.scratch_level] == 16 * 16 * 4 + 16 * 8);  // 1024 B, aligned to 64
  CHECK(p.barriers.size() == 1);
  CHECK(p.buffers.size() == 2);
  const std::string text = explain(o.extent.tile<16, 16>(), k);
  CHECK(contains(text, "per-thread"));
  CHECK(contains(text, "x"));
  parallel_for_each(o.extent.tile<16, 16>(), k);
  for (float v : o.to_vector()) CHECK(v == 3.f);
}

TEST_CASE("checked mode: races between barriers, divergent barriers, bounds (per-thread)") {
  if (per_thread_unavailable()) return;
  array<float, 1> o{extent<1>(64)};
  // Race: every logical thread reads its neighbour's slot with no barrier after the writes.
  auto racy = TESSERA_KERNEL(const tiled_index<16>& t) {
    auto s = t.tile_static<float[16]>("s");
    s[t.local[0]] = float(t.global[0]);
    o[t.global] = s[(t.local[0] + 1) % 16];
  };
  CHECK_THROWS_AS(parallel_for_each(checked, o.extent.tile<16>(), racy), race_error);
  auto fixed = TESSERA_KERNEL(const tiled_index<16>& t) {
    auto s = t.tile_static<float[16]>("s");
    s[t.local[0]] = float(t.global[0]);
    t.barrier.wait();
    o[t.global] = s[(t.local[0] + 1) % 16];
  };
  parallel_for_each(checked, o.extent.tile<16>(), fixed);
  const auto got = o.to_vector();
  for (int i = 0; i < 64; ++i) CHECK(got[std::size_t(i)] == float((i / 16) * 16 + (i + 1) % 16));
  // Two logical threads writing one global element between barriers.
  array<float, 1> one{extent<1>(1)};
  auto collide = TESSERA_KERNEL(const tiled_index<16>& t) {
    one[tessera::index<1>(0)] = float(t.local[0]);
  };
  std::vector<finding> f;
  parallel_for_each(checked_collect(f), o.extent.tile<16>(), collide);
  CHECK(!f.empty());
  // Divergent barrier: only half of the tile waits. Reported before anything runs in fast
  // mode (the first launch's dry run), and in checked mode.
  auto divergent = TESSERA_KERNEL(const tiled_index<16>& t) {
    if (t.local[0] < 8) t.barrier.wait();
    o[t.global] = 1.f;
  };
  const auto before = o.to_vector();
  try {
    parallel_for_each(o.extent.tile<16>(), divergent);
    FAIL("a divergent barrier ran");
  } catch (const usage_error& e) {
    CHECK(contains(e.what(), "barrier"));
    CHECK(contains(e.what(), "parallel_for_each"));
  }
  CHECK(o.to_vector() == before);  // nothing ran
  CHECK_THROWS_AS(parallel_for_each(checked, o.extent.tile<16>(), divergent), usage_error);
  // Out of bounds: a tile_static index and a global index.
  auto oob_static = TESSERA_KERNEL(const tiled_index<16>& t) {
    auto s = t.tile_static<float[16]>("s");
    s[t.local[0] + 1] = 0.f;
    t.barrier.wait();
  };
  CHECK_THROWS_AS(parallel_for_each(checked, o.extent.tile<16>(), oob_static), bounds_error);
  auto oob_global = TESSERA_KERNEL(const tiled_index<16>& t) {
    o[t.global + tessera::index<1>(1)] = 0.f;
  };
  CHECK_THROWS_AS(parallel_for_each(checked, o.extent.tile<16>(), oob_global), bounds_error);
  // Declarations that differ between logical threads.
  auto differ = TESSERA_KERNEL(const tiled_index<16>& t) {
    if (t.local[0] == 3) {
      auto s = t.tile_static<double[4]>("d");
      s[0] = 1;
    } else {
      auto s = t.tile_static<float[4]>("f");
      s[1] = 1;
    }
    t.barrier.wait();
  };
  CHECK_THROWS_AS(parallel_for_each(checked, o.extent.tile<16>(), differ), usage_error);
}

TEST_CASE("t.barrier inside a phase kernel's for_each is a usage_error") {
  array<float, 1> o{extent<1>(16)};
  auto k = TESSERA_KERNEL(tile_group<16>& g) {
    g.for_each([&](const tiled_index<16>& t) {
      o[t.global] = 1.f;
      t.barrier.wait();
    });
  };
  CHECK_THROWS_AS(parallel_for_each(o.extent.tile<16>(), k), usage_error);
  CHECK_THROWS_AS(parallel_for_each(checked, o.extent.tile<16>(), k), usage_error);
}

TEST_CASE("per-thread and phase forms agree on a two-stage tile kernel with tile_static ints") {
  if (per_thread_unavailable()) return;
  const long r = 48, c = 40;
  const auto m = tt::small_ints(r, c);
  const auto a = tt::make<int>(m);
  array<int, 2> p1(r, c), p2(r, c);
  // Each logical thread: column prefix sums within the tile's column, then the row's maximum.
  parallel_for_each(
      a.extent.tile<8, 8>(), TESSERA_KERNEL(const tiled_index<8, 8>& t) {
        auto s = t.tile_static<int[8][8]>("s");
        auto mx = t.tile_static<int[8]>("mx");
        const int i = int(t.local[0]), j = int(t.local[1]);
        s(i, j) = a[t.global];
        t.barrier.wait();
        int acc = 0;
        for (int k = 0; k <= i; ++k) acc += s(k, j);
        t.barrier.wait();
        s(i, j) = acc;
        t.barrier.wait();
        if (j == 0) {
          int best = s(i, 0);
          for (int k = 1; k < 8; ++k) best = s(i, k) > best ? s(i, k) : best;
          mx[i] = best;
        }
        t.barrier.wait();
        p1[t.global] = acc - mx[i];
      });
  parallel_for_each(
      a.extent.tile<8, 8>(), TESSERA_KERNEL(tile_group<8, 8>& g) {
        auto s = g.tile_static<int[8][8]>("s");
        auto mx = g.tile_static<int[8]>("mx");
        auto acc = g.tile_local<int>(0);
        g.for_each([&](const tiled_index<8, 8>& t) { s(t.local[0], t.local[1]) = a[t.global]; });
        g.barrier.wait();
        g.for_each([&](const tiled_index<8, 8>& t) {
          int x = 0;
          for (int k = 0; k <= t.local[0]; ++k) x += s(k, t.local[1]);
          acc(t) = x;
        });
        g.barrier.wait();
        g.for_each([&](const tiled_index<8, 8>& t) { s(t.local[0], t.local[1]) = acc(t); });
        g.barrier.wait();
        g.for_each([&](const tiled_index<8, 8>& t) {
          if (t.local[1] == 0) {
            int best = s(t.local[0], 0);
            for (int k = 1; k < 8; ++k) best = s(t.local[0], k) > best ? s(t.local[0], k) : best;
            mx[t.local[0]] = best;
          }
        });
        g.barrier.wait();
        g.for_each([&](const tiled_index<8, 8>& t) { p2[t.global] = acc(t) - mx[t.local[0]]; });
      });
  CHECK(p1.to_vector() == p2.to_vector());
}

TEST_CASE("tile_static declared inside a loop names the same storage each iteration (seed 002)") {
  if (per_thread_unavailable()) return;
  // As seed 002 writes it: the declarations inside the K loop, run K / TS times.
  const long n = 48;
  const auto ma = tt::small_ints(n, n), mb = tt::small_ints(n, n);
  const auto a = tt::make<int>(ma), b = tt::make<int>(mb);
  array<int, 2> c(n, n);
  auto k = TESSERA_KERNEL(const tiled_index<8, 8>& t) {
    const int row = int(t.local[0]), col = int(t.local[1]);
    int sum = 0;
    for (index_type i = 0; i < n; i += 8) {
      auto locA = t.tile_static<int[8][8]>("locA");
      auto locB = t.tile_static<int[8][8]>("locB");
      locA[row][col] = a(t.global[0], col + i);
      locB[row][col] = b(row + i, t.global[1]);
      t.barrier.wait();
      for (int j = 0; j < 8; ++j) sum += locA[row][j] * locB[j][col];
      t.barrier.wait();
    }
    c[t.global] = sum;
  };
  const auto p = plan(c.extent.tile<8, 8>(), k);
  CHECK(p.buffers.size() == 2);
  CHECK(p.scratch_bytes[p.scratch_level] == 2 * 8 * 8 * 4);
  parallel_for_each(c.extent.tile<8, 8>(), k);
  CHECK(tt::read(c) == ma * mb);
  parallel_for_each(checked, c.extent.tile<8, 8>(), k);
  CHECK(tt::read(c) == ma * mb);
}
