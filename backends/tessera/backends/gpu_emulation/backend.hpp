/// \file gpu_emulation/backend.hpp
/// \brief The GPU emulation (TESSERA_GPU_EMULATION): the GPU kernel family (gpu/) and the GPU
///        tile mapping on Kokkos::OpenMP — one OpenMP thread per logical thread, real
///        team_barrier()s, tile_static in team scratch, tile_local one value per member — so the
///        code CUDA and HIP run is executed and tested on a machine without a GPU. Plans are the
///        `cuda` preset's wherever the host's limits allow: teams hold at most the OpenMP pool's
///        threads (and Kokkos' host team cap, 1024 with kokkos-host-teams.patch), scratch level
///        0 at most Kokkos::OpenMP's 32 KiB; explain() notes where a plan differs for that.
///        What it cannot show: separate device memory (arrays live in host memory), weakly
///        ordered GPU memory, warp scheduling and lockstep execution.
#pragma once

#include <tessera/backends/gpu/backend.hpp>
#include <tessera/backends/kernels/team_policy.hpp>

#include <algorithm>

namespace tessera {
namespace backends::gpu_emulation {

/// Kokkos::OpenMP's largest team: min(thread pool, Kokkos' host team cap).
inline int host_team_limit() {
  struct probe {
    KOKKOS_INLINE_FUNCTION void operator()(
        const Kokkos::TeamPolicy<Kokkos::OpenMP>::member_type&) const {}
  };
  return impl::team_size_limit(Kokkos::OpenMP(), probe{}, 0, 0);
}

/// The GPU target with the host's limits: teams no larger than the pool (smaller default teams
/// for transposes and tile_reduce, the generic tiled matmul with 8 x 8 tiles when the
/// register-blocked one's 256 members do not fit), Kokkos::OpenMP's scratch limits.
inline codegen::target make_target() {
  codegen::target t = gpu::backend<Kokkos::OpenMP>::make_target();
  t.backend = "OpenMP (GPU emulation)";
  const int limit = host_team_limit();
  t.max_team_size = std::min(t.max_team_size, limit);
  t.tile_reduce.team = std::min(t.tile_reduce.team, limit);
  if (t.matmul.generic_tile * t.matmul.generic_tile > limit) t.matmul.generic_tile = 8;
  t.emulated_gpu_scratch_max0 = gpu::cuda_scratch_level0_bytes;
  return t;
}

}  // namespace backends::gpu_emulation

namespace impl {
template <>
struct tile_mapping<Kokkos::OpenMP> : backends::gpu::tile_mapping<Kokkos::OpenMP> {};
}  // namespace impl
namespace backends {
template <>
struct backend<Kokkos::OpenMP> : gpu::backend<Kokkos::OpenMP> {
  static constexpr const char* name = "OpenMP (GPU emulation)";
  static codegen::target make_target() { return gpu_emulation::make_target(); }
};
}  // namespace backends
}  // namespace tessera
