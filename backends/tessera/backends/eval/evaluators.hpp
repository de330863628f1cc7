/// \file eval/evaluators.hpp
/// \brief Device evaluators of Tier 1 expression nodes: small, trivially copyable values that a
///        kernel of any backend calls per element. Built on the host from an expression and the
///        plan's fusion decisions (each node's role: inline, fused core, staged, temporary).
///
/// Interface of an evaluator `ev` of a rank-N node, inside a kernel with context `c`:
///  * `ev.flat(c, k)` — element k of the row-major order (only when the plan says every operand
///    is contiguous, `kernel_plan` of the elementwise family);
///  * `ev.at(c, idx)` — element at index<N> idx; rank 2 also `ev.at(c, i, j)`;
///  * `ev.visit_staged(f)` — calls f(t) for every transpose staged by this kernel;
///  * `ev.visit_stencil(f)` — calls f(s) for each stencil operand box this kernel stages (the
///    shift or section that loads it: `s.box_elements()`, `s.stage_element(c, e)`);
///  * `ev.visit_shifts(o, f)` — calls f(offset, extent) for every shift evaluated inline, with
///    its offset from the index being computed (o plus the offsets of the shifts above it)
///    and its operand's extent;
///  * `ev.visit_prefetch(i, f)` — calls f(address, element bytes) for every array operand the
///    plan's row_prefetches list: the address of its element at index i plus the listed offset
///    (formed in integers: it may lie outside the array; only a prefetch may use it).
/// The context carries what the fused kernel computed for this element: `c.acc` (the value of
/// the kernel's matmul / tile_reduce core) and the staged tiles (`c.staged[slot]`, leading
/// dimension `c.ld`, origin `c.oi`, `c.oj` of the output block).
#pragma once

#include <tessera/codegen/build_graph.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/passes/fusion.hpp>
#include <tessera/dsl/expr/nodes.hpp>

#include <Kokkos_Core.hpp>

#include <new>
#include <type_traits>
#include <vector>

