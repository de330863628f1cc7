/// \file tile_launch.hpp
/// \brief Tier 0 launches, the public API: `parallel_for_each(tiled_extent, kernel)` on a Kokkos
///        TeamPolicy (one team per tile, tile_static in team scratch), its checked mode,
///        `explain`/`plan` of a launch, and the element-parallel `parallel_for_each(extent,
///        f(index))`. Generic over the execution space: the backend (backends/<name>/) supplies
///        the tile mapping and limits.
///
/// Every launch: (1) a planning pass runs the body once on the host, for_each bodies skipped,
/// recording tile_static/tile_local buffers and barriers; (2) the code generator turns that
/// into the kernel plan (codegen/passes/tile_kernel.hpp) — cached per kernel type and
/// recording; (3) the first launch of each kernel type also makes a validation dry run: one
/// tile with every logical thread, global writes discarded, which throws usage_error for a
/// barrier, tile_static allocation or for_each inside for_each, and bounds_error for an
/// out-of-bounds global access; (4) the plan is launched: league, team size, scratch level and
/// bytes come from it. The pieces: tile_launch/kernel_checks.hpp, tile_launch/plan.hpp,
/// tile_launch/functor.hpp.
#pragma once

#include <tessera/backends/tile_launch/functor.hpp>
#include <tessera/backends/tile_launch/kernel_checks.hpp>
#include <tessera/backends/tile_launch/per_thread.hpp>
#include <tessera/backends/tile_launch/plan.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/runtime.hpp>

#include <string>
#include <vector>

