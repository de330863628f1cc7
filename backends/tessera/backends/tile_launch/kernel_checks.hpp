/// \file tile_launch/kernel_checks.hpp
/// \brief The checks every Tier 0 launch makes before anything runs: at compile time, that the
///        kernel is device code (a plain `[=]` lambda is host code under nvcc, found by reading
///        the closure type's name) and has the right signature; at run time, that the tiled
///        extent is even, non-negative and not too many tiles for a Kokkos league.
#pragma once

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

/// True when `pretty` (a __PRETTY_FUNCTION__ of a template with parameter F) names a closure
/// type itself, not a class template that merely has one as an argument: "<lambda(" (GCC) or
/// "lambda [" (nvcc's front end) outside any template argument list.
constexpr bool names_closure_type(std::string_view pretty) {
  const auto p = pretty.find("F = ");
  if (p == std::string_view::npos) return false;
  const std::string_view s = pretty.substr(p + 4);
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::string_view rest = s.substr(i);
    if (rest.starts_with("->")) {
      ++i;
      continue;
    }
    if (depth == 0 && (rest.starts_with("lambda [") || rest.starts_with("<lambda("))) return true;
    if (s[i] == '<')
      ++depth;
    else if (s[i] == '>')
      --depth;
    else if (depth == 0 && (s[i] == ';' || s[i] == ']'))
      return false;
  }
  return false;
}
template <class F>
constexpr std::string_view type_name() {
  return __PRETTY_FUNCTION__;
}
/// nvcc: a plain `[=]` lambda is host code and cannot become a kernel (clang's CUDA/HIP mode
/// makes lambdas host-device implicitly; host backends run any callable).
template <class F>
constexpr bool host_only_lambda() {
#if defined(__NVCC__)
  return !__nv_is_extended_host_device_lambda_closure_type(F) &&
         !__nv_is_extended_device_lambda_closure_type(F) && names_closure_type(type_name<F>());
#else
  return false;
#endif
}

/// Compile-time checks every launch makes on its kernel type.
template <class F>
constexpr void check_device_kernel() {
  static_assert(!host_only_lambda<F>(),
                "parallel_for_each: this kernel is a plain [=] lambda, which is host code; write "
                "it as TESSERA_KERNEL(tessera::tile_group<...>& g) { ... } (or "
                "TESSERA_KERNEL(const tessera::index<N>& idx) for element-parallel launches), or "
                "as a functor whose call operator is TESSERA_INLINE");
}
template <class F, class Group>
constexpr void check_kernel_signature() {
  static_assert(std::is_invocable_v<const F&, Group&>,
                "parallel_for_each(tiled_extent<T...>, kernel): the kernel must be callable as "
                "kernel(tile_group<T...>&) with the same tile sizes (and rank) as the extent "
                "(on another execution space than the default: basic_tile_group<Space, T...>& "
                "or auto&)");
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
