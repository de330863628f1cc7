/// \file traits.hpp
/// \brief Per-backend traits: how a tile's logical threads map onto a Kokkos team, and the
///        backend's name. Generic CPU defaults here; GPU backends specialise in their folders.
///
/// Mapping (see README "Execution model"):
///  * CPU backends (Serial, OpenMP, Threads): one team member per tile (team_size = 1). A phase
///    (`for_each`) is a plain loop nest over the tile in program order; the innermost loop (the
///    last tile dimension) is marked dependence-free (TESSERA_IVDEP), since the logical threads
///    of a phase are independent, so the compiler vectorizes it.
///    Parallelism comes from the league (tiles run concurrently on different threads).
///    tile_local<U> is a U[T0*T1*T2] array on the member's stack.
///  * GPU backends (Cuda, HIP): one team member per logical thread (team_size = T0*T1*T2,
///    error if above the backend's maximum team size), vector length 1. tile_local<U> is one
///    U per member (a register).
#pragma once

#include <tessera/dsl/config.hpp>

namespace tessera::backends {

/// \tparam ExecSpace a Kokkos execution space
template <class ExecSpace>
struct backend_traits {
  /// One team member per logical thread (GPU) instead of one member per tile (CPU).
  static constexpr bool thread_per_logical = false;
  static constexpr const char* name = "host";
  /// Team size for a tile of `logical` threads.
  static constexpr int team_size(int /*logical*/) { return 1; }
};

#ifdef KOKKOS_ENABLE_SERIAL
template <>
struct backend_traits<Kokkos::Serial> {
  static constexpr bool thread_per_logical = false;
  static constexpr const char* name = "Serial";
  static constexpr int team_size(int) { return 1; }
};
#endif

}  // namespace tessera::backends

#ifdef KOKKOS_ENABLE_OPENMP
#include <tessera/backends/openmp/traits.hpp>
#endif
#ifdef KOKKOS_ENABLE_CUDA
#include <tessera/backends/cuda/traits.hpp>
#endif
#ifdef KOKKOS_ENABLE_HIP
#include <tessera/backends/hip/traits.hpp>
#endif

namespace tessera {
/// Traits of the backend every Tessera launch uses.
using default_backend_traits = backends::backend_traits<Kokkos::DefaultExecutionSpace>;
}  // namespace tessera
