// Tier 0 tile kernels against exact seed values and Eigen, on random shapes with a fixed seed.
// Tolerances: float matmul rtol 1e-5 * K relative to sum |a||b| (accumulation order differs
// from Eigen's); transposes and tile sums of small integers are exact.
#include "../examples/common/workload_kernels.hpp"
#include "test_util.hpp"

// `index` alone would also find POSIX ::index(); the using-declaration below hides it.
namespace {
using namespace tessera;
using tessera::index;

namespace {
array<float, 2> iota_8x8() {
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  return array<float, 2>(extent<2>(8, 8), raw.begin(), raw.end());
}
double matmul_tol(const eigen_matrix<float>& a, const eigen_matrix<float>& b) {
  const double k = double(a.cols());
  const double scale = (a.cwiseAbs().cast<double>() * b.cwiseAbs().cast<double>()).size()
                           ? (a.cwiseAbs().cast<double>() * b.cwiseAbs().cast<double>()).maxCoeff()
                           : 0.0;
  return 1e-6 * (k + 1) * (scale + 1);
}
}  // namespace

TEST_CASE("seed 000: 8x8 matrix of 0..63, 2x2 and 4x4 tile averages, every barrier variant") {
  auto m = iota_8x8();
  eigen_matrix<float> expect2(4, 4), expect4(2, 2);
  expect2 << 4.5, 6.5, 8.5, 10.5, 20.5, 22.5, 24.5, 26.5, 36.5, 38.5, 40.5, 42.5, 52.5, 54.5, 56.5,
      58.5;
  expect4 << 13.5, 17.5, 45.5, 49.5;
  for (auto v : {workloads::barrier_variant::wait, workloads::barrier_variant::all_memory,
                 workloads::barrier_variant::global_memory,
                 workloads::barrier_variant::tile_static_memory}) {
    array<float, 2> a2(4, 4), a4(2, 2);
    workloads::tile_average<2>(m, a2, v);
    workloads::tile_average<4>(m, a4, v);
    CHECK(tt::max_abs_diff(to_eigen(a2), expect2) == 0.0);
    CHECK(tt::max_abs_diff(to_eigen(a4), expect4) == 0.0);
  }
  // The same kernel through an array_view over caller memory, as the seed does.
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  array_view<const float, 2> mv(extent<2>(8, 8), raw);
  array<float, 2> a2(4, 4);
  workloads::tile_average<2>(mv, a2);
  CHECK(tt::max_abs_diff(to_eigen(a2), expect2) == 0.0);
}

TEST_CASE("tile averages on random shapes match Eigen block means") {
  for (int trial = 0; trial < 6; ++trial) {
    const long r = 4 * tt::random_size(1, 20), c = 4 * tt::random_size(1, 20);
    auto m = tt::random_matrix<double>(r, c);
    array<double, 2> a = from_eigen(m), avg(r / 4, c / 4);
    workloads::tile_average<4>(a, avg);
    eigen_matrix<double> ref(r / 4, c / 4);
    for (long i = 0; i < r / 4; ++i)
      for (long j = 0; j < c / 4; ++j) ref(i, j) = m.block(4 * i, 4 * j, 4, 4).mean();
    CHECK(tt::max_abs_diff(to_eigen(avg), ref) < 1e-14);
  }
}

TEST_CASE("seed 002: 3x2 * 2x3, and 4x4 with 2x2 tiles (element (0,0) = 34)") {
  int a[] = {1, 4, 2, 5, 3, 6};
  int b[] = {7, 8, 9, 10, 11, 12};
  array_view<const int, 2> av(3, 2, a), bv(2, 3, b);
  array<int, 2> p(3, 3);
  workloads::matmul_simple(av, bv, p);
  CHECK(p.to_vector() == std::vector<int>{47, 52, 57, 64, 71, 78, 81, 90, 99});
  array<int, 2> q(3, 3);
  workloads::matmul_tiled<2>(av, bv, q);
  CHECK(q.to_vector() == p.to_vector());

  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = float(i % 8 + 1);
  array<float, 2> A(extent<2>(4, 4), v.begin(), v.end()), C(4, 4);
  workloads::matmul_tiled<2>(A, A, C);
  auto ref = (to_eigen(A) * to_eigen(A)).eval();
  CHECK(to_eigen(C)(0, 0) == 34.f);
  CHECK(tt::max_abs_diff(to_eigen(C), ref) == 0.0);
}

TEST_CASE("tiled and element-parallel matmul match Eigen on random shapes") {
  for (const auto& shape : tt::matmul_shapes(
           {{1, 1, 1}, {0, 5, 3}, {4, 0, 6}, {17, 13, 31}, {16, 16, 16}, {33, 64, 7}, {97, 50, 61}},
           4, 120)) {
    const long m = shape[0], k = shape[1], n = shape[2];
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    auto ea = tt::random_matrix<float>(m, k), eb = tt::random_matrix<float>(k, n);
    eigen_matrix<float> ref = (ea.cast<double>() * eb.cast<double>()).cast<float>();
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), C1(m, n), C2(m, n), C3(m, n);
    workloads::matmul_tiled<16>(A, B, C1);
    workloads::matmul_tiled<4>(A, B, C2);
    workloads::matmul_simple(A, B, C3);
    const double tol = matmul_tol(ea, eb);
    CHECK(tt::max_abs_diff(to_eigen(C1), ref) <= tol);
    CHECK(tt::max_abs_diff(to_eigen(C2), ref) <= tol);
    CHECK(tt::max_abs_diff(to_eigen(C3), ref) <= tol);
  }
}

