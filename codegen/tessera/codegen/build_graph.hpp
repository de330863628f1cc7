/// \file build_graph.hpp
/// \brief Expression tree -> expr_graph, from what each node declares (`kind`, `children()`,
///        `label()`; dsl/expr/nodes.hpp), and the plan-cache fingerprint of an expression:
///        everything a plan depends on (node extents, schedules, how its arrays' memory meets
///        the destination's), in a fixed-size array computed without allocating.
#pragma once

#include <tessera/codegen/expr_graph.hpp>
#include <tessera/codegen/fusion_rule.hpp>
#include <tessera/dsl/host_context.hpp>
#include <tessera/dsl/index.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tessera {
template <class T, int N>
class array_view;
}  // namespace tessera

namespace tessera::codegen {

/// Calls f(child) for every child of node e, in order.
template <class E, class F>
void for_each_child(const E& e, F&& f) {
  std::apply([&](const auto&... c) { (f(c), ...); }, e.children());
}

template <class E>
using children_t = decltype(std::declval<const E&>().children());

/// Nodes in the tree of E (pre-order count), at compile time.
template <class E>
constexpr int node_count();
template <class Tuple, std::size_t... I>
constexpr int children_node_count(std::index_sequence<I...>) {
  return (0 + ... + node_count<std::remove_cvref_t<std::tuple_element_t<I, Tuple>>>());
}
template <class E>
constexpr int node_count() {
  using C = children_t<E>;
  return 1 + children_node_count<C>(std::make_index_sequence<std::tuple_size_v<C>>{});
}

/// Nodes in the subtrees of the first K children of E (pre-order: child K's id is E's id + 1 +
/// this).
template <class E, int K>
constexpr int nodes_before_child() {
  return children_node_count<children_t<E>>(std::make_index_sequence<std::size_t(K)>{});
}

/// Nodes in the frontier of E (the non-elementwise nodes reached from E through elementwise
/// nodes only; fusion_rule.hpp), at compile time.
template <class E>
constexpr int frontier_size();
template <class Tuple, std::size_t... I>
constexpr int children_frontier_size(std::index_sequence<I...>) {
  return (0 + ... + frontier_size<std::remove_cvref_t<std::tuple_element_t<I, Tuple>>>());
}
template <class E>
constexpr int frontier_size() {
  if constexpr (!is_elementwise(E::traits)) {
    return 1;
  } else if constexpr (E::traits.reads_neighbours) {
    return 0;  // its operand's non-elementwise nodes are materialized (fusion.hpp)
  } else {
    using C = children_t<E>;
    return children_frontier_size<C>(std::make_index_sequence<std::tuple_size_v<C>>{});
  }
}
/// Appends the traits of E's frontier to out[n...], in pre-order.
template <class E>
constexpr void collect_frontier(node_traits* out, int& n) {
  if constexpr (!is_elementwise(E::traits)) {
    out[n++] = E::traits;
  } else if constexpr (E::traits.reads_neighbours) {
    // the frontier stops here (frontier_size)
  } else {
    using C = children_t<E>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (collect_frontier<std::remove_cvref_t<std::tuple_element_t<I, C>>>(out, n), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<C>>{});
  }
}
/// The fusion decision for a kernel rooted at a node of type E: the same rule, on the same
/// traits, as the fusion pass applies to E's graph (fusion_rule.hpp).
template <class E>
constexpr fused_kernel fused_kernel_of() {
  node_traits f[frontier_size<E>() > 0 ? frontier_size<E>() : 1] = {};
  int n = 0;
  collect_frontier<E>(f, n);
  return fuse_frontier(f, n);
}

/// Nodes of E's tree (E included) for which P::template test<Node>() is true; where test
/// returns an int, the sum of what it returns over the nodes.
template <class P, class E>
constexpr int count_nodes() {
  using C = children_t<E>;
  return int(P::template test<E>()) + []<std::size_t... I>(std::index_sequence<I...>) {
    return (0 + ... + count_nodes<P, std::remove_cvref_t<std::tuple_element_t<I, C>>>());
  }
  (std::make_index_sequence<std::tuple_size_v<C>>{});
}
template <node_kind K>
struct of_kind {
  template <class E>
  static constexpr bool test() {
    return E::traits.kind == K;
  }
};
template <fusion_role R>
struct of_role {
  template <class E>
  static constexpr bool test() {
    return E::traits.role == R;
  }
};
template <class A>
inline constexpr bool is_array_view = false;
template <class T, int N>
inline constexpr bool is_array_view<tessera::array_view<T, N>> = true;
/// A terminal that wraps an array_view.
struct view_terminal {
  template <class E>
  static constexpr bool test() {
    if constexpr (E::traits.kind == node_kind::terminal)
      return is_array_view<std::remove_cvref_t<decltype(std::declval<const E&>().a)>>;
    else
      return false;
  }
};

/// Nodes of kind K in the tree of E.
template <class E, node_kind K>
constexpr int kind_count() {
  return count_nodes<of_kind<K>, E>();
}
/// Terminals of E that wrap an array_view: only views can be overlapping sections of one
/// buffer (two arrays never share memory), so only expressions with one may stage sections.
template <class E>
constexpr int view_terminal_count() {
  return count_nodes<view_terminal, E>();
}
/// Nodes of fusion role R in the tree of E.
template <class E, fusion_role R>
constexpr int role_count() {
  return count_nodes<of_role<R>, E>();
}

/// How a terminal's memory `t` relates to the destination's `dst` (nullptr: a fresh array).
inline overlap classify(const tessera::impl::buffer_layout& t,
                        const tessera::impl::buffer_layout* dst) {
  if (!dst) return overlap::none;
  const std::size_t ts = t.span_bytes(), ds = dst->span_bytes();
  if (ts == 0 || ds == 0) return overlap::none;
  const auto tlo = reinterpret_cast<std::uintptr_t>(t.data),
             dlo = reinterpret_cast<std::uintptr_t>(dst->data);
  if (tlo + ts <= dlo || dlo + ds <= tlo) return overlap::none;
  bool same = t.data == dst->data && t.rank == dst->rank && t.elem_bytes == dst->elem_bytes;
  for (int d = 0; same && d < t.rank; ++d)
    same = t.extent[d] == dst->extent[d] && t.stride[d] == dst->stride[d];
  return same ? overlap::same : overlap::partial;
}

/// When `b` is a section of the same buffer as `a` — same rank, element size, extent and
/// strides, spans that overlap, a different first element — its index offset from `a` (b's
/// element i is a's element i + off): true, off filled. The offset is the difference of the
/// first elements split along the strides, each dimension's part within half the next outer
/// stride, so a section moved by (1, -1) in a row-major array is found as (1, -1).
inline bool section_offset(const tessera::impl::buffer_layout& a,
                           const tessera::impl::buffer_layout& b, std::int64_t off[3]) {
  if (a.data == b.data || a.rank != b.rank || a.elem_bytes != b.elem_bytes || a.rank < 1 ||
      a.elem_bytes == 0)
    return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.extent[d] != b.extent[d] || a.stride[d] != b.stride[d] || a.extent[d] == 0) return false;
  const std::size_t as = a.span_bytes(), bs = b.span_bytes();
  const auto alo = reinterpret_cast<std::uintptr_t>(a.data),
             blo = reinterpret_cast<std::uintptr_t>(b.data);
  if (alo + as <= blo || blo + bs <= alo) return false;
  const std::int64_t bytes = static_cast<std::int64_t>(blo) - static_cast<std::int64_t>(alo);
  if (bytes % static_cast<std::int64_t>(a.elem_bytes) != 0) return false;
  std::int64_t rest = bytes / static_cast<std::int64_t>(a.elem_bytes);
  for (int d = 0; d < a.rank; ++d) {
    const std::int64_t s = a.stride[d];
    if (d == a.rank - 1) {
      if (s != 1) return false;
      off[d] = rest;
    } else {
      if (s <= 1) return false;
      // nearest multiple of s: the remainder stays within half a stride
      const std::int64_t q = rest >= 0 ? (rest + s / 2) / s : -((-rest + s / 2) / s);
      off[d] = q;
      rest -= q * s;
    }
  }
  for (int d = a.rank; d < 3; ++d) off[d] = 0;
  return true;
}

