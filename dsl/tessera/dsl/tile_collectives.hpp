/// \file tile_collectives.hpp
/// \brief Tile collectives (Tier 0): reductions, scans, broadcasts and votes over the logical
///        threads of one tile, named after SYCL 2020's group algorithms (`reduce_over_group`
///        -> `reduce_over_tile`, `group_broadcast` -> `tile_broadcast`, `any_of_group` ->
///        `any_of_tile`, ...). They replace the hand-written log-step loops over a tile_static
///        array with a barrier per step that C++ AMP programs use for tile sums, prefix sums,
///        stream compaction and sorting networks.
///
/// \code
///   parallel_for_each(A.extent.tile<256>().pad(), TESSERA_KERNEL(tessera::tile_group<256>& g) {
///     // this tile's sum of A (logical threads past A's end give 0)
///     const float s = tessera::reduce_over_tile(g, [&](const tessera::tiled_index<256>& t) {
///       return A.extent.contains(t.global) ? A[t.global] : 0.f;
///     }, tessera::plus<>());
///     // each logical thread's exclusive prefix of its flag, into a tile_local
///     auto pos = g.tile_local<int>(0);
///     tessera::exclusive_scan_over_tile(g, [&](const auto& t) { return int(keep(t)); }, pos, 0,
///                                       tessera::plus<>());
///     g.for_each([&](const auto& t) { if (keep(t)) out[base + pos(t)] = ...; });
///   });
/// \endcode
///
/// Semantics, common to every collective:
/// - Called from tile-uniform code (the kernel body, between phases), never inside for_each:
///   every logical thread of the tile takes part. Checked mode reports a collective inside
///   for_each (usage_error); fast mode stops the kernel.
/// - The values: each logical thread's value is `f(t)` for a callable f(const tiled_index&)
///   (run as one phase, like a for_each body: it may read global memory, tile_static memory a
///   barrier made visible, and its own tile_local — a tile_local itself is such a callable), or
///   a value type V: any trivially copyable type.
/// - The operator: any associative `op(a, b)` (tessera::plus<>, multiplies<>, minimum<>,
///   maximum<>, a user's functor); commutativity is not required: values are combined in the
///   order of the logical threads' row-major local rank. The combination order is fixed and the
///   same on every backend (the GPU mapping and the CPU loops run the same steps), so results
///   are bitwise identical across backends: reductions combine neighbours first (rank 2i with
///   2i+1, then pairs of pairs, ...: L - 1 applications of op for L logical threads); scans
///   are Hillis-Steele log-step scans (ceil(log2 L) steps, L ceil(log2 L) applications).
/// - The collective is a phase boundary: it begins with a phase that evaluates the values (a
///   barrier is needed before it if f reads tile_static memory another logical thread wrote, as
///   for any phase; checked mode reports the race otherwise) and ends with a barrier (tile_static
///   fence): everything the tile wrote to tile_static memory before it is visible after it.
/// - Cost: a workspace in team scratch (L values of V for reductions, 2L for scans, one for
///   broadcasts), allocated at the tile's first collective and reused by later ones that fit
///   (explain shows it as "tile collectives", and each barrier); under the GPU mapping (CUDA,
///   HIP, the emulation) ceil(log2 L) + 2 team barriers; on CPUs the steps are loops over the
///   workspace and the barriers are free.
/// - In the launch's planning pass, whose phases do not run, results read as zero bytes.
#pragma once

#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/expr/ops.hpp>
#include <tessera/dsl/tile_group.hpp>

#include <string>
#include <type_traits>

namespace tessera {

namespace impl {

/// The implementation of the tile collectives over a basic_tile_group's mapping, workspace and
/// host context (a friend of basic_tile_group and basic_tile_barrier).
struct tile_collectives {
  template <class Space, int... T>
  using group = basic_tile_group<Space, T...>;

  /// The collective `what` begins: it must be reached from tile-uniform code.
  template <class Space, int... T>
  TESSERA_INLINE static void enter(group<Space, T...>& g, const char* what) {
#ifndef TESSERA_DEVICE_PASS
    if (g.ctx_) {
      g.ctx_->collective(what);
      return;
    }
#endif
    (void)what;
    if (g.barrier.in_phase_)
      misuse_in_kernel("tessera: a tile collective inside for_each (a divergent collective)");
  }

