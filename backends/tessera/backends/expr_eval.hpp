/// \file expr_eval.hpp
/// \brief Tier 1 execution: turns an expression into an expr_graph, lowers it with the code
///        generator (codegen/lower.hpp), then runs the planned kernels with device evaluators.
///        Public entry points: `array = expr`, `eval(expr)`, `explain(expr)`.
#pragma once

#include <tessera/backends/host/gemm.hpp>
#include <tessera/backends/host/transpose.hpp>
#include <tessera/backends/reduce.hpp>
#include <tessera/backends/tile_launch.hpp>
#include <tessera/backends/tile_program.hpp>
#include <tessera/codegen/lower.hpp>
#include <tessera/dsl/expr/nodes.hpp>

#include <any>
#include <map>

namespace tessera {
namespace backends::expr {

using codegen::expr_graph;
using codegen::graph_node;
using codegen::kernel_spec;
using codegen::node_kind;
using codegen::node_role;

template <class T>
struct is_matmul : std::false_type {};
template <class A, class B>
struct is_matmul<matmul_node<A, B>> : std::true_type {};
template <class T>
struct is_tile_reduce : std::false_type {};
template <int R, int C, class Op, class A, bool M>
struct is_tile_reduce<tile_reduce_node<R, C, Op, A, M>> : std::true_type {};

// ------------------------------------------------------------------ graph building (host) ----
template <class V>
void fill_dtype(graph_node& n) {
  n.dtype = tessera::impl::scalar_type_name<V>();
  n.elem_bytes = sizeof(V);
}
template <class E>
void fill_extent(graph_node& n, const E& e) {
  if constexpr (E::rank > 0) {
    const auto x = e.get_extent();
    for (int d = 0; d < E::rank; ++d) n.extent.push_back(x[d]);
  }
}

template <class E>
constexpr node_kind kind_of() {
  if constexpr (is_matmul<E>::value)
    return node_kind::matmul;
  else if constexpr (is_tile_reduce<E>::value)
    return node_kind::tile_reduce;
  else if constexpr (
      requires { E::rank; } && requires(E e) { e.value; })
    return node_kind::scalar;
  else if constexpr (requires(E e) { e.c; })
    return node_kind::where;
  else if constexpr (requires(E e) {
                       e.b;
                       e.ext;
                     })
    return node_kind::binary;
  else if constexpr (requires(E e) { e.a.extent; })
    return node_kind::terminal;
  else if constexpr (requires(E e) { e.a; }) {
    if constexpr (E::rank == 2 && requires { typename E::is_transpose; })
      return node_kind::transpose;
    else
      return node_kind::unary;
  } else
    return node_kind::terminal;
}

/// Calls f(child) for every child of e, in order.
template <class E, class F>
void for_each_child(const E& e, F&& f) {
  constexpr node_kind k = kind_of<E>();
  if constexpr (k == node_kind::where) {
    f(e.c);
    f(e.a);
    f(e.b);
  } else if constexpr (k == node_kind::binary || k == node_kind::matmul) {
    f(e.a);
    f(e.b);
  } else if constexpr (k == node_kind::unary || k == node_kind::transpose ||
                       k == node_kind::tile_reduce) {
    f(e.a);
  }
}

/// A node's label in plans: the operator symbol for unary/binary nodes, else the kind's name.
template <class E>
struct op_label {
  static std::string get() { return codegen::to_string(kind_of<E>()); }
};
template <class Op, class A>
struct op_label<unary_node<Op, A>> {
  static std::string get() { return Op::symbol; }
};
template <class Op, class A, class B>
struct op_label<binary_node<Op, A, B>> {
  static std::string get() { return Op::symbol; }
};

struct build_state {
  std::map<const void*, std::string> names;  // one letter per distinct array
};

template <class E>
int build(const E& e, expr_graph& g, build_state& st) {
  const int id = static_cast<int>(g.nodes.size());
  g.nodes.emplace_back();
  {
    graph_node& n = g.nodes[id];
    n.kind = kind_of<E>();
    fill_extent(n, e);
    fill_dtype<typename E::value_type>(n);
    for (int d = 0; d < 3; ++d) n.tile[d] = e.sched.tile[d];
    switch (n.kind) {
      case node_kind::terminal:
        if constexpr (requires { e.a.view(); }) n.data = e.a.view().data();
        if (!st.names.count(n.data)) {
          const std::size_t k = st.names.size();
          st.names[n.data] =
              std::string(1, char('A' + k % 26)) + (k >= 26 ? std::to_string(k / 26) : "");
        }
        n.label = st.names[n.data];
        break;
      case node_kind::tile_reduce:
        if constexpr (is_tile_reduce<E>::value) {
          n.reduce_tile[0] = E::rows;
          n.reduce_tile[1] = E::cols;
          n.label = std::string(E::mean ? "tile_mean<" : "tile_reduce<") + std::to_string(E::rows) +
                    "," + std::to_string(E::cols) + ">";
        }
        break;
      default:
        n.label = op_label<E>::get();
    }
  }
  for_each_child(e, [&](const auto& c) {
    const int cid = build(c, g, st);
    g.nodes[id].children.push_back(cid);
  });
  return id;
}

template <class E>
expr_graph make_graph(const E& e) {
  expr_graph g;
  build_state st;
  build(e, g, st);
  return g;
}

inline codegen::target make_target(const expr_graph& g);

// ------------------------------------------------------------------ evaluators (device) -----
/// Per-kernel context an evaluator reads: the fused core's accumulator and staged tiles.
template <class Acc>
struct ectx {
  Acc acc{};
  void* staged[4] = {nullptr, nullptr, nullptr, nullptr};
  int ld = 0;
  index_type oi = 0, oj = 0;
};

/// Host-side inputs for building evaluators: roles and temporaries chosen by the lowering.
struct build_ctx {
  const expr_graph* g;
  const std::vector<node_role>* role;
  std::map<int, std::any>* temps;
  std::map<int, int> slot;  // staged transpose id -> scratch slot
};

template <class E>
struct eval;

template <class E>
eval<E> make_eval(const E& e, int id, build_ctx& b) {
  return eval<E>(e, id, b);
}

template <class A>
struct eval<terminal<A>> {
  using T = std::remove_const_t<typename A::value_type>;
  typename A::view_type v;
  eval() = default;
  eval(const terminal<A>& e, int, build_ctx&) : v(e.a.view()) {}
  template <class C>
  TESSERA_FORCEINLINE T flat(const C&, index_type k) const {
    return v.data()[k];
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C&, index_type i, index_type j) const {
    return v(i, j);
  }
  /// Rank 2: the first element of row i and the row stride, for block copies.
  TESSERA_FORCEINLINE const T* row_ptr(index_type i) const { return &v(i, 0); }
  TESSERA_FORCEINLINE index_type row_stride() const { return index_type(v.stride(0)); }
  template <class F>
  TESSERA_INLINE void visit_staged(F&&) const {}
};

template <class T>
struct eval<scalar_node<T>> {
  T value{};
  eval() = default;
  eval(const scalar_node<T>& e, int, build_ctx&) : value(e.value) {}
  template <class C>
  TESSERA_FORCEINLINE T flat(const C&, index_type) const {
    return value;
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C&, index_type, index_type) const {
    return value;
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&&) const {}
};

template <class Op, class A>
struct eval<unary_node<Op, A>> {
  eval<A> a;
  eval() = default;
  eval(const unary_node<Op, A>& e, int id, build_ctx& b)
      : a(make_eval(e.a, b.g->nodes[id].children[0], b)) {}
  template <class C>
  TESSERA_FORCEINLINE auto flat(const C& c, index_type k) const {
    return Op{}(a.flat(c, k));
  }
  template <class C>
  TESSERA_FORCEINLINE auto at(const C& c, index_type i, index_type j) const {
    return Op{}(a.at(c, i, j));
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&& f) const {
    a.visit_staged(f);
  }
};

template <class Op, class A, class B>
struct eval<binary_node<Op, A, B>> {
  eval<A> a;
  eval<B> b;
  eval() = default;
  eval(const binary_node<Op, A, B>& e, int id, build_ctx& bc)
      : a(make_eval(e.a, bc.g->nodes[id].children[0], bc)),
        b(make_eval(e.b, bc.g->nodes[id].children[1], bc)) {}
  template <class C>
  TESSERA_FORCEINLINE auto flat(const C& c, index_type k) const {
    return Op{}(a.flat(c, k), b.flat(c, k));
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
};

template <class Cn, class A, class B>
struct eval<where_node<Cn, A, B>> {
  using T = typename where_node<Cn, A, B>::value_type;
  eval<Cn> c;
  eval<A> a;
  eval<B> b;
  eval() = default;
  eval(const where_node<Cn, A, B>& e, int id, build_ctx& bc)
      : c(make_eval(e.c, bc.g->nodes[id].children[0], bc)),
        a(make_eval(e.a, bc.g->nodes[id].children[1], bc)),
        b(make_eval(e.b, bc.g->nodes[id].children[2], bc)) {}
  template <class C>
  TESSERA_FORCEINLINE T flat(const C& x, index_type k) const {
    return c.flat(x, k) ? T(a.flat(x, k)) : T(b.flat(x, k));
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
};

/// Common part of matmul / tile_reduce / transpose evaluators: a node that is either the fused
/// core (value = ctx.acc), staged (transpose), or materialized in a temporary.
template <class T>
struct special_eval {
  bool core = false;
  Kokkos::View<T**, Kokkos::LayoutRight, memory_space> tmp;
  void init(int id, build_ctx& b) {
    const node_role r = (*b.role)[id];
    core = r == node_role::core;
    if (r == node_role::materialized) tmp = std::any_cast<array<T, 2>>(b.temps->at(id)).view();
  }
  template <class C>
  TESSERA_FORCEINLINE T flat(const C&, index_type k) const {
    return tmp.data()[k];
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, index_type i, index_type j) const {
    return core ? T(c.acc) : tmp(i, j);
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&&) const {}
};

template <class A, class B>
struct eval<matmul_node<A, B>> : special_eval<typename matmul_node<A, B>::value_type> {
  eval() = default;
  eval(const matmul_node<A, B>&, int id, build_ctx& b) { this->init(id, b); }
};
template <int R, int C, class Op, class A, bool M>
struct eval<tile_reduce_node<R, C, Op, A, M>>
    : special_eval<typename tile_reduce_node<R, C, Op, A, M>::value_type> {
  eval() = default;
  eval(const tile_reduce_node<R, C, Op, A, M>&, int id, build_ctx& b) { this->init(id, b); }
};

template <class A>
struct eval<transpose_node<A>> {
  using T = typename A::value_type;
  bool staged = false;
  int slot = 0;
  Kokkos::View<T**, Kokkos::LayoutRight, memory_space> tmp;
  eval<A> child;
  extent<2> in_ext;
  eval() = default;
  eval(const transpose_node<A>& e, int id, build_ctx& b) : in_ext(e.a.get_extent()) {
    const node_role r = (*b.role)[id];
    if (r == node_role::materialized) {
      tmp = std::any_cast<array<T, 2>>(b.temps->at(id)).view();
    } else {
      staged = true;
      slot = b.slot.at(id);
      child = make_eval(e.a, b.g->nodes[id].children[0], b);
    }
  }
  template <class C>
  TESSERA_FORCEINLINE T flat(const C&, index_type k) const {
    return tmp.data()[k];
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, index_type i, index_type j) const {
    if constexpr (default_backend_traits::thread_per_logical) {
      if (!staged) return tmp(i, j);
      return static_cast<const T*>(c.staged[slot])[(j - c.oj) * c.ld + (i - c.oi)];
    } else {
      // Host: the staged block is stored in output order (see stage_block). The slot pointer is
      // read unconditionally and one row pointer serves both cases, so the compiler hoists it
      // out of the loop over j and the loads stay contiguous (no gathers).
      const T* sp = static_cast<const T*>(c.staged[slot]);
      const T* row =
          staged ? sp + (i - c.oi) * c.ld - c.oj : tmp.data() + i * index_type(tmp.stride(0));
      return row[j];
    }
  }
  /// Calls f(*this) when this transpose is staged in the kernel (the kernel then calls
  /// stage_row or stage_block); its operand is read directly, so the visit stops here.
  template <class F>
  TESSERA_INLINE void visit_staged(F&& f) const {
    if (staged) f(*this);
  }
  /// GPU backends: loads input row oj + r (r = output column offset) of the tile into the
  /// slot: staged[r][ii] = in(oj + r, oi + ii) — a contiguous read of the input's row.
  template <class Cx>
  TESSERA_INLINE void stage_row(Cx& c, int ts, index_type r) const {
    T* s = static_cast<T*>(c.staged[slot]) + r * c.ld;
    const index_type row = c.oj + r;
    const index_type n = in_ext[1] - c.oi < ts ? in_ext[1] - c.oi : ts;
    if (row < in_ext[0])
      for (index_type ii = 0; ii < n; ++ii) s[ii] = child.at(c, row, c.oi + ii);
  }
  /// Host backends: stages the B x B block (B = host::transpose_block_size) of the output at
  /// (c.oi, c.oj) in output order, staged[ii * B + jj] = in(c.oj + jj, c.oi + ii); a full
  /// block of a plain operand moves through vector registers, edges element by element.
  template <class Cx>
  TESSERA_INLINE void stage_block(Cx& c) const {
    constexpr int B = host::transpose_block_size;
    T* s = static_cast<T*>(c.staged[slot]);
    const index_type nr = in_ext[0] - c.oj < B ? in_ext[0] - c.oj : B;
    const index_type nc = in_ext[1] - c.oi < B ? in_ext[1] - c.oi : B;
    if constexpr (requires { child.row_ptr(0); }) {
      if (nr == B && nc == B) {
        host::transpose_block(child.row_ptr(c.oj) + c.oi, child.row_stride(), s, B);
        return;
      }
    }
    for (index_type r = 0; r < nr; ++r)
      for (index_type ii = 0; ii < nc; ++ii) s[ii * B + r] = T(child.at(c, c.oj + r, c.oi + ii));
  }
};

// ------------------------------------------------------------------ kernels ------------------
using team_policy = Kokkos::TeamPolicy<Kokkos::DefaultExecutionSpace>;
using range_policy =
    Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace, Kokkos::IndexType<index_type>>;

/// Finds the node with pre-order id `target` under `e` (whose id is `id`) and calls f(node, id).
template <class E, class F>
bool with_node(const E& e, int id, int target, const expr_graph& g, F&& f) {
  if (id == target) {
    f(e, id);
    return true;
  }
  bool found = false;
  int k = 0;
  for_each_child(e, [&](const auto& c) {
    const int cid = g.nodes[id].children[k++];
    if (!found) found = with_node(c, cid, target, g, f);
  });
  return found;
}

/// Elementwise kernel: one flat, contiguous loop (all operands share the output's extent).
template <class E, class OutV>
void run_elementwise(const E& e, int id, build_ctx& b, const OutV& out) {
  auto ev = make_eval(e, id, b);
  using T = typename OutV::non_const_value_type;
  T* o = out.data();
  const index_type n = static_cast<index_type>(out.span());
  if constexpr (!default_backend_traits::thread_per_logical) {
    // Host: outputs larger than the cache are written in whole lines with streaming stores
    // (no read-for-ownership: 2A + 3B - C moves 4 arrays instead of 5). Chunks of 4096
    // elements, each ending with a store fence on the thread that wrote it.
    if (host::stream_output(o, std::size_t(n))) {
      constexpr int B = host::transpose_block_size;
      constexpr index_type chunk = 4096;
      const index_type nchunks = (n + chunk - 1) / chunk;
      Kokkos::parallel_for("tessera::elementwise", range_policy(0, nchunks), [=](index_type ch) {
        const ectx<char> c;
        const index_type k0 = ch * chunk, k1 = k0 + chunk < n ? k0 + chunk : n;
        // Evaluate 256 elements into an L1-resident buffer (a plain loop that vectorizes),
        // then stream it out line by line.
        constexpr int L = 16 * B;
        index_type k = k0;
        for (; k + L <= k1; k += L) {
          alignas(64) T buf[L];
          for (int j = 0; j < L; ++j) buf[j] = static_cast<T>(ev.flat(c, k + j));
          for (int j = 0; j < L; j += B) host::store_row(o + k + j, buf + j, true);
        }
        for (; k < k1; ++k) o[k] = static_cast<T>(ev.flat(c, k));
        host::store_fence();
      });
      return;
    }
  }
  Kokkos::parallel_for(
      "tessera::elementwise", range_policy(0, n),
      KOKKOS_LAMBDA(index_type k) { o[k] = static_cast<T>(ev.flat(ectx<char>{}, k)); });
}

/// Team scratch of a staged-transpose kernel as planned: the level, the bytes, each staged
/// slot's offset. request() sizes a policy (64 spare bytes for alignment); bind() points a
/// kernel context's staged slots into the team's 64-byte aligned scratch.
struct staged_scratch {
  int level = 0, nslots = 0;
  std::size_t bytes = 0;
  std::size_t offs[4] = {0, 0, 0, 0};
  staged_scratch(const codegen::kernel_plan& k, int n)
      : level(k.scratch_bytes[1] ? 1 : 0), nslots(n), bytes(k.scratch_bytes[level]) {
    for (int s = 0; s < n; ++s) offs[s] = k.buffers[s].offset;
  }
  template <class Policy>
  void request(Policy& p) const {
    p.set_scratch_size(level, Kokkos::PerTeam(bytes + 64));
  }
  template <class Member, class Cx>
  KOKKOS_INLINE_FUNCTION void bind(const Member& team, Cx& c) const {
    auto raw = reinterpret_cast<std::uintptr_t>(team.team_scratch(level).get_shmem(bytes + 64));
    char* base = reinterpret_cast<char*>((raw + 63) & ~std::uintptr_t{63});
    for (int s = 0; s < nslots; ++s) c.staged[s] = base + offs[s];
  }
};

/// Tiled elementwise kernel with transposes staged through scratch (rank-2 output).
template <class E, class OutV>
void run_staged(const E& e, int id, build_ctx& b, const OutV& out, const codegen::kernel_plan& k,
                int nslots) {
  auto ev = make_eval(e, id, b);
  using T = typename OutV::non_const_value_type;
  const int th = static_cast<int>(k.tile[0]), tw = static_cast<int>(k.tile[1]);
  const int ld = th + (default_backend_traits::thread_per_logical ? 1 : 0);
  const index_type rows = out.extent(0), cols = out.extent(1);
  const index_type tiles_i = k.tiles[0];
  const staged_scratch sc(k, nslots);
  team_policy policy(static_cast<int>(k.league_size), k.team_size);
  sc.request(policy);
  Kokkos::parallel_for(
      "tessera::staged_elementwise", policy, KOKKOS_LAMBDA(const team_policy::member_type& team) {
        // Tiles down a column of the output first: consecutive teams read the same operand rows.
        const index_type ti = team.league_rank() % tiles_i, tj = team.league_rank() / tiles_i;
        ectx<char> c;
        c.oi = ti * th;
        c.oj = tj * tw;
        c.ld = ld;
        sc.bind(team, c);
        // Phase 1: stage (rows of each transposed operand, read contiguously).
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tw), [&](int r) {
          ev.visit_staged([&](const auto& t) { t.stage_row(c, th, r); });
        });
        team.team_barrier();  // read-after-write on the staged tiles
        // Phase 2: evaluate and store rows of the output tile.
        const index_type ni = rows - c.oi < th ? rows - c.oi : th;
        const index_type nj = cols - c.oj < tw ? cols - c.oj : tw;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, static_cast<int>(ni)), [&](int ii) {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, static_cast<int>(nj)), [&](int jj) {
            out(c.oi + ii, c.oj + jj) = static_cast<T>(ev.at(c, c.oi + ii, c.oj + jj));
          });
        });
      });
}