TEST_CASE("seed 003: transpose of 999x666, padded and truncated, equals Eigen's") {
  auto m = tt::random_matrix<float>(999, 666);
  array<float, 2> A = from_eigen(m), P(666, 999), T(666, 999);
  workloads::transpose_padded<16>(A, P);
  workloads::transpose_truncated<16>(A, T);
  eigen_matrix<float> ref = m.transpose();
  CHECK(tt::max_abs_diff(to_eigen(P), ref) == 0.0);
  CHECK(tt::max_abs_diff(to_eigen(T), ref) == 0.0);
}

TEST_CASE("transposes on edge shapes (0, 1, primes, exact multiples)") {
  for (long r : tt::edge_sizes())
    for (long c : {0L, 1L, 8L, 13L, 40L}) {
      CAPTURE(r);
      CAPTURE(c);
      auto m = tt::random_matrix<double>(r, c);
      array<double, 2> A = from_eigen(m), P(c, r), T(c, r);
      workloads::transpose_padded<8>(A, P);
      workloads::transpose_truncated<8>(A, T);
      eigen_matrix<double> ref = m.transpose();
      CHECK(tt::max_abs_diff(to_eigen(P), ref) == 0.0);
      CHECK(tt::max_abs_diff(to_eigen(T), ref) == 0.0);
    }
}

TEST_CASE("rank-1 tiles: per-tile reversal through tile_static, padded") {
  for (long n : {0L, 1L, 31L, 32L, 100L, 1000L}) {
    std::vector<int> h(n);
    for (long i = 0; i < n; ++i) h[i] = int(i);
    array<int, 1> in(extent<1>(n), h.begin(), h.end()), out(n);
    parallel_for_each(
        in.extent.tile<32>().pad(), TESSERA_KERNEL(tile_group<32>& g) {
          auto s = g.tile_static<int[32]>();
          g.for_each([&](const tiled_index<32>& t) { s(t.local[0]) = guarded_read(in, t.global); });
          g.barrier.wait();
          g.for_each([&](const tiled_index<32>& t) {
            guarded_write(out, t.global, int(s(31 - t.local[0])));
          });
        });
    auto o = out.to_vector();
    for (long i = 0; i < n; ++i) {
      const long base = i / 32 * 32, rev = base + 31 - (i - base);
      CHECK(o[i] == (rev < n ? int(rev) : 0));
    }
  }
}

TEST_CASE("rank-3 tiles: sum over each 2x4x8 tile in two tile_static stages") {
  const long n0 = 6, n1 = 12, n2 = 24;
  std::vector<double> h(n0 * n1 * n2);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = double(i % 17);
  array<double, 3> in(extent<3>(n0, n1, n2), h.begin(), h.end());
  array<double, 3> sums(n0 / 2, n1 / 4, n2 / 8);
  parallel_for_each(
      in.extent.tile<2, 4, 8>(), TESSERA_KERNEL(tile_group<2, 4, 8>& g) {
        auto vals = g.tile_static<double[2][4][8]>("vals");
        auto part = g.tile_static<double[2][4]>("part");
        g.for_each([&](const tiled_index<2, 4, 8>& t) { vals[t.local] = in[t.global]; });
        g.barrier.wait();
        g.for_each([&](const tiled_index<2, 4, 8>& t) {
          if (t.local[2] == 0) {
            double s = 0;
            for (int k = 0; k < 8; ++k) s += vals(t.local[0], t.local[1], k);
            part(t.local[0], t.local[1]) = s;
          }
        });
        g.barrier.wait();
        g.for_each([&](const tiled_index<2, 4, 8>& t) {
          if (t.local[0] == 0 && t.local[1] == 0 && t.local[2] == 0) {
            double s = 0;
            for (int i = 0; i < 2; ++i)
              for (int j = 0; j < 4; ++j) s += part(i, j);
            sums[t.tile] = s;
          }
        });
      });
  auto got = sums.to_vector();
  for (long a = 0; a < n0 / 2; ++a)
    for (long b = 0; b < n1 / 4; ++b)
      for (long c = 0; c < n2 / 8; ++c) {
        double s = 0;
        for (long i = 0; i < 2; ++i)
          for (long j = 0; j < 4; ++j)
            for (long k = 0; k < 8; ++k) s += h[((2 * a + i) * n1 + 4 * b + j) * n2 + 8 * c + k];
        CHECK(got[(a * (n1 / 4) + b) * (n2 / 8) + c] == s);
      }
}

