// Helpers shared by the tests: seeded random data and Eigen comparisons.
#pragma once

#include <doctest/doctest.h>
#include <tessera/tessera.hpp>

#include <Eigen/Dense>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tessera_test {
std::uint64_t case_seed();    // doctest_runner.cpp: the running case's seed
unsigned long case_serial();  // changes when a new case starts
}  // namespace tessera_test

namespace tt {

/// The random generator of the running test case, seeded from the case's name (the same data
/// in every run and whichever cases ran before; TESSERA_TEST_SEED overrides it, and a failing
/// case prints its seed).
inline std::mt19937_64& rng() {
  static std::mt19937_64 g;
  static unsigned long serial = ~0ul;
  if (serial != tessera_test::case_serial()) {
    serial = tessera_test::case_serial();
    g.seed(tessera_test::case_seed());
  }
  return g;
}
template <class T = float>
tessera::eigen_matrix<T> random_matrix(Eigen::Index r, Eigen::Index c) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  tessera::eigen_matrix<T> m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(d(rng()));
  return m;
}
/// r x c integers in [-4, 4] (from the case's generator): every element type computes exact
/// sums and products of them, so results of mixed types compare exactly.
inline tessera::eigen_matrix<double> small_ints(long r, long c) {
  std::uniform_int_distribution<int> d(-4, 4);
  tessera::eigen_matrix<double> m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(rng());
  return m;
}
/// A rank-2 array of element type T holding m (converted), and an array read back as doubles.
template <class T, class M>
tessera::array<T, 2> make(const M& m) {
  return tessera::from_eigen(tessera::eigen_matrix<T>(m.template cast<T>()));
}
template <class T>
tessera::eigen_matrix<double> read(const tessera::array<T, 2>& a) {
  return tessera::to_eigen(a).template cast<double>();
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

/// True when the default backend writes large outputs with streaming stores (the host kernel
/// family): tests sized to cross that threshold only need those sizes there. Elsewhere (the
/// GPU mapping: CUDA, HIP, the GPU emulation, whose teams cost a barrier per tile) they run
/// the same code path at a smaller size, and say so.
inline bool backend_streams(const char* what) {
  const bool streams = tessera::backends::backend<tessera::execution_space>::make_target()
                           .streaming_store_min_bytes > 0;
  if (!streams)
    MESSAGE(what << ": sizes reduced (no streaming-store threshold to cross on the "
                 << tessera::backend_name() << " backend)");
  return streams;
}

/// Bytes from which the default backend writes outputs with streaming stores: the target's
/// threshold (the last-level cache of this machine on the CPU backends), or 32 MiB where it
/// never streams.
inline std::size_t streaming_bytes() {
  const std::size_t b =
      tessera::backends::backend<tessera::execution_space>::make_target().streaming_store_min_bytes;
  return b > 0 ? b : std::size_t{32} << 20;
}

/// A size n written for a 32 MiB streaming threshold, scaled to this machine's: n itself at
/// 32 MiB, else the smallest size of at least n * streaming_bytes() / 32 MiB with the same
/// remainder modulo m (the same partial tiles, chunks and lines).
inline long streaming_scaled(long n, long m) {
  const double s = double(streaming_bytes()) / double(std::size_t{32} << 20);
  if (s == 1.0) return n;
  const long want = long(std::ceil(double(n) * s)), r = n % m;
  long k = want - want % m + r;
  if (k < want) k += m;
  return k;
}

/// True (after printing why) when a test of the CPU kernel family (host/) has nothing to check
/// in this build: the GPU emulation runs Tier 1 on the GPU kernel family, and the CPU family is
/// tested by the serial and openmp presets.
inline bool cpu_family_unused(const char* what) {
  if (!tessera::gpu_emulation) return false;
  MESSAGE(what << ": not run on the " << tessera::backend_name()
               << " backend, whose Tier 1 kernels are the GPU family (the CPU family is tested "
                  "by the serial and openmp presets)");
  return true;
}

/// x then y, as affine maps v -> a v + b modulo 2^32: an associative operator that is not
/// commutative (checks that collectives and scans keep the order).
struct affine {
  unsigned a, b;
};
struct compose {
  TESSERA_INLINE affine operator()(const affine& x, const affine& y) const {
    return {x.a * y.a, y.a * x.b + y.b};
  }
};
inline bool operator==(const affine& x, const affine& y) {
  return x.a == y.a && x.b == y.b;
}

/// The message of the E that f() throws ("" when it throws nothing; other exceptions propagate).
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}
inline bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
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