/// True when E is transpose(plain array of element type T): the host kernel can move blocks
/// from the operand straight to the output.
template <class E, class T>
struct is_plain_transpose : std::false_type {};
template <class A, class T>
struct is_plain_transpose<transpose_node<terminal<A>>, T>
    : std::is_same<std::remove_const_t<typename A::value_type>, T> {};

/// Host form of the staged kernel: each tile is walked in B x B blocks (B =
/// host::transpose_block_size); every staged operand block is transposed into scratch through
/// vector registers, then each output row of the block (one or two cache lines) is evaluated
/// into a register-sized line and stored whole, with streaming stores for outputs larger than
/// the cache. One team member per tile, so the stage -> evaluate order is program order.
template <class E, class OutV>
void run_staged_host(const E& e, int id, build_ctx& b, const OutV& out,
                     const codegen::kernel_plan& k, int nslots) {
  auto ev = make_eval(e, id, b);
  using T = typename OutV::non_const_value_type;
  constexpr int B = host::transpose_block_size;
  constexpr bool pure_transpose = is_plain_transpose<E, T>::value;
  const index_type th = k.tile[0], tw = k.tile[1];
  const index_type rows = out.extent(0), cols = out.extent(1);
  const index_type tiles_i = k.tiles[0];
  const staged_scratch sc(k, nslots);
  T* const o = out.data();
  const index_type ldo = rows > 0 ? index_type(out.stride(0)) : 0;
  const bool stream = host::stream_output(o, out.span()) && ldo % B == 0 && tw % B == 0;
  using host_policy = Kokkos::TeamPolicy<Kokkos::DefaultHostExecutionSpace>;
  host_policy policy(static_cast<int>(k.league_size), 1);
  sc.request(policy);
  Kokkos::parallel_for(
      "tessera::staged_elementwise", policy, [=](const host_policy::member_type& team) {
        // Tiles down a column of the output first: consecutive teams read the same operand rows.
        const index_type ti = team.league_rank() % tiles_i, tj = team.league_rank() / tiles_i;
        const index_type oi = ti * th, oj = tj * tw;
        ectx<char> c;
        c.ld = B;
        sc.bind(team, c);
        const index_type ni = rows - oi < th ? rows - oi : th;
        const index_type nj = cols - oj < tw ? cols - oj : tw;
        for (index_type ib = 0; ib < ni; ib += B)
          for (index_type jb = 0; jb < nj; jb += B) {
            c.oi = oi + ib;
            c.oj = oj + jb;
            const index_type bi = ni - ib < B ? ni - ib : B, bj = nj - jb < B ? nj - jb : B;
            if constexpr (pure_transpose) {
              // The kernel is a plain transpose: full blocks go from registers straight to
              // the output, no scratch bounce.
              if (bi == B && bj == B) {
                host::transpose_block(ev.child.row_ptr(c.oj) + c.oi, ev.child.row_stride(),
                                      o + c.oi * ldo + c.oj, ldo, stream);
                continue;
              }
            }
            ev.visit_staged([&](const auto& t) { t.stage_block(c); });
            if (bj == B) {
              for (index_type ii = 0; ii < bi; ++ii) {
                alignas(64) T line[B];
                const index_type i = c.oi + ii;
                for (int jj = 0; jj < B; ++jj) line[jj] = static_cast<T>(ev.at(c, i, c.oj + jj));
                host::store_row(o + i * ldo + c.oj, line, stream);
              }
            } else {
              for (index_type ii = 0; ii < bi; ++ii)
                for (index_type jj = 0; jj < bj; ++jj)
                  o[(c.oi + ii) * ldo + c.oj + jj] = static_cast<T>(ev.at(c, c.oi + ii, c.oj + jj));
            }
          }
        if (stream) host::store_fence();
      });
}