  /// C values of V in team scratch: the tile's collective workspace, allocated once and
  /// reused while it fits (a new, larger one otherwise).
  template <class V, int C, class Space, int... T>
  TESSERA_INLINE static V* workspace(group<Space, T...>& g) {
    static_assert(std::is_trivially_copyable_v<V>,
                  "tile collectives: the value type must be trivially copyable");
    constexpr std::size_t bytes = sizeof(V) * std::size_t(C);
    constexpr std::size_t align = alignof(V) > 64 ? alignof(V) : 64;
    if (g.ws_ != nullptr && bytes <= g.ws_bytes_ && align <= g.ws_align_)
      return static_cast<V*>(g.ws_);
    V* p = g.template tile_static<V[C]>("tile collectives").data();
    g.ws_ = p;
    g.ws_bytes_ = bytes;
    g.ws_align_ = align;
    return p;
  }

  /// True in the planning pass (no phase runs; the combine steps are skipped too).
  template <class Space, int... T>
  TESSERA_INLINE static bool sizing(const group<Space, T...>& g) {
#ifndef TESSERA_DEVICE_PASS
    return g.ctx_ != nullptr && g.ctx_->sizing();
#else
    (void)g;
    return false;
#endif
  }

  /// A tile barrier of collective `what` (tile_static fence), shown by explain as the
  /// read-after-write on the workspace it resolves before `step`.
  template <class Space, int... T>
  TESSERA_INLINE static void sync(group<Space, T...>& g, const char* what, const char* step) {
#ifndef TESSERA_DEVICE_PASS
    if (g.ctx_) {
      g.ctx_->barrier_reason("read-after-write", what, step);
      g.ctx_->barrier(fence_kind::tile_static_memory);
      return;
    }
#endif
    (void)what;
    (void)step;
    tile_mapping<Space>::barrier(*g.team_, fence_kind::tile_static_memory);
  }

  /// f(r) for r < count: member r under the GPU mapping, a loop on CPUs and on the host.
  /// Workspace accesses only (not recorded by checked mode: the collective orders them).
  template <class Space, int... T, class F>
  TESSERA_INLINE static void each_rank(group<Space, T...>& g, int count, const F& f) {
#ifndef TESSERA_DEVICE_PASS
    if (g.ctx_) {
      for (int r = 0; r < count; ++r) f(r);
      return;
    }
#endif
    tile_mapping<Space>::for_each_rank(*g.team_, count, f);
  }

  /// w[rank(t)] = V(f(t)) for every logical thread t: one phase.
  template <class V, class Space, int... T, class F>
  TESSERA_INLINE static void load(group<Space, T...>& g, V* w, const F& f) {
    g.for_each([&](const tiled_index<T...>& t) { w[t.local_linear()] = static_cast<V>(f(t)); });
  }

  /// The combination of every logical thread's V(f(t)), neighbours first; all of them get it.
  template <class V, class Space, int... T, class F, class Op>
  TESSERA_INLINE static V reduce(group<Space, T...>& g, const F& f, const Op& op,
                                 const char* what) {
    constexpr int L = (T * ...);
    enter(g, what);
    V* w = workspace<V, L>(g);
    load<V>(g, w, f);
    sync(g, what, "its first combine step");
    const bool run = !sizing(g);
    for (int s = 1; s < L; s *= 2) {
      // w[2si] <- w[2si] op w[2si + s]: the combination of ranks [2si, 2si + 2s) in order.
      if (run)
        each_rank(g, (L - s + 2 * s - 1) / (2 * s), [&](int i) {
          const int l = 2 * s * i;
          w[l] = static_cast<V>(op(w[l], w[l + s]));
        });
      sync(g, what, s * 2 < L ? "its next combine step" : "reading its result");
    }
    const V r = w[0];
    sync(g, what, "the workspace's next use");
    return r;
  }

