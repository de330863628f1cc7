/// \file tile_launch/per_thread.hpp
/// \brief Per-thread tiled kernels, C++ AMP's form: `kernel(const tiled_index<T...>& t)` runs
///        once per logical thread, declares tile_static storage with `t.tile_static<U>()` and
///        waits at `t.barrier.wait()` anywhere in control flow every logical thread of the tile
///        follows.
///
/// - GPU mapping (CUDA, HIP, the GPU emulation): native. One team member per logical thread
///   runs the kernel; a barrier is the team's barrier; tile_static declarations take team
///   scratch in declaration order (each member computes the same offsets).
/// - CPU mapping (Serial, OpenMP): one team member per tile runs the tile's logical threads as
///   fibers (Boost.Context), one after another; a barrier switches to the next fiber, so every
///   logical thread reaches it before any continues. A logical thread that finishes while others
///   wait at a barrier (a divergent barrier) stops the program with a message instead of hanging.
///   The phase form (tile_group + for_each) stays the fast CPU path: its phases are vectorized
///   loops, where each fiber here runs its logical thread's scalar code.
/// - Planning: the first launch of each kernel type runs one tile on the host (every logical
///   thread as a fiber, global writes discarded: the validation dry run of phase kernels), which
///   records the tile_static declarations and barriers; the plan (scratch bytes and level, team
///   size) comes from that record as for phase kernels, so explain() shows the same kind of plan.
/// - Checked mode runs every tile that way with the checker (races between barriers, bounds,
///   uninitialized tile_static reads, divergent barriers).
#pragma once

#include <tessera/backends/checked.hpp>
#include <tessera/backends/plan_recorder.hpp>
#include <tessera/backends/tile_launch/functor.hpp>
#include <tessera/backends/tile_launch/kernel_checks.hpp>
#include <tessera/backends/tile_launch/plan.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/tile_group.hpp>

#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#if defined(TESSERA_HAS_FIBERS) && TESSERA_HAS_FIBERS && !defined(TESSERA_DEVICE_PASS)
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#define TESSERA_FIBERS_ENABLED 1
#else
#define TESSERA_FIBERS_ENABLED 0
#endif

namespace tessera::backends::impl {

/// True when F is a per-thread tiled kernel for tiles T...: callable with a tiled_index and not
/// with a tile group (a generic `auto&` kernel is a phase kernel).
template <class F, class Space, int... T>
inline constexpr bool is_per_thread_kernel =
    !std::is_invocable_v<const F&, basic_tile_group<Space, T...>&> &&
    std::is_invocable_v<const F&, const tiled_index<T...>&>;

/// Whether this build runs per-thread kernels on the host (Boost.Context found by CMake).
inline constexpr bool fibers_available = TESSERA_FIBERS_ENABLED != 0;

/// Bytes of stack per logical thread of a per-thread kernel on CPUs (a guard page below).
#ifndef TESSERA_FIBER_STACK_BYTES
#define TESSERA_FIBER_STACK_BYTES (64 * 1024)
#endif

/// The logical thread's coordinates from its row-major rank.
template <int... T>
TESSERA_INLINE index<sizeof...(T)> local_of_rank(int l) {
  constexpr int d[3] = {T...};
  constexpr int rank = sizeof...(T);
  if constexpr (rank == 1)
    return index<1>(l);
  else if constexpr (rank == 2)
    return index<2>(l / d[1], l % d[1]);
  else
    return index<3>(l / (d[1] * d[2]), (l / d[2]) % d[1], l % d[2]);
}

/// Tile r of the launch: its coordinates and its first logical thread's global index.
template <int... T>
TESSERA_INLINE void tile_of_rank(index_type r, const extent<sizeof...(T)>& tiles,
                                 const index<sizeof...(T)>& first, index<sizeof...(T)>& tile,
                                 index<sizeof...(T)>& origin) {
  constexpr index_type dims[sizeof...(T)] = {T...};
  for (int d = int(sizeof...(T)) - 1; d >= 0; --d) {
    tile[d] = r % tiles[d];
    r /= tiles[d];
    origin[d] = first[d] + tile[d] * dims[d];
  }
}

#if TESSERA_FIBERS_ENABLED
/// Runs the logical threads of one tile of a per-thread kernel as fibers on the calling host
/// thread (one engine per host thread; stacks are kept for the next tile).
class fiber_engine {
 public:
  static fiber_engine& this_thread() {
    static thread_local fiber_engine e;
    return e;
  }
  fiber_engine() = default;
  fiber_engine(const fiber_engine&) = delete;
  fiber_engine& operator=(const fiber_engine&) = delete;
  ~fiber_engine() {
    slots_.clear();
    boost::context::protected_fixedsize_stack alloc(TESSERA_FIBER_STACK_BYTES);
    for (auto& s : free_stacks_) alloc.deallocate(s);
  }