TEST_CASE("C++ AMP's chained tile_static subscripts s[i][j]") {
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  array<float, 2> m(extent<2>(8, 8), raw.begin(), raw.end()), avg(4, 4);
  parallel_for_each(
      checked, m.extent.tile<2, 2>(), TESSERA_KERNEL(tile_group<2, 2>& g) {
        auto tileValues = g.tile_static<float[2][2]>("tileValues");
        g.for_each(
            [&](const tiled_index<2, 2>& t) { tileValues[t.local[0]][t.local[1]] = m[t.global]; });
        g.barrier.wait();
        g.for_each([&](const tiled_index<2, 2>& t) {
          if (t.local[0] == 0 && t.local[1] == 0) {
            float total = 0;
            for (int r = 0; r < 2; ++r)
              for (int c = 0; c < 2; ++c) total += tileValues[r][c];
            avg(t.tile[0], t.tile[1]) = total / 4;
          }
        });
      });
  CHECK(to_eigen(avg)(0, 0) == 4.5f);
  CHECK(to_eigen(avg)(3, 3) == 58.5f);
  CHECK_THROWS_AS(parallel_for_each(
      checked, m.extent.tile<2, 2>(),
      TESSERA_KERNEL(tile_group<2, 2>& g) {
                       auto s = g.tile_static<float[2][2][2]>();
                       g.for_each(
                           [&](const tiled_index<2, 2>& t) { s[t.local[0]][t.local[1]][2] = 1.f; });
                     }),
      bounds_error);
}

TEST_CASE("tile-uniform code reads tile_static values written before a barrier") {
  // One logical thread of each tile stores a loop bound; after the barrier every logical thread
  // of the tile (tile-uniform code) reads it and runs that many phases. The planning pass runs
  // the body on the host too, where the value reads as 0.
  for (const bool use_checked : {false, true}) {
    CAPTURE(use_checked);
    const long n = 16 * tt::random_size(1, 9);
    std::vector<int> counts(static_cast<std::size_t>(n));
    for (auto& c : counts) c = int(tt::random_size(0, 5));
    array<int, 1> cnt(extent<1>(n), counts.begin(), counts.end());
    array<int, 1> out{extent<1>(n)};
    auto k = TESSERA_KERNEL(tile_group<16>& g) {
      auto bound = g.tile_static<int>("bound");
      auto scale = g.tile_static<int[2]>("scale");
      g.for_each([&](const tiled_index<16>& t) {
        if (t.local[0] == 0) bound = cnt[t.global];
        if (t.local[0] < 2) scale(t.local[0]) = int(t.local[0]) + 2;
      });
      g.barrier.wait();
      const int b = bound;  // tile-uniform reads
      const int s = scale(0) * scale(1);
      for (int r = 0; r < b; ++r) g.for_each([&](const tiled_index<16>& t) { out[t.global] += s; });
    };
    if (use_checked)
      parallel_for_each(checked, out.extent.tile<16>(), k);
    else
      parallel_for_each(out.extent.tile<16>(), k);
    const auto o = out.to_vector();
    for (long i = 0; i < n; ++i) CHECK(o[std::size_t(i)] == 6 * counts[std::size_t(i / 16 * 16)]);
  }
}

TEST_CASE("tile_local values survive barriers") {
  array<int, 2> out(8, 8);
  parallel_for_each(
      out.extent.tile<4, 4>(), TESSERA_KERNEL(tile_group<4, 4>& g) {
        auto x = g.tile_local<int>(7);
        for (int step = 0; step < 3; ++step) {
          g.for_each([&](const tiled_index<4, 4>& t) { x(t) += t.local_linear(); });
          g.barrier.wait();
        }
        g.for_each([&](const tiled_index<4, 4>& t) { out[t.global] = x(t); });
      });
  auto o = to_eigen(out);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) CHECK(o(r, c) == 7 + 3 * ((r % 4) * 4 + c % 4));
}

