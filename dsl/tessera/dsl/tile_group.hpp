/// \file tile_group.hpp
/// \brief The tile-kernel vocabulary (Tier 0): `tile_group<T...>` with `tile_static<U>()`,
///        `tile_local<U>(init)`, `for_each`, `barrier` with C++ AMP's four wait variants, and
///        the free-standing fences.
///
/// A kernel body runs once per tile and is written as phases separated by barriers:
/// \code
///   tessera::parallel_for_each(m.extent.tile<2, 2>(), TESSERA_KERNEL(tessera::tile_group<2, 2>& g)
///   {
///     auto vals = g.tile_static<float[2][2]>("vals");            // team scratch
///     g.for_each([&](const tessera::tiled_index<2, 2>& t) {      // one logical thread each
///       vals(t.local[0], t.local[1]) = m[t.global];
///     });
///     g.barrier.wait();                                          // team barrier + fence
///     g.for_each([&](const tessera::tiled_index<2, 2>& t) { ... reads vals ... });
///   });
/// \endcode
/// Code outside for_each is tile-uniform: it may declare tile_static/tile_local storage, loop,
/// and call for_each, barriers and fences, but must not touch global memory (on GPUs every team
/// member runs it; on CPUs it runs once per tile; the planning pass runs it on the host). A
/// barrier, a tile_static allocation or a for_each inside for_each is a usage_error, found by
/// the launch's validation dry run before any kernel runs.
#pragma once

#include <tessera/dsl/boundary.hpp>
#include <tessera/dsl/host_context.hpp>
#include <tessera/dsl/tile_mapping.hpp>
#include <tessera/dsl/tiled_extent.hpp>

#include <type_traits>

namespace tessera {

namespace impl {
/// Calls into a host context; compiled out of GPU device passes.
#ifndef TESSERA_DEVICE_PASS
#define TESSERA_HOST_HOOK(ctx, ...) \
  do {                              \
    if (ctx) (ctx)->__VA_ARGS__;    \
  } while (0)
#else
#define TESSERA_HOST_HOOK(ctx, ...) \
  do {                              \
  } while (0)
#endif
#ifndef TESSERA_DEVICE_PASS
/// The checked-mode record of a tile_static access, out of line and cold, its arguments by
/// value: code the compiler cannot prove hook-free (a per-thread kernel, whose host context is
/// decided at run time) keeps its values in registers on the path without one.
[[gnu::cold, gnu::noinline]] inline void hook_access(host_context* c, int buf, index_type linear,
                                                     access_kind k) {
  c->access(buf, linear, k);
}
[[gnu::cold, gnu::noinline]] inline void hook_bounds(host_context* c, int buf, index_type i0,
                                                     index_type i1, index_type i2, int rank) {
  const index_type idx[3] = {i0, i1, i2};
  c->out_of_bounds(buf, idx, rank);
}
#define TESSERA_HOOK_ACCESS(ctx, buf, linear, kind)                 \
  do {                                                              \
    if (__builtin_expect((ctx) != nullptr, 0))                      \
      ::tessera::impl::hook_access((ctx), (buf), (linear), (kind)); \
  } while (0)
#else
#define TESSERA_HOOK_ACCESS(ctx, buf, linear, kind) \
  do {                                              \
  } while (0)
#endif
/// Fast mode met a misuse the validation dry run did not see (a barrier or tile_static
/// allocation inside for_each that the dry run's tile did not reach): stop loudly rather than
/// deadlock or corrupt scratch memory.
TESSERA_INLINE void misuse_in_kernel(const char* what) {
  Kokkos::abort(what);
}
}  // namespace impl

/// A pointer to a tile_static element as taken by `&s(i)`: what C++ AMP's atomic functions
/// receive for tile_static memory (checked mode records the access as atomic).
template <class E>
struct tile_static_pointer {
  E* p;
  impl::host_context* ctx;
  int buf;
  index_type linear;
  TESSERA_FORCEINLINE E& operator*() const { return *p; }
};

/// A reference to one tile_static element. Reads and writes go straight to team scratch; in
/// checked mode they are also recorded (so keep it as a temporary: `float x = s(i, j);`).
template <class E>
struct tile_static_element {
  E* p;
  impl::host_context* ctx;
  int buf;
  index_type linear;