  /// Runs kernel(t) for every logical thread of the tile at `origin`. `scratch`: the tile's
  /// tile_static storage of `bytes` (fast mode); `ctx`: the checker (checked mode, dry run),
  /// which then provides tile_static storage; `rec`: records declarations and barriers (the
  /// planning dry run). \throws what the kernel or the checker throws; usage_error for a
  /// divergent barrier or declarations that differ between logical threads
  template <int... T, class F>
  void run_tile(const F& kernel, const index<sizeof...(T)>& tile, const index<sizeof...(T)>& origin,
                char* scratch, std::size_t bytes, tessera::impl::host_context* ctx,
                planning_context* rec, const char* fn) {
    constexpr int L = (T * ...);
    using ti = tiled_index<T...>;
    if (busy_)
      throw usage_error(std::string(fn) +
                        ": a per-thread kernel launched from inside a per-thread kernel");
    busy_ = true;
    struct release {
      fiber_engine& e;
      ~release() {
        e.slots_.clear();  // unwinds fibers an error left suspended
        e.busy_ = false;
      }
    } rel{*this};
    ctx_ = ctx;
    rec_ = rec;
    decls_.clear();
    error_ = nullptr;
    if (free_stacks_.capacity() < std::size_t(L) + free_stacks_.size())
      free_stacks_.reserve(std::size_t(L) + free_stacks_.size());
    slots_.clear();
    slots_.resize(std::size_t(L));
    indices_.resize(std::size_t(L) * sizeof(ti));
    ti* idx = reinterpret_cast<ti*>(indices_.data());
    for (int l = 0; l < L; ++l) {
      slot& s = slots_[std::size_t(l)];
      s.st.scratch = scratch;
      s.st.planned = bytes;
      s.st.wait = &fiber_wait;
      s.st.declare = ctx ? &host_declare : nullptr;
      s.st.ctx = ctx;
      s.st.engine = this;
      s.st.thread = l;
      ti* t = new (idx + l) ti();
      t->local = local_of_rank<T...>(l);
      t->tile = tile;
      t->tile_origin = origin;
      t->global = origin + t->local;
      t->barrier.bind(&s.st);
      s.f = boost::context::fiber(std::allocator_arg, stack_cache{this},
                                  [this, l, t, &kernel](boost::context::fiber&& from) {
                                    keep(std::move(from));
                                    begin_segment(l);
                                    try {
                                      kernel(*t);
                                    } catch (const boost::context::detail::forced_unwind&) {
                                      throw;
                                    } catch (...) {
                                      if (!error_) error_ = std::current_exception();
                                    }
                                    slots_[std::size_t(l)].done = true;
                                    from_ = l;
                                    return next_after(l);
                                  });
    }
    if (ctx) ctx->phase_scope(true);
    for (int round = 0;; ++round) {
      // One round: every unfinished logical thread runs to its next barrier (or its end), each
      // switching straight to the next one; the last switches back here.
      const int first = runnable_after(-1);
      if (first >= 0) {
        from_ = -1;
        keep(std::move(slots_[std::size_t(first)].f).resume());
      }
      if (ctx) ctx->set_thread(-1);
      if (error_) std::rethrow_exception(error_);
      int done = 0, waiting = 0;
      int first_done = -1, first_waiting = -1;
      for (int l = 0; l < L; ++l) {
        const slot& s = slots_[std::size_t(l)];
        if (s.done) {
          ++done;
          if (first_done < 0) first_done = l;
        } else {
          ++waiting;
          if (first_waiting < 0) first_waiting = l;
        }
      }
      if (waiting == 0) break;
      if (done > 0)
        throw usage_error(
            std::string(fn) + ": tile " + to_string(tile) + ": logical thread " +
            to_string(local_of_rank<T...>(first_done)) + " finished while logical thread " +
            to_string(local_of_rank<T...>(first_waiting)) + " waits at barrier " +
            std::to_string(round + 1) +
            " (a barrier not every logical thread of the tile reaches: C++ AMP rejects it, on "
            "a GPU it deadlocks); make every logical thread of the tile reach each barrier");
      const auto f = slots_[std::size_t(first_waiting)].fence;
      if (ctx) {
        ctx->phase_scope(false);
        ctx->barrier(f);
        ctx->phase_scope(true);
      }
      if (rec) rec->barrier(f);
    }
    if (ctx) ctx->phase_scope(false);
    const std::size_t used = slots_.empty() ? 0 : slots_[0].st.offset;
    for (const auto& s : slots_)
      if (s.st.offset != used)
        throw usage_error(std::string(fn) + ": tile " + to_string(tile) +
                          ": logical threads declared different tile_static storage (" +
                          std::to_string(used) + " and " + std::to_string(s.st.offset) +
                          " bytes); every logical thread makes the same declarations");
  }

