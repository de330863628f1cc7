/// \file copy.hpp
/// \brief C++ AMP's `copy`: between arrays and array_views (any mix, same extent), from host
///        iterators into them, and from them to host output iterators.
#pragma once

#include <tessera/dsl/array_view.hpp>

#include <iterator>
#include <type_traits>

namespace tessera {

namespace impl {
template <class T>
struct is_buffer : std::false_type {};
template <class T, int N>
struct is_buffer<array<T, N>> : std::true_type {};
template <class T, int N>
struct is_buffer<array_view<T, N>> : std::true_type {};
template <class T>
concept buffer = is_buffer<std::remove_cvref_t<T>>::value;

/// dst[i] = src[i] over extent ext, on the default execution space.
template <class S, class D, int N>
struct copy_functor {
  strided_ref<S, N> src;
  strided_ref<D, N> dst;
  extent<N> ext;
  KOKKOS_INLINE_FUNCTION void operator()(index_type k) const {
    const index<N> i = unflatten(ext, k);
    dst.at(i) = static_cast<D>(src.at(i));
  }
};

template <class B>
void to_device(const B& b, bool write) {
  if constexpr (requires { b.sync_state(); })
    if (auto* s = b.sync_state()) s->to_device(write);
}

inline bool overlaps(const captured_buffer& a, const captured_buffer& b) {
  const auto alo = reinterpret_cast<std::uintptr_t>(a.data),
             blo = reinterpret_cast<std::uintptr_t>(b.data);
  const std::size_t as = a.span_bytes(), bs = b.span_bytes();
  return as && bs && alo < blo + bs && blo < alo + as;
}
}  // namespace impl

/// Copies every element of `src` to `dst` (arrays or array_views, same rank and extent; element
/// types may differ, converted as by static_cast). Overlapping memory is handled (through a
/// temporary). Waits for the copy to finish.
/// \throws shape_error when the extents differ (dst untouched)
template <impl::buffer S, impl::buffer D>
void copy(const S& src, const D& dst) {
  static_assert(S::rank == D::rank, "tessera::copy: source and destination ranks differ");
  static_assert(!std::is_const_v<typename D::value_type>,
                "tessera::copy: the destination is read-only (array_view<const T>)");
  constexpr int N = S::rank;
  if (!(src.extent == dst.extent))
    throw shape_error("tessera::copy: source extent " + to_string(src.extent) +
                      " differs from destination extent " + to_string(dst.extent));
  impl::require_runtime("tessera::copy");
  if (src.extent.size() == 0) return;
  using ST = std::remove_const_t<typename S::value_type>;
  using DT = typename D::value_type;
  impl::to_device(src, false);
  impl::to_device(dst, true);
  if (impl::overlaps(src.describe_memory(), dst.describe_memory())) {
    array<ST, N> tmp(src.extent);
    copy(src, tmp);
    copy(tmp, dst);
    return;
  }
  const auto s = src.ref();
  impl::strided_ref<const ST, N> sr;
  sr.p = s.p;
  for (int d = 0; d < N; ++d) sr.s[d] = s.s[d];
  Kokkos::parallel_for(
      "tessera::copy",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<index_type>>(0, src.extent.size()),
      impl::copy_functor<const ST, DT, N>{sr, dst.ref(), src.extent});
  Kokkos::fence();
}

/// Copies dst.extent.size() elements from host iterator range [first, last) into `dst`
/// (row-major). \throws shape_error when the range is shorter (dst untouched)
template <class It, impl::buffer D>
void copy(It first, It last, const D& dst) {
  using T = std::remove_const_t<typename D::value_type>;
  constexpr int N = D::rank;
  const index_type n = dst.extent.size();
  const auto have = static_cast<index_type>(std::distance(first, last));
  if (have < n)
    throw shape_error("tessera::copy(first, last, dst): range has " + std::to_string(have) +
                      " elements, destination extent " + to_string(dst.extent) + " needs " +
                      std::to_string(n));
  if (n == 0) return;
  array<T, N> staged(dst.extent, first, last);
  copy(staged, dst);
}
/// Copies dst.extent.size() elements starting at host iterator `first` into `dst`.
template <class It, impl::buffer D>
requires(!impl::buffer<It>) void copy(It first, const D& dst) {
  copy(first, std::next(first, dst.extent.size()), dst);
}
/// Copies every element of `src` (row-major) to host output iterator `out`.
template <impl::buffer S, class Out>
requires(!impl::buffer<Out>) void copy(const S& src, Out out) {
  const auto v = src.to_vector();
  std::copy(v.begin(), v.end(), out);
}

}  // namespace tessera
