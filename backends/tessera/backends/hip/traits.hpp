/// \file hip/traits.hpp
/// \brief HIP backend: one team member (HIP thread) per logical tile thread; tile_static in
///        LDS (scratch level 0) or global scratch (level 1).
#pragma once

namespace tessera::backends {
template <>
struct backend_traits<Kokkos::HIP> {
  static constexpr bool thread_per_logical = true;
  static constexpr const char* name = "HIP";
  static constexpr int team_size(int logical) { return logical; }
};
}  // namespace tessera::backends
