// Example 10: Tessera past one process (Tessera::mpi). Run with mpirun -n P.
//   1. Seed 004's huge sum, distributed: each process fills and sums its block of a 1-D array;
//      the sum (Tessera's accuracy) and the reproducible sum (the same bits for any number of
//      processes) are checked against the exact value.
//   2. Heat diffusion on an n x n grid distributed over a P0 x P1 process grid: each step
//      starts the halo exchange, updates the interior of every local part while the messages
//      travel, waits, then updates the edges — checked against the same steps on one process
//      with Tier 1 shifts.
// Usage: example_10_distributed [sum elements (default 2^26)] [grid n (512)] [steps (50)]
#include <tessera/mpi.hpp>

#include "../common/report.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace mpi = tessera::mpi;
using tessera::extent;
using tessera::index_type;

namespace {

/// One explicit heat step on the rows [r0, r0 + er) and columns [c0, c0 + ec) of the local
/// part: out = u + k (north + south + west + east - 4 u), reading u's halo-padded storage.
void heat_box(const mpi::distributed_array<float, 2>& u,
              const mpi::distributed_array<float, 2>& out, index_type r0, index_type c0,
              index_type er, index_type ec, float k) {
  if (er <= 0 || ec <= 0) return;
  using tessera::index;
  const auto& s = u.storage();
  const extent<2> e(er, ec);
  auto at = [&](index_type dr, index_type dc) {
    return s.section(index<2>(1 + r0 + dr, 1 + c0 + dc), e);
  };
  tessera::assign(out.local().section(index<2>(r0, c0), e),
                  at(0, 0) + k * (at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1) - 4.f * at(0, 0)));
}

}  // namespace

int main(int argc, char** argv) {
  mpi::environment env(argc, argv);
  const int rank = mpi::rank(), procs = mpi::size();
  const long long n_sum = argc > 1 ? std::atoll(argv[1]) : (1LL << 26);
  const index_type n = argc > 2 ? std::atoll(argv[2]) : 512;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 50;
  bool ok = true;
  {
    // --- 1. seed 004's sum ------------------------------------------------------------------
    mpi::process_grid<1> line;
    const mpi::partition<1> p(extent<1>(n_sum), line, extent<1>(1024));
    mpi::distributed_array<float, 1> a(p);
    const auto l = a.local();
    const index_type o = a.origin()[0];
    tessera::parallel_for_each(
        l.extent, KOKKOS_LAMBDA(const tessera::index<1>& i) {
          l[i] = 1.0f + float((i[0] + o) & 1023) / 1024.0f;
        });
    Kokkos::fence();
    const long long full = n_sum / 1024, rest = n_sum % 1024;
    const long double exact =
        static_cast<long double>(n_sum) +
        (static_cast<long double>(full) * (1023.0L * 1024 / 2) + rest * (rest - 1) / 2.0L) / 1024;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    const float s = mpi::sum(a);
    const double t1 = MPI_Wtime();
    const float r = mpi::sum(a, tessera::reproducible);
    const double t2 = MPI_Wtime();
    const double bound = 5.0001 * std::ldexp(1.0, -24);  // tessera::sum's bound, positive data
    const double es = double(std::fabs((s - exact) / exact)),
                 er = double(std::fabs((r - exact) / exact));
    float lo = r, hi = r;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("distributed sum of %lld floats over %d processes (%s, backend %s)\n", n_sum,
                  procs, p.describe().c_str(), tessera::backend_name().c_str());
      std::printf("  sum              %.9g  rel. error %.2e  %.1f GB/s\n", double(s), es,
                  double(n_sum) * 4 / (t1 - t0) * 1e-9);
      std::printf("  sum reproducible %.9g  rel. error %.2e  %.1f GB/s  (bits 0x%08x)\n", double(r),
                  er, double(n_sum) * 4 / (t2 - t1) * 1e-9, std::bit_cast<unsigned>(r));
    }
    if (rank == 0) {
      ok &= workloads::verdict("sum within Tessera's bound", es <= bound);
      ok &= workloads::verdict("reproducible sum within it, equal on every process",
                               er <= bound && lo == hi);
    }
  }
  {
    // --- 2. heat diffusion with overlapped halo exchange -------------------------------------
    mpi::process_grid<2> grid;
    const mpi::partition<2> p(extent<2>(n, n), grid);
    mpi::distributed_array<float, 2> u(p, tessera::index<2>(1, 1), tessera::boundary::zero),
        v(p, tessera::index<2>(1, 1), tessera::boundary::zero);
    // A hot square in the middle.
    std::vector<float> init;
    if (rank == 0) {
      init.assign(static_cast<std::size_t>(n * n), 0.f);
      for (index_type i = n / 4; i < 3 * n / 4; ++i)
        for (index_type j = n / 3; j < 2 * n / 3; ++j)
          init[static_cast<std::size_t>(i * n + j)] = 1.f + float((i * 7 + j) % 13) / 13.f;
    }
    u.scatter(init);
    const float k = 0.2f;
    const extent<2> le = u.local_extent();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int st = 0; st < steps; ++st) {
      auto x = u.begin_exchange_halo();
      heat_box(u, v, 1, 1, le[0] - 2, le[1] - 2, k);  // the interior, while messages travel
      x.wait();
      if (le.size() > 0) {  // the edges, which read halos
        heat_box(u, v, 0, 0, 1, le[1], k);
        if (le[0] > 1) heat_box(u, v, le[0] - 1, 0, 1, le[1], k);
        heat_box(u, v, 1, 0, le[0] - 2, 1, k);
        if (le[1] > 1) heat_box(u, v, 1, le[1] - 1, le[0] - 2, 1, k);
      }
      std::swap(u, v);
    }
    Kokkos::fence();
    const double t = MPI_Wtime() - t0;
    const auto got = u.gather();
    if (rank == 0) {
      using tessera::boundary::zero;
      using I = tessera::index<2>;
      tessera::array<float, 2> w(extent<2>(n, n), init.data());
      for (int st = 0; st < steps; ++st) {
        tessera::array<float, 2> nw =
            w +
            k * (tessera::shift(w, I(-1, 0), zero) + tessera::shift(w, I(1, 0), zero) +
                 tessera::shift(w, I(0, -1), zero) + tessera::shift(w, I(0, 1), zero) - 4.f * w);
        w = std::move(nw);
      }
      const auto want = w.to_vector();
      double worst = 0, heat = 0;
      for (std::size_t q = 0; q < want.size(); ++q) {
        worst = std::max(worst, double(std::fabs(want[q] - got[q])));
        heat += got[q];
      }
      std::printf(
          "heat diffusion %lldx%lld, %d steps on a %s process grid: %.3f ms per step, "
          "total heat %.4f, max |distributed - one process| %.2e\n",
          static_cast<long long>(n), static_cast<long long>(n), steps,
          tessera::to_string(grid.dims()).c_str(), t / steps * 1e3, heat, worst);
      std::printf("%s", mpi::explain_exchange(u).c_str());
      ok &= workloads::verdict("distributed heat diffusion equals one process's", worst <= 1e-5);
    }
  }
  int bad = ok ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return bad;
}
