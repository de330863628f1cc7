/// \file device_kernel.hpp
/// \brief The compile-time check that a kernel is device code on every backend: under nvcc a
///        plain `[=]` lambda is host code and cannot become a kernel, found by reading the
///        closure type's name (clang's CUDA/HIP mode makes lambdas host-device implicitly; host
///        backends run any callable). Every launch and tile_program() makes it.
#pragma once

#include <string_view>

namespace tessera::impl {

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

}  // namespace tessera::impl
