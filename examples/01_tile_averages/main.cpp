// Seed 000: per-tile averages with tile_static memory and a tile barrier.
// An 8x8 matrix holding 0..63 is split into 2x2 (then 4x4) tiles; each tile copies its values
// into tile_static memory, waits at the barrier, and one logical thread averages them.
// Expected (from the seed): 2x2 -> 4.5 6.5 8.5 10.5 / 20.5 ... / 52.5 54.5 56.5 58.5,
// 4x4 -> 13.5 17.5 / 45.5 49.5. Also run with wait_with_tile_static_memory_fence(), and with
// the tile sum as a tile collective (reduce_over_tile).
#include "../common/report.hpp"
#include "../common/workload_kernels.hpp"

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  tessera::array_view<const float, 2> matrix(tessera::extent<2>(8, 8), raw);

  tessera::eigen_matrix<float> want2(4, 4), want4(2, 2);
  want2 << 4.5, 6.5, 8.5, 10.5, 20.5, 22.5, 24.5, 26.5, 36.5, 38.5, 40.5, 42.5, 52.5, 54.5, 56.5,
      58.5;
  want4 << 13.5, 17.5, 45.5, 49.5;

  bool ok = true;
  tessera::array<float, 2> avg2(4, 4), avg4(2, 2);
  workloads::tile_average<2>(matrix, avg2);
  std::printf("2x2 tiles:\n");
  workloads::print_matrix(tessera::to_eigen(avg2));
  ok &= workloads::verdict("tile averages 2x2 == seed", tessera::to_eigen(avg2) == want2);

  workloads::tile_average<4>(matrix, avg4);
  std::printf("4x4 tiles:\n");
  workloads::print_matrix(tessera::to_eigen(avg4));
  ok &= workloads::verdict("tile averages 4x4 == seed", tessera::to_eigen(avg4) == want4);

  tessera::array<float, 2> f2(4, 4);
  workloads::tile_average<2>(matrix, f2, workloads::barrier_variant::tile_static_memory);
  ok &= workloads::verdict("2x2 with wait_with_tile_static_memory_fence",
                           tessera::to_eigen(f2) == want2);
  workloads::tile_average<2>(matrix, f2, workloads::barrier_variant::global_memory);
  ok &=
      workloads::verdict("2x2 with wait_with_global_memory_fence", tessera::to_eigen(f2) == want2);
  workloads::tile_average<2>(matrix, f2, workloads::barrier_variant::all_memory);
  ok &= workloads::verdict("2x2 with wait_with_all_memory_fence", tessera::to_eigen(f2) == want2);

  // The tile sum as a collective (reduce_over_tile), fast and checked.
  for (const bool checked : {false, true}) {
    tessera::array<float, 2> r2(4, 4), r4(2, 2);
    workloads::tile_average_reduce<2>(matrix, r2, checked);
    workloads::tile_average_reduce<4>(matrix, r4, checked);
    ok &= workloads::verdict(
        std::string("reduce_over_tile 2x2 and 4x4 == seed") + (checked ? " (checked mode)" : ""),
        tessera::to_eigen(r2) == want2 && tessera::to_eigen(r4) == want4);
  }

  // The same kernel in checked mode: no race, same numbers.
  workloads::tile_average<2>(matrix, f2, workloads::barrier_variant::wait, /*checked=*/true);
  ok &= workloads::verdict("2x2 in checked mode (race-free)", tessera::to_eigen(f2) == want2);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
