/// \file kernels/target_core.hpp
/// \brief The part of a backend's target description that comes from Kokkos alone: the
///        execution space's name, scratch limits per level and concurrency. Each kernel family's
///        target (host/target.hpp, gpu/target.hpp) starts from it and adds its mapping and
///        options.
#pragma once

#include <tessera/codegen/target.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace tessera::backends::impl {

template <class Space>
codegen::target kokkos_target() {
  using policy = Kokkos::TeamPolicy<Space>;
  codegen::target t;
  t.backend = Space::name();
  t.scratch_max[0] = static_cast<std::size_t>(policy::scratch_size_max(0));
  t.scratch_max[1] = static_cast<std::size_t>(policy::scratch_size_max(1));
  t.concurrency = Space().concurrency();
  return t;
}

/// A kernel that does nothing (the probe of team limits).
struct empty_team_kernel {
  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member&) const {}
};

/// The most members Kokkos allows in a team of Space (Kokkos::OpenMP: the thread pool, at most
/// 64 in stock Kokkos).
template <class Space>
int host_team_limit() {
  return Kokkos::TeamPolicy<Space>(1, 1).team_size_max(empty_team_kernel{},
                                                       Kokkos::ParallelForTag());
}

}  // namespace tessera::backends::impl