/// The terminals that are the first of their buffer (sections of one buffer refer to its
/// first): leaders[0..n). Returns which leader b is an overlapping section of (off filled), or
/// -1; then b becomes leader n (n grows) unless its memory is a leader's already. build() and
/// fingerprint() walk the terminals in the same order through this, so they agree.
/// Leaders are layouts (build()) or pointers to layouts that outlive the walk (fingerprint(),
/// which copies no layout: see array::fill_layout).
inline const tessera::impl::buffer_layout& layout_of(const tessera::impl::buffer_layout& b) {
  return b;
}
inline const tessera::impl::buffer_layout& layout_of(const tessera::impl::buffer_layout* b) {
  return *b;
}
/// \param as_leader b as a Leader: b itself, or its address
template <class Leader>
int section_leader(Leader* leaders, int& n, const tessera::impl::buffer_layout& b,
                   const Leader& as_leader, std::int64_t off[3]) {
  bool known = false;
  for (int l = 0; l < n; ++l) {
    const tessera::impl::buffer_layout& x = layout_of(leaders[l]);
    if (section_offset(x, b, off)) return l;
    known = known || x.data == b.data;
  }
  if (!known) leaders[n++] = as_leader;
  return -1;
}

inline bool contiguous(const tessera::impl::buffer_layout& b) {
  index_type s = 1;
  for (int d = b.rank - 1; d >= 0; --d) {
    if (b.extent[d] > 1 && b.stride[d] != s) return false;
    s *= b.extent[d];
  }
  return true;
}

