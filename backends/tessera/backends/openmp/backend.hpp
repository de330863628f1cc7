/// \file openmp/backend.hpp
/// \brief The OpenMP backend: the CPU kernel family (host/) on Kokkos::OpenMP — one team member per
///        tile, vectorized loop nests, tiles spread over the backend's threads.
#pragma once

#include <tessera/backends/host/backend.hpp>

namespace tessera {
namespace impl {
template <>
struct tile_mapping<Kokkos::OpenMP> : backends::host::tile_mapping<Kokkos::OpenMP> {};
}  // namespace impl
namespace backends {
template <>
struct backend<Kokkos::OpenMP> : host::backend<Kokkos::OpenMP> {
  static constexpr const char* name = "OpenMP";
};
}  // namespace backends
}  // namespace tessera