/// Raw, contiguous operand of a fused matmul: a plain array or a materialized temporary.
template <class T>
struct operand_view {
  const T* p = nullptr;
  index_type ld = 0;
};
template <class A>
auto matmul_operand(const A& a, int id, build_ctx& b) {
  using T = typename A::value_type;
  Kokkos::View<const T**, Kokkos::LayoutRight, memory_space> v;
  if constexpr (kind_of<A>() == node_kind::terminal)
    v = a.a.view();
  else
    v = std::any_cast<array<T, 2>>(b.temps->at(id)).view();
  return v;
}

/// matmul core + epilogue, tiled algorithm (seed 002) written as a Tier 2 tile program: two
/// TS x TS tiles in scratch; the program inserts the two barriers per k-step (read-after-write
/// after the loads, write-after-read before the next loads); epilogue on the output tile.
template <int TS, class Core, class E, class OutV>
void run_matmul_tiled(const Core& mm, int core_id, const E& e, int id, build_ctx& b,
                      const OutV& out) {
  auto ev = make_eval(e, id, b);
  using T = typename Core::value_type;
  using OT = typename OutV::non_const_value_type;
  auto A = matmul_operand(mm.a, b.g->nodes[core_id].children[0], b);
  auto B = matmul_operand(mm.b, b.g->nodes[core_id].children[1], b);
  const index_type M = A.extent(0), K = A.extent(1), N = B.extent(1);
  const array<OT, 2> C(out);
  parallel_for_each(extent<2>(M, N).tile<TS, TS>().pad(), tile_program([=](auto& p) {
                      auto at = p.template tile_static<T[TS][TS]>("a_tile");
                      auto bt = p.template tile_static<T[TS][TS]>("b_tile");
                      auto acc = p.template tile_local<T>(T(0), "acc");
                      for (index_type k0 = 0; k0 < K; k0 += TS) {
                        p.load(at, [&](const tiled_index<TS, TS>& t) {
                          const index_type i = t.global[0], k = k0 + t.local[1];
                          return (i < M && k < K) ? T(A(i, k)) : T(0);
                        });
                        p.load(bt, [&](const tiled_index<TS, TS>& t) {
                          const index_type k = k0 + t.local[0], j = t.global[1];
                          return (k < K && j < N) ? T(B(k, j)) : T(0);
                        });
                        p.compute(reads(at, bt), [&](const tiled_index<TS, TS>& t) {
                          T s = acc(t);
                          const T* arow = at.data() + t.local[0] * TS;
                          const T* bcol = bt.data() + t.local[1];
                          for (int k = 0; k < TS; ++k) s += arow[k] * bcol[k * TS];
                          acc(t) = s;
                        });
                      }
                      p.store(C, [&](const tiled_index<TS, TS>& t) {
                        ectx<T> c;
                        c.acc = acc(t);
                        return static_cast<OT>(ev.at(c, t.global[0], t.global[1]));
                      });
                    }));
}

