// bench-mpi: Tessera::mpi with every process on one machine, timed in one run (mpirun -n P).
//   - SUMMA matmul (f32, n x n) on the P0 x P1 grid against ScaLAPACK psgemm on the same grid
//     and data (when built with ScaLAPACK) and against Tessera's matmul on one process;
//   - element-wise 2A + 3B - C, sum and tile_mean<4, 4> over distributed arrays: aggregate GB/s;
//   - a star stencil (radius 1, double) with halo exchange, weak scaling: each process keeps
//     an m x m block; efficiency t(1) / t(P), t(1) measured on every process at once on a grid
//     of itself (MPI_COMM_SELF, periodic: the same kernels and self messages).
// Times are the slowest process's, best of --reps.
#include <tessera/mpi.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#ifdef TESSERA_BENCH_SCALAPACK
#include "scalapack_ref.hpp"
#endif

namespace mpi = tessera::mpi;
using tessera::extent;
using tessera::index_type;

namespace {
/// Best over reps of the slowest process's time of f.
double best_time(int reps, const std::function<void()>& f, MPI_Comm comm = MPI_COMM_WORLD) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    f();
    Kokkos::fence();
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    best = std::min(best, t);
  }
  return best;
}
/// Fills a distributed array's local part from its global indices (no messages).
template <class T, int N>
void fill_pattern(const mpi::distributed_array<T, N>& a, int salt) {
  const auto l = a.local();
  const auto o = a.origin();
  const auto g = a.global_extent();
  tessera::parallel_for_each(
      l.extent, KOKKOS_LAMBDA(const tessera::index<N>& i) {
        index_type f = 0;
        for (int d = 0; d < N; ++d) f = f * g[d] + i[d] + o[d];
        l[i] = T(((f * 2654435761u + salt) >> 7) % 1000) / T(1000) - T(0.5);
      });
  Kokkos::fence();
}
}  // namespace

