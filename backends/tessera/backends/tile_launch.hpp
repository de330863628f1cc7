/// \file tile_launch.hpp
/// \brief Tier 0 launches: `parallel_for_each(tiled_extent, kernel)` on a Kokkos TeamPolicy
///        (one team per tile, tile_static in team scratch), its checked mode, `explain`, and
///        the element-parallel `parallel_for_each(extent, f(index))`. Generic over the
///        execution space: the backend (backends/<name>/) supplies the tile mapping and limits.
///
/// Every launch: (1) a planning pass runs the body once on the host, for_each bodies skipped,
/// recording tile_static/tile_local buffers and barriers; (2) the code generator turns that
/// into the kernel plan (codegen/passes/tile_kernel.hpp) — cached per kernel type and
/// recording; (3) the first launch of each kernel type also makes a validation dry run: one
/// tile with every logical thread, global writes discarded, which throws usage_error for a
/// barrier, tile_static allocation or for_each inside for_each, and bounds_error for an
/// out-of-bounds global access; (4) the plan is launched: league, team size, scratch level and
/// bytes come from it.
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/checked.hpp>
#include <tessera/backends/kernels/team_policy.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/passes/tile_kernel.hpp>
#include <tessera/codegen/plan_cache.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/runtime.hpp>
#include <tessera/dsl/tile_group.hpp>

#include <climits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
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

