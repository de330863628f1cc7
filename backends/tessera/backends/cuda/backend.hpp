/// \file cuda/backend.hpp
/// \brief The Cuda backend: the GPU kernel family (gpu/) on Kokkos::Cuda — one team member per
///        logical thread, tile_static in shared memory (scratch level 0) or global scratch
///        (level 1), coalesced loads, padded scratch rows.
#pragma once

#include <tessera/backends/gpu/backend.hpp>

namespace tessera {
namespace impl {
template <>
struct tile_mapping<Kokkos::Cuda> : backends::gpu::tile_mapping<Kokkos::Cuda> {};
}  // namespace impl
namespace backends {
template <>
struct backend<Kokkos::Cuda> : gpu::backend<Kokkos::Cuda> {
  static constexpr const char* name = "Cuda";
};
}  // namespace backends
}  // namespace tessera