 private:
  struct slot {
    boost::context::fiber f;  ///< the suspended logical thread (empty while it runs, or done)
    tessera::impl::per_thread_state st;
    tessera::impl::fence_kind fence = tessera::impl::fence_kind::all_memory;
    bool waiting = false;
    bool done = false;
  };
  struct declaration {
    void* p;
    int id;
    std::size_t bytes;
  };
  /// Boost.Context stack allocator handing out the engine's kept stacks.
  struct stack_cache {
    fiber_engine* e;
    boost::context::stack_context allocate() {
      if (!e->free_stacks_.empty()) {
        const auto s = e->free_stacks_.back();
        e->free_stacks_.pop_back();
        return s;
      }
      return boost::context::protected_fixedsize_stack(TESSERA_FIBER_STACK_BYTES).allocate();
    }
    void deallocate(boost::context::stack_context& s) noexcept { e->free_stacks_.push_back(s); }
  };

  /// The first unfinished logical thread after l (-1: none).
  int runnable_after(int l) const {
    for (int k = l + 1; k < int(slots_.size()); ++k)
      if (!slots_[std::size_t(k)].done) return k;
    return -1;
  }
  /// Where logical thread l goes when it stops: the next unfinished one, else (or after an
  /// error) the engine.
  boost::context::fiber next_after(int l) {
    const int k = error_ ? -1 : runnable_after(l);
    return k < 0 ? std::move(engine_) : std::move(slots_[std::size_t(k)].f);
  }
  /// Keeps the continuation of whoever switched here last (from_: a logical thread, or -1 for
  /// the engine) where that one is resumed from.
  void keep(boost::context::fiber&& c) {
    if (from_ < 0)
      engine_ = std::move(c);
    else
      slots_[std::size_t(from_)].f = std::move(c);
  }
  /// Logical thread l (re)starts running: the checker attributes accesses to it from here.
  void begin_segment(int l) {
    slots_[std::size_t(l)].waiting = false;
    if (ctx_) ctx_->set_thread(l);
  }
  static void fiber_wait(tessera::impl::per_thread_state* st, tessera::impl::fence_kind f) {
    auto* e = static_cast<fiber_engine*>(st->engine);
    const int l = st->thread;
    slot& s = e->slots_[std::size_t(l)];
    s.waiting = true;
    s.fence = f;
    e->from_ = l;
    e->keep(e->next_after(l).resume());
    e->begin_segment(l);
  }
  /// Declaration `site` (the k-th distinct one) of a logical thread: the k-th buffer of the
  /// tile (the first logical thread to reach it allocates it in the checker, and the recorder
  /// notes it).
  static void* host_declare(tessera::impl::per_thread_state* st,
                            const tessera::impl::buffer_desc& d, int site, int& id) {
    auto* e = static_cast<fiber_engine*>(st->engine);
    const std::size_t k = std::size_t(site);
    if (k < e->decls_.size()) {
      const declaration& x = e->decls_[k];
      if (x.bytes != d.bytes)
        throw usage_error("per-thread kernel: logical thread " + std::to_string(st->thread) +
                          " declared tile_static #" + std::to_string(k) + " as " + d.type_name() +
                          " (" + std::to_string(d.bytes) + " bytes), another logical thread with " +
                          std::to_string(x.bytes) +
                          " bytes; every logical thread makes the same declarations");
      id = x.id;
      return x.p;
    }
    e->ctx_->phase_scope(false);
    void* p = e->ctx_->allocate_static(d, id);
    e->ctx_->phase_scope(true);
    if (e->rec_) {
      int rid = 0;
      e->rec_->allocate_static(d, rid);
    }
    e->decls_.push_back({p, id, d.bytes});
    return p;
  }