template <class Core, class E, class OutV>
void run_matmul(const Core& mm, int core_id, const E& e, int id, build_ctx& b, const OutV& out,
                int ts);

/// op-combines v[0..N) pairwise (v[k] = op(v[k], v[k + n - n/2]) with halving n) and returns
/// the result: log2(N) vectorizable steps instead of a serial fold. Overwrites v.
template <int N, class T, class Op>
TESSERA_FORCEINLINE T tree_combine(T* v, const Op& op) {
  for (int n = N; n > 1;) {
    const int h = n / 2;
    for (int k = 0; k < h; ++k) v[k] = op(v[k], v[k + n - h]);
    n -= h;
  }
  return v[0];
}

/// tile_reduce core + epilogue (out: rows/R x cols/C). GPUs: one team per output row; the R
/// input rows are combined element by element into a scratch row (contiguous, each element
/// owned by one logical thread); after a barrier each output element combines its C entries
/// and the epilogue runs. Host backends: one member per group of output rows, no scratch
/// (see the CPU branch).
template <class Core, class E, class OutV>
void run_tile_reduce(const Core& tr, int core_id, const E& e, int id, build_ctx& b,
                     const OutV& out) {
  auto ev = make_eval(e, id, b);
  auto in = make_eval(tr.a, b.g->nodes[core_id].children[0], b);
  using T = typename Core::value_type;
  using OT = typename OutV::non_const_value_type;
  constexpr int R = Core::rows, C = Core::cols;
  const auto op = tr.op;
  const index_type ocols = out.extent(1), icols = ocols * C;
  const int rows = static_cast<int>(out.extent(0));
  if constexpr (!default_backend_traits::thread_per_logical) {
    // CPU: one member per group of G output rows. Narrow tiles (a tile row shorter than a cache
    // line): each output combines its R x C entries directly, and the loop over outputs vectorizes
    // (C-strided loads become permutes). Wide tiles: the R rows of a tile accumulate element
    // by element in a register-sized chunk of C values, which then combine pairwise (a tree
    // that vectorizes, unlike a serial left fold). Both read every input element once.
    constexpr bool narrow = C * sizeof(T) < 64;
    constexpr T scale = T(1) / T(R * C);
    // G output rows advance together, Q outputs at a time, so that about 8 input rows stream
    // at once: a 2-row tile alone leaves the memory system idle between its two streams.
    constexpr int G = R >= 8 ? 1 : 8 / R;
    const index_type Q = G > 1 ? (narrow ? 64 : 4) : (ocols > 0 ? ocols : 1);
    const index_type groups = (rows + G - 1) / G;
    Kokkos::parallel_for(
        "tessera::tile_reduce", range_policy(0, groups), KOKKOS_LAMBDA(index_type ig) {
          const ectx<char> c0;
          ectx<T> c;  // the epilogue's context: c.acc = the tile's combined value
          auto finish = [&](T a) {
            if constexpr (Core::mean && std::is_floating_point_v<T>)
              return T(a * scale);
            else if constexpr (Core::mean)
              return T(a / T(R * C));
            else
              return a;
          };
          const index_type i0 = ig * G, gn = rows - i0 < G ? rows - i0 : G;
          for (index_type q0 = 0; q0 < ocols; q0 += Q) {
            const index_type q1 = ocols - q0 < Q ? ocols : q0 + Q;
            for (index_type i = i0; i < i0 + gn; ++i) {
              OT* const orow = out.data() + i * index_type(out.stride(0));
              if constexpr (narrow) {
                for (index_type q = q0; q < q1; ++q) {
                  T a = in.at(c0, i * R, q * C);
                  for (int cc = 1; cc < C; ++cc) a = op(a, in.at(c0, i * R, q * C + cc));
                  for (int r = 1; r < R; ++r)
                    for (int cc = 0; cc < C; ++cc) a = op(a, in.at(c0, i * R + r, q * C + cc));
                  c.acc = finish(a);
                  orow[q] = static_cast<OT>(ev.at(c, i, q));
                }
              } else {
                for (index_type q = q0; q < q1; ++q) {
                  T acc[C];
                  for (int cc = 0; cc < C; ++cc) acc[cc] = in.at(c0, i * R, q * C + cc);
                  for (int r = 1; r < R; ++r)
                    for (int cc = 0; cc < C; ++cc)
                      acc[cc] = op(acc[cc], in.at(c0, i * R + r, q * C + cc));
                  c.acc = finish(tree_combine<C>(acc, op));
                  orow[q] = static_cast<OT>(ev.at(c, i, q));
                }
              }
            }
          }
        });
    return;
  }
  // GPU: a team per output row; the R rows combine element by element into a scratch row
  // (each element owned by one member), then after a barrier each output element combines
  // its C entries.
  const std::size_t bytes = static_cast<std::size_t>(icols) * sizeof(T);
  const int level = bytes + 64 > static_cast<std::size_t>(team_policy::scratch_size_max(0)) ? 1 : 0;
  if (bytes + 64 > static_cast<std::size_t>(team_policy::scratch_size_max(level)))
    throw resource_error("tessera::tile_reduce: a row of " + std::to_string(icols) +
                         " elements needs " + std::to_string(bytes) +
                         " bytes of scratch per team, above the backend's limit");
  team_policy policy(rows, Kokkos::AUTO);
  policy.set_scratch_size(level, Kokkos::PerTeam(bytes + 64));
  Kokkos::parallel_for(
      "tessera::tile_reduce", policy, KOKKOS_LAMBDA(const team_policy::member_type& m) {
        const index_type i = m.league_rank();
        auto raw = reinterpret_cast<std::uintptr_t>(m.team_scratch(level).get_shmem(bytes + 64));
        T* row = reinterpret_cast<T*>((raw + 63) & ~std::uintptr_t{63});
        const ectx<char> c0;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, static_cast<int>(icols)),
                             [&](int j) { row[j] = in.at(c0, i * R, j); });
        for (int r = 1; r < R; ++r)
          Kokkos::parallel_for(Kokkos::TeamThreadRange(m, static_cast<int>(icols)),
                               [&](int j) { row[j] = op(row[j], in.at(c0, i * R + r, j)); });
        m.team_barrier();  // read-after-write: output elements read other members' entries
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, static_cast<int>(ocols)), [&](int jo) {
          T a = row[index_type(jo) * C];
          for (int cc = 1; cc < C; ++cc) a = op(a, row[index_type(jo) * C + cc]);
          ectx<T> c;
          c.acc = Core::mean ? T(a / T(R * C)) : a;
          out(i, jo) = static_cast<OT>(ev.at(c, i, jo));
        });
      });
}

