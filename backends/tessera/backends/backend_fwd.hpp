/// \file backend_fwd.hpp
/// \brief Declares `backends::backend<Space>`, the kernels and target of the backend that runs
///        execution space Space. Generic launch code names it; the definitions live in one
///        folder per backend (serial/, openmp/, cuda/, hip/), included by backend.hpp.
#pragma once

#include <tessera/dsl/tile_mapping.hpp>

namespace tessera::backends {

/// The backend of Kokkos execution space Space. Every specialisation provides (see
/// host/kernels.hpp and gpu/kernels.hpp for the two families):
/// \code
///   static constexpr const char* name;           // "Serial", "OpenMP", "Cuda", "HIP"
///   static codegen::target make_target();        // what the code generator plans for
///   static constexpr index_type reduce_chunk;    // elements folded per reduction functor call
///   static constexpr index_type reproducible_chunk;
///   // the Tier 1 kernel families, launched as their plans say:
///   elementwise, staged_transpose, matmul, tile_reduce
/// \endcode
/// The primary template is a compile-time error naming the execution space (in the compiler's
/// "required from" note): an execution space without a backend folder cannot run Tessera code.
template <class Space>
struct backend {
  static_assert(tessera::impl::no_backend_for<Space>,
                "tessera: this Kokkos execution space has no Tessera backend (backends exist for "
                "Serial, OpenMP, Cuda and HIP: backends/<name>/); add a folder that specialises "
                "tessera::backends::backend and tessera::impl::tile_mapping for it");
};

}  // namespace tessera::backends
