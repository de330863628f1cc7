// bench-gemm: C = A * B (square, row-major float) through Tessera's host gemm (default and
// tuned blocking), Eigen, and a hand-written Kokkos tiled kernel (the seed algorithm: 16 x 16
// tiles of A and B staged in team scratch, two team barriers per k-step), timed in one run.
//
//   bench-gemm [N ...] [--reps R] [--seed-reps S] [--no-seed] [--kokkos-...]
//
// Sizes default to 1024 2048. Each figure is the best of R runs (default 5; the seed kernel
// S runs, default 1). GFLOP/s = 2 N^3 / seconds / 1e9. Every result is checked against Eigen
// (|err| <= 1e-5 * N * max|a| * max|b|); exit status 1 if one fails.
#include <tessera/backends/host/gemm.hpp>
#include <tessera/tessera.hpp>

#include "common/handwritten_kokkos.hpp"
#include "common/workload_kernels.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using tessera::index_type;
using matrix = tessera::eigen_matrix<float>;
namespace host = tessera::backends::host;

template <class F>
double best_time(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    Kokkos::fence();
    Kokkos::Timer t;
    f();
    Kokkos::fence();
    best = std::min(best, t.seconds());
  }
  return best;
}

matrix random_matrix(long n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  matrix m(n, n);
  for (long i = 0; i < m.size(); ++i) m.data()[i] = d(g);
  return m;
}

struct row {
  std::string what;
  double seconds;
  double err;
};

}  // namespace

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  std::vector<long> sizes;
  int reps = 5, seed_reps = 1;
  bool seed = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--seed-reps" && i + 1 < argc)
      seed_reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--no-seed")
      seed = false;
    else if (a.rfind("--kokkos", 0) == 0)
      continue;
    else if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos)
      sizes.push_back(std::atol(a.c_str()));
    else {
      std::fprintf(stderr,
                   "usage: bench-gemm [N ...] [--reps R] [--seed-reps S] [--no-seed] "
                   "[--kokkos-...]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1024, 2048};
  if (!Kokkos::SpaceAccessibility<Kokkos::DefaultExecutionSpace, Kokkos::HostSpace>::accessible) {
    std::fprintf(stderr, "bench-gemm: needs a host default execution space (Serial, OpenMP)\n");
    return 2;
  }

  std::printf("bench-gemm: Kokkos %s, %s backend, %d thread(s); Eigen %d.%d.%d, %d thread(s)\n",
              tessera::kokkos_version().c_str(), tessera::backend_name().c_str(),
              tessera::backend_concurrency(), EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
              EIGEN_MINOR_VERSION, Eigen::nbThreads());
  const host::gemm_blocking def = host::default_blocking<float>();
  Kokkos::Timer tune_timer;
  const host::gemm_blocking tuned = host::tune<float>();
  const double tune_s = tune_timer.seconds();
  std::printf("default blocking: %s\ntuned blocking:   %s (tuning took %.3f s)\n",
              host::describe(def).c_str(), host::describe(tuned).c_str(), tune_s);
  std::printf("best of %d runs (seed kernel: %d)\n\n", reps, seed_reps);
  std::printf("%6s  %-26s %10s %9s %9s %10s\n", "N", "implementation", "seconds", "GFLOP/s",
              "vs Eigen", "max_err");

  bool ok = true;
  for (long n : sizes) {
    const matrix a = random_matrix(n, 1), b = random_matrix(n, 2);
    matrix ref(n, n), c(n, n);
    const double flop = 2.0 * double(n) * double(n) * double(n);
    const double tol = 1e-5 * double(n) * a.cwiseAbs().maxCoeff() * b.cwiseAbs().maxCoeff();
    auto id = [](index_type, index_type, float v) {
      return v;
    };
    auto tessera_with = [&](const host::gemm_blocking& blk) {
      return [&, blk] {
        host::gemm<float>(n, n, n, a.data(), n, b.data(), n, c.data(), n, id, blk);
      };
    };
    std::vector<row> rows;
    // Interleave the contenders rep by rep so that machine noise hits them alike.
    double t_def = 1e300, t_tuned = 1e300, t_eigen = 1e300;
    double e_def = 0, e_tuned = 0;
    for (int r = 0; r < reps; ++r) {
      t_eigen = std::min(t_eigen, best_time(1, [&] { ref.noalias() = a * b; }));
      t_def = std::min(t_def, best_time(1, tessera_with(def)));
      e_def = std::max(e_def, double((c - ref).cwiseAbs().maxCoeff()));
      t_tuned = std::min(t_tuned, best_time(1, tessera_with(tuned)));
      e_tuned = std::max(e_tuned, double((c - ref).cwiseAbs().maxCoeff()));
    }
    rows.push_back({"Eigen (C.noalias() = A*B)", t_eigen, 0.0});
    rows.push_back({"Tessera gemm, default", t_def, e_def});
    rows.push_back({"Tessera gemm, tuned", t_tuned, e_tuned});
    double t_hand = 0, t_tier0 = 0;
    if (seed) {
      c.setZero();
      tessera::array<float, 2> ta = tessera::from_eigen(a), tb = tessera::from_eigen(b), tc(n, n);
      t_hand = 1e300;
      t_tier0 = 1e300;
      for (int r = 0; r < seed_reps; ++r) {  // interleaved, like the rows above
        t_hand = std::min(t_hand, best_time(1, [&] {
                            bench::seed_kokkos_matmul(a.data(), b.data(), c.data(), n);
                          }));
        t_tier0 = std::min(t_tier0, best_time(1, [&] { workloads::matmul_tiled<16>(ta, tb, tc); }));
      }
      rows.push_back(
          {"hand-written Kokkos seed<16>", t_hand, double((c - ref).cwiseAbs().maxCoeff())});
      rows.push_back({"Tessera Tier 0 seed<16>", t_tier0,
                      double((tessera::to_eigen(tc) - ref).cwiseAbs().maxCoeff())});
    }
    for (const auto& r : rows) {
      const bool pass = r.err <= tol;
      ok = ok && pass;
      std::printf("%6ld  %-26s %10.5f %9.2f %8.2fx %10.2e%s\n", n, r.what.c_str(), r.seconds,
                  flop / r.seconds * 1e-9, t_eigen / r.seconds, r.err, pass ? "" : "  FAIL");
    }
    if (seed)
      std::printf("%6ld  abstraction penalty (Tier 0 / hand-written Kokkos): %.3fx\n", n,
                  t_tier0 / t_hand);
    std::printf("\n");
  }
  return ok ? 0 : 1;
}