  /// Inclusive or exclusive scan of V(in(t)) over the logical threads in rank order, with
  /// `init` folded in first when has_init (always for exclusive scans); logical thread t's
  /// result goes to out(t) (a tile_local) or out(t, v) (a callable), in one phase.
  template <bool exclusive, bool has_init, class V, class Space, int... T, class In, class Out,
            class Op>
  TESSERA_INLINE static void scan(group<Space, T...>& g, const In& in, const Out& out,
                                  const V& init, const Op& op, const char* what) {
    constexpr int L = (T * ...);
    enter(g, what);
    V* a = workspace<V, 2 * L>(g);
    V* b = a + L;
    load<V>(g, a, in);
    sync(g, what, "its first scan step");
    const bool run = !sizing(g);
    for (int d = 1; d < L; d *= 2) {
      // b[l] = a[l - d] op a[l]: the combination of ranks (l - 2d, l] in order.
      if (run)
        each_rank(g, L, [&](int l) { b[l] = l >= d ? static_cast<V>(op(a[l - d], a[l])) : a[l]; });
      sync(g, what, "its next scan step");
      V* t = a;
      a = b;
      b = t;
    }
    g.for_each([&](const tiled_index<T...>& t) {
      const int l = t.local_linear();
      V v;
      if constexpr (exclusive)
        v = l == 0 ? init : static_cast<V>(op(init, a[l - 1]));
      else if constexpr (has_init)
        v = static_cast<V>(op(init, a[l]));
      else
        v = a[l];
      if constexpr (std::is_invocable_v<const Out&, const tiled_index<T...>&, const V&>)
        out(t, v);
      else
        out(t) = v;
    });
    sync(g, what, "the workspace's next use");
  }