/// Runs kernel `ks` (root node e with id `id`) into `out`.
template <class E, class OutV>
void run_kernel(const E& e, int id, const kernel_spec& ks, const codegen::kernel_plan& kp,
                build_ctx& b, const OutV& out) {
  switch (ks.kind) {
    case kernel_spec::elementwise:
      run_elementwise(e, id, b, out);
      break;
    case kernel_spec::staged_transpose:
      if constexpr (E::rank == 2) {
        int slot = 0;
        for (int s : ks.staged) b.slot[s] = slot++;
        if constexpr (default_backend_traits::thread_per_logical)
          run_staged(e, id, b, out, kp, slot);
        else
          run_staged_host(e, id, b, out, kp, slot);
      }
      break;
    case kernel_spec::matmul:
      if constexpr (E::rank == 2)
        with_node(e, id, ks.core, *b.g, [&](const auto& core, int cid) {
          using Core = std::remove_cvref_t<decltype(core)>;
          if constexpr (is_matmul<Core>::value)
            run_matmul(core, cid, e, id, b, out, kp.tile.empty() ? 16 : int(kp.tile[0]));
        });
      break;
    case kernel_spec::tile_reduce:
      if constexpr (E::rank == 2)
        with_node(e, id, ks.core, *b.g, [&](const auto& core, int cid) {
          using Core = std::remove_cvref_t<decltype(core)>;
          if constexpr (is_tile_reduce<Core>::value) run_tile_reduce(core, cid, e, id, b, out);
        });
      break;
  }
}

