/// \file cuda/traits.hpp
/// \brief CUDA backend: one team member (CUDA thread) per logical tile thread; tile_static in
///        shared memory (scratch level 0) or global scratch (level 1).
#pragma once

namespace tessera::backends {
template <>
struct backend_traits<Kokkos::Cuda> {
  static constexpr bool thread_per_logical = true;
  static constexpr const char* name = "Cuda";
  static constexpr int team_size(int logical) { return logical; }
};
}  // namespace tessera::backends
