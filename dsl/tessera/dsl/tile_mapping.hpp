/// \file tile_mapping.hpp
/// \brief The contract between the tile-kernel vocabulary (tile_group, tile_barrier) and a
///        backend: how one tile's logical threads, barriers and fences run on a Kokkos team of
///        execution space `Space`. Declared here, specialised by each backend folder
///        (backends/<name>/), the way Kokkos declares Impl::ParallelFor generically and each
///        backend specialises it. The dsl layer never includes a backend.
///
/// A specialisation provides:
/// \code
///   static constexpr bool thread_per_logical;  // one team member per logical thread (GPUs)
///   template <int L> static constexpr int local_slots;   // tile_local copies per member: 1 or L
///   template <int... T, class F>                // one phase: f(index<rank> local) for every
///   static void for_each(const member_type&, const F& f);   // logical thread of the tile
///   static void barrier(const member_type&, fence_kind);     // tile barrier + fence
///   template <int... T, class F>                // one phase over the logical threads whose
///   static void for_each_in(const member_type&, const index<rank>& lo,   // local index lies
///                           const index<rank>& hi, const F& f);          // in [lo, hi)
///   template <class F>                          // f(r) for r < count (count <= logical
///   static void for_each_rank(const member_type&, int count, const F& f);  // threads): member
///                                               // r runs r (GPUs), one loop (CPUs); the
///                                               // tile collectives' combine steps
///   static void fence(const member_type&, fence_kind);       // free-standing, tile-uniform code
///   static void thread_fence(fence_kind);                    // free-standing, inside for_each
/// \endcode
#pragma once

#include <tessera/dsl/config.hpp>

namespace tessera::impl {

template <class>
inline constexpr bool no_backend_for = false;

/// Primary template: an execution space without a backend folder is a compile-time error. The
/// compiler's "required from" note names the execution space.
template <class Space>
struct tile_mapping {
  static_assert(no_backend_for<Space>,
                "tessera: this Kokkos execution space has no Tessera backend (backends exist "
                "for " TESSERA_BACKEND_NAMES
                ": backends/<name>/); add a folder that specialises "
                "tessera::impl::tile_mapping and tessera::backends::backend for it");
};

/// Byte offset of the next tile_static buffer: buffers are laid out in declaration order, each
/// aligned to max(64, alignof(element)) bytes. The one rule for scratch offsets, used by
/// tile_group on the device and by the code generator's scratch pass (plans show the same
/// offsets the kernel uses).
TESSERA_INLINE constexpr std::size_t scratch_offset(std::size_t end_of_previous,
                                                    std::size_t element_align) {
  const std::size_t a = element_align > 64 ? element_align : 64;
  return (end_of_previous + a - 1) / a * a;
}

}  // namespace tessera::impl
