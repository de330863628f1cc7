// Seed 003: uneven extents. extent<2>(999,666).tile<16,16>() pads to (1008,672) and truncates
// to (992,656); a 999x666 matrix is transposed with the padded launch (guarded reads/writes)
// and with the truncated launch plus an element-parallel pass over the remainder, both
// compared with Eigen's transpose (exact).
#include "../common/report.hpp"
#include "../common/workload_kernels.hpp"

#include <random>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  bool ok = true;
  tessera::extent<2> e(999, 666);
  tessera::tiled_extent<16, 16> tiled_e = e.tile<16, 16>();
  tessera::tiled_extent<16, 16> padded_e = tiled_e.pad();
  tessera::tiled_extent<16, 16> truncated_e = tiled_e.truncate();
  std::printf("tiled_e extents are: (%lld,%lld)\n", (long long)tiled_e[0], (long long)tiled_e[1]);
  std::printf("padded_e extents are: (%lld,%lld)\n", (long long)padded_e[0],
              (long long)padded_e[1]);
  std::printf("truncated_e extents are: (%lld,%lld)\n", (long long)truncated_e[0],
              (long long)truncated_e[1]);
  ok &= workloads::verdict("pad() == (1008,672)", padded_e == tessera::extent<2>(1008, 672));
  ok &= workloads::verdict("truncate() == (992,656)", truncated_e == tessera::extent<2>(992, 656));

  std::mt19937 gen(3);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  tessera::eigen_matrix<float> m(999, 666);
  for (long i = 0; i < m.size(); ++i) m.data()[i] = d(gen);
  tessera::eigen_matrix<float> ref = m.transpose();
  tessera::array<float, 2> A = tessera::from_eigen(m), P(666, 999), T(666, 999);
  workloads::transpose_padded<16>(A, P);
  ok &= workloads::verdict("transpose 999x666 padded == Eigen", tessera::to_eigen(P) == ref);
  workloads::transpose_truncated<16>(A, T);
  ok &= workloads::verdict("transpose 999x666 truncated + remainder == Eigen",
                           tessera::to_eigen(T) == ref);

  // Launching the uneven extent as is is an error, as in C++ AMP.
  try {
    tessera::parallel_for_each(tiled_e, TESSERA_KERNEL(tessera::tile_group<16, 16>&){});
    ok &= workloads::verdict("uneven launch rejected", false);
  } catch (const tessera::shape_error& err) {
    ok &= workloads::verdict("uneven launch rejected", true);
    std::printf("  (%s)\n", err.what());
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
