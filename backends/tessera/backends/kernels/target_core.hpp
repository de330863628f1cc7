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

}  // namespace tessera::backends::impl
