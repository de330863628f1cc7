/// \file atomics.hpp
/// \brief C++ AMP's atomic functions on global memory (`&a[idx]` of an array or array_view, any
///        device pointer) and on tile_static memory (`&s(i)`), with Kokkos' atomics underneath.
///        Checked mode records them as atomic accesses: no race between two atomics, a race
///        between an atomic and a plain access of the same element.
///
/// \code
///   g.for_each([&](const tessera::tiled_index<256>& t) {
///     tessera::atomic_fetch_add(&hist(bin(t)), 1);        // tile_static histogram
///   });
///   ...
///   tessera::atomic_fetch_add(&out[t.tile], partial);     // global memory
/// \endcode
/// Every function returns the value held before the operation (atomic_compare_exchange: true
/// when it stored). Supported types are those of Kokkos' atomics (int, unsigned, long, float,
/// double, ...).
#pragma once

#include <tessera/dsl/tile_group.hpp>

namespace tessera {

namespace impl {
template <class T>
TESSERA_FORCEINLINE T* atomic_target(T* p) {
#ifndef TESSERA_DEVICE_PASS
  if (auto* c = current_host_context()) c->atomic_global(p);
#endif
  return p;
}
template <class T>
TESSERA_FORCEINLINE T* atomic_target(const tile_static_pointer<T>& p) {
  TESSERA_HOST_HOOK(p.ctx, access(p.buf, p.linear, access_kind::atomic));
  return p.p;
}
template <class P>
struct atomic_pointee;
template <class T>
struct atomic_pointee<T*> {
  using type = T;
};
template <class T>
struct atomic_pointee<tile_static_pointer<T>> {
  using type = T;
};
template <class P>
using atomic_value_t = typename atomic_pointee<P>::type;
}  // namespace impl

#define TESSERA_ATOMIC_BINARY(name, kokkos_fn)                                           \
  /** `name(dest, v)`: atomically `*dest = *dest (op) v`; returns the previous value. */ \
  template <class P, class U, class T = impl::atomic_value_t<P>>                         \
  TESSERA_FORCEINLINE T name(const P& dest, const U& v) {                                \
    return Kokkos::kokkos_fn(impl::atomic_target(dest), static_cast<T>(v));              \
  }
TESSERA_ATOMIC_BINARY(atomic_fetch_add, atomic_fetch_add)
TESSERA_ATOMIC_BINARY(atomic_fetch_sub, atomic_fetch_sub)
TESSERA_ATOMIC_BINARY(atomic_fetch_max, atomic_fetch_max)
TESSERA_ATOMIC_BINARY(atomic_fetch_min, atomic_fetch_min)
TESSERA_ATOMIC_BINARY(atomic_fetch_and, atomic_fetch_and)
TESSERA_ATOMIC_BINARY(atomic_fetch_or, atomic_fetch_or)
TESSERA_ATOMIC_BINARY(atomic_fetch_xor, atomic_fetch_xor)
TESSERA_ATOMIC_BINARY(atomic_exchange, atomic_exchange)
#undef TESSERA_ATOMIC_BINARY

/// Atomically increments *dest; returns the previous value.
template <class P, class T = impl::atomic_value_t<P>>
TESSERA_FORCEINLINE T atomic_fetch_inc(const P& dest) {
  return Kokkos::atomic_fetch_add(impl::atomic_target(dest), T(1));
}
/// Atomically decrements *dest; returns the previous value.
template <class P, class T = impl::atomic_value_t<P>>
TESSERA_FORCEINLINE T atomic_fetch_dec(const P& dest) {
  return Kokkos::atomic_fetch_sub(impl::atomic_target(dest), T(1));
}
/// C++ AMP's compare-and-exchange: if *dest == *expected, stores `v` and returns true; else
/// writes the current *dest to *expected and returns false. `expected` is the caller's own
/// (private) variable.
template <class P, class U, class T = impl::atomic_value_t<P>>
TESSERA_FORCEINLINE bool atomic_compare_exchange(const P& dest, T* expected, const U& v) {
  const T old =
      Kokkos::atomic_compare_exchange(impl::atomic_target(dest), *expected, static_cast<T>(v));
  if (old == *expected) return true;
  *expected = old;
  return false;
}

}  // namespace tessera