  std::vector<slot> slots_;
  boost::context::fiber engine_;  ///< the engine, while logical threads run
  int from_ = -1;                 ///< who switched last (a logical thread, or -1: the engine)
  std::vector<unsigned char> indices_;
  std::vector<boost::context::stack_context> free_stacks_;
  std::vector<declaration> decls_;
  tessera::impl::host_context* ctx_ = nullptr;
  planning_context* rec_ = nullptr;
  std::exception_ptr error_;
  bool busy_ = false;
};
#endif

/// Runs tile r of a per-thread kernel on the host with the checker (checked mode, dry run).
template <class Space, int... T, class F>
void run_per_thread_checker(const tiled_extent<T...>& te, const F& kernel, checker_options opt,
                            planning_context* rec) {
#if TESSERA_FIBERS_ENABLED
  for_each_checked_tile<Space>(
      te, kernel, opt,
      [&](checked_context& ctx, const F& copy, const auto& tile, const auto& origin, index_type r) {
        fiber_engine::this_thread().run_tile<T...>(copy, tile, origin, nullptr, 0, &ctx,
                                                   r == 0 ? rec : nullptr, opt.fn);
      });
#else
  (void)te, (void)kernel, (void)opt, (void)rec;
#endif
}

/// Per kernel type: the record of its declarations and barriers (from the first launch's dry
/// run) and the plans made from it, by extent.
template <class F, class Space, int... T>
struct per_thread_plan_cache {
  std::mutex mutex;
  bool recorded = false;
  planning_context record;
  std::unordered_map<std::vector<std::int64_t>, std::shared_ptr<const codegen::kernel_plan>,
                     codegen::key_hash<std::vector<std::int64_t>>>
      plans;
  static per_thread_plan_cache& get() {
    static per_thread_plan_cache c;
    return c;
  }
};

/// The plan of a per-thread launch of `kernel` on `te`: the first call per kernel type runs the
/// dry run (one tile on the host, global writes discarded), which validates the kernel and
/// records its tile_static declarations and barriers.
/// \throws usage_error when this build has no fibers (Boost.Context); what the dry run finds
template <class Space, int... T, class F>
std::shared_ptr<const codegen::kernel_plan> plan_per_thread(const char* fn,
                                                            const tiled_extent<T...>& te,
                                                            const F& kernel) {
  if constexpr (!fibers_available) {
    (void)te, (void)kernel;
    throw usage_error(std::string(fn) +
                      ": a per-thread tiled kernel (kernel(const tiled_index<...>&)) needs "
                      "Boost.Context, which this build was configured without (Debian: "
                      "libboost-context-dev); write the kernel in phase form "
                      "(kernel(tile_group<...>&) with for_each phases) or install it and "
                      "reconfigure");
  } else {
    auto& cache = per_thread_plan_cache<F, Space, T...>::get();
    std::vector<std::int64_t> key;
    for (int d = 0; d < te.rank; ++d) key.push_back(te[d]);
    std::unique_lock<std::mutex> lock(cache.mutex);
    auto it = cache.plans.find(key);
    if (it != cache.plans.end()) return it->second;
    if (!cache.recorded) {
      planning_context rec;
      checker_options opt;
      opt.dry_run = true;
      opt.fn = fn;
      lock.unlock();
      run_per_thread_checker<Space>(te, kernel, opt, &rec);
      lock.lock();
      if (!cache.recorded) {
        cache.record = rec;
        cache.recorded = true;
      }
    }
    auto plan = std::make_shared<codegen::kernel_plan>(plan_from_body<Space>(fn, te, cache.record));
    constexpr bool gpu = tessera::impl::tile_mapping<Space>::thread_per_logical;
    plan->mapping =
        gpu ? "per-thread kernel: one team member per logical thread runs the kernel; "
              "t.barrier is the team barrier"
            : "per-thread kernel: one team member per tile runs the tile's logical threads as "
              "fibers (Boost.Context), switching at each barrier (the phase form runs vectorized "
              "loops instead)";
    if (!gpu)
      for (auto& b : plan->barriers) {
        const auto at = b.hazard.find("(one member per team: program order)");
        if (at != std::string::npos)
          b.hazard.replace(at, std::string::npos,
                           "(fibers: every logical thread reaches it before any goes on)");
      }
    plan->notes.push_back(
        "form: per-thread (kernel(tiled_index)), planned from a dry run of one tile");
    if (cache.plans.size() > 1024) cache.plans.clear();
    cache.plans.emplace(key, plan);
    return plan;
  }
}

/// Kokkos functor of a per-thread launch under the GPU mapping: member l runs logical thread l.
template <class F, class Space, int... T>
struct per_thread_team_functor {
  static constexpr int rank = sizeof...(T);
  using member_type = typename Kokkos::TeamPolicy<Space>::member_type;
  F kernel;
  extent<rank> tiles;
  index<rank> first;
  int level;
  std::size_t bytes;

