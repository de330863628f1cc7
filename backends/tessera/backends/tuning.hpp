/// \file tuning.hpp
/// \brief Explicit tuning of the CPU matmul's cache blocking. Nothing is tuned implicitly: the
///        default blocking is derived from the cache sizes (deterministic), so equal inputs,
///        blocking and thread count give bitwise-equal products; explain() never times anything.
#pragma once

#include <tessera/backends/backend.hpp>

#if defined(KOKKOS_ENABLE_SERIAL) || defined(KOKKOS_ENABLE_OPENMP)
#include <tessera/backends/host/gemm.hpp>

namespace tessera {

/// Cache blocking of the CPU matmul: rows of A per packed block (mc), depth per block (kc),
/// columns of B per packed panel (nc), in elements.
using matmul_blocking = backends::host::gemm_blocking;

/// The blocking Tier 1 matmuls of element type T (float, double) use on CPU backends.
template <class T>
matmul_blocking matmul_blocking_in_use() {
  return backends::host::current_blocking<T>();
}
/// Uses `b` for later Tier 1 matmuls of element type T (plans made before are rebuilt).
/// \throws shape_error a value <= 0
template <class T>
void set_matmul_blocking(const matmul_blocking& b) {
  backends::host::set_blocking<T>(b);
}
/// Times a few blockings around the default on a 512^3 product with the default host
/// execution space's threads (about 0.1 s) and uses the fastest for later matmuls of type T;
/// returns it. Store it (mc, kc, nc) and pass it to set_matmul_blocking in later runs to skip
/// the timing. @pre Kokkos is initialized.
template <class T>
matmul_blocking tune_matmul() {
  return backends::host::tune<T>();
}

}  // namespace tessera
#endif