namespace impl {
template <class V>
void fill_type(graph_node& n) {
  n.dtype = tessera::impl::scalar_type_name<V>();
  n.elem_bytes = sizeof(V);
  n.floating = std::is_floating_point_v<V>;
}

struct name_table {
  std::vector<std::pair<const void*, std::string>> names;  // one letter per distinct buffer
  /// Terminals built so far that are not sections of an earlier one: memory and node id
  /// (section_leader).
  std::vector<tessera::impl::buffer_layout> leaders;
  std::vector<int> leader_ids;
  int nleaders = 0;
  const std::string& of(const void* p) {
    for (const auto& [q, s] : names)
      if (q == p) return s;
    const std::size_t k = names.size();
    names.emplace_back(
        p, std::string(1, char('A' + k % 26)) + (k >= 26 ? std::to_string(k / 26) : std::string()));
    return names.back().second;
  }
};

template <class E>
int build(const E& e, expr_graph& g, name_table& names, const tessera::impl::captured_buffer* dst) {
  const int id = static_cast<int>(g.nodes.size());
  g.nodes.emplace_back();
  {
    graph_node& n = g.nodes[id];
    n.traits = E::traits;
    if constexpr (E::rank > 0) {
      const auto x = e.get_extent();
      for (int d = 0; d < E::rank; ++d) n.extent.push_back(x[d]);
    }
    fill_type<typename E::value_type>(n);
    for (int d = 0; d < 3; ++d) n.tile[d] = e.sched.tile[d];
    if constexpr (E::traits.kind == node_kind::terminal) {
      tessera::impl::buffer_layout b;
      e.a.fill_layout(b);
      n.label = names.of(b.data);
      n.with_output = classify(b, dst);
      n.contiguous = contiguous(b);
      for (int d = 0; d < b.rank; ++d) n.strides.push_back(b.stride[d]);
      std::int64_t off[3];
      const int before = names.nleaders;
      names.leaders.resize(std::size_t(before) + 1);  // room for b as a new leader
      names.leader_ids.resize(std::size_t(before) + 1);
      const int l = section_leader(names.leaders.data(), names.nleaders, b, b, off);
      if (names.nleaders > before) names.leader_ids[std::size_t(before)] = id;
      if (l >= 0) {
        n.section_of = names.leader_ids[std::size_t(l)];
        n.section_offset.assign(off, off + b.rank);
      }
    } else {
      n.label = e.label();
    }
    if constexpr (E::traits.reads_neighbours) {
      for (int d = 0; d < E::rank; ++d) n.offset.push_back(e.offset[d]);
      n.boundary = e.boundary_name();
    }
    if constexpr (E::traits.kind == node_kind::tile_reduce) {
      n.reduce_tile[0] = E::rows;
      n.reduce_tile[1] = E::cols;
    }
  }
  for_each_child(e, [&](const auto& c) {
    const int cid = build(c, g, names, dst);
    g.nodes[id].children.push_back(cid);
  });
  return id;
}
}  // namespace impl

