/// \file openmp/backend.hpp
/// \brief The OpenMP backend: the CPU kernel family (host/) on Kokkos::OpenMP — one team member per
///        tile, vectorized loop nests, tiles spread over the backend's threads.
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/host/kernels.hpp>
#include <tessera/backends/host/mapping.hpp>
#include <tessera/backends/host/target.hpp>

namespace tessera {
namespace impl {
template <>
struct tile_mapping<Kokkos::OpenMP> : backends::host::tile_mapping<Kokkos::OpenMP> {};
}  // namespace impl
namespace backends {
template <>
struct backend<Kokkos::OpenMP> : host::kernels<Kokkos::OpenMP> {
  static constexpr const char* name = "OpenMP";
  static codegen::target make_target() { return host::make_target<Kokkos::OpenMP>(); }
  /// Reductions: one functor call folds 2^14 consecutive elements with SIMD lanes.
  static constexpr index_type reduce_chunk = index_type(1) << 14;
  static constexpr index_type reproducible_chunk = index_type(1) << 14;
};
}  // namespace backends
}  // namespace tessera
