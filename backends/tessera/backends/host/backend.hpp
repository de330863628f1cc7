/// \file host/backend.hpp
/// \brief The CPU kernel family as the backend of an execution space: what the `serial` and
///        `openmp` folders specialise `backends::backend<Space>` and `impl::tile_mapping<Space>`
///        with (each adds only its name).
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/host/kernels.hpp>
#include <tessera/backends/host/mapping.hpp>
#include <tessera/backends/host/target.hpp>

namespace tessera::backends::host {

/// backends::backend<Space> on the CPU kernel family (see backend_fwd.hpp).
template <class Space>
struct backend : kernels<Space> {
  static codegen::target make_target() { return host::make_target<Space>(); }
  /// Reductions: one functor call folds 2^14 consecutive elements with SIMD lanes.
  static constexpr index_type reduce_chunk = index_type(1) << 14;
  static constexpr index_type reproducible_chunk = index_type(1) << 14;
};

}  // namespace tessera::backends::host
