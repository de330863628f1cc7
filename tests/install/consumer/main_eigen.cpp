// Consumer of Tessera::eigen: a matmul checked against Eigen.
#include <tessera/tessera.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  tessera::eigen_matrix<double> a(3, 2), b(2, 3);
  a << 1, 4, 2, 5, 3, 6;
  b << 7, 8, 9, 10, 11, 12;
  tessera::array<double, 2> A = tessera::from_eigen(a), B = tessera::from_eigen(b);
  tessera::array<double, 2> C = tessera::matmul(A, B);
  const bool ok = tessera::to_eigen(C) == a * b;
  std::printf("consumer_eigen: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
