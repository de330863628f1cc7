/// \file sort.hpp
/// \brief Tier 1 sorts of one-dimensional data: `sort(a, comp)` orders an array or array_view
///        in place, `sorted(e, comp)` returns the elements of any 1-D readable or expression in
///        order (element-wise producers are read inside the first kernel). Stable on every
///        backend. Tile sorts, then merge passes: codegen/passes/sort.hpp.
#pragma once

#include <tessera/backends/scan.hpp>
#include <tessera/backends/sort/kernels.hpp>
#include <tessera/backends/temporary_pool.hpp>
#include <tessera/codegen/passes/sort.hpp>
#include <tessera/dsl/runtime.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

namespace backends::impl {

template <class Comp>
std::string sort_order_name() {
  if constexpr ((sort_order_of<Comp>) > 0)
    return "ascending (less)";
  else if constexpr (sort_order_of<Comp> < 0)
    return "descending (greater)";
  else
    return "a user comparator";
}

template <class Space, class T, class Comp>
std::vector<codegen::kernel_plan> sort_kernel_plans(const Space&, index_type n, bool in_place) {
  codegen::sort_desc d;
  d.dtype = tessera::impl::scalar_type_name<T>();
  d.elem_bytes = sizeof(T);
  d.elements = n;
  d.order = sort_order_name<Comp>();
  d.radix_keys = radix_sortable<T, Comp>;
  d.in_place = in_place;
  return codegen::plan_sort(d, backend<Space>::make_target());
}

/// sort_kernel_plans, this thread's last ones for the same Space, T, Comp, size, mode and
/// concurrency (last_plan): a repeated sort of one size costs a comparison, not a planning.
/// The reference stays valid until this thread's next call with the same Space, T, Comp.
template <class Space, class T, class Comp>
const std::vector<codegen::kernel_plan>& cached_sort_kernel_plans(const Space& exec, index_type n,
                                                                  bool in_place) {
  struct tag;
  const std::array<std::int64_t, 3> key = {n, in_place ? 1 : 0,
                                           tessera::impl::concurrency_of(exec)};
  return last_plan<tag, std::vector<codegen::kernel_plan>>(
      key, [&] { return sort_kernel_plans<Space, T, Comp>(exec, n, in_place); });
}

template <class T, class Comp>
void check_sort_types() {
  static_assert(std::is_trivially_copyable_v<T>,
                "tessera::sort: the element type must be trivially copyable");
  static_assert(std::is_invocable_r_v<bool, const Comp&, const T&, const T&>,
                "tessera::sort: comp must be callable in kernels as comp(T, T) -> bool");
}

/// Runs the sort planned as ks of source x (a raw_operand, readable or expression_reader) of n
/// elements into `fin` (contiguous), with `tmp` (n elements) as the other merge buffer.
template <class Space, class X, class T, class Comp>
void run_sort(const Space& exec, const std::vector<codegen::kernel_plan>& ks, const X& x, T* fin,
              T* tmp, index_type n, const Comp& comp) {
  using range = Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>;
  const codegen::kernel_plan& k = ks.at(0);
  const int passes = ks.size() > 1 ? ks[1].sort_merge_passes : 0;
  const index_type tile = k.sort_tile;
  T* cur = passes % 2 == 0 ? fin : tmp;
  T* other = passes % 2 == 0 ? tmp : fin;
  constexpr bool host = host_readable_space<Space>;
  const profiling_region region("tessera::sort");
  if (k.scratch_bytes[0] + k.scratch_bytes[1] > 0) {
    const sort_tile_ranks<Space, X, T, Comp> f{x, cur, n, tile, comp, k.scratch_level};
    Kokkos::TeamPolicy<Space> policy(exec, int(k.league_size), k.team_size);
    policy.set_scratch_size(k.scratch_level,
                            Kokkos::PerTeam(k.scratch_bytes[k.scratch_level] + alignof(T)));
    Kokkos::parallel_for(k.label, policy, f);
  } else if constexpr (host) {
    const sort_tiles_host<X, T, Comp> f{x, cur, other, n, tile, comp, k.sort_radix_bits > 0};
    Kokkos::parallel_for(k.label, range(exec, 0, k.league_size), f);
  } else {
    throw plan_error("tessera: sort plan '" + k.name + "' sorts tiles on the host, but " +
                     k.backend + "'s memory is not host-accessible");
  }
  if (passes > 0) {
    const codegen::kernel_plan& m = ks[1];
    index_type w = tile;
    for (int p = 0; p < passes; ++p, w *= 2) {
      const index_type pairs = (n + 2 * w - 1) / (2 * w);
      if (m.sort_merge_block == 1) {
        Kokkos::parallel_for(m.label, range(exec, 0, n),
                             sort_merge_ranks<T, Comp>{cur, other, n, w, comp});
      } else if constexpr (host) {
        const index_type per_pair = (2 * w + m.sort_merge_block - 1) / m.sort_merge_block;
        Kokkos::parallel_for(
            m.label, range(exec, 0, pairs * per_pair),
            sort_merge_blocks<T, Comp>{cur, other, n, w, m.sort_merge_block, per_pair, comp});
      } else {
        throw plan_error("tessera: sort plan '" + m.name + "' merges on the host, but " +
                         m.backend + "'s memory is not host-accessible");
      }
      std::swap(cur, other);
    }
  }
  tessera::impl::fence(exec);
}

/// sort and sorted: checks (before anything runs), buffers, launch. `dst` is e itself for
/// sort (in place) or a new array of e's extent.
template <class Space, class E, class D, class Comp>
void sort_into(const Space& exec, const char* fn, const E& e, const D& dst, const Comp& comp,
               bool in_place) {
  using T = typename D::value_type;
  check_sort_types<T, Comp>();
  static_assert(E::rank == 1 && D::rank == 1, "tessera::sort: sorts one-dimensional data");
  static_assert(!std::is_const_v<T>, "tessera::sort: the destination is read-only");
  const extent<1> x = checked_extent(fn, e);
  tessera::impl::require_runtime(fn);
  const index_type n = x[0];
  if (n == 0) return;
  if constexpr (requires { dst.sync_state(); })
    if (auto* st = dst.sync_state()) st->to_device(true);
  const auto& ks = cached_sort_kernel_plans<Space, T, Comp>(exec, n, in_place);
  // The merge passes' other buffer; the destination itself is the first (a rank-1 array or
  // view is contiguous: strided_ref's last dimension always is).
  // (From the temporary pool: back to it once run_sort has fenced its kernels.)
  auto& pool = temporary_pool<typename Space::memory_space>::instance();
  auto tmp = pool.take(std::size_t(n) * sizeof(T));
  T* const out = dst.ref().p;
  const auto order = sort_comparator<T>(comp);
  with_source(exec, e, [&](const auto& src) {
    run_sort(exec, ks, src, out, reinterpret_cast<T*>(tmp.data()), n, order);
  });
  pool.give_back(std::move(tmp));
}

}  // namespace backends::impl

