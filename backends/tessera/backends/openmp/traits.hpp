/// \file openmp/traits.hpp
/// \brief OpenMP backend: one team member per tile, tiles spread over the OpenMP threads.
#pragma once

namespace tessera::backends {
template <>
struct backend_traits<Kokkos::OpenMP> {
  static constexpr bool thread_per_logical = false;
  static constexpr const char* name = "OpenMP";
  static constexpr int team_size(int) { return 1; }
};
}  // namespace tessera::backends
