// Checked mode: the races the seeds warn about are reported (with buffer, element, threads and
// phase), correct kernels pass, and out-of-range / uninitialized tile_static accesses are caught.
#include "../examples/common/workload_kernels.hpp"
#include "test_util.hpp"

// `index` alone would also find POSIX ::index(); the using-declaration below hides it.
namespace {
using namespace tessera;
using tessera::index;

namespace {
array<float, 2> iota(long r, long c) {
  std::vector<float> raw(r * c);
  for (long i = 0; i < r * c; ++i) raw[i] = float(i);
  return array<float, 2>(extent<2>(r, c), raw.begin(), raw.end());
}
}  // namespace

TEST_CASE("seed 000's shared `tile_static float total` summed with `total += ...` is a race") {
  auto m = iota(8, 8);
  array<float, 2> avg(4, 4);
  try {
    workloads::tile_average_racy<2>(m, avg, /*checked=*/true);
    FAIL("no race reported");
  } catch (const race_error& e) {
    CHECK(e.site.buffer == "total");
    CHECK(e.site.element.empty());
    CHECK(e.site.tile == std::vector<std::int64_t>{0, 0});
    CHECK(e.site.phase == 0);
    CHECK(e.first_thread == std::vector<std::int64_t>{0, 0});
    CHECK(e.second_thread == std::vector<std::int64_t>{0, 1});
    CHECK(e.kind == "read/write");
    CHECK(std::string(e.what()).find("no barrier between them") != std::string::npos);
  }
  // The correct version passes checked mode and gives the seed's numbers.
  workloads::tile_average<2>(m, avg, workloads::barrier_variant::wait, /*checked=*/true);
  CHECK(to_eigen(avg)(0, 0) == 4.5f);
  CHECK(to_eigen(avg)(3, 3) == 58.5f);
  array<float, 2> avg4(2, 2);
  workloads::tile_average<4>(m, avg4, workloads::barrier_variant::tile_static_memory, true);
  CHECK(to_eigen(avg4)(1, 1) == 49.5f);
}

TEST_CASE("missing barrier between a tile_static write and its read") {
  auto m = iota(4, 4);
  array<float, 2> out(4, 4);
  auto kernel = TESSERA_KERNEL(tile_group<2, 2>& g) {
    auto s = g.tile_static<float[2][2]>("s");
    g.for_each([&](const tiled_index<2, 2>& t) { s(t.local[0], t.local[1]) = m[t.global]; });
    // no barrier here
    g.for_each(
        [&](const tiled_index<2, 2>& t) { out[t.global] = s(1 - t.local[0], 1 - t.local[1]); });
  };
  try {
    parallel_for_each(checked, m.extent.tile<2, 2>(), kernel);
    FAIL("no race reported");
  } catch (const race_error& e) {
    CHECK(e.site.buffer == "s");
    CHECK(e.site.element == std::vector<std::int64_t>{1, 1});
    CHECK(e.first_thread == std::vector<std::int64_t>{1, 1});
    CHECK(e.second_thread == std::vector<std::int64_t>{0, 0});
    CHECK(e.kind == "read/write");
  }
}

TEST_CASE("seed 002's tiled matmul without its second barrier: write-after-read across k-steps") {
  auto ea = tt::random_matrix<float>(8, 8), eb = tt::random_matrix<float>(8, 8);
  array<float, 2> A = from_eigen(ea), B = from_eigen(eb), C(8, 8);
  try {
    workloads::matmul_tiled<4>(A, B, C, /*checked=*/true, /*drop_second_barrier=*/true);
    FAIL("no race reported");
  } catch (const race_error& e) {
    CHECK((e.site.buffer == "a_tile" || e.site.buffer == "b_tile"));
    CHECK(e.site.phase == 1);  // the loads of k-step 2 share a phase with k-step 1's reads
    CHECK(e.kind == "read/write");
  }
  // With both barriers: no finding, and the result is right.
  workloads::matmul_tiled<4>(A, B, C, /*checked=*/true);
  eigen_matrix<float> ref = ea * eb;
  CHECK(tt::max_abs_diff(to_eigen(C), ref) < 1e-5);
}

TEST_CASE("correct kernels pass checked mode on uneven shapes") {
  auto m = tt::random_matrix<float>(37, 21);
  array<float, 2> A = from_eigen(m), P(21, 37);
  workloads::transpose_padded<8>(A, P, /*checked=*/true);
  CHECK(tt::max_abs_diff(to_eigen(P), eigen_matrix<float>(m.transpose())) == 0.0);
  auto eb = tt::random_matrix<float>(21, 5);
  array<float, 2> B = from_eigen(eb), C(37, 5);
  workloads::matmul_tiled<8>(A, B, C, /*checked=*/true);
  CHECK(tt::max_abs_diff(to_eigen(C), eigen_matrix<float>(m * eb)) < 1e-5);
}

TEST_CASE("write/write: every logical thread writes one element") {
  array<int, 1> out(8);
  try {
    parallel_for_each(
        checked, out.extent.tile<4>(), TESSERA_KERNEL(tile_group<4>& g) {
          auto flag = g.tile_static<int>("flag");
          g.for_each([&](const tiled_index<4>& t) { flag = int(t.local[0]); });
          g.barrier.wait();
          g.for_each([&](const tiled_index<4>& t) { out[t.global] = flag; });
        });
    FAIL("no race reported");
  } catch (const race_error& e) {
    CHECK(e.kind == "write/write");
    CHECK(e.first_thread == std::vector<std::int64_t>{0});
    CHECK(e.second_thread == std::vector<std::int64_t>{1});
  }
  // Guarded by a single writer it is fine.
  parallel_for_each(
      checked, out.extent.tile<4>(), TESSERA_KERNEL(tile_group<4>& g) {
        auto flag = g.tile_static<int>("flag");
        g.for_each([&](const tiled_index<4>& t) {
          if (t.local[0] == 0) flag = int(t.tile[0]);
        });
        g.barrier.wait();
        g.for_each([&](const tiled_index<4>& t) { out[t.global] = flag; });
      });
  CHECK(out.to_vector() == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("reads of never-written tile_static elements are reported") {
  array<float, 1> out(4);
  try {
    parallel_for_each(
        checked, out.extent.tile<4>(), TESSERA_KERNEL(tile_group<4>& g) {
          auto s = g.tile_static<float[4]>("s");
          g.for_each([&](const tiled_index<4>& t) {
            if (t.local[0] != 2) s(t.local[0]) = 1.f;
          });
          g.barrier.wait();
          g.for_each([&](const tiled_index<4>& t) { out[t.global] = s(t.local[0]); });
        });
    FAIL("no uninitialized read reported");
  } catch (const uninitialized_read_error& e) {
    CHECK(e.site.buffer == "s");
    CHECK(e.site.element == std::vector<std::int64_t>{2});
    CHECK(e.thread == std::vector<std::int64_t>{2});
    CHECK(e.site.phase == 1);
  }
}

TEST_CASE("out-of-range tile_static index throws bounds_error") {
  array<float, 2> out(4, 4);
  try {
    parallel_for_each(
        checked, out.extent.tile<2, 2>(), TESSERA_KERNEL(tile_group<2, 2>& g) {
          auto s = g.tile_static<float[2][2]>("s");
          g.for_each([&](const tiled_index<2, 2>& t) { s(t.local[0] + 1, t.local[1]) = 0.f; });
        });
    FAIL("no bounds error reported");
  } catch (const bounds_error& e) {
    CHECK(e.site.buffer == "s");
    CHECK(e.site.element == std::vector<std::int64_t>{2, 0});
    CHECK(std::string(e.what()).find("outside tile_static 's'") != std::string::npos);
  }
}

TEST_CASE("checked mode applies the launch checks too") {
  array<float, 2> a(6, 6);
  CHECK_THROWS_AS(parallel_for_each(
      checked, a.extent.tile<4, 4>(), TESSERA_KERNEL(tile_group<4, 4>& g) { (void)g; }),
      shape_error);
}

TEST_CASE("a logical thread using another logical thread's tile_local copy is reported") {
  // tile_local is private (a register on GPUs, where s(other) would silently read the caller's
  // own copy); checked mode and the fast launch's dry run both report it, before any kernel
  // writes the caller's data.
  for (const bool use_checked : {true, false}) {
    CAPTURE(use_checked);
    std::vector<float> init(40, 7.f);
    array<float, 1> m(extent<1>(40), init.begin(), init.end());
    auto k = TESSERA_KERNEL(tile_group<8>& g) {
      auto s = g.tile_local<float>(0.f, "mine");
      g.for_each([&](const tiled_index<8>& t) { s(t) = float(t.local[0]); });
      g.barrier.wait();
      g.for_each([&](const tiled_index<8>& t) {
        tiled_index<8> other = t;
        other.local[0] = (t.local[0] + 1) % 8;
        m[t.global] = s(other);
      });
    };
    const std::string msg = tt::message_of<usage_error>([&] {
      if (use_checked)
        parallel_for_each(checked, m.extent.tile<8>(), k);
      else
        parallel_for_each(m.extent.tile<8>(), k);
    });
    CHECK(tt::has(msg, "tile_local 'mine' (float) of logical thread (1)"));
    CHECK(tt::has(msg, "logical thread (0) in tile (0)"));
    CHECK(m.to_vector() == init);
  }
  // Its own copy, through any tiled_index equal to its own, is fine.
  array<float, 1> m(extent<1>(24));
  parallel_for_each(
      checked, m.extent.tile<8>(), TESSERA_KERNEL(tile_group<8>& g) {
        auto s = g.tile_local<float>(1.f);
        g.for_each([&](const tiled_index<8>& t) { s(t) += float(t.global[0]); });
        g.barrier.wait();
        g.for_each([&](const tiled_index<8>& t) { m[t.global] = s(t); });
      });
  const auto v = m.to_vector();
  for (int i = 0; i < 24; ++i) CHECK(v[std::size_t(i)] == float(i + 1));
}

}  // namespace