namespace backends::impl {

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

/// While a fast launch copies its kernel: array_views it captures are made current on the
/// device (GPU backends; host backends share the caller's memory).
class device_capture final : public tessera::impl::capture_observer {
 public:
  tessera::impl::global_hook* on_capture(const tessera::impl::captured_buffer& b) override {
    if (b.sync) b.sync->to_device(!b.read_only);
    return nullptr;
  }
};
/// A copy of `kernel` as the device will run it (array_views synchronized to the device).
template <class F>
F device_copy(const F& kernel) {
  if constexpr (host_accessible_memory) {
    return kernel;
  } else {
    device_capture obs;
    tessera::impl::capture_scope scope(&obs);
    return F(kernel);
  }
}

/// The planning pass's recorder of this thread, reused across launches.
inline planning_context& planning_recorder() {
  static thread_local planning_context ctx;
  return ctx;
}

/// Runs the body of `kernel` in planning mode on the host: allocations and barriers recorded,
/// for_each bodies skipped.
template <class Space, int... T, class F>
planning_context& record_body(const F& kernel) {
  planning_context& ctx = planning_recorder();
  ctx.clear();
  basic_tile_group<Space, T...> g(&ctx, index<sizeof...(T)>(), index<sizeof...(T)>());
  kernel(g);
  return ctx;
}

/// The plan of a tile launch from a recorded body.
template <class Space, int... T>
codegen::kernel_plan plan_from_body(const char* fn, const tiled_extent<T...>& te,
                                    const planning_context& ctx) {
  std::vector<std::int64_t> tiles;
  for (int d = 0; d < te.rank; ++d) tiles.push_back(te[d] / tiled_extent<T...>::tile_extent[d]);
  return codegen::plan_tile_kernel(std::string(fn) + tile_name<T...>(), {T...}, tiles, ctx.body(),
                                   backend<Space>::make_target());
}

/// Checker run: every tile (checked mode) or tile 0 with writes discarded (dry run).
template <class Space, int... T, class F>
void run_checker(const tiled_extent<T...>& te, const F& kernel, checker_options opt) {
  constexpr int rank = sizeof...(T);
  constexpr index_type dims[rank] = {T...};
  Kokkos::fence();
  checked_context ctx({T...}, opt);
  const tessera::impl::hooked_run_scope hooked;  // outlives the hooked copy below
  std::unique_ptr<F> copy;
  {
    tessera::impl::capture_scope scope(&ctx);
    copy = std::make_unique<F>(kernel);
  }
  struct current_guard {
    tessera::impl::host_context* prev = tessera::impl::current_host_context();
    explicit current_guard(tessera::impl::host_context* c) {
      tessera::impl::current_host_context() = c;
    }
    ~current_guard() { tessera::impl::current_host_context() = prev; }
  } guard(&ctx);
  const extent<rank> counts = te.tile_counts();
  const index_type tiles = opt.dry_run ? (counts.size() > 0 ? 1 : 0) : counts.size();
  for (index_type r = 0; r < tiles; ++r) {
    index<rank> tile, origin;
    index_type q = r;
    for (int d = rank - 1; d >= 0; --d) {
      tile[d] = q % counts[d];
      q /= counts[d];
      origin[d] = tile[d] * dims[d];
    }
    ctx.begin_tile(std::vector<index_type>(tile.v, tile.v + rank), r);
    try {
      basic_tile_group<Space, T...> g(&ctx, tile, origin);
      (*copy)(g);
      ctx.end_tile();
    } catch (const checked_context::stop_tile&) {
    }
  }
  ctx.finish();
}

/// Per kernel type F: plans by (tile counts, recorded signature), and whether the dry run
/// has validated F.
template <class F, class Space, int... T>
struct tile_plan_cache {
  std::mutex mutex;
  // unordered_map: Debian's hipcc (clang 15) crashes instantiating a std::map of this in C++20.
  std::unordered_map<std::vector<std::int64_t>, std::shared_ptr<const codegen::kernel_plan>,
                     codegen::key_hash<std::vector<std::int64_t>>>
      plans;
  bool validated = false;
  static tile_plan_cache& get() {
    static tile_plan_cache c;
    return c;
  }
};

/// The plan of launching `kernel` on `te` (planning pass, cache, first-launch dry run). The
/// reference stays valid until this thread's next launch of the same kernel type.
template <class Space, int... T, class F>
const codegen::kernel_plan& plan_launch(const char* fn, const tiled_extent<T...>& te,
                                        const F& kernel, bool validate) {
  planning_context& rec = record_body<Space, T...>(kernel);
  // This thread's last plan of kernel type F: a repeated launch of one shape takes no lock.
  struct last_hit {
    std::vector<std::int64_t> key;
    std::shared_ptr<const codegen::kernel_plan> plan;
    bool validated = false;
  };
  static thread_local last_hit last;
  static thread_local std::vector<std::int64_t> key;
  key.clear();
  for (int d = 0; d < te.rank; ++d) key.push_back(te[d]);
  rec.signature(key);
  if (last.plan && last.key == key && (last.validated || !validate)) return *last.plan;

  auto& cache = tile_plan_cache<F, Space, T...>::get();
  std::shared_ptr<const codegen::kernel_plan> plan;
  bool validated;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.plans.find(key);
    if (it != cache.plans.end()) plan = it->second;
    validated = cache.validated;
  }
  const bool built = !plan;
  if (built)
    plan = std::make_shared<const codegen::kernel_plan>(plan_from_body<Space>(fn, te, rec));
  if (validate && !validated) {
    checker_options opt;
    opt.dry_run = true;
    opt.fn = fn;
    run_checker<Space>(te, kernel, opt);
    validated = true;
  }
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (validated) cache.validated = true;
    if (built) {
      if (cache.plans.size() > 1024) cache.plans.clear();
      cache.plans.emplace(key, plan);
    }
  }
  last.key = key;
  last.plan = std::move(plan);
  last.validated = validated;
  return *last.plan;
}

/// The Kokkos functor of a tile launch: one call per team = per tile.
template <class F, class Space, int... T>
struct tile_functor {
  static constexpr int rank = sizeof...(T);
  using member_type = typename Kokkos::TeamPolicy<Space>::member_type;
  F kernel;
  extent<rank> tiles;  // tiles per dimension
  int level;
  std::size_t bytes;

  // flatten: the kernel body and everything it calls are inlined here, where the group's host
  // context is visibly null, so every checked-mode hook folds away and the phases vectorize.
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
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
    // The GPU mapping runs logical thread l on member l (tile_local is the member's register):
    // a team of another size would compute a wrong answer, so it stops here instead.
    if constexpr (tessera::impl::tile_mapping<Space>::thread_per_logical)
      if (team.team_size() != (T * ...))
        tessera::impl::misuse_in_kernel(
            "tessera: a tile launch under the GPU mapping whose team size differs from the "
            "tile's logical threads");
    basic_tile_group<Space, T...> g(team, scratch, bytes, tile, origin);
    kernel(g);
  }
};

