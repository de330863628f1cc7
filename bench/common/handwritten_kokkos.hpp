/// \file handwritten_kokkos.hpp
/// \brief Reference kernels written directly against Kokkos, for the benchmarks' abstraction
///        penalty figures (Tessera Tier 0 vs the same algorithm by hand).
#pragma once

#include <tessera/tessera.hpp>

namespace bench {

/// The seed algorithm written directly against Kokkos: one team per 16 x 16 tile of C; per
/// k-step the team stages a 16 x 16 tile of A and of B in team scratch (level 0), barrier,
/// accumulates into a scratch tile of C, barrier. Any n (loads and stores guarded).
/// pa, pb, pc: n x n row-major arrays in the default execution space's memory.
void seed_kokkos_matmul(const float* pa, const float* pb, float* pc, long n) {
  constexpr int TS = 16;
  using space = Kokkos::DefaultExecutionSpace;
  using policy = Kokkos::TeamPolicy<space>;
  using scratch_tile =
      Kokkos::View<float[TS][TS], space::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  using um = Kokkos::View<const float**, Kokkos::LayoutRight, space::memory_space,
                          Kokkos::MemoryUnmanaged>;
  um a(pa, n, n), b(pb, n, n);
  Kokkos::View<float**, Kokkos::LayoutRight, space::memory_space, Kokkos::MemoryUnmanaged> c(pc, n,
                                                                                             n);
  const int tiles = int((n + TS - 1) / TS);
  policy p(tiles * tiles, Kokkos::AUTO);
  p.set_scratch_size(0, Kokkos::PerTeam(3 * scratch_tile::shmem_size()));
  Kokkos::parallel_for(
      "seed tiled matmul", p, KOKKOS_LAMBDA(const policy::member_type& team) {
        const long i0 = long(team.league_rank() / tiles) * TS;
        const long j0 = long(team.league_rank() % tiles) * TS;
        scratch_tile at(team.team_scratch(0)), bt(team.team_scratch(0)), acc(team.team_scratch(0));
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, TS), [&](int i) {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, TS), [&](int j) { acc(i, j) = 0; });
        });
        for (long k0 = 0; k0 < n; k0 += TS) {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, TS), [&](int i) {
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, TS), [&](int j) {
              at(i, j) = i0 + i < n && k0 + j < n ? a(i0 + i, k0 + j) : 0.f;
              bt(i, j) = k0 + i < n && j0 + j < n ? b(k0 + i, j0 + j) : 0.f;
            });
          });
          team.team_barrier();  // tiles loaded before anyone reads them
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, TS), [&](int i) {
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, TS), [&](int j) {
              float s = acc(i, j);
              for (int k = 0; k < TS; ++k) s += at(i, k) * bt(k, j);
              acc(i, j) = s;
            });
          });
          team.team_barrier();  // tiles read before the next k-step overwrites them
        }
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, TS), [&](int i) {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, TS), [&](int j) {
            if (i0 + i < n && j0 + j < n) c(i0 + i, j0 + j) = acc(i, j);
          });
        });
      });
}

}  // namespace bench
