/// \file tile_launch/plan.hpp
/// \brief The plan of a Tier 0 launch: the planning pass runs the body once on the host
///        (plan_recorder.hpp), the code generator turns the record into the kernel plan
///        (codegen/passes/tile_kernel.hpp), cached per kernel type and record; the first
///        launch of each kernel type also makes the validation dry run (checked.hpp: one tile,
///        global writes discarded, misuse and out-of-bounds accesses reported).
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/checked.hpp>
#include <tessera/backends/plan_recorder.hpp>
#include <tessera/backends/tile_launch/kernel_checks.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/passes/tile_kernel.hpp>
#include <tessera/codegen/plan_cache.hpp>
#include <tessera/dsl/tile_group.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::backends::impl {

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

/// The checker's walk over a launch: every tile (checked mode) or tile 0 with writes
/// discarded (dry run), each run by run(ctx, kernel copy, tile, origin, tile rank) on this
/// host thread — the tile group's body for phase kernels, the fiber engine for per-thread ones.
template <class Space, int... T, class F, class RunTile>
void for_each_checked_tile(const tiled_extent<T...>& te, const F& kernel,
                           const checker_options& opt, RunTile&& run) {
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
      origin[d] = te.get_origin()[d] + tile[d] * dims[d];
    }
    ctx.begin_tile(std::vector<index_type>(tile.v, tile.v + rank), r);
    try {
      run(ctx, static_cast<const F&>(*copy), tile, origin, r);
      ctx.end_tile();
    } catch (const checked_context::stop_tile&) {
    }
  }
  ctx.finish();
}

/// Checker run of a phase kernel: every tile (checked mode) or tile 0 with writes discarded
/// (dry run).
template <class Space, int... T, class F>
void run_checker(const tiled_extent<T...>& te, const F& kernel, checker_options opt) {
  for_each_checked_tile<Space>(
      te, kernel, opt,
      [](checked_context& ctx, const F& copy, const index<sizeof...(T)>& tile,
         const index<sizeof...(T)>& origin, index_type) {
        basic_tile_group<Space, T...> g(&ctx, tile, origin);
        copy(g);
      });
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

}  // namespace tessera::backends::impl