/// Launches `kernel` on `te` exactly as `plan` says (league, team size, scratch level and
/// bytes). \throws resource_error when the team size exceeds what the backend allows for it;
/// usage_error when the backend would run the plan's team with fewer members (nested OpenMP)
template <class Space, int... T, class F>
void launch_planned(const Space& exec, const tiled_extent<T...>& te, const F& kernel,
                    const codegen::kernel_plan& plan) {
  const int level = plan.scratch_level;
  const std::size_t bytes = plan.scratch_bytes[level];
  using functor = tile_functor<F, Space, T...>;
  functor fn{device_copy(kernel), te.tile_counts(), level, bytes};
  const auto policy = planned_team_policy(exec, plan, fn, level, bytes ? bytes + 64 : 0);
  launch(plan.label, policy, fn);
}

/// RAII Kokkos profiling region (visible to Kokkos Tools).
class profiling_region {
 public:
  explicit profiling_region(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  profiling_region(const profiling_region&) = delete;
  profiling_region& operator=(const profiling_region&) = delete;
  ~profiling_region() { Kokkos::Profiling::popRegion(); }
};

}  // namespace backends::impl

/// Runs `kernel(tile_group<T...>& g)` once per tile of `te` (C++ AMP's tiled
/// parallel_for_each), lowered onto a Kokkos TeamPolicy of execution space instance `exec`:
/// league size = number of tiles, team size from the backend's mapping (1 on CPUs, one member
/// per logical thread on GPUs), tile_static bytes per team found by the planning pass and
/// requested as team scratch (level 0, else level 1). Asynchronous on `exec` (array_views are
/// copied back by synchronize() or their destruction).
/// \param exec [in] execution space instance (e.g. a CUDA stream's; any launchable_space);
///        the default overload uses the default execution space
/// \param te [in] tiled extent; every extent must be a multiple of its tile size (use pad() or
///           truncate()); an empty extent is a no-op
/// \param kernel [in] TESSERA_KERNEL(tile_group<T...>& g) { ... } or a functor with a
///        TESSERA_INLINE call operator; captures by value. On another execution space than the
///        default, the kernel takes basic_tile_group<Space, T...>& (or auto&).
/// \throws shape_error uneven or negative extent; usage_error misuse found by the validation
///         dry run (barrier, tile_static or for_each inside for_each), Kokkos not running;
///         bounds_error an out-of-bounds global access in the dry run; resource_error scratch
///         above the backend's limit, tile larger than a team, tile_local above the limit.
///         All before any kernel runs.
/// Source: C++ AMP parallel_for_each(tiled_extent, ...) (seeds 000, 002, 003).
template <launchable_space Space, int... T, class F>
void parallel_for_each(const Space& exec, const tiled_extent<T...>& te, const F& kernel) {
  using space = Space;
  backends::impl::check_kernel_signature<F, basic_tile_group<space, T...>>();
  tessera::impl::require_runtime("parallel_for_each");
  backends::impl::check_even("parallel_for_each", te);
  if (te.size() == 0) return;
  const auto& plan = backends::impl::plan_launch<space>("parallel_for_each", te, kernel, true);
  backends::impl::profiling_region region(plan.label);
  backends::impl::launch_planned(exec, te, kernel, plan);
}
template <int... T, class F>
void parallel_for_each(const tiled_extent<T...>& te, const F& kernel) {
  parallel_for_each(execution_space(), te, kernel);
}

/// Checked mode: runs every tile on the host, logical threads one after another, and checks
/// every tile_static and global (Tessera array / array_view) access against the race rule
/// (checked.hpp), bounds and initialization. The kernel's effects are kept (on GPU backends
/// the data goes through host copies). Same launch checks as the fast mode.
/// \throws race_error, uninitialized_read_error, bounds_error (first finding, tile order), or
///         collects them (checked_collect); usage_error for a barrier, tile_static or for_each
///         inside for_each
template <int... T, class F>
void parallel_for_each(checked_t mode, const tiled_extent<T...>& te, const F& kernel) {
  using space = execution_space;
  backends::impl::check_kernel_signature<F, basic_tile_group<space, T...>>();
  tessera::impl::require_runtime("parallel_for_each(checked)");
  backends::impl::check_even("parallel_for_each(checked)", te);
  if (te.size() == 0) return;
  (void)backends::impl::plan_launch<space>("parallel_for_each(checked)", te, kernel, false);
  backends::impl::checker_options opt;
  opt.collect = mode.out != nullptr;
  opt.out = mode.out;
  opt.max_findings = mode.max_findings;
  backends::impl::run_checker<space>(te, kernel, opt);
}