namespace tessera {

/// Tag selecting checked mode: `parallel_for_each(tessera::checked, te, kernel)` throws the
/// first finding; `tessera::checked_collect(findings)` collects every finding (up to a cap)
/// and returns normally.
struct checked_t {
  explicit constexpr checked_t() = default;
  std::vector<finding>* out = nullptr;  ///< collect into this (nullptr: throw the first)
  std::size_t max_findings = 100;
};
inline constexpr checked_t checked{};
/// Checked mode that collects every finding (races, bounds, uninitialized reads) into `out`,
/// at most `max_findings`, instead of throwing the first; the kernel still runs to the end of
/// each tile (a tile stops early at an out-of-bounds access).
inline checked_t checked_collect(std::vector<finding>& out, std::size_t max_findings = 100) {
  checked_t c;
  c.out = &out;
  c.max_findings = max_findings;
  return c;
}

/// Runs `kernel(tile_group<T...>& g)` once per tile of `te` (C++ AMP's tiled
/// parallel_for_each), lowered onto a Kokkos TeamPolicy of execution space instance `exec`:
/// league size = number of tiles, team size from the backend's mapping (1 on CPUs, one member
/// per logical thread on GPUs), tile_static bytes per team found by the planning pass and
/// requested as team scratch (level 0, else level 1). Asynchronous on `exec` (array_views are
/// copied back by synchronize() or their destruction).
/// \param exec [in] execution space instance (e.g. a CUDA stream's; any launchable_space);
///        the default overload uses the default execution space
/// \param te [in] tiled extent (`e.tile<T...>()`, or `dom.tile<T...>()` of a sub_domain, whose
///           tiles start at its origin: `interior(A.extent, R).tile<16, 16>().pad()`); every
///           extent must be a multiple of its tile size (use pad() or truncate()); an empty
///           extent is a no-op
/// \param kernel [in] TESSERA_KERNEL(tile_group<T...>& g) { ... } or a functor with a
///        TESSERA_INLINE call operator; captures by value. On another execution space than the
///        default, the kernel takes basic_tile_group<Space, T...>& (or auto&).
/// \throws shape_error uneven or negative extent; usage_error misuse found by the validation
///         dry run (barrier, tile_static or for_each inside for_each), Kokkos not running;
///         bounds_error an out-of-bounds global access in the dry run; resource_error scratch
///         above the backend's limit, tile larger than a team, tile_local above the limit.
///         All before any kernel runs.
/// Source: C++ AMP parallel_for_each(tiled_extent, ...) (seeds 000, 002, 003).
///
/// **Per-thread form** (C++ AMP's): `kernel(const tiled_index<T...>& t)` runs once per logical
/// thread, declares tile_static storage with `auto s = t.tile_static<float[16][16]>();` and
/// waits at `t.barrier.wait()` (or a fence variant) in control flow every logical thread of the
/// tile follows. GPU mapping: native (one team member per logical thread, team barriers). CPU
/// backends: the tile's logical threads run as fibers (Boost.Context) on one member, switching
/// at barriers: portable and exact, but each logical thread runs scalar code; the phase form is
/// the fast CPU path (explain() says which form runs). The first launch of each per-thread
/// kernel type runs one tile on the host (global writes discarded) to plan its tile_static
/// bytes and validate it. Name the parameter's type (a generic `auto` parameter is taken as a
/// phase kernel). 	hrows usage_error also for a divergent barrier or differing declarations
/// found by that run, and when the build has no Boost.Context (per-thread form only)
template <launchable_space Space, int... T, class F>
void parallel_for_each(const Space& exec, const tiled_extent<T...>& te, const F& kernel) {
  using space = Space;
  if constexpr (backends::impl::is_per_thread_kernel<F, space, T...>) {
    backends::impl::check_device_kernel<F>();
    tessera::impl::require_runtime("parallel_for_each");
    backends::impl::check_even("parallel_for_each", te);
    if (te.size() == 0) return;
    const auto plan = backends::impl::plan_per_thread<space>("parallel_for_each", te, kernel);
    backends::impl::profiling_region region(plan->label);
    backends::impl::launch_per_thread(exec, te, kernel, *plan);
  } else {
    backends::impl::check_kernel_signature<F, basic_tile_group<space, T...>>();
    tessera::impl::require_runtime("parallel_for_each");
    backends::impl::check_even("parallel_for_each", te);
    if (te.size() == 0) return;
    const auto& plan = backends::impl::plan_launch<space>("parallel_for_each", te, kernel, true);
    backends::impl::profiling_region region(plan.label);
    backends::impl::launch_planned(exec, te, kernel, plan);
  }
}
template <int... T, class F>
void parallel_for_each(const tiled_extent<T...>& te, const F& kernel) {
  parallel_for_each(tessera::impl::default_instance(), te, kernel);
}

/// Checked mode: runs every tile on the host, logical threads one after another, and checks
/// every tile_static and global (Tessera array / array_view) access against the race rule
/// (checked.hpp), bounds and initialization. The kernel's effects are kept (on GPU backends
/// the data goes through host copies). Same launch checks as the fast mode.
/// \throws race_error, uninitialized_read_error, bounds_error (first finding, tile order), or
///         collects them (checked_collect); usage_error for a barrier, tile_static or for_each
///         inside for_each
/// Per-thread kernels: every tile's logical threads run as fibers, switching at barriers; a
/// barrier some logical threads of a tile skip is a usage_error.
template <int... T, class F>
void parallel_for_each(checked_t mode, const tiled_extent<T...>& te, const F& kernel) {
  using space = execution_space;
  constexpr bool per_thread = backends::impl::is_per_thread_kernel<F, space, T...>;
  if constexpr (!per_thread)
    backends::impl::check_kernel_signature<F, basic_tile_group<space, T...>>();
  tessera::impl::require_runtime("parallel_for_each(checked)");
  backends::impl::check_even("parallel_for_each(checked)", te);
  if (te.size() == 0) return;
  backends::impl::checker_options opt;
  opt.collect = mode.out != nullptr;
  opt.out = mode.out;
  opt.max_findings = mode.max_findings;
  opt.fn = "parallel_for_each(checked)";
  if constexpr (per_thread) {
    (void)backends::impl::plan_per_thread<space>("parallel_for_each(checked)", te, kernel);
    backends::impl::run_per_thread_checker<space>(te, kernel, opt, nullptr);
  } else {
    (void)backends::impl::plan_launch<space>("parallel_for_each(checked)", te, kernel, false);
    backends::impl::run_checker<space>(te, kernel, opt);
  }
}

namespace backends::impl {
/// The plan of a tile launch of either form; `fn` names the caller in errors.
template <int... T, class F>
codegen::kernel_plan plan_of(const char* fn, const tiled_extent<T...>& te, const F& kernel) {
  using space = execution_space;
  if constexpr (is_per_thread_kernel<F, space, T...>) {
    tessera::impl::require_runtime(fn);
    check_even(fn, te);
    return *plan_per_thread<space>("parallel_for_each", te, kernel);
  } else {
    check_kernel_signature<F, basic_tile_group<space, T...>>();
    tessera::impl::require_runtime(fn);
    check_even(fn, te);
    return plan_launch<space>("parallel_for_each", te, kernel, true);
  }
}
}  // namespace backends::impl

/// The kernel plan of a tile launch as text: league/team/vector sizes, scratch bytes per level,
/// each tile_static (scratch level 0 or 1) and tile_local (private) buffer, and every barrier — the
/// plan parallel_for_each launches (a per-thread kernel's comes from the dry run of one tile,
/// and its mapping line says how its logical threads run). Nothing runs on the device.
/// \throws as parallel_for_each
template <int... T, class F>
std::string explain(const tiled_extent<T...>& te, const F& kernel) {
  return codegen::to_string(backends::impl::plan_of("explain", te, kernel));
}
/// The plan of a tile launch as a value (tests, tools).
template <int... T, class F>
codegen::kernel_plan plan(const tiled_extent<T...>& te, const F& kernel) {
  return backends::impl::plan_of("plan", te, kernel);
}

/// Element-parallel launch: `kernel(index<N>)` once per point of the sub-domain `dom` (C++
/// AMP's untiled parallel_for_each; `dom` may be a whole extent), on `exec`: GPU backends a
/// Kokkos RangePolicy (rank 1) or MDRangePolicy (ranks 2, 3) over the points; CPU backends a
/// RangePolicy over rows of the last dimension (rank 1: chunks of 4096 points) whose loops
/// vectorize. As in C++ AMP the points are independent: a point reading what another writes
/// is a race (CPU loops assume none). An empty extent is a no-op.
/// \param dom [in] the points: an extent<N> (from (0, ...)) or a sub_domain<N> (e.g.
///        `interior(A.extent, R)`: no point closer than R to an edge, so a radius-R stencil
///        needs no bounds tests)
/// \param kernel [in] TESSERA_KERNEL(const tessera::index<N>& idx) { ... } or a functor; idx
///        is the global index (origin included)
/// \throws shape_error on a negative extent; usage_error when Kokkos is not running
template <launchable_space Space, int N, class F>
void parallel_for_each(const Space& exec, const sub_domain<N>& dom, const F& kernel) {
  static_assert(std::is_invocable_v<const F&, const index<N>&>,
                "parallel_for_each(extent<N>, kernel): the kernel must be callable as "
                "kernel(index<N>)");
  backends::impl::check_device_kernel<F>();
  tessera::impl::require_runtime("parallel_for_each");
  const extent<N> e = dom.extent;
  for (int d = 0; d < N; ++d)
    if (e[d] < 0) throw shape_error("parallel_for_each: negative extent " + to_string(e));
  if (e.size() == 0) return;
  using space = Space;
  const std::string label = "tessera::parallel_for_each<" + std::to_string(N) + ">";
  backends::impl::profiling_region region(label);
  backends::impl::element_functor<F, N> fn{backends::impl::device_copy(kernel)};
  const index<N> o = dom.origin;
  if constexpr (!tessera::impl::tile_mapping<Space>::thread_per_logical) {
    // CPU backends: one iteration per row of the last dimension (rank 1: per chunk of 4096
    // elements), each a loop of its own in two copies, as tile kernels' phases: outside the
    // host executors no buffer has a hook, the compiler knows it, and the loop vectorizes
    // (Kokkos' per-element calls tested the hook flag at every access and stayed scalar).
    constexpr index_type chunk = 4096;
    const index_type cols = N == 1 ? chunk : e[N - 1];
    const index_type iterations = N == 1 ? (e[0] + chunk - 1) / chunk : e.size() / e[N - 1];
    backends::impl::launch(
        label, Kokkos::RangePolicy<space, Kokkos::IndexType<index_type>>(exec, 0, iterations),
        backends::impl::element_rows_functor<F, N>{fn.kernel, e, o, cols});
    return;
  }
  if constexpr (N == 1) {
    backends::impl::launch(
        label, Kokkos::RangePolicy<space, Kokkos::IndexType<index_type>>(exec, o[0], o[0] + e[0]),
        fn);
  } else if constexpr (N == 2) {
    Kokkos::parallel_for(
        label,
        Kokkos::MDRangePolicy<space, Kokkos::Rank<2>, Kokkos::IndexType<index_type>>(
            exec, {o[0], o[1]}, {o[0] + e[0], o[1] + e[1]}),
        fn);
  } else {
    Kokkos::parallel_for(
        label,
        Kokkos::MDRangePolicy<space, Kokkos::Rank<3>, Kokkos::IndexType<index_type>>(
            exec, {o[0], o[1], o[2]}, {o[0] + e[0], o[1] + e[1], o[2] + e[2]}),
        fn);
  }
}
template <launchable_space Space, int N, class F>
void parallel_for_each(const Space& exec, const extent<N>& e, const F& kernel) {
  parallel_for_each(exec, sub_domain<N>(e), kernel);
}
template <int N, class F>
void parallel_for_each(const sub_domain<N>& dom, const F& kernel) {
  parallel_for_each(tessera::impl::default_instance(), dom, kernel);
}
template <int N, class F>
void parallel_for_each(const extent<N>& e, const F& kernel) {
  parallel_for_each(tessera::impl::default_instance(), e, kernel);
}

}  // namespace tessera
