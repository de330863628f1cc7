/// \file host/tile_mapping.hpp
/// \brief How a tile runs on a CPU backend (Serial, OpenMP): one team member per tile, each
///        phase a loop nest over the tile in program order whose innermost loop (the last tile
///        dimension) is marked dependence-free for the vectorizer; tiles run concurrently on the
///        backend's threads (the league). Barriers are program order; tile_local holds every
///        logical thread's copy (L values) in team scratch, after the tile_static buffers
///        declared before it (tile_group.hpp, codegen/passes/tile_kernel.hpp).
#pragma once

#include <tessera/dsl/host_context.hpp>
#include <tessera/dsl/index.hpp>

#include <atomic>

namespace tessera::backends::host {

/// tessera::impl::tile_mapping for a CPU execution space (see dsl/tile_mapping.hpp).
template <class Space>
struct tile_mapping {
  using member_type = typename Kokkos::TeamPolicy<Space>::member_type;
  static constexpr bool thread_per_logical = false;
  template <int L>
  static constexpr int local_slots = L;

  template <int... T, class F>
  TESSERA_FORCEINLINE static void for_each(const member_type&, const F& f) {
    // Two copies of the loop nest: in the one that runs outside the host executors, the
    // compiler knows no captured buffer has a hook, so element accesses are plain loads and
    // stores and the loop vectorizes.
    if (tessera::impl::hooked_run_active()) {
      loops<T...>(f);
    } else {
      // Restated in every iteration: a hook's out-of-line call could change the flag as far
      // as the compiler knows, so a single test before the loop would not reach the accesses.
      loops<T...>([&](const auto& i) {
        TESSERA_HOST_ASSUME(!tessera::impl::hooked_run_active());
        f(i);
      });
    }
  }
  /// One phase over the logical threads whose local index lies in [lo, hi) (per dimension):
  /// the loop nest's bounds are clipped, so no logical thread tests anything.
  template <int... T, class F>
  TESSERA_FORCEINLINE static void for_each_in(const member_type&,
                                              const index<int(sizeof...(T))>& lo,
                                              const index<int(sizeof...(T))>& hi, const F& f) {
    if (tessera::impl::hooked_run_active()) {
      clipped<T...>(lo, hi, f);
    } else {
      clipped<T...>(lo, hi, [&](const auto& i) {
        TESSERA_HOST_ASSUME(!tessera::impl::hooked_run_active());
        f(i);
      });
    }
  }
  template <int... T, class F>
  TESSERA_FORCEINLINE static void clipped(const index<int(sizeof...(T))>& lo,
                                          const index<int(sizeof...(T))>& hi, const F& f) {
    constexpr int rank = sizeof...(T);
    const int a0 = int(lo[0]), b0 = int(hi[0]);
    if constexpr (rank == 1) {
      TESSERA_IVDEP
      for (int i0 = a0; i0 < b0; ++i0) f(index<1>(i0));
    } else if constexpr (rank == 2) {
      const int a1 = int(lo[1]), b1 = int(hi[1]);
      for (int i0 = a0; i0 < b0; ++i0) {
        TESSERA_IVDEP
        for (int i1 = a1; i1 < b1; ++i1) f(index<2>(i0, i1));
      }
    } else {
      const int a1 = int(lo[1]), b1 = int(hi[1]), a2 = int(lo[2]), b2 = int(hi[2]);
      for (int i0 = a0; i0 < b0; ++i0)
        for (int i1 = a1; i1 < b1; ++i1) {
          TESSERA_IVDEP
          for (int i2 = a2; i2 < b2; ++i2) f(index<3>(i0, i1, i2));
        }
    }
  }
  template <int... T, class F>
  TESSERA_FORCEINLINE static void loops(const F& f) {
    // The team has one member, so a phase is a loop nest in program order. Its logical
    // threads are independent (a conflict is a race), hence the innermost loop is marked
    // dependence-free for the vectorizer.
    constexpr int rank = sizeof...(T);
    constexpr int d[3] = {T...};
    if constexpr (rank == 1) {
      TESSERA_IVDEP
      for (int i0 = 0; i0 < d[0]; ++i0) f(index<1>(i0));
    } else if constexpr (rank == 2) {
      for (int i0 = 0; i0 < d[0]; ++i0) {
        TESSERA_IVDEP
        for (int i1 = 0; i1 < d[1]; ++i1) f(index<2>(i0, i1));
      }
    } else {
      for (int i0 = 0; i0 < d[0]; ++i0)
        for (int i1 = 0; i1 < d[1]; ++i1) {
          TESSERA_IVDEP
          for (int i2 = 0; i2 < d[2]; ++i2) f(index<3>(i0, i1, i2));
        }
    }
  }
  /// f(r) for r = 0, ..., count - 1 in order (the combine steps of the tile collectives).
  template <class F>
  TESSERA_FORCEINLINE static void for_each_rank(const member_type&, int count, const F& f) {
    for (int r = 0; r < count; ++r) f(r);
  }
  /// One member runs the whole tile: program order already orders its accesses.
  TESSERA_FORCEINLINE static void barrier(const member_type&, tessera::impl::fence_kind) {}
  /// Global memory is shared with the tiles other threads run: a hardware fence; tile_static
  /// memory is private to the member: a compiler fence.
  TESSERA_FORCEINLINE static void fence(const member_type&, tessera::impl::fence_kind f) {
    thread_fence(f);
  }
  TESSERA_FORCEINLINE static void thread_fence(tessera::impl::fence_kind f) {
    if (tessera::impl::fences_global(f))
      Kokkos::memory_fence();
    else
      std::atomic_signal_fence(std::memory_order_seq_cst);
  }
};

}  // namespace tessera::backends::host
