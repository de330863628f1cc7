/// \file tile_launch.hpp
/// \brief Lowering of Tier 0 tile kernels onto Kokkos: `parallel_for_each` (TeamPolicy, one
///        team per tile, tile_static in team scratch), its checked mode, `explain`, and the
///        element-parallel `parallel_for_each(extent, f(index))` (Range/MDRange policy).
#pragma once

#include <tessera/backends/checked.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/tile_group.hpp>

#include <climits>
#include <string>
#include <vector>

namespace tessera {

/// Tag selecting checked mode: `parallel_for_each(tessera::checked, te, kernel)`.
struct checked_t {
  explicit constexpr checked_t() = default;
};
inline constexpr checked_t checked{};

namespace backends::impl {

using team_policy = Kokkos::TeamPolicy<Kokkos::DefaultExecutionSpace>;

template <int... T>
std::string tile_name() {
  std::string s = "<";
  int k = 0;
  ((s += (k++ ? "," : ""), s += std::to_string(T)), ...);
  return s + ">";
}

template <class F, int... T>
void check_kernel_signature() {
  static_assert(std::is_invocable_v<const F&, tile_group<T...>&>,
                "parallel_for_each(tiled_extent<T...>, kernel): the kernel must be callable as "
                "kernel(tile_group<T...>&) with the same tile sizes (and rank) as the extent");
}

template <int... T>
void check_even(const char* fn, const tiled_extent<T...>& te) {
  for (int d = 0; d < te.rank; ++d)
    if (te[d] < 0) throw shape_error(std::string(fn) + ": negative extent " + to_string(te));
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

inline std::size_t scratch_max(int level) {
  return static_cast<std::size_t>(team_policy::scratch_size_max(level));
}

/// Planning pass: runs the kernel body once on the host with a planning context and turns what
/// it recorded into a kernel_plan (buffers, scratch level and offsets, barriers, mapping).
/// \throws resource_error when the tile_static total exceeds scratch level 1, or the tile has
///         more logical threads than one team can hold.
template <int... T, class F>
codegen::kernel_plan plan_tile_kernel(const char* fn, const tiled_extent<T...>& te,
                                      const F& kernel) {
  constexpr int rank = sizeof...(T);
  constexpr int L = (T * ...);
  using traits = default_backend_traits;
  planning_context ctx;
  tile_group<T...> g(&ctx, index<rank>(), index<rank>());
  kernel(g);
  const std::size_t bytes = g.scratch_bytes();

  codegen::kernel_plan p;
  p.name = std::string("parallel_for_each") + tile_name<T...>();
  p.backend = traits::name;
  p.tile = {T...};
  for (int d = 0; d < rank; ++d) p.tiles.push_back(te[d] / p.tile[d]);
  p.league_size = te.tile_count();
  p.logical_threads = L;
  p.team_size = traits::team_size(L);
  p.vector_length = 1;
  p.mapping = traits::thread_per_logical
                  ? "one team member per logical thread (TeamThreadRange over the tile)"
                  : "one team member per tile; TeamThreadRange over dim 0, ThreadVectorRange "
                    "over the last dim";
  int level = 0;
  if (bytes > scratch_max(0)) level = 1;
  if (bytes > scratch_max(1))
    throw resource_error(std::string(fn) + ": tile " + tile_name<T...>() + " needs " +
                         std::to_string(bytes) + " bytes of tile_static memory per tile; the " +
                         traits::name + " backend allows at most " +
                         std::to_string(scratch_max(0)) + " (scratch level 0) or " +
                         std::to_string(scratch_max(1)) + " (level 1)");
  p.scratch_bytes[level] = bytes;
  std::size_t off = 0;
  for (const auto& d : ctx.statics) {
    const std::size_t align = d.align > 64 ? d.align : 64;
    off = (off + align - 1) / align * align;
    p.buffers.push_back({d.name, d.type,
                         level ? codegen::memory_space_kind::scratch_level1
                               : codegen::memory_space_kind::scratch_level0,
                         d.bytes, off, "tile_static"});
    off += d.bytes;
  }
  for (const auto& d : ctx.locals)
    p.buffers.push_back(
        {d.name, d.type, codegen::memory_space_kind::private_memory, d.bytes, 0, "tile_local"});
  p.phases = ctx.phase + 1;
  for (const auto& b : ctx.barriers)
    p.barriers.push_back({b.after_phase, to_string(b.fence), b.reason, false});
  p.notes.push_back("global memory: the arrays and views the kernel captures");
  return p;
}

/// The Kokkos functor of a tile launch: one call per team = per tile.
template <class F, int... T>
struct tile_functor {
  static constexpr int rank = sizeof...(T);
  F kernel;
  extent<rank> tiles;  // tiles per dimension
  int level;
  std::size_t bytes;

  // flatten: the kernel body and everything it calls are inlined here, where the group's host
  // context is visibly null, so every checked-mode hook folds away and the phases vectorize.
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(
      const team_policy::member_type& team) const {
    constexpr index_type dims[rank] = {T...};
    index_type r = team.league_rank();
    index<rank> tile, origin;
    for (int d = rank - 1; d >= 0; --d) {
      tile[d] = r % tiles[d];
      r /= tiles[d];
      origin[d] = tile[d] * dims[d];
    }
    char* scratch = nullptr;
    if (bytes) {
      // Over-allocated by 64 bytes so the base can be aligned for vector loads.
      auto raw = reinterpret_cast<std::uintptr_t>(team.team_scratch(level).get_shmem(bytes + 64));
      scratch = reinterpret_cast<char*>((raw + 63) & ~std::uintptr_t{63});
    }
    tile_group<T...> g(team, scratch, tile, origin);
    kernel(g);
  }
};

}  // namespace backends::impl

/// Runs `kernel(tile_group<T...>& g)` once per tile of `te` (C++ AMP's tiled
/// parallel_for_each), lowered onto a Kokkos TeamPolicy: league size = number of tiles, team
/// size and vector length from the backend traits, tile_static bytes per team found by a
/// planning pass on the host and requested as team scratch (level 0, else level 1).
/// \param te [in] tiled extent; every extent must be a multiple of its tile size (use pad() or
///           truncate()); an empty extent is a no-op
/// \param kernel [in] callable as kernel(tile_group<T...>&); captures by value
/// \throws shape_error uneven or negative extent (before any kernel runs)
/// \throws resource_error scratch above the backend's limit, tile larger than a team
/// Source: C++ AMP parallel_for_each(tiled_extent, ...) (seeds 000, 002, 003).
template <int... T, class F>
void parallel_for_each(const tiled_extent<T...>& te, const F& kernel) {
  backends::impl::check_kernel_signature<F, T...>();
  backends::impl::check_even("parallel_for_each", te);
  if (te.size() == 0) return;
  const codegen::kernel_plan plan =
      backends::impl::plan_tile_kernel("parallel_for_each", te, kernel);
  const int level = plan.scratch_bytes[1] ? 1 : 0;
  const std::size_t bytes = plan.scratch_bytes[level];
  using functor = backends::impl::tile_functor<F, T...>;
  functor fn{kernel, te.tile_counts(), level, bytes};
  backends::impl::team_policy policy(static_cast<int>(plan.league_size), plan.team_size,
                                     plan.vector_length);
  if (bytes) policy.set_scratch_size(level, Kokkos::PerTeam(bytes + 64));
  if constexpr (default_backend_traits::thread_per_logical) {
    const int max = policy.team_size_max(fn, Kokkos::ParallelForTag());
    if (plan.team_size > max)
      throw resource_error("parallel_for_each: tile " + backends::impl::tile_name<T...>() +
                           " has " + std::to_string(plan.team_size) +
                           " logical threads; this backend's teams hold at most " +
                           std::to_string(max) + " for this kernel");
  }
  Kokkos::parallel_for(plan.name, policy, fn);
}

/// Checked mode: runs every tile on the host, logical threads one after another, and checks
/// every tile_static access (see checked.hpp for the rule). Same launch checks as the fast
/// mode. The kernel's global data must be host-accessible (always true on host backends).
/// \throws race_error, uninitialized_read_error, bounds_error (first finding, tile order)
template <int... T, class F>
void parallel_for_each(checked_t, const tiled_extent<T...>& te, const F& kernel) {
  constexpr int rank = sizeof...(T);
  backends::impl::check_kernel_signature<F, T...>();
  backends::impl::check_even("parallel_for_each(checked)", te);
  if (te.size() == 0) return;
  (void)backends::impl::plan_tile_kernel("parallel_for_each(checked)", te, kernel);
  Kokkos::fence();
  backends::impl::checked_context ctx({T...});
  constexpr index_type dims[rank] = {T...};
  const extent<rank> counts = te.tile_counts();
  for (index_type r = 0; r < counts.size(); ++r) {
    index<rank> tile, origin;
    index_type q = r;
    for (int d = rank - 1; d >= 0; --d) {
      tile[d] = q % counts[d];
      q /= counts[d];
      origin[d] = tile[d] * dims[d];
    }
    ctx.begin_tile(std::vector<index_type>(tile.v, tile.v + rank));
    tile_group<T...> g(&ctx, tile, origin);
    kernel(g);
    ctx.end_tile();
  }
}

/// The kernel plan of a tile launch as text: league/team/vector sizes, scratch bytes per level,
/// each tile_static (scratch L0/L1) and tile_local (private) buffer, and every barrier.
/// Nothing runs on the device. \throws as parallel_for_each
template <int... T, class F>
std::string explain(const tiled_extent<T...>& te, const F& kernel) {
  backends::impl::check_kernel_signature<F, T...>();
  backends::impl::check_even("explain", te);
  return codegen::to_string(backends::impl::plan_tile_kernel("explain", te, kernel));
}

/// Element-parallel launch: `kernel(index<N>)` once per point of `e` (C++ AMP's untiled
/// parallel_for_each), on a Kokkos RangePolicy (rank 1) or MDRangePolicy (ranks 2, 3).
/// An empty extent is a no-op. \throws shape_error on a negative extent
template <int N, class F>
void parallel_for_each(const extent<N>& e, const F& kernel) {
  static_assert(std::is_invocable_v<const F&, const index<N>&>,
                "parallel_for_each(extent<N>, kernel): the kernel must be callable as "
                "kernel(index<N>)");
  for (int d = 0; d < N; ++d)
    if (e[d] < 0) throw shape_error("parallel_for_each: negative extent " + to_string(e));
  if (e.size() == 0) return;
  using exec = Kokkos::DefaultExecutionSpace;
  if constexpr (N == 1) {
    Kokkos::parallel_for(
        "tessera::parallel_for_each<1>",
        Kokkos::RangePolicy<exec, Kokkos::IndexType<index_type>>(0, e[0]),
        KOKKOS_LAMBDA(index_type i) { kernel(index<1>(i)); });
  } else if constexpr (N == 2) {
    Kokkos::parallel_for(
        "tessera::parallel_for_each<2>",
        Kokkos::MDRangePolicy<exec, Kokkos::Rank<2>, Kokkos::IndexType<index_type>>({0, 0},
                                                                                    {e[0], e[1]}),
        KOKKOS_LAMBDA(index_type i, index_type j) { kernel(index<2>(i, j)); });
  } else {
    Kokkos::parallel_for(
        "tessera::parallel_for_each<3>",
        Kokkos::MDRangePolicy<exec, Kokkos::Rank<3>, Kokkos::IndexType<index_type>>(
            {0, 0, 0}, {e[0], e[1], e[2]}),
        KOKKOS_LAMBDA(index_type i, index_type j, index_type k) { kernel(index<3>(i, j, k)); });
  }
}

}  // namespace tessera
