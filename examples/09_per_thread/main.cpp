// C++ AMP's per-thread form, as seeds 000 and 002 write their tiled kernels: the kernel runs
// once per logical thread (kernel(tiled_index<...>)), declares tile_static storage where the
// seeds declare `tile_static` variables (seed 002 inside its loop) and waits at
// t.barrier.wait(). `restrict(amp)` becomes TESSERA_KERNEL; `tile_static float v[2][2];`
// becomes `auto v = t_idx.tile_static<float[2][2]>("v");`. Checked against the seeds' numbers
// and Eigen; the seed matrix multiply is timed against the same kernel in phase form (on CPUs
// the per-thread form runs each logical thread as a fiber, the phase form as vectorized loops).
// Usage: example_09_per_thread [N=1024] [REPS=3] (best of REPS timed runs of each form)
#include "../common/report.hpp"
#include "../common/workload_kernels.hpp"

#include <Kokkos_Timer.hpp>
#include <cstdlib>
#include <random>
#include <string>

namespace {

constexpr int SAMPLESIZE = 2;

/// Seed 000's SamplingExample, per thread: each tile's values copied to tile_static memory,
/// a barrier, then logical thread (0, 0) averages them into `averages`.
template <int S>
tessera::eigen_matrix<float> sampling_example(const tessera::array_view<const float, 2>& matrix) {
  tessera::array<float, 2> averages(tessera::extent<2>(matrix.extent[0] / S, matrix.extent[1] / S));
  averages = 0.f;
  tessera::parallel_for_each(
      matrix.extent.tile<S, S>(), TESSERA_KERNEL(const tessera::tiled_index<S, S>& t_idx) {
        // Copy the values of the tile into a tile-sized array.
        auto tileValues = t_idx.template tile_static<float[S][S]>("tileValues");
        tileValues[t_idx.local[0]][t_idx.local[1]] = matrix[t_idx];

        // Wait for the tile-sized array to load before calculating the average.
        t_idx.barrier.wait();

        // One logical thread per tile computes the average.
        if (t_idx.local[0] == 0 && t_idx.local[1] == 0) {
          for (int trow = 0; trow < S; trow++) {
            for (int tcol = 0; tcol < S; tcol++) {
              averages(t_idx.tile[0], t_idx.tile[1]) += tileValues[trow][tcol];
            }
          }
          averages(t_idx.tile[0], t_idx.tile[1]) /= (float)(S * S);
        }
      });
  return tessera::to_eigen(averages);
}

/// Seed 002's MultiplyWithTiling, per thread: the tile_static sub-matrices declared inside the
/// loop over K (they name the same storage each iteration), two barriers per iteration.
/// \pre every extent a multiple of TS (the seed's shapes; the caller checks)
template <int TS, class T>
void multiply_with_tiling(const tessera::array_view<const T, 2>& a,
                          const tessera::array_view<const T, 2>& b,
                          const tessera::array_view<T, 2>& product) {
  const tessera::index_type K = a.extent[1];
  tessera::parallel_for_each(
      product.extent.template tile<TS, TS>(),
      TESSERA_KERNEL(const tessera::tiled_index<TS, TS>& t_idx) {
        // Get the location of the thread relative to the tile (row, col) and the entire
        // array_view (rowGlobal, colGlobal).
        const int row = int(t_idx.local[0]);
        const int col = int(t_idx.local[1]);
        const tessera::index_type rowGlobal = t_idx.global[0];
        const tessera::index_type colGlobal = t_idx.global[1];
        T sum = 0;
        for (tessera::index_type i = 0; i < K; i += TS) {
          auto locA = t_idx.template tile_static<T[TS][TS]>("locA");
          auto locB = t_idx.template tile_static<T[TS][TS]>("locB");
          locA[row][col] = a(rowGlobal, col + i);
          locB[row][col] = b(row + i, colGlobal);
          // The threads in the tile all wait here until locA and locB are filled.
          t_idx.barrier.wait();
          for (int k = 0; k < TS; k++) sum += locA[row][k] * locB[k][col];
          // All threads wait until the sums are calculated before the tiles are reloaded.
          t_idx.barrier.wait();
        }
        product[t_idx.global] = sum;
      });
}

int run(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1024;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  bool ok = true;

  // Seed 000: 8x8 holding 0..63, 2x2 and 4x4 samples.
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  tessera::array_view<const float, 2> matrix(tessera::extent<2>(8, 8), raw);
  tessera::eigen_matrix<float> want2(4, 4), want4(2, 2);
  want2 << 4.5, 6.5, 8.5, 10.5, 20.5, 22.5, 24.5, 26.5, 36.5, 38.5, 40.5, 42.5, 52.5, 54.5, 56.5,
      58.5;
  want4 << 13.5, 17.5, 45.5, 49.5;
  const auto avg2 = sampling_example<SAMPLESIZE>(matrix);
  std::printf("per-thread tile averages, 2x2 tiles:\n");
  workloads::print_matrix(avg2);
  ok &= workloads::verdict("per-thread tile averages 2x2 == seed", avg2 == want2);
  ok &= workloads::verdict("per-thread tile averages 4x4 == seed",
                           sampling_example<4>(matrix) == want4);

  // Seed 002: the 4x4 product with 2x2 tiles (rows 1..8 repeated: element (0,0) = 34).
  std::vector<int> v(16);
  for (int i = 0; i < 16; ++i) v[i] = i % 8 + 1;
  tessera::array_view<const int, 2> a4(4, 4, v);
  std::vector<int> p4(16);
  tessera::array_view<int, 2> product(4, 4, p4);
  multiply_with_tiling<2>(a4, a4, product);
  product.synchronize();
  Eigen::Map<const tessera::eigen_matrix<int>> e4(v.data(), 4, 4);
  const tessera::eigen_matrix<int> want_p = e4 * e4;
  std::printf("per-thread tiled product, 4x4 with 2x2 tiles:\n");
  workloads::print_matrix(Eigen::Map<tessera::eigen_matrix<int>>(p4.data(), 4, 4));
  ok &= workloads::verdict(
      "per-thread 4x4 tiled == Eigen (C(0,0) == 34)",
      Eigen::Map<tessera::eigen_matrix<int>>(p4.data(), 4, 4) == want_p && p4[0] == 34);

  // n x n with 16x16 tiles against Eigen, and the same product in phase form.
  if (n % 16 != 0) {
    std::printf("N must be a multiple of 16 (the seed's kernel has no padding)\nFAIL\n");
    return 1;
  }
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  tessera::eigen_matrix<float> ma(n, n), mb(n, n);
  for (long i = 0; i < n * n; ++i) ma.data()[i] = d(gen), mb.data()[i] = d(gen);
  tessera::array<float, 2> A = tessera::from_eigen(ma), B = tessera::from_eigen(mb), C(n, n),
                           P(n, n);
  multiply_with_tiling<16, float>(A, B, C);  // the first launch plans (one tile on the host)
  workloads::matmul_tiled<16>(A, B, P);
  Kokkos::fence();
  double t_thread = 1e30, t_phase = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    Kokkos::Timer t;
    multiply_with_tiling<16, float>(A, B, C);
    Kokkos::fence();
    t_thread = std::min(t_thread, t.seconds());
    t.reset();
    workloads::matmul_tiled<16>(A, B, P);
    Kokkos::fence();
    t_phase = std::min(t_phase, t.seconds());
  }
  const tessera::eigen_matrix<float> mc = ma * mb;
  const double tol = 1e-5 * double(n);
  const double err = (tessera::to_eigen(C) - mc).cwiseAbs().maxCoeff();
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "max|err| %.2e (tol %.1e); per-thread %.3f s, phase form %.3f s (%.1fx)", err, tol,
                t_thread, t_phase, t_thread / t_phase);
  ok &= workloads::verdict(
      std::to_string(n) + "x" + std::to_string(n) + " per-thread tiled<16> == Eigen", err <= tol,
      buf);
  // The same products in the same order; the compiler may contract them into FMAs
  // differently in the vectorized phase loops, so equal within the same tolerance.
  const double diff = (tessera::to_eigen(C) - tessera::to_eigen(P)).cwiseAbs().maxCoeff();
  std::snprintf(buf, sizeof buf, "max|diff| %.2e", diff);
  ok &= workloads::verdict("per-thread == phase form", diff <= tol, buf);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  try {
    return run(argc, argv);
  } catch (const tessera::usage_error& e) {
    // A build without Boost.Context runs no per-thread kernels: the first launch says so
    // before any kernel runs. Exit status 77: ctest reports the example as skipped.
    if (std::string(e.what()).find("needs Boost.Context") == std::string::npos) throw;
    std::printf("%s\nSKIPPED: this build runs no per-thread kernels\n", e.what());
    return 77;
  }
}