/// The graph of expression `e` (pre-order). \param dst [in] the destination's memory, to
/// classify how each terminal overlaps it (nullptr: a fresh array, no overlap).
template <class E>
expr_graph build_graph(const E& e, const tessera::impl::captured_buffer* dst = nullptr) {
  expr_graph g;
  g.nodes.reserve(node_count<E>());
  impl::name_table names;
  impl::build(e, g, names, dst);
  g.out_dtype = g.nodes[0].dtype;
  g.out_elem_bytes = g.nodes[0].elem_bytes;
  if (dst && dst->type_name) {
    g.out_dtype = dst->type_name();
    g.out_elem_bytes = dst->elem_bytes;
  }
  if (dst) g.out_contiguous = contiguous(*dst);
  return g;
}

/// Entries of node type N itself (not its children) in a plan-cache key whose terminals have
/// TF + TD x rank entries of their own: its extent (rank) and schedule (3), then a terminal's
/// own entries, or the two of a plan_key().
template <class N, int TF, int TD>
constexpr int own_entries() {
  int k = N::rank + 3;
  if constexpr (N::traits.kind == node_kind::terminal)
    k += TF + TD * N::rank;
  else if constexpr (requires(const N& n) { n.plan_key(); })
    k += 2;
  return k;
}
template <int TF, int TD>
struct own_entries_weight {
  template <class N>
  static constexpr int test() {
    return own_entries<N, TF, TD>();
  }
};
/// Fingerprint entries of the tree of E: own_entries over its nodes, terminals with their overlap
/// of the destination and contiguity, memory class, section leader, offset (rank) and strides
/// (rank).
template <class E>
constexpr int key_entries() {
  return count_nodes<own_entries_weight<3, 2>, E>();
}
/// Writes the entries of every node of e, pre-order, from key[0]: its extent and schedule, then
/// for a terminal what terminal(n, key + at) writes (TF + TD x rank entries from there), for a
/// node with a plan_key() its two entries. Returns the number written. fingerprint_into and
/// raw_key_into differ only in their terminals' entries.
template <int TF, int TD, class E, class Terminal>
int write_node_entries(const E& e, std::int64_t* key, Terminal&& terminal) {
  int k = 0;
  auto visit = [&](const auto& self, const auto& n) -> void {
    using N = std::remove_cvref_t<decltype(n)>;
    constexpr int R = N::rank;
    if constexpr (R > 0) {
      const auto x = n.get_extent();
      for (int d = 0; d < R; ++d) key[k + d] = x[d];
    }
    for (int d = 0; d < 3; ++d) key[k + R + d] = n.sched.tile[d];
    const int at = k + R + 3;  // the node's own entries after its extent and schedule
    if constexpr (N::traits.kind == node_kind::terminal) {
      terminal(n, key + at);
    } else if constexpr (requires { n.plan_key(); }) {
      const auto pk = n.plan_key();
      key[at] = pk[0];
      key[at + 1] = pk[1];
    }
    k += own_entries<N, TF, TD>();
    for_each_child(n, [&](const auto& c) { self(self, c); });
  };
  visit(visit, e);
  return k;
}
/// Entries of the fingerprint of an expression type E: its nodes' (key_entries), then two for
/// the destination. Only as many as the node types need (a plan-cache lookup zeroes, fills and
/// compares them all: 15 per node before, 137 for `2a + 3b - c`, 51 now).
template <class E>
inline constexpr int fingerprint_size = key_entries<E>() + 2;

