// Seed 002: matrix multiply — plain host loop, element-parallel, and tiled with tile_static
// sub-matrices — on the seed's small matrices and on 1024x1024 with 16x16 tiles, each checked
// against Eigen. Usage: example_02_matrix_multiply [N=1024]
#include "../common/report.hpp"
#include "../common/workload_kernels.hpp"

#include <Kokkos_Timer.hpp>
#include <cstdlib>
#include <random>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  const long n = argc > 1 ? std::atol(argv[1]) : 1024;
  bool ok = true;

  // 3x2 * 2x3 from the seed.
  int a[] = {1, 4, 2, 5, 3, 6};
  int b[] = {7, 8, 9, 10, 11, 12};
  int plain[9] = {};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 2; ++k) plain[r * 3 + c] += a[r * 2 + k] * b[k * 3 + c];
  tessera::array_view<const int, 2> av(3, 2, a), bv(2, 3, b);
  tessera::array<int, 2> p(3, 3), q(3, 3);
  workloads::matmul_simple(av, bv, p);
  workloads::matmul_tiled<1>(av, bv, q);
  Eigen::Matrix<int, 3, 2, Eigen::RowMajor> ea(a);
  Eigen::Matrix<int, 2, 3, Eigen::RowMajor> eb(b);
  tessera::eigen_matrix<int> ref = ea * eb;
  std::printf("3x2 * 2x3 (element-parallel):\n");
  workloads::print_matrix(tessera::to_eigen(p));
  ok &= workloads::verdict("3x2*2x3 plain loop == Eigen",
                           Eigen::Map<tessera::eigen_matrix<int>>(plain, 3, 3) == ref);
  ok &= workloads::verdict("3x2*2x3 element-parallel == Eigen", tessera::to_eigen(p) == ref);
  ok &= workloads::verdict("3x2*2x3 tiled (1x1 tiles) == Eigen", tessera::to_eigen(q) == ref);

  // 4x4 with 2x2 tiles: rows {1..8} repeated; element (0,0) = 34.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = float(i % 8 + 1);
  tessera::array<float, 2> A4(tessera::extent<2>(4, 4), v.begin(), v.end()), C4(4, 4);
  workloads::matmul_tiled<2>(A4, A4, C4);
  std::printf("4x4 tiled with 2x2 tiles:\n");
  workloads::print_matrix(tessera::to_eigen(C4));
  auto e4 = tessera::to_eigen(A4);
  ok &= workloads::verdict("4x4 tiled: C(0,0) == 34", tessera::to_eigen(C4)(0, 0) == 34.f);
  ok &= workloads::verdict("4x4 tiled == Eigen",
                           tessera::to_eigen(C4) == tessera::eigen_matrix<float>(e4 * e4));

  // n x n with 16x16 tiles against Eigen (float; tolerance relative to sum |a||b| ~ n/4).
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  tessera::eigen_matrix<float> ma(n, n), mb(n, n);
  for (long i = 0; i < n * n; ++i) ma.data()[i] = d(gen), mb.data()[i] = d(gen);
  tessera::array<float, 2> A = tessera::from_eigen(ma), B = tessera::from_eigen(mb), C(n, n),
                           S(n, n);
  Kokkos::Timer t;
  workloads::matmul_tiled<16>(A, B, C);
  Kokkos::fence();
  const double tt = t.seconds();
  t.reset();
  tessera::eigen_matrix<float> mc = ma * mb;
  const double te = t.seconds();
  workloads::matmul_simple(A, B, S);
  const double tol = 1e-5 * double(n);
  const double err = (tessera::to_eigen(C) - mc).cwiseAbs().maxCoeff();
  const double err_s = (tessera::to_eigen(S) - mc).cwiseAbs().maxCoeff();
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "max|err| %.2e (tol %.1e); tiled %.3f s = %.2f GFLOP/s, Eigen %.3f s", err, tol, tt,
                2.0 * n * n * n / tt * 1e-9, te);
  ok &= workloads::verdict(std::to_string(n) + "x" + std::to_string(n) + " tiled<16> == Eigen",
                           err <= tol, buf);
  std::snprintf(buf, sizeof buf, "max|err| %.2e", err_s);
  ok &=
      workloads::verdict(std::to_string(n) + "x" + std::to_string(n) + " element-parallel == Eigen",
                         err_s <= tol, buf);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