  TESSERA_FORCEINLINE operator E() const {
    TESSERA_HOOK_ACCESS(ctx, buf, linear, impl::access_kind::read);
    return *p;
  }
  TESSERA_FORCEINLINE E get() const { return static_cast<E>(*this); }
  TESSERA_FORCEINLINE const tile_static_element& operator=(const E& v) const {
    TESSERA_HOOK_ACCESS(ctx, buf, linear, impl::access_kind::write);
    *p = v;
    return *this;
  }
  TESSERA_FORCEINLINE const tile_static_element& operator=(const tile_static_element& o) const {
    return *this = o.get();
  }
  /// `&s(i)`: the element's address for atomic functions.
  TESSERA_FORCEINLINE tile_static_pointer<E> operator&() const { return {p, ctx, buf, linear}; }
#define TESSERA_COMPOUND(op)                                                     \
  TESSERA_FORCEINLINE const tile_static_element& operator op(const E& v) const { \
    TESSERA_HOOK_ACCESS(ctx, buf, linear, impl::access_kind::read);              \
    TESSERA_HOOK_ACCESS(ctx, buf, linear, impl::access_kind::write);             \
    *p op v;                                                                     \
    return *this;                                                                \
  }
  TESSERA_COMPOUND(+=)
  TESSERA_COMPOUND(-=)
  TESSERA_COMPOUND(*=)
  TESSERA_COMPOUND(/=)
#undef TESSERA_COMPOUND
  TESSERA_FORCEINLINE const tile_static_element& operator++() const {
    return *this += E(1);
  }
  TESSERA_FORCEINLINE const tile_static_element& operator--() const {
    return *this -= E(1);
  }
};

/// Handle to a tile_static buffer of type U (a scalar or a C array such as float[16][16]):
/// one copy per tile in Kokkos team scratch. Index with `s(i, j)`, `s[index]`, AMP's chained
/// `s[i][j]`, or use `s` itself for a scalar. In checked mode indices are bounds-checked
/// (bounds_error) and accesses recorded.
template <class U>
class tile_static_ref {
 public:
  using element_type = std::remove_all_extents_t<U>;
  static constexpr int rank = static_cast<int>(std::rank_v<U>);
  static_assert(rank <= 3, "tile_group::tile_static<U>: U may have at most 3 array extents");
  static_assert(std::is_trivially_copyable_v<element_type>,
                "tile_group::tile_static<U>: the element type must be trivially copyable");

  TESSERA_INLINE tile_static_ref(element_type* p, impl::host_context* ctx, int id)
      : p_(p), ctx_(ctx), id_(id) {}

  template <class... I>
  requires(sizeof...(I) == rank &&
           (std::is_integral_v<I> && ...)) TESSERA_FORCEINLINE tile_static_element<element_type>
  operator()(I... i) const {
    const index_type idx[rank > 0 ? rank : 1] = {static_cast<index_type>(i)...};
    return at(idx);
  }
  template <int N>
  requires(N == rank) TESSERA_FORCEINLINE tile_static_element<element_type>
  operator[](const index<N>& i) const { return at(i.v); }
  /// C++ AMP's chained subscripts: `s[i][j]` (one index per extent, outermost first).
  template <class I>
  requires(std::is_integral_v<I>&& rank >= 1) TESSERA_FORCEINLINE auto operator[](I i) const {
    if constexpr (rank == 1) {
      return (*this)(i);
    } else {
      return subscript<1>{this, {static_cast<index_type>(i), 0, 0}};
    }
  }
  /// Scalar buffers also act as their element: `total += x;`, `float v = total;`.
  TESSERA_FORCEINLINE operator element_type() const requires(rank == 0) { return (*this)(); }
  template <class V>
  requires(rank == 0) TESSERA_FORCEINLINE const tile_static_ref& operator=(const V& v) const {
    (*this)() = static_cast<element_type>(v);
    return *this;
  }
  template <class V>
  requires(rank == 0) TESSERA_FORCEINLINE const tile_static_ref& operator+=(const V& v) const {
    (*this)() += static_cast<element_type>(v);
    return *this;
  }
  /// `&total` of a scalar buffer: its address for atomic functions.
  TESSERA_FORCEINLINE tile_static_pointer<element_type> operator&() const requires(rank == 0) {
    return &(*this)();
  }
  /// Raw pointer to the buffer (row-major); accesses through it are not checked.
  TESSERA_INLINE element_type* data() const { return p_; }
  static constexpr index_type size() { return sizeof(U) / sizeof(element_type); }