namespace tessera::backends::eval {

using codegen::node_role;
using tessera::fusion_role;

/// Per-kernel, per-element context. S = staged slots (transposes in the expression, >= 1);
/// OutputOrder: staged tiles are stored in output order (CPU kernels) rather than transposed
/// (GPU kernels). MatmulCore: the kernel is a matmul kernel whose expression holds one matmul
/// node, which is therefore its core: that node's value is `acc`, known at compile time (so
/// the epilogue has no per-element test and vectorizes).
template <class Acc, int S, bool OutputOrder = false, bool MatmulCore = false,
          bool Interior = false>
struct ectx {
  static constexpr bool output_order = OutputOrder;
  static constexpr bool matmul_core = MatmulCore;
  /// Every shift evaluated with this context reads inside its operand (the CPU rows kernel
  /// proved it for the columns it evaluates so): no boundary tests.
  static constexpr bool interior = Interior;
  /// Shifts with a staged box read it (stencil_ctx).
  static constexpr bool stencil = false;
  Acc acc{};
  void* staged[S] = {};
  int ld = 0;
  index_type oi = 0, oj = 0;
};

/// The context of a staged stencil kernel: staged[k] is stencil stage k's box in team scratch,
/// origin the first index of the team's output tile.
template <int S>
struct stencil_ctx : ectx<char, S> {
  static constexpr bool stencil = true;
  index_type origin[3] = {0, 0, 0};
};

/// A temporary holding the value of a materialized node (rank 2, contiguous), by node id.
struct temp_slot {
  Kokkos::View<char*, memory_space> mem;  ///< from the temporary pool (exec/executor.hpp)
  index_type rows = 0, cols = 0;
  template <class T>
  T* data() const {
    return reinterpret_cast<T*>(mem.data());
  }
};

/// Host-side inputs for building evaluators: roles and temporaries chosen by the lowering.
struct build_ctx {
  const node_role* roles;  ///< per node (fusion's decisions)
  int root = -1;           ///< this kernel's root, whose role is root_role in this kernel
  node_role root_role = node_role::inline_elementwise;
  const temp_slot* temps;  ///< per node id
  const int* slot;         ///< per node id: staged slot of a staged transpose
  /// The kernel's staged stencil operands (plan.stencil_stages; nullptr: none).
  const std::vector<codegen::stencil_stage>* stencil = nullptr;
  /// The operands a CPU row loop prefetches (plan.row_prefetches; nullptr: none).
  const std::vector<codegen::row_prefetch>* prefetch = nullptr;
  node_role role(int id) const { return id == root ? root_role : roles[id]; }
};

template <class E>
struct eval;

template <class E>
eval<E> make_eval(const E& e, int id, const build_ctx& b) {
  return eval<E>(e, id, b);
}

/// Builds the evaluators of e's children: ids follow pre-order (child k's id is its parent's
/// id + 1 + the sizes of the earlier children).
template <class E, class F>
void for_each_child_id(const E& e, int id, F&& f) {
  int next = id + 1;
  codegen::for_each_child(e, [&](const auto& c) {
    f(c, next);
    next += codegen::node_count<std::remove_cvref_t<decltype(c)>>();
  });
}
/// Pre-order id of child K of node E whose id is `id`.
template <int K, class E>
constexpr int child_id(int id) {
  return id + 1 + codegen::nodes_before_child<E, K>();
}

/// An array or view. In a staged stencil kernel whose plan lists it among the overlapping
/// sections of one buffer (a stencil stage with `sections`), it reads the team's box of that
/// buffer at its offset instead; the stage's first section loads the box.
template <class A>
struct eval<terminal<A>> {
  using T = std::remove_const_t<typename A::value_type>;
  static constexpr int N = A::rank;
  tessera::impl::strided_ref<const T, N> r;
  int stage = -1;       ///< the stencil stage whose box this section reads (-1: none)
  bool leader = false;  ///< this section loads the box
  index<N> off;         ///< this section's offset from the buffer's first section
  index<N> box_lo;      ///< the box's first element, relative to the tile origin
  extent<N> box;        ///< the box's extent
  index_type span_lo = 0, span_hi = 0;  ///< the sections' memory, from the first one's start
  bool prefetched = false;              ///< the plan's row_prefetches list this operand
  index<N> prefetch_off;                ///< ... read at this offset
  eval() = default;
  eval(const terminal<A>& e, int id, const build_ctx& b) {
    const auto x = e.a.ref();
    r.p = x.p;
    for (int d = 0; d < N; ++d) r.s[d] = x.s[d];
    if (b.prefetch)
      for (const auto& pf : *b.prefetch)
        if (pf.node == id && pf.offset.size() == std::size_t(N) && r.s[N - 1] == 1) {
          prefetched = true;
          for (int d = 0; d < N; ++d) prefetch_off[d] = pf.offset[std::size_t(d)];
        }
    if (!b.stencil) return;
    for (std::size_t s = 0; s < b.stencil->size(); ++s) {
      const auto& st = (*b.stencil)[s];
      if (!st.sections || st.box.size() != std::size_t(N)) continue;
      for (std::size_t m = 0; m < st.shifts.size(); ++m)
        if (st.shifts[m] == id) {
          stage = int(s);
          leader = m == 0;
          for (int d = 0; d < N; ++d) {
            off[d] = st.offsets[m * std::size_t(N) + std::size_t(d)];
            box_lo[d] = st.lo[std::size_t(d)];
            box[d] = st.box[std::size_t(d)];
          }
          span_lo = st.span_lo;
          span_hi = st.span_hi;
        }
    }
  }
  template <class C>
  TESSERA_FORCEINLINE T flat(const C&, index_type k) const {
    return r.p[k];
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, const index<N>& i) const {
    if constexpr (C::stencil) {
      if (stage >= 0) {
        index_type q = 0;
        for (int d = 0; d < N; ++d) q = q * box[d] + (i[d] + off[d] - c.origin[d] - box_lo[d]);
        return static_cast<const T*>(c.staged[stage])[q];
      }
    }
    return r.at(i);
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, index_type i, index_type j) const {
    if constexpr (C::stencil) return at(c, index<2>(i, j));
    return r.p[i * r.s[0] + j];
  }
  /// Elements of the box this section loads.
  TESSERA_INLINE index_type box_elements() const { return box.size(); }
  /// Loads element e (row-major) of the box: the buffer at the tile origin + box_lo + e's
  /// position, counted from the first section; positions outside the sections' memory (which
  /// no section reads) are left as they are.
  template <class C>
  TESSERA_FORCEINLINE void stage_element(const C& c, index_type e) const {
    index<N> j = tessera::impl::unflatten(box, e);
    index_type from_first = 0, from_this = 0;
    for (int d = 0; d < N; ++d) {
      j[d] += c.origin[d] + box_lo[d];
      from_first += j[d] * r.s[d];
      from_this += (j[d] - off[d]) * r.s[d];
    }
    if (from_first >= span_lo && from_first <= span_hi)
      static_cast<T*>(c.staged[stage])[e] = r.p[from_this];
  }
  /// Rank 2: the first element of row i and the row stride, for block copies.
  TESSERA_FORCEINLINE const T* row_ptr(index_type i) const { return r.p + i * r.s[0]; }
  TESSERA_FORCEINLINE index_type row_stride() const { return r.s[0]; }
  template <class F>
  TESSERA_INLINE void visit_staged(F&&) const {}
  template <class O, class F>
  TESSERA_INLINE void visit_shifts(const O&, F&&) const {}
  /// Reports this section when it loads a box.
  template <class F>
  TESSERA_INLINE void visit_stencil(F&& f) const {
    if (stage >= 0 && leader) f(*this);
  }
  template <int M, class F>
  TESSERA_INLINE void visit_prefetch(const index<M>& i, F&& f) const {
    if constexpr (M == N) {
      if (!prefetched) return;
      std::uintptr_t a = reinterpret_cast<std::uintptr_t>(r.p);
      for (int d = 0; d < N; ++d)
        a += std::uintptr_t((i[d] + prefetch_off[d]) * r.s[d] * index_type(sizeof(T)));
      f(a, index_type(sizeof(T)));
    }
  }
};

template <class T>
struct eval<scalar_node<T>> {
  T value{};
  eval() = default;
  eval(const scalar_node<T>& e, int, const build_ctx&) : value(e.value) {}
  template <class C>
  TESSERA_FORCEINLINE T flat(const C&, index_type) const {
    return value;
  }
  template <class C, int N>
  TESSERA_FORCEINLINE T at(const C&, const index<N>&) const {
    return value;
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C&, index_type, index_type) const {
    return value;
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&&) const {}
  template <class O, class F>
  TESSERA_INLINE void visit_shifts(const O&, F&&) const {}
  template <class F>
  TESSERA_INLINE void visit_stencil(F&&) const {}
  template <int M, class F>
  TESSERA_INLINE void visit_prefetch(const index<M>&, F&&) const {}
};

/// A copy of functor F that is default constructible and assignable, as evaluators must be
/// (closure types are neither): the functor lives in aligned bytes, constructed by copy. The
/// bytes start zeroed: GCC 12 at -march=x86-64-v3 could not prove that a copy reads them only
/// once a functor is in them (-Wmaybe-uninitialized on a constant generator in a kernel).
template <class F>
struct functor_box {
  alignas(F) unsigned char bytes[sizeof(F)] = {};
  bool has = false;
  functor_box() = default;
  TESSERA_INLINE explicit functor_box(const F& f) : has(true) { new (bytes) F(f); }
  TESSERA_INLINE functor_box(const functor_box& o) : has(o.has) {
    if (has) new (bytes) F(o.get());
  }
  TESSERA_INLINE functor_box& operator=(const functor_box& o) {
    if (this != &o) {
      reset();
      has = o.has;
      if (has) new (bytes) F(o.get());
    }
    return *this;
  }
  TESSERA_INLINE ~functor_box() { reset(); }
  TESSERA_INLINE void reset() {
    if (has) get().~F();
    has = false;
  }
  TESSERA_FORCEINLINE const F& get() const { return *reinterpret_cast<const F*>(bytes); }
  TESSERA_FORCEINLINE F& get() { return *reinterpret_cast<F*>(bytes); }
};

template <class F, int N>
struct eval<generate_node<F, N>> {
  functor_box<F> f;
  index_type cols = 1, plane = 1;  // extent[N - 1], extent[N - 2] * extent[N - 1]
  eval() = default;
  eval(const generate_node<F, N>& e, int, const build_ctx&) : f(e.f) {
    if constexpr (N >= 2) cols = e.ext[N - 1];
    if constexpr (N == 3) plane = e.ext[1] * e.ext[2];
  }
  /// Flat element k (rank 1: the index itself; otherwise divided back into an index, so the
  /// plan gives kernels reading a generated node of rank >= 2 rows, not a flat loop).
  template <class C>
  TESSERA_FORCEINLINE auto flat(const C&, index_type k) const {
    if constexpr (N == 1)
      return f.get()(index<1>(k));
    else if constexpr (N == 2)
      return f.get()(index<2>(k / cols, k % cols));
    else
      return f.get()(index<3>(k / plane, (k % plane) / cols, k % cols));
  }
  template <class C>
  TESSERA_FORCEINLINE auto at(const C&, const index<N>& i) const {
    return f.get()(i);
  }
  template <class C>
  TESSERA_FORCEINLINE auto at(const C&, index_type i, index_type j) const {
    return f.get()(index<2>(i, j));
  }
  template <class G>
  TESSERA_INLINE void visit_staged(G&&) const {}
  template <class O, class G>
  TESSERA_INLINE void visit_shifts(const O&, G&&) const {}
  template <class G>
  TESSERA_INLINE void visit_stencil(G&&) const {}
  template <int M, class G>
  TESSERA_INLINE void visit_prefetch(const index<M>&, G&&) const {}
};

/// A shift: the operand's evaluator read at i + offset, with the boundary policy outside. In a
/// staged stencil kernel (the plan's stencil_stages list this shift) it reads the team's box
/// of its operand instead, which one shift of the stage (the leader) loads.
template <class A>
struct eval<shift_node<A>> {
  static constexpr int N = A::rank;
  using T = typename A::value_type;
  using V = std::remove_const_t<T>;
  eval<A> a;
  index<N> off;
  extent<N> ext;
  boundary::kind k = boundary::kind::zero;
  T value{};
  int stage = -1;       ///< the stencil stage whose box this shift reads (-1: none)
  bool leader = false;  ///< this shift loads the box
  index<N> box_lo;      ///< the box's first element, relative to the tile origin
  extent<N> box;        ///< the box's extent
  eval() = default;
  eval(const shift_node<A>& e, int id, const build_ctx& b)
      : a(make_eval(e.a, child_id<0, shift_node<A>>(id), b)),
        off(e.offset),
        ext(e.a.get_extent()),
        k(e.bc.k),
        value(static_cast<T>(e.bc.value)) {
    if (!b.stencil) return;
    for (std::size_t s = 0; s < b.stencil->size(); ++s) {
      const auto& st = (*b.stencil)[s];
      for (std::size_t m = 0; m < st.shifts.size(); ++m)
        if (!st.sections && st.shifts[m] == id && st.box.size() == std::size_t(N)) {
          stage = int(s);
          leader = m == 0;
          for (int d = 0; d < N; ++d) {
            box_lo[d] = st.lo[std::size_t(d)];
            box[d] = st.box[std::size_t(d)];
          }
        }
    }
  }
  /// The operand at index j, the boundary policy applied where j lies outside it.
  template <class C>
  TESSERA_FORCEINLINE T read_operand(const C& c, index<N> j) const {
    bool in = true;
    for (int d = 0; d < N; ++d) in = in && j[d] >= 0 && j[d] < ext[d];
    if (in) return T(a.at(c, j));
    if (k == boundary::kind::zero) return T(0);
    if (k == boundary::kind::constant) return value;
    for (int d = 0; d < N; ++d)
      if (j[d] < 0 || j[d] >= ext[d]) j[d] = boundary::inside(k, j[d], ext[d]);
    return T(a.at(c, j));
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, const index<N>& i) const {
    if constexpr (C::interior) return T(a.at(c, i + off));
    if constexpr (C::stencil) {
      if (stage >= 0) {
        // The box holds the operand (policy applied) over the tile grown by the stage's halo;
        // a constant boundary is this shift's own value (shifts of one box may differ in it).
        index_type q = 0;
        bool in = true;
        for (int d = 0; d < N; ++d) {
          const index_type j = i[d] + off[d];
          in = in && j >= 0 && j < ext[d];
          q = q * box[d] + (j - c.origin[d] - box_lo[d]);
        }
        if (k == boundary::kind::constant && !in) return value;
        return static_cast<const V*>(c.staged[stage])[q];
      }
    }
    return read_operand(c, i + off);
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, index_type i, index_type j) const {
    return at(c, index<2>(i, j));
  }
  /// Flat element k (the plan gives kernels reading a shift of rank >= 2 rows, not a flat loop).
  template <class C>
  TESSERA_FORCEINLINE T flat(const C& c, index_type q) const {
    return at(c, tessera::impl::unflatten(ext, q));
  }
  /// Elements of the box this shift loads.
  TESSERA_INLINE index_type box_elements() const { return box.size(); }
  /// Loads element e (row-major) of the box: the operand at the tile origin + box_lo + e's
  /// position, the boundary policy applied outside the operand.
  template <class C>
  TESSERA_FORCEINLINE void stage_element(const C& c, index_type e) const {
    index<N> j = tessera::impl::unflatten(box, e);
    for (int d = 0; d < N; ++d) j[d] += c.origin[d] + box_lo[d];
    static_cast<V*>(c.staged[stage])[e] = V(read_operand(c, j));
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&& f) const {
    a.visit_staged(f);
  }
  template <class O, class F>
  TESSERA_INLINE void visit_shifts(const O& o, F&& f) const {
    const index<N> at_operand = o + off;
    f(at_operand, ext);
    a.visit_shifts(at_operand, f);
  }
  /// Reports this shift when it loads a box; shifts below a staged shift are not staged (they
  /// receive another index than the kernel's own).
  template <class F>
  TESSERA_INLINE void visit_stencil(F&& f) const {
    if (stage >= 0) {
      if (leader) f(*this);
    } else {
      a.visit_stencil(f);
    }
  }
  /// The plan's offsets include every shift's: the operand sees the kernel's index.
  template <int M, class F>
  TESSERA_INLINE void visit_prefetch(const index<M>& i, F&& f) const {
    a.visit_prefetch(i, f);
  }
};

template <class Op, class A>
struct eval<unary_node<Op, A>> {
  eval<A> a;
  eval() = default;
  eval(const unary_node<Op, A>& e, int id, const build_ctx& b)
      : a(make_eval(e.a, child_id<0, unary_node<Op, A>>(id), b)) {}
  template <class C>
  TESSERA_FORCEINLINE auto flat(const C& c, index_type k) const {
    return Op{}(a.flat(c, k));
  }
  template <class C, int N>
  TESSERA_FORCEINLINE auto at(const C& c, const index<N>& i) const {
    return Op{}(a.at(c, i));
  }
  template <class C>
  TESSERA_FORCEINLINE auto at(const C& c, index_type i, index_type j) const {
    return Op{}(a.at(c, i, j));
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&& f) const {
    a.visit_staged(f);
  }
  template <class O, class F>
  TESSERA_INLINE void visit_shifts(const O& o, F&& f) const {
    a.visit_shifts(o, f);
  }
  template <class F>
  TESSERA_INLINE void visit_stencil(F&& f) const {
    a.visit_stencil(f);
  }
  template <int M, class F>
  TESSERA_INLINE void visit_prefetch(const index<M>& i, F&& f) const {
    a.visit_prefetch(i, f);
  }
};

template <class Op, class A, class B>
struct eval<binary_node<Op, A, B>> {
  using node = binary_node<Op, A, B>;
  eval<A> a;
  eval<B> b;
  eval() = default;
  eval(const node& e, int id, const build_ctx& bc)
      : a(make_eval(e.a, child_id<0, node>(id), bc)),
        b(make_eval(e.b, child_id<1, node>(id), bc)) {}
  template <class C>
  TESSERA_FORCEINLINE auto flat(const C& c, index_type k) const {
    return Op{}(a.flat(c, k), b.flat(c, k));
  }
  template <class C, int N>
  TESSERA_FORCEINLINE auto at(const C& c, const index<N>& i) const {
    return Op{}(a.at(c, i), b.at(c, i));
  }
  template <class C>
  TESSERA_FORCEINLINE auto at(const C& c, index_type i, index_type j) const {
    return Op{}(a.at(c, i, j), b.at(c, i, j));
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&& f) const {
    a.visit_staged(f);
    b.visit_staged(f);
  }
  template <class O, class F>
  TESSERA_INLINE void visit_shifts(const O& o, F&& f) const {
    a.visit_shifts(o, f);
    b.visit_shifts(o, f);
  }
  template <class F>
  TESSERA_INLINE void visit_stencil(F&& f) const {
    a.visit_stencil(f);
    b.visit_stencil(f);
  }
  template <int M, class F>
  TESSERA_INLINE void visit_prefetch(const index<M>& i, F&& f) const {
    a.visit_prefetch(i, f);
    b.visit_prefetch(i, f);
  }
};

template <class Cn, class A, class B>
struct eval<where_node<Cn, A, B>> {
  using node = where_node<Cn, A, B>;
  using T = typename node::value_type;
  eval<Cn> c;
  eval<A> a;
  eval<B> b;
  eval() = default;
  eval(const node& e, int id, const build_ctx& bc)
      : c(make_eval(e.c, child_id<0, node>(id), bc)),
        a(make_eval(e.a, child_id<1, node>(id), bc)),
        b(make_eval(e.b, child_id<2, node>(id), bc)) {}
  template <class C>
  TESSERA_FORCEINLINE T flat(const C& x, index_type k) const {
    return c.flat(x, k) ? T(a.flat(x, k)) : T(b.flat(x, k));
  }
  template <class C, int N>
  TESSERA_FORCEINLINE T at(const C& x, const index<N>& i) const {
    return c.at(x, i) ? T(a.at(x, i)) : T(b.at(x, i));
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& x, index_type i, index_type j) const {
    return c.at(x, i, j) ? T(a.at(x, i, j)) : T(b.at(x, i, j));
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&& f) const {
    c.visit_staged(f);
    a.visit_staged(f);
    b.visit_staged(f);
  }
  template <class O, class F>
  TESSERA_INLINE void visit_shifts(const O& o, F&& f) const {
    c.visit_shifts(o, f);
    a.visit_shifts(o, f);
    b.visit_shifts(o, f);
  }
  template <class F>
  TESSERA_INLINE void visit_stencil(F&& f) const {
    c.visit_stencil(f);
    a.visit_stencil(f);
    b.visit_stencil(f);
  }
  template <int M, class F>
  TESSERA_INLINE void visit_prefetch(const index<M>& i, F&& f) const {
    c.visit_prefetch(i, f);
    a.visit_prefetch(i, f);
    b.visit_prefetch(i, f);
  }
};

/// Common part of matmul / tile_reduce evaluators: a node that is either the fused core
/// (value = ctx.acc) or materialized in a temporary.
template <class T>
struct special_eval {
  bool core = false;
  const T* tmp = nullptr;
  index_type ld = 0;
  void init(int id, const build_ctx& b) {
    const node_role r = b.role(id);
    core = r == node_role::core;
    if (r == node_role::materialized) {
      tmp = b.temps[id].template data<T>();
      ld = b.temps[id].cols;
    }
  }
  template <class C>
  TESSERA_FORCEINLINE T flat(const C&, index_type k) const {
    return tmp[k];
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, index_type i, index_type j) const {
    return core ? T(c.acc) : tmp[i * ld + j];
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, const index<2>& i) const {
    return at(c, i[0], i[1]);
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&&) const {}
  template <class O, class F>
  TESSERA_INLINE void visit_shifts(const O&, F&&) const {}
  template <class F>
  TESSERA_INLINE void visit_stencil(F&&) const {}
  template <int M, class F>
  TESSERA_INLINE void visit_prefetch(const index<M>&, F&&) const {}
};

template <class A, class B>
struct eval<matmul_node<A, B>> : special_eval<typename matmul_node<A, B>::value_type> {
  using T = typename matmul_node<A, B>::value_type;
  using base = special_eval<T>;
  eval() = default;
  eval(const matmul_node<A, B>&, int id, const build_ctx& b) { this->init(id, b); }
  using base::flat;
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, index_type i, index_type j) const {
    if constexpr (C::matmul_core)
      return T(c.acc);
    else
      return base::at(c, i, j);
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, const index<2>& i) const {
    return at(c, i[0], i[1]);
  }
};

