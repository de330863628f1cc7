/// \file cuda/backend.hpp
/// \brief The Cuda backend: the GPU kernel family (gpu/) on Kokkos::Cuda — one team member per
///        logical thread, tile_static in shared memory (scratch level 0) or global scratch
///        (level 1), coalesced loads, padded scratch rows.
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/gpu/kernels.hpp>
#include <tessera/backends/gpu/mapping.hpp>
#include <tessera/backends/gpu/target.hpp>

namespace tessera {
namespace impl {
template <>
struct tile_mapping<Kokkos::Cuda> : backends::gpu::tile_mapping<Kokkos::Cuda> {};
}  // namespace impl
namespace backends {
template <>
struct backend<Kokkos::Cuda> : gpu::kernels<Kokkos::Cuda> {
  static constexpr const char* name = "Cuda";
  static codegen::target make_target() { return gpu::make_target<Kokkos::Cuda>(); }
  /// Reductions: one element per functor call (Kokkos reduces across threads in a coalesced
  /// tree); reproducible mode folds chunks of 1024 elements per thread.
  static constexpr index_type reduce_chunk = 1;
  static constexpr index_type reproducible_chunk = 1024;
};
}  // namespace backends
}  // namespace tessera