 private:
  /// A partly subscripted buffer: `s[i]` of a rank-2 or rank-3 buffer.
  template <int Depth>
  struct subscript {
    const tile_static_ref* ref;
    index_type idx[3];
    template <class I>
    requires std::is_integral_v<I> TESSERA_FORCEINLINE auto operator[](I i) const {
      subscript<Depth + 1> next{ref, {idx[0], idx[1], idx[2]}};
      next.idx[Depth] = static_cast<index_type>(i);
      if constexpr (Depth + 1 == rank)
        return ref->at(next.idx);
      else
        return next;
    }
  };
  TESSERA_FORCEINLINE tile_static_element<element_type> at(const index_type* idx) const {
    index_type lin = 0;
    if constexpr (rank > 0) {
#ifndef TESSERA_DEVICE_PASS
      if (__builtin_expect(ctx_ != nullptr, 0)) {
        bool out = false;
        for (int d = 0; d < rank; ++d) out = out || idx[d] < 0 || idx[d] >= dim(d);
        if (out)
          impl::hook_bounds(ctx_, id_, idx[0], rank > 1 ? idx[1] : 0, rank > 2 ? idx[2] : 0, rank);
      }
#endif
      for (int d = 0; d < rank; ++d) lin = lin * dim(d) + idx[d];
    } else {
      (void)idx;
    }
    return {p_ + lin, ctx_, id_, lin};
  }
  TESSERA_INLINE static constexpr index_type dim(int d) {
    constexpr index_type dims[3] = {std::extent_v<U, 0>, std::extent_v<U, 1>, std::extent_v<U, 2>};
    return dims[d];
  }
  element_type* p_;
  impl::host_context* ctx_;
  int id_;
};

template <int... T>
template <class U>
TESSERA_INLINE tile_static_ref<U> tiled_index<T...>::tile_static(const char* name, const char* file,
                                                                 unsigned line) const {
  using E = std::remove_all_extents_t<U>;
  impl::per_thread_state* s = barrier.state();
  if (s == nullptr) {
    impl::per_thread_misuse(
        "tessera: t.tile_static<U>() outside a per-thread kernel (in a phase kernel declare "
        "tile_static storage with g.tile_static<U>() in the kernel body)");
    return tile_static_ref<U>(nullptr, nullptr, 0);
  }
  const int k = s->site_of(name, file, line, sizeof(U), alignof(E));
  if (k < 0) {
    impl::per_thread_misuse(
        "tessera: a per-thread kernel made more than 16 distinct tile_static declarations");
    return tile_static_ref<U>(nullptr, nullptr, 0);
  }
#ifndef TESSERA_DEVICE_PASS
  if (s->declare) {
    int id = 0;
    void* p = s->declare(s, impl::describe_buffer<U>(name), k, id);
    return tile_static_ref<U>(static_cast<E*>(p), s->ctx, id);
  }
#endif
  if (s->offset > s->planned)
    impl::per_thread_misuse(
        "tessera: a per-thread kernel declared more tile_static storage than its plan (a "
        "declaration the validation run's tile did not reach)");
  return tile_static_ref<U>(reinterpret_cast<E*>(s->scratch + s->sites[k].offset), nullptr, 0);
}

/// Per-logical-thread storage that survives barriers: `auto acc = g.tile_local<float>(0.f);`
/// then `acc(t) += ...` inside for_each. One U per team member on GPUs (a register: the member
/// is the logical thread); on CPUs, where one member runs the whole tile, a U[L] array in team
/// scratch (L = logical threads per tile), placed after the tile_static buffers declared
/// before it; host storage in checked mode. The launch checks the size against the backend's
/// limit (resource_error) before anything runs.
template <class U, int L, int Slots>
class tile_local_ref {
  static_assert(std::is_default_constructible_v<U> && std::is_trivially_destructible_v<U>,
                "tile_group::tile_local<U>: U must be default-constructible and trivially "
                "destructible");
  static_assert(Slots == 1 || Slots == L, "tile_local_ref: one slot, or one per logical thread");

