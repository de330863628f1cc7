/// \file tile_launch/kernel_checks.hpp
/// \brief The checks every Tier 0 launch makes before anything runs: at compile time, that the
///        kernel is device code (a plain `[=]` lambda is host code under nvcc, found by reading
///        the closure type's name) and has the right signature; at run time, that the tiled
///        extent is even, non-negative and not too many tiles for a Kokkos league.
#pragma once

#include <tessera/dsl/device_kernel.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/tiled_extent.hpp>

#include <climits>
#include <string>
#include <string_view>
#include <type_traits>

namespace tessera::backends::impl {

template <int... T>
std::string tile_name() {
  std::string s = "<";
  int k = 0;
  ((s += (k++ ? "," : ""), s += std::to_string(T)), ...);
  return s + ">";
}

using tessera::impl::check_device_kernel;

template <class F, class Group>
constexpr void check_kernel_signature() {
  static_assert(std::is_invocable_v<const F&, Group&>,
                "parallel_for_each(tiled_extent<T...>, kernel): the kernel must be callable as "
                "kernel(tile_group<T...>&) (phase form) or kernel(const tiled_index<T...>&) "
                "(per-thread form) with the same tile sizes (and rank) as the extent (phase "
                "form on another execution space than the default: basic_tile_group<Space, "
                "T...>& or auto&)");
  check_device_kernel<F>();
}

template <int... T>
void check_even(const char* fn, const tiled_extent<T...>& te) {
  for (int d = 0; d < te.rank; ++d)
    if (te[d] < 0)
      throw shape_error(std::string(fn) + ": negative extent " + to_string(te) + " (tile " +
                        tile_name<T...>() + ")");
  if (!te.is_even())
    throw shape_error(std::string(fn) + ": extent " + to_string(te) +
                      " is not a multiple of the tile " + tile_name<T...>() +
                      "; call .pad() (and use guarded_read/guarded_write) or .truncate() (and "
                      "handle the remainder) first");
  if (te.tile_count() > INT_MAX)
    throw resource_error(std::string(fn) + ": " + std::to_string(te.tile_count()) +
                         " tiles exceed the largest Kokkos league (" + std::to_string(INT_MAX) +
                         "); use larger tiles");
}

}  // namespace tessera::backends::impl
