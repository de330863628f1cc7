// explain() for tile kernels: the plan names every buffer's memory space, the scratch bytes per
// level and every barrier (seed 001's compiler view of tiling).
#include "../examples/common/workload_kernels.hpp"
#include "test_util.hpp"

// `index` alone would also find POSIX ::index(); the using-declaration below hides it.
namespace {
using namespace tessera;
using tessera::index;

TEST_CASE("tile averages: one level-0 buffer, one barrier, league = tiles") {
  array<float, 2> m(8, 8);
  const std::string s = explain(
      m.extent.tile<2, 2>(), TESSERA_KERNEL(tile_group<2, 2>& g) {
        auto v = g.tile_static<float[2][2]>("tileValues");
        g.for_each([&](const tiled_index<2, 2>& t) { v(t.local[0], t.local[1]) = m[t.global]; });
        g.barrier.wait_with_tile_static_memory_fence();
        g.for_each([&](const tiled_index<2, 2>&) {});
      });
  CHECK(s.find("league 16 (4x4 tiles of 2x2)") != std::string::npos);
  CHECK(s.find("tileValues : float[2][2] -> scratch level 0 (16 B at offset 0)") !=
        std::string::npos);
  CHECK(s.find("barrier after phase 0 (fence: tile_static memory)") != std::string::npos);
  CHECK(s.find("phases: 2, barriers: 1") != std::string::npos);
}

TEST_CASE(
    "tiled matmul plan: two level-0 tiles, the accumulator per mapping, two barriers per k-step") {
  array<float, 2> a(64, 48), b(48, 32);
  constexpr int TS = 16;
  const index_type K = 48;
  auto kernel = TESSERA_KERNEL(tile_group<TS, TS>& g) {
    auto at = g.tile_static<float[TS][TS]>("a_tile");
    auto bt = g.tile_static<float[TS][TS]>("b_tile");
    auto acc = g.tile_local<float>(0.f, "acc");
    for (index_type k0 = 0; k0 < K; k0 += TS) {
      g.for_each([&](const tiled_index<TS, TS>&) {});
      g.barrier.wait();
      g.for_each([&](const tiled_index<TS, TS>& t) { acc(t) += at(0, 0) * bt(0, 0); });
      g.barrier.wait();
    }
  };
  const auto plan = tessera::plan(extent<2>(64, 32).tile<TS, TS>(), kernel);
  CHECK(plan.league_size == 8);
  CHECK(plan.logical_threads == 256);
  CHECK(plan.scratch_bytes[1] == 0);
  REQUIRE(plan.buffers.size() == 3);
  CHECK(plan.buffers[0].space == codegen::memory_space_kind::scratch_level0);
  CHECK(plan.buffers[1].offset == 1024);
  CHECK(plan.buffers[2].name == "acc");
  if (plan.team_size > 1) {
    // One member per logical thread: the accumulator is a register.
    CHECK(plan.scratch_bytes[0] == 2048);
    CHECK(plan.buffers[2].space == codegen::memory_space_kind::private_memory);
  } else {
    // One member runs the tile: 256 accumulators in team scratch after the two tiles.
    CHECK(plan.scratch_bytes[0] == 2048 + 256 * 4);
    CHECK(plan.buffers[2].space == codegen::memory_space_kind::scratch_level0);
    CHECK(plan.buffers[2].offset == 2048);
    CHECK(plan.buffers[2].bytes == 256 * 4);
  }
  CHECK(plan.barriers.size() == 2 * (K / TS));
  CHECK(plan.phases == 2 * (K / TS) + 1);
}

TEST_CASE("tile_static that does not fit scratch level 0 is placed in level 1") {
  const std::size_t l0 = static_cast<std::size_t>(Kokkos::TeamPolicy<>::scratch_size_max(0));
  auto kernel = TESSERA_KERNEL(tile_group<8>& g) {
    auto big = g.tile_static<char[200000]>("big");
    (void)big;
  };
  const auto plan = tessera::plan(extent<1>(8).tile<8>(), kernel);
  if (200000 + 0 > l0) {
    CHECK(plan.buffers[0].space == codegen::memory_space_kind::scratch_level1);
    CHECK(plan.scratch_bytes[1] == 200000);
  } else {
    CHECK(plan.buffers[0].space == codegen::memory_space_kind::scratch_level0);
  }
  // A launch with the level-1 buffer runs.
  array<int, 1> out(8);
  parallel_for_each(
      extent<1>(8).tile<8>(), TESSERA_KERNEL(tile_group<8>& g) {
        auto big = g.tile_static<int[50000]>("big");
        g.for_each([&](const tiled_index<8>& t) { big(49999 - t.local[0]) = int(t.local[0]); });
        g.barrier.wait();
        g.for_each([&](const tiled_index<8>& t) { out[t.global] = big(49999 - t.local[0]) * 2; });
      });
  CHECK(out.to_vector() == std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14});
}

}  // namespace