 public:
  /// \param slots [in] L values (CPU scratch or host storage); ignored when Slots == 1 unless
  ///        non-null (host storage in checked mode)
  /// \param ctx, id [in] the host context running the body (checked mode, dry run: each
  ///        access is checked to be the running logical thread's own copy) and the
  ///        declaration's id there; nullptr in kernels
  TESSERA_INLINE tile_local_ref(const U& init, U* slots, impl::host_context* ctx = nullptr,
                                int id = 0)
      : p_(slots), ctx_(ctx), id_(id) {
    if constexpr (Slots == 1) {
#ifndef TESSERA_DEVICE_PASS
      if (p_) {
        for (int i = 0; i < L; ++i) p_[i] = init;
        return;
      }
#endif
      v_ = init;
    } else {
      if (p_)
        for (int i = 0; i < L; ++i) p_[i] = init;
    }
  }
  /// Logical thread t's copy. Only t itself may use it (it is a register on GPUs): checked
  /// mode reports an access to another logical thread's copy (usage_error).
  template <class TI>
  TESSERA_FORCEINLINE U& operator()(const TI& t) const {
    TESSERA_HOST_HOOK(ctx_, local_access(id_, t.local_linear()));
    if constexpr (Slots == 1) {
#ifndef TESSERA_DEVICE_PASS
      if (p_) return p_[t.local_linear()];
#endif
      return v_;
    } else {
      return p_[t.local_linear()];
    }
  }
  template <class TI>
  TESSERA_FORCEINLINE U& operator[](const TI& t) const {
    return (*this)(t);
  }

 private:
  U* p_;
  impl::host_context* ctx_;
  int id_;
  struct none {};
  /// The register of the GPU mapping (Slots == 1).
  [[no_unique_address]] mutable std::conditional_t<Slots == 1, U, none> v_{};
};

namespace impl {
/// E[T0 + 2R][T1 + 2R]...: a tile with a halo of R points on every side.
template <class E, int R, int... T>
struct halo_array;
template <class E, int R, int T0>
struct halo_array<E, R, T0> {
  using type = E[T0 + 2 * R];
};
template <class E, int R, int T0, int T1>
struct halo_array<E, R, T0, T1> {
  using type = E[T0 + 2 * R][T1 + 2 * R];
};
template <class E, int R, int T0, int T1, int T2>
struct halo_array<E, R, T0, T1, T2> {
  using type = E[T0 + 2 * R][T1 + 2 * R][T2 + 2 * R];
};
}  // namespace impl

/// A tile_static buffer holding one tile of an operand plus a halo of R points on every side
/// ((T0 + 2R) x (T1 + 2R) x ... elements), indexed by local coordinates: `h(i, j)` with
/// -R <= i < T0 + R is the operand's element at tile_origin + (i, j). Filled by
/// `tile_group::load_halo` (which applies a boundary policy where the tile plus halo reaches
/// outside the operand); reads and writes are tile_static accesses (checked mode records them
/// and reports indices outside [-R, T + R) as bounds_error).
template <class E, int R, int... T>
class halo_tile {
 public:
  static constexpr int rank = sizeof...(T);
  static constexpr int radius = R;
  using storage_type = tile_static_ref<typename impl::halo_array<E, R, T...>::type>;
  using element_type = E;
  /// The buffer's shape, (T0 + 2R, ...).
  static constexpr extent<rank> halo_extent = extent<rank>((T + 2 * R)...);

  TESSERA_INLINE explicit halo_tile(const storage_type& s) : s_(s) {}
  /// The element at local coordinates (i, j, ...), each in [-R, T_d + R).
  template <class... I>
  requires(sizeof...(I) == rank &&
           (std::is_integral_v<I> && ...)) TESSERA_FORCEINLINE tile_static_element<E>
  operator()(I... i) const { return s_((static_cast<index_type>(i) + R)...); }
  /// The element at local coordinates i (e.g. `h[t.local + index<2>(-1, 0)]`).
  TESSERA_FORCEINLINE tile_static_element<E> operator[](const index<rank>& i) const {
    return s_[i + index_type(R)];
  }
  /// The underlying tile_static buffer (indices shifted by R: element (0, ...) is the halo's
  /// corner).
  TESSERA_INLINE const storage_type& storage() const { return s_; }

