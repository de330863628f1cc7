// Seed 000's "do not do this": `tile_static float total; total += matrix[t_idx];` lets every
// logical thread of a tile update one tile_static value with no barrier. Checked mode runs the
// tiles on the host, records every tile_static access per logical thread and phase, and reports
// the race. The correct kernel (copy to tile_static, barrier, one thread sums) passes. The seed's
// tiled matmul with its second barrier removed is caught too (write-after-read across k-steps).
#include "../common/report.hpp"
#include "../common/workload_kernels.hpp"

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  bool ok = true;
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  tessera::array_view<const float, 2> matrix(tessera::extent<2>(8, 8), raw);
  tessera::array<float, 2> avg(4, 4);

  try {
    workloads::tile_average_racy<2>(matrix, avg, /*checked=*/true);
    ok &= workloads::verdict("racy `total += ...` reported", false);
  } catch (const tessera::race_error& e) {
    std::printf("race_error: %s\n", e.what());
    ok &= workloads::verdict("racy `total += ...` reported", e.site.buffer == "total");
  }

  workloads::tile_average<2>(matrix, avg, workloads::barrier_variant::wait, /*checked=*/true);
  ok &= workloads::verdict("correct tile averages pass checked mode",
                           tessera::to_eigen(avg)(0, 0) == 4.5f);

  tessera::array<float, 2> A(8, 8), B(8, 8), C(8, 8);
  try {
    workloads::matmul_tiled<4>(A, B, C, /*checked=*/true, /*drop_second_barrier=*/true);
    ok &= workloads::verdict("tiled matmul without 2nd barrier reported", false);
  } catch (const tessera::race_error& e) {
    std::printf("race_error: %s\n", e.what());
    ok &= workloads::verdict("tiled matmul without 2nd barrier reported", true);
  }
  workloads::matmul_tiled<4>(A, B, C, /*checked=*/true);
  ok &= workloads::verdict("tiled matmul with both barriers passes", true);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
