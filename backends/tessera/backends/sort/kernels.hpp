/// \file sort/kernels.hpp
/// \brief The kernels of the Tier 1 sort (backends/sort.hpp): the GPU mapping's tile rank sort
///        and per-element merge, and the CPU family's tile sort and merge-path blocks.
///        Planned by codegen/passes/sort.hpp.
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/host/sort.hpp>
#include <tessera/dsl/expr/ops.hpp>

#include <algorithm>
#include <functional>
#include <type_traits>

namespace tessera::backends::impl {

/// The order a comparator gives arithmetic keys: 1 for `a < b` (tessera::less, std::less), -1
/// for `a > b` (greater), 0 for any other comparator.
template <class Comp>
inline constexpr int sort_order_of = 0;
template <class T>
inline constexpr int sort_order_of<tessera::less<T>> = 1;
template <class T>
inline constexpr int sort_order_of<std::less<T>> = 1;
template <class T>
inline constexpr int sort_order_of<tessera::greater<T>> = -1;
template <class T>
inline constexpr int sort_order_of<std::greater<T>> = -1;

/// less and greater on floating-point keys as a strict weak order with NaNs: a NaN is greater
/// than every number and equivalent to every NaN (so `less` puts NaNs last and `greater`
/// first, in their original order, on every backend: `<` alone is no order with NaNs, and
/// the rank sorts and merges need one to place every element exactly once).
template <bool Descending>
struct nan_ordered {
  template <class T>
  KOKKOS_INLINE_FUNCTION constexpr bool operator()(const T& a, const T& b) const {
    if constexpr (Descending)
      return a > b || (a != a && b == b);
    else
      return a < b || (b != b && a == a);
  }
};
/// The comparator a sort of T with Comp runs: nan_ordered for floating-point less and greater,
/// Comp itself otherwise.
template <class T, class Comp>
using sort_comparator_t =
    std::conditional_t<std::is_floating_point_v<T> && sort_order_of<Comp> != 0,
                       nan_ordered<(sort_order_of<Comp> < 0)>, Comp>;
template <class T, class Comp>
sort_comparator_t<T, Comp> sort_comparator(const Comp& comp) {
  if constexpr (std::is_same_v<sort_comparator_t<T, Comp>, Comp>)
    return comp;
  else
    return {};
}
template <bool D>
inline constexpr int sort_order_of<nan_ordered<D>> = D ? -1 : 1;

/// True when T sorted with Comp can take the CPU radix sort.
template <class T, class Comp>
inline constexpr bool radix_sortable = sort_order_of<Comp> != 0 && host::radix_key_type<T>;

/// GPU mapping: one team sorts one tile. The members load the tile into team scratch; after a
/// barrier each member places element r at its rank, the number of elements ordered before it
/// (those less than it, and the equivalent ones before it: stable). O(tile) comparisons per
/// element, no barrier between the placements, any tile size.
template <class Space, class X, class T, class Comp>
struct sort_tile_ranks {
  using member = typename Kokkos::TeamPolicy<Space>::member_type;
  X src;
  T* out;
  index_type n, tile;
  Comp comp;
  int level;

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    const index_type i0 = index_type(m.league_rank()) * tile;
    const index_type len = n - i0 < tile ? n - i0 : tile;
    T* s = static_cast<T*>(
        m.team_scratch(level).get_shmem_aligned(std::size_t(tile) * sizeof(T), alignof(T)));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, len),
                         [&](index_type r) { s[r] = T(src(i0 + r)); });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, len), [&](index_type r) {
      const T x = s[r];
      index_type rank = 0;
      for (index_type j = 0; j < r; ++j) rank += comp(x, s[j]) ? 0 : 1;
      for (index_type j = r + 1; j < len; ++j) rank += comp(s[j], x) ? 1 : 0;
      out[i0 + rank] = x;
    });
  }
};

/// GPU mapping: one merge pass, one element per iteration. Runs of w sorted elements in `in`
/// pair up (A = run 2p, B = run 2p + 1); an element of A lands after the elements of B less
/// than it, an element of B after the elements of A not greater than it (stable).
template <class T, class Comp>
struct sort_merge_ranks {
  const T* in;
  T* out;
  index_type n, w;
  Comp comp;

  KOKKOS_INLINE_FUNCTION void operator()(index_type i) const {
    const index_type a0 = i / (2 * w) * (2 * w);
    const index_type a1 = a0 + w < n ? a0 + w : n;
    const index_type b1 = a1 + w < n ? a1 + w : n;
    const T x = in[i];
    if (i < a1) {
      index_type lo = a1, hi = b1;
      while (lo < hi) {
        const index_type mid = lo + (hi - lo) / 2;
        if (comp(in[mid], x))
          lo = mid + 1;
        else
          hi = mid;
      }
      out[i + (lo - a1)] = x;
    } else {
      index_type lo = a0, hi = a1;
      while (lo < hi) {
        const index_type mid = lo + (hi - lo) / 2;
        if (comp(x, in[mid]))
          hi = mid;
        else
          lo = mid + 1;
      }
      out[(i - a1) + lo] = x;
    }
  }
};

/// CPUs: one iteration sorts one tile [t * tile, ...) of src into out (the radix sort using
/// scratch's same range, or std::stable_sort). Host code: run on host-accessible spaces only.
template <class X, class T, class Comp>
struct sort_tiles_host {
  X src;
  T* out;
  T* scratch;
  index_type n, tile;
  Comp comp;
  bool radix;

  void operator()(index_type t) const {
    const index_type i0 = t * tile, i1 = i0 + tile < n ? i0 + tile : n;
    for (index_type q = i0; q < i1; ++q) out[q] = T(src(q));
    if constexpr (radix_sortable<T, Comp>) {
      if (radix) {
        host::radix_sort<(sort_order_of<Comp> < 0)>(out + i0, scratch + i0, i1 - i0);
        return;
      }
    }
    std::stable_sort(out + i0, out + i1, comp);
  }
};

/// CPUs: one merge pass in blocks of `block` output elements, `per_pair` blocks per pair of
/// runs of w; each block finds where it starts and ends in both runs (merge path) and merges
/// in order. Host code.
template <class T, class Comp>
struct sort_merge_blocks {
  const T* in;
  T* out;
  index_type n, w, block, per_pair;
  Comp comp;

  void operator()(index_type it) const {
    const index_type a0 = it / per_pair * (2 * w);
    const index_type a1 = a0 + w < n ? a0 + w : n, b1 = a1 + w < n ? a1 + w : n;
    const index_type d0 = it % per_pair * block, total = b1 - a0;
    if (d0 >= total) return;
    const index_type d1 = d0 + block < total ? d0 + block : total;
    host::merge_range(in + a0, a1 - a0, in + a1, b1 - a1, d0, d1, out + a0 + d0, comp);
  }
};

}  // namespace tessera::backends::impl