 private:
  storage_type s_;
};

template <class Space, int... T>
class basic_tile_group;
namespace impl {
struct tile_collectives;
}

/// C++ AMP's tile_barrier: every logical thread of the tile waits here, and memory accesses
/// are ordered by the chosen fence. In a Tessera kernel a barrier separates two for_each
/// phases; it is called from tile-uniform code (never inside for_each).
/// \tparam Space the execution space of the launch (tessera::tile_barrier: the default one)
template <class Space>
class basic_tile_barrier {
 public:
  using member_type = typename Kokkos::TeamPolicy<Space>::member_type;
  TESSERA_INLINE basic_tile_barrier(const member_type* team, impl::host_context* ctx)
      : team_(team), ctx_(ctx) {}
  /// Barrier with a fence on global and tile_static memory.
  TESSERA_INLINE void wait() const { sync(impl::fence_kind::all_memory); }
  /// Same as wait().
  TESSERA_INLINE void wait_with_all_memory_fence() const { sync(impl::fence_kind::all_memory); }
  /// Barrier with a fence on global memory only.
  TESSERA_INLINE void wait_with_global_memory_fence() const {
    sync(impl::fence_kind::global_memory);
  }
  /// Barrier with a fence on tile_static memory only.
  TESSERA_INLINE void wait_with_tile_static_memory_fence() const {
    sync(impl::fence_kind::tile_static_memory);
  }
  /// A fence without waiting (see all_memory_fence()).
  TESSERA_INLINE void fence(impl::fence_kind f) const {
#ifndef TESSERA_DEVICE_PASS
    if (ctx_) {
      ctx_->fence(f);
      return;
    }
#endif
    if (in_phase_)
      impl::tile_mapping<Space>::thread_fence(f);
    else
      impl::tile_mapping<Space>::fence(*team_, f);
  }

 private:
  template <class, int...>
  friend class basic_tile_group;
  friend struct impl::tile_collectives;
  TESSERA_INLINE void sync(impl::fence_kind f) const {
#ifndef TESSERA_DEVICE_PASS
    if (ctx_) {
      ctx_->barrier(f);
      return;
    }
#endif
    if (in_phase_)
      impl::misuse_in_kernel("tessera: tile barrier inside for_each (divergent barrier)");
    impl::tile_mapping<Space>::barrier(*team_, f);
  }
  const member_type* team_;
  impl::host_context* ctx_;
  mutable bool in_phase_ = false;
};

/// The barrier type of tile kernels on the default execution space (C++ AMP's tile_barrier).
using tile_barrier = basic_tile_barrier<execution_space>;

/// Free-standing fences (C++ AMP): order the calling code's accesses to the named memory
/// without waiting. From tile-uniform code (between two for_each phases) a fence is a phase
/// boundary for the memory it names — on GPUs every logical thread passes it together — so
/// warp-synchronous reduction tails written as phases are correct; checked mode then orders
/// only accesses to that memory. Inside for_each it orders this logical thread's own accesses
/// and synchronizes nothing.
template <class Space>
TESSERA_INLINE void all_memory_fence(const basic_tile_barrier<Space>& b) {
  b.fence(impl::fence_kind::all_memory);
}
template <class Space>
TESSERA_INLINE void global_memory_fence(const basic_tile_barrier<Space>& b) {
  b.fence(impl::fence_kind::global_memory);
}
template <class Space>
TESSERA_INLINE void tile_static_memory_fence(const basic_tile_barrier<Space>& b) {
  b.fence(impl::fence_kind::tile_static_memory);
}

/// The free-standing fences on a per-thread kernel's `t.barrier`: order this logical thread's
/// own accesses to the named memory (C++ AMP's `all_memory_fence(t.barrier)`, ...).
TESSERA_INLINE void all_memory_fence(const per_thread_barrier& b) {
  b.fence(impl::fence_kind::all_memory);
}
TESSERA_INLINE void global_memory_fence(const per_thread_barrier& b) {
  b.fence(impl::fence_kind::global_memory);
}
TESSERA_INLINE void tile_static_memory_fence(const per_thread_barrier& b) {
  b.fence(impl::fence_kind::tile_static_memory);
}

/// One tile of a tiled launch, as seen by the kernel body. Created by parallel_for_each.
/// \tparam Space execution space of the launch (tessera::tile_group: the default one)
/// \tparam T tile sizes (T0[,T1[,T2]])
template <class Space, int... T>
class basic_tile_group {
  using mapping = impl::tile_mapping<Space>;

 public:
  static constexpr int rank = sizeof...(T);
  static constexpr int tile_size = (T * ...);
  using member_type = typename Kokkos::TeamPolicy<Space>::member_type;
  using index_t = tiled_index<T...>;
  using barrier_type = basic_tile_barrier<Space>;

  barrier_type barrier;     ///< `g.barrier.wait()` and the three fence variants
  index<rank> tile;         ///< this tile's coordinates
  index<rank> tile_origin;  ///< global index of the tile's first element