/// Everything a plan of `e` depends on besides its type: per node its extent and schedule, and
/// for terminals how they overlap `dst` and whether they are contiguous; per terminal its
/// buffer identity class (which terminals share memory and strides), which earlier terminal it
/// is an overlapping section of, at which offset, and its strides (the memory a stage of
/// overlapping sections spans is counted in them); nodes with a plan_key() add it; last, the
/// destination's element type (its type-name function: one per type) and whether its elements
/// are contiguous. Written to key[0, fingerprint_size<E>). No allocation, and no layout copied:
/// each terminal's is written in place and referred to (a struct just stored field by field
/// and then copied is read back with wide loads the stores cannot forward: a d = a + b of 1000
/// floats spent a fifth of its host time in two such stalls here, on a Zen 4 core).
template <class E>
void fingerprint_into(const E& e, const tessera::impl::captured_buffer* dst, std::int64_t* key) {
  for (int i = 0; i < fingerprint_size<E>; ++i) key[i] = 0;
  constexpr int terminals = std::max(kind_count<E, node_kind::terminal>(), 1);
  tessera::impl::buffer_layout layouts[terminals];  // the terminals', in walk order
  int nterminals = 0;
  // The first terminal of each memory class (the same memory and strides), and the leaders as
  // build() finds them: pointers into `layouts`.
  const tessera::impl::buffer_layout* seen[terminals];
  int nseen = 0;
  const tessera::impl::buffer_layout* leaders[terminals];
  int nleaders = 0;
  const int k = write_node_entries<3, 2>(e, key, [&](const auto& n, std::int64_t* own) {
    constexpr int R = std::remove_cvref_t<decltype(n)>::rank;
    tessera::impl::buffer_layout& b = layouts[nterminals++];
    n.a.fill_layout(b);
    own[0] = static_cast<std::int64_t>(classify(b, dst)) * 2 + (contiguous(b) ? 1 : 0);
    // The first terminal with the same memory (names in plans) and the same strides (the
    // same elements at every index: stencil operands staged once).
    int cls = 0;
    auto same = [&](const tessera::impl::buffer_layout* m) {
      return m->data == b.data && m->stride[0] == b.stride[0] && m->stride[1] == b.stride[1] &&
             m->stride[2] == b.stride[2];
    };
    while (cls < nseen && !same(seen[cls])) ++cls;
    if (cls == nseen) seen[nseen++] = &b;
    own[1] = cls;
    std::int64_t off[3];
    const tessera::impl::buffer_layout* const as_leader = &b;
    if (const int l = section_leader(leaders, nleaders, b, as_leader, off); l >= 0) {
      own[2] = l + 1;
      for (int d = 0; d < R; ++d) own[3 + d] = off[d];
    }
    for (int d = 0; d < R; ++d) own[3 + R + d] = b.stride[d];
  });
  key[k] = dst ? static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(dst->type_name)) : 0;
  key[k + 1] = dst && !contiguous(*dst) ? 0 : 1;
}
/// Entries of the raw key of an expression type E: its nodes' (own_entries, terminals with their
/// first element and strides), then nine for the destination (its first element, extents, strides,
/// element type and size).
template <class E>
inline constexpr int raw_key_size = count_nodes<own_entries_weight<1, 1>, E>() + 9;

/// What fingerprint_into derives its key from, underived: per node its extent and schedule,
/// per terminal its first element and strides, nodes' plan_key(), and the destination's first
/// element, extents, strides, element type and size. Equal raw keys of one expression type
/// give equal fingerprints (the fingerprint is a function of these), so a cache may take the
/// plan of an equal raw key without deriving the fingerprint (overlaps, memory classes,
/// sections: about 70 ns of the 180 a `d = 2a + 3b - c` of 1 x 1 floats took per assignment on
/// a Zen 4 core). Written to key[0, raw_key_size<E>); no allocation.
template <class E>
void raw_key_into(const E& e, const tessera::impl::captured_buffer* dst, std::int64_t* key) {
  const int k = write_node_entries<1, 1>(e, key, [](const auto& n, std::int64_t* own) {
    constexpr int R = std::remove_cvref_t<decltype(n)>::rank;
    tessera::impl::buffer_layout b;
    n.a.fill_layout(b);
    own[0] = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(b.data));
    for (int d = 0; d < R; ++d) own[1 + d] = b.stride[d];
  });
  if (dst) {
    key[k] = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(dst->data));
    for (int d = 0; d < 3; ++d) {
      key[k + 1 + d] = d < dst->rank ? dst->extent[d] : -1;
      key[k + 4 + d] = d < dst->rank ? dst->stride[d] : -1;
    }
    key[k + 7] = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(dst->type_name));
    key[k + 8] = static_cast<std::int64_t>(dst->elem_bytes);
  } else {
    for (int i = 0; i < 9; ++i) key[k + i] = -2;
  }
}

/// fingerprint_into as a value.
template <class E>
std::array<std::int64_t, fingerprint_size<E>> fingerprint(
    const E& e, const tessera::impl::captured_buffer* dst) {
  std::array<std::int64_t, fingerprint_size<E>> key;
  fingerprint_into(e, dst, key.data());
  return key;
}

}  // namespace tessera::codegen