int main(int argc, char** argv) {
  mpi::environment env(argc, argv);
  CLI::App app{"bench-mpi: Tessera::mpi timed on one machine"};
  index_type n = 2048, m = 2048, stream = index_type(1) << 25;
  int reps = 5;
  app.add_option("--matmul", n, "SUMMA matmul size n (n x n x n)");
  app.add_option("--stencil", m, "stencil block per process (m x m doubles)");
  app.add_option("--stream", stream, "elements of the element-wise and sum arrays");
  app.add_option("--reps", reps, "timed repetitions (best is kept)");
  CLI11_PARSE(app, argc, argv);
  const int rank = mpi::rank(), P = mpi::size();
  mpi::process_grid<2> grid;
  if (rank == 0)
    std::printf("bench-mpi: %d processes, grid %s, backend %s (%d threads each), best of %d\n", P,
                tessera::to_string(grid.dims()).c_str(), tessera::backend_name().c_str(),
                tessera::backend_concurrency(), reps);

  // --- SUMMA ------------------------------------------------------------------------------
  {
    const mpi::partition<2> p(extent<2>(n, n), grid);
    mpi::distributed_array<float, 2> A(p), B(p), C(p);
    fill_pattern(A, 1);
    fill_pattern(B, 2);
    const double flops = 2.0 * double(n) * double(n) * double(n);
    const double t = best_time(reps, [&] { mpi::matmul(C, A, B); });
    // One process alone (rank 0), the same kernel on the whole problem.
    double t1 = 0;
    if (rank == 0) {
      tessera::array<float, 2> a(n, n), b(n, n), c(n, n);
      a = 0.5f;
      b = 0.25f;
      c = tessera::matmul(a, b);
      t1 = 1e300;
      for (int r = 0; r < reps; ++r) {
        const double t0 = MPI_Wtime();
        c = tessera::matmul(a, b);
        Kokkos::fence();
        t1 = std::min(t1, MPI_Wtime() - t0);
      }
    }
    if (rank == 0)
      std::printf(
          "matmul %lld^3 f32  SUMMA %.1f GFLOP/s (%.3f s) | one process %.1f GFLOP/s: "
          "speed-up %.2f on %d processes\n",
          static_cast<long long>(n), flops / t * 1e-9, t, flops / t1 * 1e-9, t1 / t, P);
#ifdef TESSERA_BENCH_SCALAPACK
    // ScaLAPACK on the same grid and the same local arrays (tests/mpi/scalapack_ref.hpp).
    {
      mpi::distributed_array<float, 2> D(p);
      scalapack_ref::context ctx(grid);
      int info = 0;
      const double ts =
          best_time(reps, [&] { info = scalapack_ref::gemm(ctx, D, A, B, 1.f, 0.f); });
      float diff = 0;
      const auto c = C.local_to_host(), d = D.local_to_host();
      for (std::size_t q = 0; q < c.size(); ++q) diff = std::max(diff, std::abs(c[q] - d[q]));
      MPI_Allreduce(MPI_IN_PLACE, &diff, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
      if (rank == 0)
        std::printf(
            "matmul %lld^3 f32  ScaLAPACK psgemm %.1f GFLOP/s (%.3f s, info %d): SUMMA / "
            "psgemm %.2fx, max |difference| %.1e\n",
            static_cast<long long>(n), flops / ts * 1e-9, ts, info, ts / t, double(diff));
    }
#endif
  }

  // --- element-wise, sum, tile_mean ----------------------------------------------------------
  {
    mpi::process_grid<1> line;
    const mpi::partition<1> p(extent<1>(stream), line, extent<1>(1024));
    mpi::distributed_array<float, 1> A(p), B(p), C(p), D(p);
    fill_pattern(A, 1);
    fill_pattern(B, 2);
    fill_pattern(C, 3);
    const double te = best_time(reps, [&] {
      mpi::assign(
          D, [](auto a, auto b, auto c) { return 2.f * a + 3.f * b - c; }, A, B, C);
    });
    float s = 0;
    const double ts = best_time(reps, [&] { s = mpi::sum(A); });
    const double tr = best_time(reps, [&] { s = mpi::sum(A, tessera::reproducible); });
    const index_type side = std::max<index_type>(4, index_type(std::sqrt(double(stream))) / 4 * 4);
    const mpi::partition<2> q(extent<2>(side, side), grid, extent<2>(4, 4));
    mpi::distributed_array<float, 2> T(q), M(q.coarsened(extent<2>(4, 4)));
    fill_pattern(T, 4);
    const double tm = best_time(reps, [&] {
      mpi::assign(
          M, [](auto a) { return tessera::tile_mean<4, 4>(a); }, T);
    });
    const double bytes = double(stream) * 4;
    if (rank == 0)
      std::printf(
          "2A+3B-C %lld f32 %.1f GB/s | sum %.1f GB/s | sum(reproducible) %.1f GB/s | "
          "tile_mean<4,4> %lld^2 %.1f GB/s (aggregate over %d processes)\n",
          static_cast<long long>(stream), 4 * bytes / te * 1e-9, bytes / ts * 1e-9,
          bytes / tr * 1e-9, static_cast<long long>(side),
          double(side) * double(side) * 4 * (1 + 1.0 / 16) / tm * 1e-9, P);
  }

  // --- stencil weak scaling --------------------------------------------------------------------
  {
    auto run = [&](const mpi::process_grid<2>& g) {
      const mpi::partition<2> p(extent<2>(m * g.dims()[0], m * g.dims()[1]), g);
      mpi::distributed_array<double, 2> A(p, tessera::index<2>(1, 1), tessera::boundary::periodic),
          B(p, tessera::index<2>(1, 1), tessera::boundary::periodic);
      fill_pattern(A, 5);
      using I = tessera::index<2>;
      return best_time(
          reps,
          [&] {
            for (int it = 0; it < 4; ++it) {
              A.exchange_halo();
              tessera::assign(B.local(), 0.5 * A.shifted(I(0, 0)) +
                                             0.125 * (A.shifted(I(-1, 0)) + A.shifted(I(1, 0)) +
                                                      A.shifted(I(0, -1)) + A.shifted(I(0, 1))));
              std::swap(A, B);
            }
          },
          g.comm());
    };
    const double tp = run(grid);
    mpi::process_grid<2> self(MPI_COMM_SELF);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = run(self);
    MPI_Allreduce(MPI_IN_PLACE, &t1, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double bytes = 4.0 * double(m) * double(m) * 8 * 2 * P;  // read A + write B, 4 steps
    if (rank == 0)
      std::printf(
          "stencil %lld^2 doubles per process, 4 steps: %.3f ms per step, %.1f GB/s "
          "aggregate | weak-scaling efficiency t(1)/t(%d) = %.2f\n",
          static_cast<long long>(m), tp / 4 * 1e3, bytes / tp * 1e-9, P, t1 / tp);
  }
  return 0;
}