  /// Fast mode (inside a Kokkos team). \pre scratch holds `scratch_bytes` planned bytes.
  TESSERA_INLINE basic_tile_group(const member_type& team, char* scratch, std::size_t scratch_bytes,
                                  const index<rank>& tile_, const index<rank>& origin)
      : barrier(&team, nullptr),
        tile(tile_),
        tile_origin(origin),
        team_(&team),
        scratch_(scratch),
        planned_(scratch_bytes),
        ctx_(nullptr) {}
  /// Host mode (planning pass, validation dry run, checked mode).
  basic_tile_group(impl::host_context* ctx, const index<rank>& tile_, const index<rank>& origin)
      : barrier(nullptr, ctx),
        tile(tile_),
        tile_origin(origin),
        team_(nullptr),
        scratch_(nullptr),
        planned_(0),
        ctx_(ctx) {}

  /// Allocates a tile_static buffer of type U (scalar or C array, e.g. `float[16][16]`):
  /// sizeof(U) bytes of team scratch, shared by the tile's logical threads, uninitialized.
  /// Placed in scratch level 0, or level 1 when the kernel's total does not fit level 0.
  /// \param name [in] optional name shown by explain() and checked-mode errors
  template <class U>
  TESSERA_INLINE tile_static_ref<U> tile_static(const char* name = nullptr) {
    using E = std::remove_all_extents_t<U>;
    const std::size_t off = impl::scratch_offset(offset_, alignof(E));
    offset_ = off + sizeof(U);
#ifndef TESSERA_DEVICE_PASS
    if (ctx_) {
      int id = 0;
      void* p = ctx_->allocate_static(impl::describe_buffer<U>(name), id);
      return tile_static_ref<U>(static_cast<E*>(p), ctx_, id);
    }
#endif
    (void)name;
    if (barrier.in_phase_ || offset_ > planned_)
      impl::misuse_in_kernel("tessera: tile_static allocation inside for_each or beyond the plan");
    return tile_static_ref<U>(reinterpret_cast<E*>(scratch_ + off), nullptr, 0);
  }

  /// Per-logical-thread storage initialised to `init`, alive across barriers (sizeof(U) bytes
  /// per logical thread: a register on GPUs, team scratch on CPUs).
  template <class U>
  TESSERA_INLINE tile_local_ref<U, tile_size, mapping::template local_slots<tile_size>> tile_local(
      const U& init, const char* name = nullptr) {
    constexpr int slots = mapping::template local_slots<tile_size>;
    U* p = nullptr;
#ifndef TESSERA_DEVICE_PASS
    if (ctx_) {
      int id = 0;
      p = static_cast<U*>(ctx_->allocate_local(impl::describe_buffer<U>(name), id));
      return tile_local_ref<U, tile_size, slots>(init, p, ctx_, id);
    }
#endif
    (void)name;
    if constexpr (slots > 1) {
      // CPU mapping: the L copies live in team scratch, laid out like tile_static buffers.
      const std::size_t off = impl::scratch_offset(offset_, alignof(U));
      offset_ = off + sizeof(U) * slots;
      if (barrier.in_phase_ || offset_ > planned_)
        impl::misuse_in_kernel("tessera: tile_local inside for_each or beyond the plan");
      p = reinterpret_cast<U*>(scratch_ + off);
    }
    return tile_local_ref<U, tile_size, slots>(init, p);
  }

  /// Allocates a tile_static buffer for one tile of an operand plus a halo of R points on
  /// every side ((T0 + 2R) x ... elements of E, uninitialized); fill it with load_halo.
  template <class E, int R>
  TESSERA_INLINE halo_tile<E, R, T...> tile_static_halo(const char* name = nullptr) {
    static_assert(R >= 0, "tile_group::tile_static_halo<E, R>: the halo radius R must be >= 0");
    return halo_tile<E, R, T...>(
        tile_static<typename impl::halo_array<E, R, T...>::type>(name ? name : "halo"));
  }