/// Sorts the elements of `a` in place so that comp(a[i+1], a[i]) is false for every i
/// (ascending with the default tessera::less<>); stable: equivalent elements keep their
/// order (std::stable_sort).
/// \param exec [in] the execution space instance
/// \param a [in,out] array<T,1> or array_view<T,1> (a section or projection too), T trivially
///        copyable
/// \param comp a strict weak order callable in kernels as comp(T, T) -> bool: tessera::less<>,
///        tessera::greater<>, or a user functor (std::less works on CPU backends only). On
///        floating-point data less and greater order NaNs as greater than every number: last
///        ascending, first descending, in their original order. A comparator that is not a
///        strict weak order gives an unspecified result.
/// \throws shape_error on a negative extent; usage_error when Kokkos is not running — before
///         anything runs (a untouched)
/// Cost: n elements of temporary memory, tile sorts (CPUs: one tile
/// per thread, an LSD radix sort over the bytes of integer, float and double keys ordered by
/// less or greater, std::stable_sort otherwise; GPUs: tiles of 256 ranked in team scratch),
/// then ceil(log2(tiles)) merge passes, each reading and writing n elements. See plan_sort.
/// Source: C++ AMP sort samples (bitonic sort in tile_static memory), C++ std::stable_sort.
template <launchable_space Space, class D, class Comp = tessera::less<>>
requires impl::is_array_like<D>::value void sort(const Space& exec, const D& a,
                                                 const Comp& comp = {}) {
  backends::impl::sort_into(exec, "tessera::sort", a, a, comp, true);
}
template <class D, class Comp = tessera::less<>>
requires impl::is_array_like<D>::value void sort(const D& a, const Comp& comp = {}) {
  sort(tessera::impl::default_instance(), a, comp);
}

/// The elements of `e` in the order of sort(a, comp), as a new array<T,1> (T: e's element
/// type); e is any one-dimensional array, array_view, user readable or array expression
/// (element-wise producers are read by the tile sort: `sorted(abs(a - b))` reads a and b once).
/// \throws as sort; nothing runs on failure
template <launchable_space Space, backends::impl::scan_source E, class Comp = tessera::less<>>
auto sorted(const Space& exec, const E& e, const Comp& comp = {}) {
  using T = backends::impl::source_value_t<E>;
  static_assert(E::rank == 1, "tessera::sorted: sorts one-dimensional data");
  tessera::impl::require_runtime("tessera::sorted");
  array<T, 1> out(backends::impl::checked_extent("tessera::sorted", e));
  backends::impl::sort_into(exec, "tessera::sorted", e, out, comp, false);
  return out;
}
template <backends::impl::scan_source E, class Comp = tessera::less<>>
auto sorted(const E& e, const Comp& comp = {}) {
  return sorted(tessera::impl::default_instance(), e, comp);
}

/// The plan of sorted(e, comp) (and of sort(e, comp) when in_place) on the default execution
/// space: e's non-elementwise parts, the tile sort and the merge passes. Nothing runs.
/// \throws as sort
template <backends::impl::scan_source E, class Comp = tessera::less<>>
codegen::program_plan plan_sort(const E& e, const Comp& = {}, bool in_place = false) {
  using T = backends::impl::source_value_t<E>;
  static_assert(E::rank == 1, "tessera::plan_sort: sorts one-dimensional data");
  constexpr const char* fn = "tessera::plan_sort";
  auto [p, x] = backends::impl::source_plan(fn, e);
  if (x.size() == 0) return p;
  for (auto& k : backends::impl::sort_kernel_plans<execution_space, T, Comp>(
           tessera::impl::default_instance(), x[0], in_place))
    p.kernels.push_back(std::move(k));
  return p;
}
/// The same plan as text.
template <backends::impl::scan_source E, class Comp = tessera::less<>>
std::string explain_sort(const E& e, const Comp& comp = {}, bool in_place = false) {
  return codegen::to_string(plan_sort(e, comp, in_place));
}

}  // namespace tessera