/// Lowers `e` and runs every planned kernel; the last one writes `dst`.
template <class T, int N, class E>
void execute(const array<T, N>& dst, const E& e) {
  const expr_graph g = make_graph(e);
  const codegen::lowered low = codegen::lower(g, make_target(g), dst.data());
  std::map<int, std::any> temps;
  for (std::size_t k = 0; k < low.fusion.kernels.size(); ++k) {
    const kernel_spec& ks = low.fusion.kernels[k];
    const codegen::kernel_plan& kp = low.plan.kernels[k];
    std::vector<node_role> roles = low.fusion.role;  // the kernel's own view of its root
    roles[ks.root] = ks.root_role;
    build_ctx b{&g, &roles, &temps, {}};
    if (ks.writes_temporary) {
      with_node(e, 0, ks.root, g, [&](const auto& node, int nid) {
        using Node = std::remove_cvref_t<decltype(node)>;
        if constexpr (Node::rank == 2) {
          array<typename Node::value_type, 2> t(node.get_extent(), "tessera::temporary");
          temps[nid] = t;
          run_kernel(node, nid, ks, kp, b, t.view());
        }
      });
    } else if (low.fusion.output_aliases_input) {
      array<T, N> t(dst.extent, "tessera::alias_temporary");
      run_kernel(e, 0, ks, kp, b, t.view());
      Kokkos::deep_copy(dst.view(), t.view());
    } else {
      run_kernel(e, 0, ks, kp, b, dst.view());
    }
  }
}

}  // namespace backends::expr

