// Helpers shared by the tests: seeded random data and Eigen comparisons.
#pragma once

#include <doctest/doctest.h>
#include <tessera/tessera.hpp>

#include <Eigen/Dense>

#include <array>
#include <random>
#include <vector>

namespace tt {

/// Fixed seed: every run sees the same shapes and data.
inline std::mt19937_64& rng() {
  static std::mt19937_64 g(20261120);
  return g;
}
template <class T = float>
tessera::eigen_matrix<T> random_matrix(Eigen::Index r, Eigen::Index c) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  tessera::eigen_matrix<T> m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(d(rng()));
  return m;
}
/// Shapes that exercise edges: 1, primes, non-multiples of the tile, exact multiples, 0.
inline std::vector<long> edge_sizes() {
  return {0, 1, 2, 7, 13, 16, 17, 31, 64, 97};
}
inline long random_size(long lo, long hi) {
  return std::uniform_int_distribution<long>(lo, hi)(rng());
}
/// (M, K, N) matmul shapes: the given edge cases plus `randoms` random ones in [1, hi].
inline std::vector<std::array<long, 3>> matmul_shapes(std::vector<std::array<long, 3>> fixed,
                                                      int randoms, long hi) {
  for (int i = 0; i < randoms; ++i)
    fixed.push_back({random_size(1, hi), random_size(1, hi), random_size(1, hi)});
  return fixed;
}

/// Largest |a - b| over all elements (0 for empty).
template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
  REQUIRE(a.rows() == b.rows());
  REQUIRE(a.cols() == b.cols());
  if (a.size() == 0) return 0.0;
  return (a.template cast<double>() - b.template cast<double>()).cwiseAbs().maxCoeff();
}

}  // namespace tt