  /// Loads this tile of `src` plus its halo into `h` and waits at a tile barrier (tile_static
  /// fence): afterwards every logical thread may read any element of `h`. Element (i, ...)
  /// of h is src[tile_origin + (i, ...)], or what boundary policy `b` gives where that index
  /// lies outside src (boundary::zero, constant(v), clamp, periodic, mirror). Called from
  /// tile-uniform code; it is one phase plus one barrier (explain shows the barrier). Under the
  /// GPU mapping logical thread l loads the halo positions congruent to it modulo the tile
  /// (rows of T_last consecutive elements: coalesced); on CPUs the tile is copied row by row,
  /// rows inside src as straight copies. Loading again into the same buffer needs a barrier
  /// after the last phase that read it (checked mode reports the race otherwise).
  /// \param src [in] an array or array_view of the tile's rank (any extent; the launch's tiles
  ///        need not cover it)
  template <class E, int R, class Src>
  TESSERA_INLINE void load_halo(const halo_tile<E, R, T...>& h, const Src& src,
                                boundary::policy b) {
    static_assert(Src::rank == rank,
                  "tile_group::load_halo: the operand must have the tile's rank");
    const extent<rank> ext = src.get_extent();
    constexpr extent<rank> H = halo_tile<E, R, T...>::halo_extent;
    const auto& buf = h.storage();
    if (ctx_ != nullptr || mapping::thread_per_logical) {
      for_each([&](const index_t& t) {
        // Logical thread `local` loads the halo positions local + k * tile_extent.
        constexpr int dims[3] = {T...};
        index<rank> k;
        for (;;) {
          index<rank> p;
          bool in = true;
          for (int d = 0; d < rank; ++d) {
            p[d] = t.local[d] + k[d] * dims[d];
            in = in && p[d] < H[d];
          }
          if (in) buf[p] = boundary::read<E>(src, ext, t.tile_origin + p - index_type(R), b);
          int d = rank - 1;
          while (d >= 0 && (k[d] + 1) * dims[d] >= H[d]) k[d--] = 0;
          if (d < 0) break;
          ++k[d];
        }
      });
    } else {
      // CPU mapping, fast mode: the tile plus halo row by row; a row inside src is a straight
      // copy loop (vectorized), the others read through the boundary policy.
      barrier.in_phase_ = true;
      E* out = buf.data();
      constexpr index_type W = H[rank - 1];
      const index_type c0 = tile_origin[rank - 1] - R;
      const bool cols_in = c0 >= 0 && c0 + W <= ext[rank - 1];
      const index_type rows = H.size() / W;
      for (index_type r = 0; r < rows; ++r) {
        index<rank> g;
        bool row_in = true;
        index_type q = r;
        for (int d = rank - 2; d >= 0; --d) {
          g[d] = tile_origin[d] - R + q % H[d];
          q /= H[d];
          row_in = row_in && g[d] >= 0 && g[d] < ext[d];
        }
        E* o = out + r * W;
        if (row_in && cols_in) {
          if (tessera::impl::hooked_run_active()) {
            for (index_type j = 0; j < W; ++j) {
              g[rank - 1] = c0 + j;
              o[j] = static_cast<E>(src[g]);
            }
          } else {
            TESSERA_IVDEP
            for (index_type j = 0; j < W; ++j) {
              TESSERA_HOST_ASSUME(!tessera::impl::hooked_run_active());
              index<rank> gj = g;
              gj[rank - 1] = c0 + j;
              o[j] = static_cast<E>(src[gj]);
            }
          }
        } else {
          for (index_type j = 0; j < W; ++j) {
            g[rank - 1] = c0 + j;
            o[j] = boundary::read<E>(src, ext, g, b);
          }
        }
      }
      barrier.in_phase_ = false;
    }
    barrier.wait_with_tile_static_memory_fence();
  }

  /// One call: allocates a halo_tile of radius R for `src`'s element type (tile_static_halo),
  /// loads this tile of src plus its halo with boundary policy b, and waits at a tile barrier.
  /// A 5-point stencil with one global read per point of tile plus halo:
  /// \code
  ///   auto a = g.load_halo<1>(A, tessera::boundary::clamp, "a");
  ///   g.for_each(B.extent, [&](const tessera::tiled_index<16, 16>& t) {  // padded tiles
  ///     const int i = t.local[0], j = t.local[1];
  ///     B[t.global] = 0.2f * (a(i, j) + a(i - 1, j) + a(i + 1, j) + a(i, j - 1) + a(i, j + 1));
  ///   });
  /// \endcode
  template <int R, class Src>
  TESSERA_INLINE auto load_halo(const Src& src, boundary::policy b, const char* name = nullptr) {
    using E = std::remove_cv_t<typename Src::value_type>;
    auto h = tile_static_halo<E, R>(name);
    load_halo(h, src, b);
    return h;
  }

