/// \file gpu/tile_mapping.hpp
/// \brief How a tile runs on a GPU backend (CUDA, HIP, and OpenMP in the GPU emulation): one
///        team member (GPU thread) per logical thread, so a phase is each member running its
///        own logical thread and tile_local is one register per member; barriers are team barriers,
///        preceded by a memory fence when they order global memory (team_barrier alone orders team
///        scratch).
#pragma once

#include <tessera/dsl/host_context.hpp>
#include <tessera/dsl/index.hpp>

namespace tessera::backends::gpu {

/// tessera::impl::tile_mapping for a GPU execution space (see dsl/tile_mapping.hpp).
template <class Space>
struct tile_mapping {
  using member_type = typename Kokkos::TeamPolicy<Space>::member_type;
  static constexpr bool thread_per_logical = true;
  template <int L>
  static constexpr int local_slots = 1;

  /// One phase: member l runs logical thread l. @pre the team has exactly L = (T * ...)
  /// members (the plan's team size; the launch checks it), so a logical thread's tile_local
  /// register stays with the member that owns it across phases.
  template <int... T, class F>
  TESSERA_FORCEINLINE static void for_each(const member_type& team, const F& f) {
    constexpr int rank = sizeof...(T);
    [[maybe_unused]] constexpr int d[3] = {T...};
    const int l = team.team_rank();
    if constexpr (rank == 1)
      f(index<1>(l));
    else if constexpr (rank == 2)
      f(index<2>(l / d[1], l % d[1]));
    else
      f(index<3>(l / (d[1] * d[2]), (l / d[2]) % d[1], l % d[2]));
  }
  /// One phase over the logical threads whose local index lies in [lo, hi): the others skip
  /// it (they still reach the next barrier).
  template <int... T, class F>
  TESSERA_FORCEINLINE static void for_each_in(const member_type& team,
                                              const index<int(sizeof...(T))>& lo,
                                              const index<int(sizeof...(T))>& hi, const F& f) {
    for_each<T...>(team, [&](const index<int(sizeof...(T))>& l) {
      bool in = true;
      for (int d = 0; d < int(sizeof...(T)); ++d) in = in && l[d] >= lo[d] && l[d] < hi[d];
      if (in) f(l);
    });
  }
  /// f(r) by member r, for r < count (the combine steps of the tile collectives).
  template <class F>
  TESSERA_FORCEINLINE static void for_each_rank(const member_type& team, int count, const F& f) {
    const int r = team.team_rank();
    if (r < count) f(r);
  }
  TESSERA_FORCEINLINE static void barrier(const member_type& team, tessera::impl::fence_kind f) {
    if (tessera::impl::fences_global(f)) Kokkos::memory_fence();
    team.team_barrier();
  }
  /// A fence in tile-uniform code is a phase boundary for its memory: every logical thread
  /// passes it together (warp-synchronous code written as phases stays correct on GPUs whose
  /// warps do not run in lockstep).
  TESSERA_FORCEINLINE static void fence(const member_type& team, tessera::impl::fence_kind f) {
    Kokkos::memory_fence();
    team.team_barrier();
    (void)f;
  }
  TESSERA_FORCEINLINE static void thread_fence(tessera::impl::fence_kind) {
    Kokkos::memory_fence();
  }
};

}  // namespace tessera::backends::gpu