TEST_CASE("launch errors: uneven extent, over-large tile_static, empty extent is a no-op") {
  array<float, 2> a(10, 10);
  auto kernel = TESSERA_KERNEL(tile_group<4, 4>& g) {
    g.for_each([&](const tiled_index<4, 4>& t) { a[t.global] = 1.f; });
  };
  CHECK_THROWS_WITH_AS(parallel_for_each(a.extent.tile<4, 4>(), kernel),
                       doctest::Contains("(10,10) is not a multiple of the tile <4,4>"),
                       shape_error);
  CHECK(to_eigen(a).cwiseAbs().maxCoeff() == 0.f);  // nothing ran
  parallel_for_each(a.extent.tile<4, 4>().truncate(), kernel);
  CHECK(to_eigen(a).sum() == 64.f);

  array<float, 2> empty(0, 12);
  parallel_for_each(
      empty.extent.tile<4, 4>(), TESSERA_KERNEL(tile_group<4, 4>& g) {
        g.for_each([&](const tiled_index<4, 4>& t) { empty[t.global] = 1.f; });
      });
  parallel_for_each(extent<2>(0, 3), TESSERA_KERNEL(const index<2>&){});

  // 1 GiB of tile_static per tile: above every backend's scratch level 1.
  CHECK_THROWS_WITH_AS(parallel_for_each(
      extent<1>(64).tile<64>(), TESSERA_KERNEL(tile_group<64>& g) {
        auto big = g.tile_static<char[1 << 30]>();
        (void)big;
      }),
      doctest::Contains("bytes of tile_static memory per tile"), resource_error);
}

// A tile whose logical threads outnumber what one team of the backend holds (the GPU mapping:
// one member per logical thread) is a resource_error naming the tile, the team size and the
// limit, before anything runs; Kokkos' own TeamPolicy check would abort the process (host
// teams) or throw an unnamed std::runtime_error (CUDA). Where the team fits, the tile runs.
TEST_CASE("a tile larger than the backend's team limit: resource_error before anything runs") {
  array<float, 2> out(64, 64);
  auto kernel = TESSERA_KERNEL(tile_group<32, 32>& g) {
    auto x = g.tile_local<float>(1.f);
    g.barrier.wait();
    g.for_each([&](const tiled_index<32, 32>& t) { out[t.global] = x(t); });
  };
  const auto te = out.extent.tile<32, 32>();
  const auto p = tessera::plan(te, kernel);
  using functor = backends::impl::tile_functor<decltype(kernel), execution_space, 32, 32>;
  const functor fn{kernel, te.tile_counts(), te.get_origin(), p.scratch_level,
                   p.scratch_bytes[p.scratch_level]};
  const int limit = backends::impl::team_size_limit(execution_space(), fn, p.scratch_level,
                                                    p.scratch_bytes[p.scratch_level]);
  if (p.team_size <= limit) {
    MESSAGE("teams of " << p.team_size << " fit the " << backend_name() << " backend (limit "
                        << limit << "): the tile runs");
    parallel_for_each(te, kernel);
    CHECK(sum(out) == 64.f * 64.f);
  } else {
    const std::string m = tt::message_of<resource_error>([&] { parallel_for_each(te, kernel); });
    CHECK(tt::has(m, "parallel_for_each<32,32>: tile 32x32, a team of 1024 members"));
    CHECK(tt::has(m, "at most " + std::to_string(limit)));
    CHECK(sum(out) == 0.f);  // nothing ran
  }
}

#ifdef _OPENMP
// Inside an enclosing OpenMP parallel region Kokkos::OpenMP runs every team with one member: the
// CPU mapping (one member per tile anyway) computes the right answer; the GPU mapping, whose
// logical threads are team members holding their tile_local values, refuses with a usage_error
// instead of a wrong answer.
TEST_CASE("a launch from inside an OpenMP parallel region: right answer or usage_error") {
  array<int, 2> out(16, 16);
  auto kernel = TESSERA_KERNEL(tile_group<8, 8>& g) {
    auto x = g.tile_local<int>(0);
    g.for_each([&](const tiled_index<8, 8>& t) { x(t) = t.local_linear(); });
    g.barrier.wait();
    g.for_each([&](const tiled_index<8, 8>& t) { out[t.global] = x(t) + 1; });
  };
  const bool per_member = tessera::plan(out.extent.tile<8, 8>(), kernel).team_size > 1;
  std::string refused, other;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
      try {
        parallel_for_each(out.extent.tile<8, 8>(), kernel);
        Kokkos::fence();
      } catch (const usage_error& e) {
        refused = e.what();
      } catch (const std::exception& e) {
        other = e.what();
      }
    }
  }
  CHECK(other == "");
  if (per_member) {
    CHECK(
        tt::has(refused, "parallel_for_each<8,8>: launched from inside an OpenMP parallel region"));
    CHECK(sum(out) == 0);
  } else {
    CHECK(refused == "");
    const auto o = to_eigen(out);
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 16; ++c) CHECK(o(r, c) == (r % 8) * 8 + c % 8 + 1);
  }
}
#endif

}  // namespace
