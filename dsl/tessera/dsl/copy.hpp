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

/// Elements of a row that one iteration of a CPU copy moves (copy_runs): runs of 16 KiB of
/// floats, the compiler's vector copy of each, while a large copy still has as many iterations
/// as threads to share. An element per iteration, each through its index (one division per
/// dimension), copied a 256 x 256 float array in 132 us on a Zen 4 core (2 ns an element).
inline constexpr index_type copy_run_elements = 4096;

/// dst[i] = static_cast<D>(src[i]) over extent ext, a run of consecutive elements of one row
/// per iteration: iteration k copies the `run` elements (fewer at the row's end) from column
/// (k mod runs_per_row) * run of row k / runs_per_row (rows: the row-major order's runs of
/// ext[N - 1] elements, contiguous in both; rank 1: one row). run = 1, runs_per_row =
/// ext[N - 1]: one element per iteration (GPU threads).
template <class S, class D, int N>
struct copy_runs {
  strided_ref<S, N> src;
  strided_ref<D, N> dst;
  extent<N> ext;
  index_type run = 1, runs_per_row = 1;
  /// Divisions only where they are needed (a row in several runs; rank 3's rows): two per
  /// iteration through unflatten made a 64 x 64 float copy 0.89 us, 3.5x an element-wise
  /// kernel of that size, on a Zen 4 core.
  KOKKOS_INLINE_FUNCTION void operator()(index_type k) const {
    const index_type cols = ext[N - 1];
    index_type row = k, c0 = 0;
    if (runs_per_row != 1) {
      row = k / runs_per_row;
      c0 = (k - row * runs_per_row) * run;
    }
    const index_type len = cols - c0 < run ? cols - c0 : run;
    index<N> i;
    i[N - 1] = c0;
    for (int d = N - 2; d > 0; --d) {
      const index_type q = row / ext[d];
      i[d] = row - q * ext[d];
      row = q;
    }
    if constexpr (N >= 2) i[0] = row;
    const S* from = &src.at(i);
    D* to = &dst.at(i);
    for (index_type j = 0; j < len; ++j) to[j] = static_cast<D>(from[j]);
  }
  /// The iterations of a copy of extent x (size > 0) in runs of up to `run_max` elements
  /// (1: one per element), and the functor's run for them.
  static index_type iterations(const extent<N>& x, index_type run_max) {
    const index_type cols = x[N - 1];
    return x.size() / cols * ((cols + run_max - 1) / run_max);
  }
  /// Sets run and runs_per_row for `iters` iterations over ext (a multiple of its rows, as
  /// iterations() gives): runs_per_row = iters / rows, run = ceil(cols / runs_per_row).
  void split(index_type iters) {
    const index_type cols = ext[N - 1];
    runs_per_row = iters / (ext.size() / cols);
    run = (cols + runs_per_row - 1) / runs_per_row;
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
/// Cost: one Kokkos launch on the default execution space reading and writing every element
/// once; on CPUs each iteration copies a run of up to impl::copy_run_elements (4096) elements
/// of a row (a 256 x 256 float copy within 1.1x Kokkos::deep_copy on a Zen 4 core,
/// bench-overhead), on GPUs one element per thread.
/// Source: C++ AMP's concurrency::copy.
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
  // CPUs: runs of a row per iteration; GPUs: an element per thread (coalesced).
  constexpr bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, execution_space::memory_space>::accessible;
  using functor = impl::copy_runs<const ST, DT, N>;
  functor f{sr, dst.ref(), src.extent};
  const index_type iters = functor::iterations(src.extent, host ? impl::copy_run_elements : 1);
  f.split(iters);
  Kokkos::parallel_for(
      "tessera::copy",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<index_type>>(0, iters), f);
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
  if constexpr (std::is_same_v<std::remove_cvref_t<D>, array<T, N>>) {
    // An array: written through its host mirror (the array's own memory on host backends),
    // without a staged array (an allocation, a fill and a copy kernel per call).
    impl::require_runtime("tessera::copy(first, last, dst)");
    Kokkos::fence();  // earlier kernels may still read or write dst
    auto h = Kokkos::create_mirror_view(dst.view());
    T* const p = h.data();
    for (index_type k = 0; k < n; ++k, ++first) p[k] = static_cast<T>(*first);
    Kokkos::deep_copy(dst.view(), h);
  } else {
    array<T, N> staged(dst.extent, first, last);
    copy(staged, dst);
  }
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
