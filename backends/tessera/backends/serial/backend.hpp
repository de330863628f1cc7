/// \file serial/backend.hpp
/// \brief The Serial backend: the CPU kernel family (host/) on Kokkos::Serial — one team member per
///        tile, vectorized loop nests, tiles spread over the backend's threads.
#pragma once

#include <tessera/backends/host/backend.hpp>

namespace tessera {
namespace impl {
template <>
struct tile_mapping<Kokkos::Serial> : backends::host::tile_mapping<Kokkos::Serial> {};
}  // namespace impl
namespace backends {
template <>
struct backend<Kokkos::Serial> : host::backend<Kokkos::Serial> {
  static constexpr const char* name = "Serial";
};
}  // namespace backends
}  // namespace tessera