  static void team_wait(tessera::impl::per_thread_state* s, tessera::impl::fence_kind f) {
    tessera::impl::tile_mapping<Space>::barrier(*static_cast<const member_type*>(s->team), f);
  }
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    index<rank> tile, origin;
    tile_of_rank<T...>(team.league_rank(), tiles, first, tile, origin);
    char* scratch = nullptr;
    if (bytes) {
      auto raw = reinterpret_cast<std::uintptr_t>(team.team_scratch(level).get_shmem(bytes + 64));
      scratch = reinterpret_cast<char*>((raw + 63) & ~std::uintptr_t{63});
    }
    if (team.team_size() != (T * ...))
      tessera::impl::misuse_in_kernel(
          "tessera: a per-thread launch whose team size differs from the tile's logical threads");
    tessera::impl::per_thread_state st;
    st.scratch = scratch;
    st.planned = bytes;
    st.team = &team;
    st.thread = team.team_rank();
#ifndef TESSERA_DEVICE_PASS
    st.wait = &team_wait;
#endif
    tiled_index<T...> t;
    t.local = local_of_rank<T...>(team.team_rank());
    t.tile = tile;
    t.tile_origin = origin;
    t.global = origin + t.local;
    t.barrier.bind(&st);
    kernel(t);
  }
};

#if TESSERA_FIBERS_ENABLED
/// Kokkos functor of a per-thread launch under the CPU mapping: the member runs its tile's
/// logical threads as fibers. A divergent barrier stops the program (no exception leaves a
/// Kokkos kernel).
template <class F, class Space, int... T>
struct per_thread_fiber_functor {
  static constexpr int rank = sizeof...(T);
  using member_type = typename Kokkos::TeamPolicy<Space>::member_type;
  F kernel;
  extent<rank> tiles;
  index<rank> first;
  int level;
  std::size_t bytes;

  void operator()(const member_type& team) const {
    index<rank> tile, origin;
    tile_of_rank<T...>(team.league_rank(), tiles, first, tile, origin);
    char* scratch = nullptr;
    if (bytes) {
      auto raw = reinterpret_cast<std::uintptr_t>(team.team_scratch(level).get_shmem(bytes + 64));
      scratch = reinterpret_cast<char*>((raw + 63) & ~std::uintptr_t{63});
    }
    try {
      fiber_engine::this_thread().run_tile<T...>(kernel, tile, origin, scratch, bytes, nullptr,
                                                 nullptr, "parallel_for_each");
    } catch (const std::exception& e) {
      Kokkos::abort((std::string("tessera: ") + e.what()).c_str());
    }
  }
};
#endif

/// Launches a per-thread kernel as its plan says.
template <class Space, int... T, class F>
void launch_per_thread(const Space& exec, const tiled_extent<T...>& te, const F& kernel,
                       const codegen::kernel_plan& plan) {
  const int level = plan.scratch_level;
  const std::size_t bytes = plan.scratch_bytes[level];
  if constexpr (tessera::impl::tile_mapping<Space>::thread_per_logical) {
    using functor = per_thread_team_functor<F, Space, T...>;
    functor fn{device_copy(kernel), te.tile_counts(), te.get_origin(), level, bytes};
    launch(plan.label, planned_team_policy(exec, plan, fn, level, bytes ? bytes + 64 : 0), fn);
  } else {
#if TESSERA_FIBERS_ENABLED
    using functor = per_thread_fiber_functor<F, Space, T...>;
    functor fn{device_copy(kernel), te.tile_counts(), te.get_origin(), level, bytes};
    launch(plan.label, planned_team_policy(exec, plan, fn, level, bytes ? bytes + 64 : 0), fn);
#else
    (void)exec, (void)te, (void)kernel, (void)level, (void)bytes;
#endif
  }
}

}  // namespace tessera::backends::impl
