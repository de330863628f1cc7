/// \file hip/backend.hpp
/// \brief The HIP backend: the GPU kernel family (gpu/) on Kokkos::HIP — one team member per
///        logical thread, tile_static in shared memory (scratch level 0) or global scratch
///        (level 1), coalesced loads, padded scratch rows.
#pragma once

#include <tessera/backends/gpu/backend.hpp>

namespace tessera {
namespace impl {
template <>
struct tile_mapping<Kokkos::HIP> : backends::gpu::tile_mapping<Kokkos::HIP> {};
}  // namespace impl
namespace backends {
template <>
struct backend<Kokkos::HIP> : gpu::backend<Kokkos::HIP> {
  static constexpr const char* name = "HIP";
};
}  // namespace backends
}  // namespace tessera