/// The expression type E of an evaluator eval<E>.
template <class Ev>
struct expr_of;
template <class E>
struct expr_of<eval<E>> {
  using type = E;
};
template <int R, int C, class Op, class A, bool M>
struct eval<tile_reduce_node<R, C, Op, A, M>>
    : special_eval<typename tile_reduce_node<R, C, Op, A, M>::value_type> {
  eval() = default;
  eval(const tile_reduce_node<R, C, Op, A, M>&, int id, const build_ctx& b) { this->init(id, b); }
};

/// A transpose: staged through scratch by this kernel (read from c.staged[slot]), or
/// materialized in a temporary.
template <class A>
struct eval<transpose_node<A>> {
  using T = typename A::value_type;
  bool staged = false;
  int slot = 0;
  const T* tmp = nullptr;
  index_type tmp_ld = 0;
  eval<A> child;
  extent<2> in_ext;
  eval() = default;
  eval(const transpose_node<A>& e, int id, const build_ctx& b) : in_ext(e.a.get_extent()) {
    const node_role r = b.role(id);
    if (r == node_role::materialized) {
      tmp = b.temps[id].template data<T>();
      tmp_ld = b.temps[id].cols;
    } else {
      staged = true;
      slot = b.slot[id];
      child = make_eval(e.a, child_id<0, transpose_node<A>>(id), b);
    }
  }
  template <class C>
  TESSERA_FORCEINLINE T flat(const C&, index_type k) const {
    return tmp[k];
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, const index<2>& i) const {
    return at(c, i[0], i[1]);
  }
  /// The staged tile holds the output block at (c.oi, c.oj); its layout is the kernel's: GPU
  /// kernels store it transposed (stage_row: s[j - oj][i - oi]), CPU kernels in output order
  /// (stage_block: s[i - oi][j - oj]); C::output_order says which.
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, index_type i, index_type j) const {
    if constexpr (C::output_order) {
      // The slot pointer is read unconditionally and one row pointer serves both cases, so
      // the compiler hoists it out of the loop over j and the loads stay contiguous.
      const T* sp = static_cast<const T*>(c.staged[slot]);
      const T* row = staged ? sp + (i - c.oi) * c.ld - c.oj : tmp + i * tmp_ld;
      return row[j];
    } else {
      if (!staged) return tmp[i * tmp_ld + j];
      return static_cast<const T*>(c.staged[slot])[(j - c.oj) * c.ld + (i - c.oi)];
    }
  }
  /// Calls f(*this) when this transpose is staged in the kernel; its operand is read directly
  /// by the staging code, so the visit stops here.
  template <class F>
  TESSERA_INLINE void visit_staged(F&& f) const {
    if (staged) f(*this);
  }
  /// Shifts below a transpose are read by the staging code or a kernel of their own.
  template <class O, class F>
  TESSERA_INLINE void visit_shifts(const O&, F&&) const {}
  template <class F>
  TESSERA_INLINE void visit_stencil(F&&) const {}
  template <int M, class F>
  TESSERA_INLINE void visit_prefetch(const index<M>&, F&&) const {}
  /// Stages row r of the operand block: staged[r][ii] = in(oj + r, oi + ii), ii < n, a
  /// contiguous read of the operand's row (GPU layout). Rows past the operand are skipped.
  template <class Cx>
  TESSERA_INLINE void stage_row(Cx& c, index_type r, index_type ii) const {
    const index_type row = c.oj + r, col = c.oi + ii;
    if (row < in_ext[0] && col < in_ext[1])
      static_cast<T*>(c.staged[slot])[r * c.ld + ii] = T(child.at(c, row, col));
  }
};

/// The number of staged slots an expression type needs (its nodes that can be staged, at
/// least 1).
template <class E>
inline constexpr int staged_slots = codegen::role_count<E, fusion_role::staged>() > 0
                                        ? codegen::role_count<E, fusion_role::staged>()
                                        : 1;

/// Finds the node with pre-order id `target` under `e` (whose id is `id`) and calls f(node, id).
template <class E, class F>
bool with_node(const E& e, int id, int target, F&& f) {
  if (id == target) {
    f(e, id);
    return true;
  }
  bool found = false;
  for_each_child_id(e, id, [&](const auto& c, int cid) {
    if (!found && target >= cid &&
        target < cid + codegen::node_count<std::remove_cvref_t<decltype(c)>>())
      found = with_node(c, cid, target, f);
  });
  return found;
}

}  // namespace tessera::backends::eval
