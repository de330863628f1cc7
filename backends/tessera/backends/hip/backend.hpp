/// \file hip/backend.hpp
/// \brief The HIP backend: the GPU kernel family (gpu/) on Kokkos::HIP — one team member per
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
struct tile_mapping<Kokkos::HIP> : backends::gpu::tile_mapping<Kokkos::HIP> {};
}  // namespace impl
namespace backends {
template <>
struct backend<Kokkos::HIP> : gpu::kernels<Kokkos::HIP> {
  static constexpr const char* name = "HIP";
  static codegen::target make_target() { return gpu::make_target<Kokkos::HIP>(); }
  /// Reductions: one element per functor call (Kokkos reduces across threads in a coalesced
  /// tree); reproducible mode folds chunks of 1024 elements per thread.
  static constexpr index_type reduce_chunk = 1;
  static constexpr index_type reproducible_chunk = 1024;
};
}  // namespace backends
}  // namespace tessera