  /// V(f(t)) of the logical thread whose local index is `from`, for all of them.
  template <class V, class Space, int... T, class F>
  TESSERA_INLINE static V broadcast(group<Space, T...>& g, const F& f,
                                    const index<int(sizeof...(T))>& from, const char* what) {
    constexpr int N = sizeof...(T);
    constexpr int dims[N] = {T...};
    enter(g, what);
    V* w = workspace<V, 1>(g);
    extent<N> one;
    bool inside = true;
    for (int d = 0; d < N; ++d) {
      inside = inside && from[d] >= 0 && from[d] < dims[d];
      one[d] = 1;
    }
    if (!inside) {
#ifndef TESSERA_DEVICE_PASS
      if (g.ctx_)
        throw usage_error(std::string(what) + ": local index " + to_string(from) +
                          " is outside the tile " + to_string(extent<N>(T...)));
#endif
      misuse_in_kernel("tessera: tile_broadcast from a local index outside the tile");
    }
    g.for_each(sub_domain<N>(g.tile_origin + from, one),
               [&](const tiled_index<T...>& t) { w[0] = static_cast<V>(f(t)); });
    sync(g, what, "reading its result");
    const V r = w[0];
    sync(g, what, "the workspace's next use");
    return r;
  }
};

/// The value type of a collective over f: what f(const tiled_index&) returns, without
/// reference or const.
template <class F, int... T>
using collective_value_t =
    std::remove_cvref_t<std::invoke_result_t<const F&, const tiled_index<T...>&>>;

}  // namespace impl

/// The combination `v_0 op v_1 op ... op v_{L-1}` of the values v_r = f(t) of the tile's L
/// logical threads (r: row-major local rank), returned to every logical thread. Neighbours
/// combine first; the same order on every backend (see the file comment).
/// \param f [in] `V f(const tiled_index<T...>&)`, or a tile_local
/// \param op [in] an associative binary operator on V
template <class Space, int... T, class F, class Op>
TESSERA_INLINE auto reduce_over_tile(basic_tile_group<Space, T...>& g, const F& f, const Op& op) {
  using V = impl::collective_value_t<F, T...>;
  return impl::tile_collectives::reduce<V>(g, f, op, "reduce_over_tile");
}
/// `init op v_0 op ... op v_{L-1}`, in init's type V (the values are converted to V first).
template <class Space, int... T, class F, class V, class Op>
TESSERA_INLINE V reduce_over_tile(basic_tile_group<Space, T...>& g, const F& f, const V& init,
                                  const Op& op) {
  const V r = impl::tile_collectives::reduce<V>(g, f, op, "reduce_over_tile");
  return static_cast<V>(op(init, r));
}

/// Inclusive scan: logical thread r receives `v_0 op ... op v_r` (v = in(t)) in `out`.
/// \param in [in] `V in(const tiled_index<T...>&)`, or a tile_local
/// \param out [out] a tile_local of V (out(t) = result; may be `in` itself), or a callable
///        `out(const tiled_index<T...>&, const V&)` run as one phase
template <class Space, int... T, class In, class Out, class Op>
TESSERA_INLINE void inclusive_scan_over_tile(basic_tile_group<Space, T...>& g, const In& in,
                                             const Out& out, const Op& op) {
  using V = impl::collective_value_t<In, T...>;
  impl::tile_collectives::scan<false, false>(g, in, out, V{}, op, "inclusive_scan_over_tile");
}
/// Inclusive scan starting from init: logical thread r receives `init op v_0 op ... op v_r`,
/// in init's type V.
template <class Space, int... T, class In, class Out, class Op, class V>
TESSERA_INLINE void inclusive_scan_over_tile(basic_tile_group<Space, T...>& g, const In& in,
                                             const Out& out, const Op& op, const V& init) {
  impl::tile_collectives::scan<false, true>(g, in, out, init, op, "inclusive_scan_over_tile");
}
/// Exclusive scan: logical thread 0 receives init, thread r > 0 `init op v_0 op ... op
/// v_{r-1}`, in init's type V (for a sum, init is 0: each thread's offset).
template <class Space, int... T, class In, class Out, class V, class Op>
TESSERA_INLINE void exclusive_scan_over_tile(basic_tile_group<Space, T...>& g, const In& in,
                                             const Out& out, const V& init, const Op& op) {
  impl::tile_collectives::scan<true, true>(g, in, out, init, op, "exclusive_scan_over_tile");
}

/// f(t) of the logical thread with local index `from` (only that thread evaluates f),
/// returned to every logical thread. A `from` outside the tile stops the kernel.
template <class Space, int... T, class F>
TESSERA_INLINE auto tile_broadcast(basic_tile_group<Space, T...>& g, const F& f,
                                   const index<int(sizeof...(T))>& from) {
  using V = impl::collective_value_t<F, T...>;
  return impl::tile_collectives::broadcast<V>(g, f, from, "tile_broadcast");
}
/// f(t) of logical thread (0, ..., 0), returned to every logical thread.
template <class Space, int... T, class F>
TESSERA_INLINE auto tile_broadcast(basic_tile_group<Space, T...>& g, const F& f) {
  return tile_broadcast(g, f, index<int(sizeof...(T))>());
}

/// True when pred(t) holds for some logical thread of the tile (every thread gets it).
template <class Space, int... T, class P>
TESSERA_INLINE bool any_of_tile(basic_tile_group<Space, T...>& g, const P& pred) {
  return impl::tile_collectives::reduce<int>(
             g, [&](const tiled_index<T...>& t) { return pred(t) ? 1 : 0; }, ops::logical_or(),
             "any_of_tile") != 0;
}
/// True when pred(t) holds for every logical thread of the tile.
template <class Space, int... T, class P>
TESSERA_INLINE bool all_of_tile(basic_tile_group<Space, T...>& g, const P& pred) {
  return impl::tile_collectives::reduce<int>(
             g, [&](const tiled_index<T...>& t) { return pred(t) ? 1 : 0; }, ops::logical_and(),
             "all_of_tile") != 0;
}
/// True when pred(t) holds for no logical thread of the tile.
template <class Space, int... T, class P>
TESSERA_INLINE bool none_of_tile(basic_tile_group<Space, T...>& g, const P& pred) {
  return impl::tile_collectives::reduce<int>(
             g, [&](const tiled_index<T...>& t) { return pred(t) ? 1 : 0; }, ops::logical_or(),
             "none_of_tile") == 0;
}

}  // namespace tessera