/// Evaluates `e` into `dst` with as few kernels as the code generator can fuse. `dst` may be
/// an operand of `e` (a temporary is used where that would be unsafe).
/// \throws shape_error when dst's extent differs from e's (dst untouched)
template <class T, int N, class E>
requires requires {
  typename E::tessera_expression_tag;
}
void assign(const array<T, N>& dst, const E& e) {
  static_assert(E::rank == N, "tessera: assigning an expression to an array of another rank");
  if (!(dst.extent == e.get_extent()))
    throw shape_error("tessera::operator=: destination extent " + to_string(dst.extent) +
                      " differs from the expression's " + to_string(e.get_extent()));
  if (dst.extent.size() == 0) return;
  backends::expr::execute(dst, e);
}

template <class T, int N>
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
array<T, N>& array<T, N>::operator=(const E& e) {
  if (v_.data() == nullptr && e.get_extent().size() > 0) *this = array(e.get_extent());
  assign(*this, e);
  return *this;
}

/// Evaluates an expression into a new array (element type: the expression's value_type).
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
auto eval(const E& e) {
  array<typename E::value_type, E::rank> out(e.get_extent());
  assign(out, e);
  return out;
}

/// The kernel plan of an expression as text: kernels in execution order with league/team/vector
/// sizes, scratch bytes per level, every buffer's memory space, barriers and the hazards they
/// resolve, fusion notes. Nothing runs.
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
std::string explain(const E& e) {
  const auto g = backends::expr::make_graph(e);
  return codegen::to_string(codegen::lower(g, backends::expr::make_target(g), nullptr).plan);
}

/// The program plan of an expression as a value (for tests and tools).
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
codegen::program_plan plan(const E& e) {
  const auto g = backends::expr::make_graph(e);
  return codegen::lower(g, backends::expr::make_target(g), nullptr).plan;
}