/// The kernel plan of a tile launch as text: league/team/vector sizes, scratch bytes per level,
/// each tile_static (scratch L0/L1) and tile_local (private) buffer, and every barrier — the
/// plan parallel_for_each launches. Nothing runs on the device. \throws as parallel_for_each
template <int... T, class F>
std::string explain(const tiled_extent<T...>& te, const F& kernel) {
  using space = execution_space;
  backends::impl::check_kernel_signature<F, basic_tile_group<space, T...>>();
  tessera::impl::require_runtime("explain");
  backends::impl::check_even("explain", te);
  return codegen::to_string(
      backends::impl::plan_launch<space>("parallel_for_each", te, kernel, true));
}
/// The plan of a tile launch as a value (tests, tools).
template <int... T, class F>
codegen::kernel_plan plan(const tiled_extent<T...>& te, const F& kernel) {
  using space = execution_space;
  backends::impl::check_kernel_signature<F, basic_tile_group<space, T...>>();
  tessera::impl::require_runtime("plan");
  backends::impl::check_even("plan", te);
  return backends::impl::plan_launch<space>("parallel_for_each", te, kernel, true);
}

namespace backends::impl {
/// Functor of the element-parallel launch: kernel(index<N>) per point.
template <class F, int N>
struct element_functor {
  F kernel;
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(index_type i) const requires(N == 1) {
    kernel(index<1>(i));
  }
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(index_type i, index_type j) const
      requires(N == 2) {
    kernel(index<2>(i, j));
  }
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(index_type i, index_type j,
                                                         index_type k) const requires(N == 3) {
    kernel(index<3>(i, j, k));
  }
};
}  // namespace backends::impl

/// Element-parallel launch: `kernel(index<N>)` once per point of `e` (C++ AMP's untiled
/// parallel_for_each), on a Kokkos RangePolicy (rank 1) or MDRangePolicy (ranks 2, 3) of
/// `exec`. An empty extent is a no-op.
/// \param kernel [in] TESSERA_KERNEL(const tessera::index<N>& idx) { ... } or a functor
/// \throws shape_error on a negative extent; usage_error when Kokkos is not running
template <launchable_space Space, int N, class F>
void parallel_for_each(const Space& exec, const extent<N>& e, const F& kernel) {
  static_assert(std::is_invocable_v<const F&, const index<N>&>,
                "parallel_for_each(extent<N>, kernel): the kernel must be callable as "
                "kernel(index<N>)");
  backends::impl::check_device_kernel<F>();
  tessera::impl::require_runtime("parallel_for_each");
  for (int d = 0; d < N; ++d)
    if (e[d] < 0) throw shape_error("parallel_for_each: negative extent " + to_string(e));
  if (e.size() == 0) return;
  using space = Space;
  const std::string label = "tessera::parallel_for_each<" + std::to_string(N) + ">";
  backends::impl::profiling_region region(label);
  backends::impl::element_functor<F, N> fn{backends::impl::device_copy(kernel)};
  if constexpr (N == 1) {
    backends::impl::launch(
        label, Kokkos::RangePolicy<space, Kokkos::IndexType<index_type>>(exec, 0, e[0]), fn);
  } else if constexpr (N == 2) {
    Kokkos::parallel_for(
        label,
        Kokkos::MDRangePolicy<space, Kokkos::Rank<2>, Kokkos::IndexType<index_type>>(exec, {0, 0},
                                                                                     {e[0], e[1]}),
        fn);
  } else {
    Kokkos::parallel_for(
        label,
        Kokkos::MDRangePolicy<space, Kokkos::Rank<3>, Kokkos::IndexType<index_type>>(
            exec, {0, 0, 0}, {e[0], e[1], e[2]}),
        fn);
  }
}
template <int N, class F>
void parallel_for_each(const extent<N>& e, const F& kernel) {
  parallel_for_each(execution_space(), e, kernel);
}

}  // namespace tessera