  /// Runs f(tiled_index) once for every logical thread of the tile (one phase). Logical threads
  /// of one phase run in no particular order and concurrently on GPUs: they must not touch the
  /// same tile_static element unless all of them only read it.
  template <class F>
  TESSERA_INLINE void for_each(const F& f) const {
    static_assert(std::is_invocable_v<const F&, const index_t&>,
                  "tile_group::for_each: the body must be callable as f(const tiled_index<T...>&)");
#ifndef TESSERA_DEVICE_PASS
    if (ctx_) {
      ctx_->phase_scope(true);
      if (!ctx_->sizing()) {
        for (int l = 0; l < tile_size; ++l) {
          ctx_->set_thread(l);
          f(make_index(l));
        }
        ctx_->set_thread(-1);
      }
      ctx_->phase_scope(false);
      return;
    }
#endif
    barrier.in_phase_ = true;
    mapping::template for_each<T...>(*team_,
                                     [&](const index<rank>& local) { f(make_local(local)); });
    barrier.in_phase_ = false;
  }

  /// One phase run only by the logical threads whose global index lies in `dom` (C++ AMP's
  /// `if (extent.contains(t.global))` on padded tiles, as a bound): on CPUs the phase's loop
  /// bounds are clipped to the tile's part of dom (no per-point test: the loop vectorizes);
  /// under the GPU mapping the other members skip the phase. A tile outside dom runs nothing.
  template <class F>
  TESSERA_INLINE void for_each(const sub_domain<rank>& dom, const F& f) const {
    static_assert(std::is_invocable_v<const F&, const index_t&>,
                  "tile_group::for_each: the body must be callable as f(const tiled_index<T...>&)");
    constexpr int dims[3] = {T...};
    index<rank> lo, hi;
    for (int d = 0; d < rank; ++d) {
      const index_type a = dom.origin[d] - tile_origin[d];
      const index_type b = a + dom.extent[d];
      lo[d] = a < 0 ? 0 : (a > dims[d] ? dims[d] : a);
      hi[d] = b < lo[d] ? lo[d] : (b > dims[d] ? dims[d] : b);
    }
#ifndef TESSERA_DEVICE_PASS
    if (ctx_) {
      for_each([&](const index_t& t) {
        bool in = true;
        for (int d = 0; d < rank; ++d) in = in && t.local[d] >= lo[d] && t.local[d] < hi[d];
        if (in) f(t);
      });
      return;
    }
#endif
    barrier.in_phase_ = true;
    mapping::template for_each_in<T...>(*team_, lo, hi,
                                        [&](const index<rank>& local) { f(make_local(local)); });
    barrier.in_phase_ = false;
  }
  /// for_each(sub_domain(e), f): the logical threads whose global index lies in extent e (e.g.
  /// `g.for_each(B.extent, ...)` on the padded tiles of B's extent).
  template <class F>
  TESSERA_INLINE void for_each(const extent<rank>& e, const F& f) const {
    for_each(sub_domain<rank>(e), f);
  }

  /// The host context in the planning pass and checked mode (nullptr in kernels).
  TESSERA_INLINE impl::host_context* host_context() const {
    return ctx_;
  }

  /// Scratch bytes this tile has allocated so far (after the body: the kernel's total).
  TESSERA_INLINE std::size_t scratch_bytes() const {
    return offset_;
  }

 private:
  friend struct impl::tile_collectives;
  TESSERA_FORCEINLINE index_t make_index(int linear) const {
    constexpr int d[3] = {T...};
    if constexpr (rank == 1)
      return make_local(index<1>(linear));
    else if constexpr (rank == 2)
      return make_local(index<2>(linear / d[1], linear % d[1]));
    else
      return make_local(index<3>(linear / (d[1] * d[2]), (linear / d[2]) % d[1], linear % d[2]));
  }
  TESSERA_FORCEINLINE index_t make_local(const index<rank>& local) const {
    index_t t;
    t.local = local;
    t.tile = tile;
    t.tile_origin = tile_origin;
    t.global = tile_origin + local;
    return t;
  }

  const member_type* team_;
  char* scratch_;
  std::size_t planned_;
  impl::host_context* ctx_;
  std::size_t offset_ = 0;
  /// The tile collectives' workspace (tile_collectives.hpp): allocated at the first
  /// collective, reused by later ones that fit.
  void* ws_ = nullptr;
  std::size_t ws_bytes_ = 0, ws_align_ = 0;
};

/// The tile of a tile kernel on the default execution space: kernels take
/// `tessera::tile_group<T...>&`.
template <int... T>
using tile_group = basic_tile_group<execution_space, T...>;

}  // namespace tessera