namespace backends::expr {
/// The target description of the backend Tessera launches on. On CPU backends the matmul
/// blocking comes from the autotuner (run once per element type and cached).
inline codegen::target make_target(const expr_graph& g) {
  codegen::target t;
  using traits = default_backend_traits;
  t.backend = traits::name;
  t.thread_per_logical = traits::thread_per_logical;
  t.scratch_max[0] = static_cast<std::size_t>(team_policy::scratch_size_max(0));
  t.scratch_max[1] = static_cast<std::size_t>(team_policy::scratch_size_max(1));
  t.max_team_size = traits::thread_per_logical ? 1024 : 1;
  t.concurrency = Kokkos::DefaultExecutionSpace().concurrency();
  t.packed_matmul = !traits::thread_per_logical;
  if (t.packed_matmul) {
    bool any_double = false, any_matmul = false;
    for (const auto& n : g.nodes)
      if (n.kind == node_kind::matmul) {
        any_matmul = true;
        any_double |= n.dtype == "double";
      }
    if (any_matmul) {
      const host::gemm_blocking blk =
          any_double ? host::tuned_blocking<double>() : host::tuned_blocking<float>();
      t.matmul_blocking = host::describe(blk) + " (autotuned, cached)";
      t.gemm_mc = blk.mc;
    }
  }
  if (!traits::thread_per_logical) {
    // CPU: 256 x 32 output tiles walked in 16 x 16 blocks: a tile column reads 32 operand rows
    // (a 1 MiB panel that stays in L2 while the tiles walk down it), and each output row of a
    // block is one 64-byte line written whole.
    t.transpose_tile[0] = 256;
    t.transpose_tile[1] = 32;
    t.staged_block = host::transpose_block_size;
  }
  return t;
}

template <class Core, class E, class OutV>
void run_matmul(const Core& mm, int core_id, const E& e, int id, build_ctx& b, const OutV& out,
                int ts) {
  using T = typename Core::value_type;
  using OT = typename OutV::non_const_value_type;
  if constexpr (!default_backend_traits::thread_per_logical && std::is_same_v<T, OT> &&
                (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    // CPU: packed panels + register-blocked micro-kernel, epilogue on each finished element.
    if (!mm.sched.set()) {
      auto ev = make_eval(e, id, b);
      auto A = matmul_operand(mm.a, b.g->nodes[core_id].children[0], b);
      auto B = matmul_operand(mm.b, b.g->nodes[core_id].children[1], b);
      const index_type M = A.extent(0), K = A.extent(1), N = B.extent(1);
      host::gemm<T>(
          M, N, K, A.data(), K, B.data(), N, out.data(), N,
          [ev](index_type i, index_type j, T acc) {
            ectx<T> c;
            c.acc = acc;
            return static_cast<T>(ev.at(c, i, j));
          },
          host::tuned_blocking<T>());
      return;
    }
  }
  switch (ts) {
    case 8:
      run_matmul_tiled<8>(mm, core_id, e, id, b, out);
      break;
    case 32:
      run_matmul_tiled<32>(mm, core_id, e, id, b, out);
      break;
    default:
      run_matmul_tiled<16>(mm, core_id, e, id, b, out);
      break;
  }
}
}  // namespace backends::expr

namespace backends::expr {
/// A readable (see readable.hpp) view of an expression: its non-elementwise parts are
/// materialized first (each by its own fused kernels); the rest is evaluated element by element
/// inside the consumer's kernel, so `sum(A * B)` reads A and B once and writes nothing.
template <class E>
struct expression_reader {
  static constexpr int rank = E::rank;
  eval<E> ev;
  extent<rank> ext;
  extent<rank> get_extent() const { return ext; }
  TESSERA_FORCEINLINE auto operator()(index_type i) const requires(rank == 1) {
    return ev.flat(ectx<char>{}, i);
  }
  TESSERA_FORCEINLINE auto operator()(index_type i, index_type j) const requires(rank == 2) {
    return ev.flat(ectx<char>{}, i * ext[1] + j);
  }
  TESSERA_FORCEINLINE auto operator()(index_type i, index_type j, index_type k) const
      requires(rank == 3) {
    return ev.flat(ectx<char>{}, (i * ext[1] + j) * ext[2] + k);
  }
};

/// Owns the temporaries of an expression_reader (host side) for the duration of a call.
template <class E>
struct reader_scope {
  expr_graph g;
  std::vector<node_role> roles;
  std::map<int, std::any> temps;
  expression_reader<E> reader;
  explicit reader_scope(const E& e)
      : g(make_graph(e)), roles(g.nodes.size(), node_role::inline_elementwise) {
    std::vector<int> frontier;
    std::function<void(int)> walk = [&](int n) {
      if (!codegen::is_elementwise(g.nodes[n].kind)) {
        frontier.push_back(n);
        return;
      }
      for (int c : g.nodes[n].children) walk(c);
    };
    walk(0);
    for (int n : frontier)
      with_node(e, 0, n, g, [&](const auto& node, int nid) {
        using Node = std::remove_cvref_t<decltype(node)>;
        if constexpr (Node::rank == 2) temps[nid] = tessera::eval(node);
        roles[nid] = node_role::materialized;
      });
    build_ctx b{&g, &roles, &temps, {}};
    reader.ev = make_eval(e, 0, b);
    reader.ext = e.get_extent();
  }
};
}  // namespace backends::expr

/// Reductions of expressions: the expression is read element by element inside the reduction
/// (fused; non-elementwise parts such as matmul are materialized first). Same results,
/// accuracy and errors as the array overloads in reduce.hpp.
#define TESSERA_EXPR_REDUCTION(fn)            \
  template <class E, class... Args>           \
  requires requires {                         \
    typename E::tessera_expression_tag;       \
  }                                           \
  auto fn(const E& e, const Args&... args) {  \
    backends::expr::reader_scope<E> scope(e); \
    return fn(scope.reader, args...);         \
  }
TESSERA_EXPR_REDUCTION(sum)
TESSERA_EXPR_REDUCTION(mean)
TESSERA_EXPR_REDUCTION(min_value)
TESSERA_EXPR_REDUCTION(max_value)
TESSERA_EXPR_REDUCTION(reduce)
#undef TESSERA_EXPR_REDUCTION

}  // namespace tessera
