/// \file exec/reader.hpp
/// \brief Expressions read by whole-array reductions: a readable view of an expression whose
///        non-elementwise parts are materialized first (on the caller's execution space), the
///        rest evaluated element by element inside the reduction; and the plans of that
///        materialization, for plan(reduction, expression).
#pragma once

#include <tessera/backends/exec/executor.hpp>

namespace tessera::backends::exec {

/// A readable (see readable.hpp) view of an expression: its non-elementwise parts are
/// materialized first (each by its own fused kernels); the rest is evaluated element by element
/// inside the consumer's kernel, so `sum(A * B)` reads A and B once and writes nothing.
template <class E>
struct expression_reader {
  static constexpr int rank = E::rank;
  eval::eval<E> ev;
  extent<rank> ext;
  /// flat_at(q) is element q of the row-major order (flat_readable; set by reader_scope).
  bool flat = false;
  using ctx = eval::ectx<char, 1>;
  extent<rank> get_extent() const { return ext; }
  /// Element q of the row-major order, read by flat index (only where `flat`): the loop the
  /// compiler vectorizes, every operand read at q.
  TESSERA_FORCEINLINE auto flat_at(index_type q) const { return ev.flat(ctx{}, q); }
  TESSERA_FORCEINLINE auto operator()(index_type i) const requires(rank == 1) {
    return ev.at(ctx{}, index<1>(i));
  }
  TESSERA_FORCEINLINE auto operator()(index_type i, index_type j) const requires(rank == 2) {
    return ev.at(ctx{}, index<2>(i, j));
  }
  TESSERA_FORCEINLINE auto operator()(index_type i, index_type j, index_type k) const
      requires(rank == 3) {
    return ev.at(ctx{}, index<3>(i, j, k));
  }
};

/// Whether eval::eval<E>::flat(c, q) reads element q of the row-major order of extent x: every
/// terminal it reads by flat index (below unary, binary and where nodes) lies in memory in
/// row-major order without gaps (a rank-1 operand always does). Other nodes' flat reads are
/// right whatever the layout: shifts and generated nodes of rank >= 2 divide q back into an
/// index, scalars ignore it, materialized nodes are contiguous temporaries.
template <class E>
struct flat_check {
  template <class Ev, int N>
  static bool ok(const Ev&, const extent<N>&) {
    return true;
  }
};
template <class A>
struct flat_check<terminal<A>> {
  template <class Ev, int N>
  static bool ok(const Ev& ev, const extent<N>& x) {
    return tessera::impl::row_major_contiguous(x, ev.r.s);
  }
};
template <class Op, class A>
struct flat_check<unary_node<Op, A>> {
  template <class Ev, int N>
  static bool ok(const Ev& ev, const extent<N>& x) {
    return flat_check<A>::ok(ev.a, x);
  }
};
template <class Op, class A, class B>
struct flat_check<binary_node<Op, A, B>> {
  template <class Ev, int N>
  static bool ok(const Ev& ev, const extent<N>& x) {
    return flat_check<A>::ok(ev.a, x) && flat_check<B>::ok(ev.b, x);
  }
};
template <class Cn, class A, class B>
struct flat_check<where_node<Cn, A, B>> {
  template <class Ev, int N>
  static bool ok(const Ev& ev, const extent<N>& x) {
    return flat_check<Cn>::ok(ev.c, x) && flat_check<A>::ok(ev.a, x) && flat_check<B>::ok(ev.b, x);
  }
};
template <class E, int N>
bool flat_readable(const eval::eval<E>& ev, const extent<N>& x) {
  return flat_check<E>::ok(ev, x);
}

/// Owns the temporaries of an expression_reader (host side) for the duration of a call; the
/// expression's non-elementwise parts are materialized on `exec`.
template <class Space, class E>
struct reader_scope {
  static constexpr int nodes = codegen::node_count<E>();
  std::array<codegen::node_role, nodes> roles{};
  workspace<E> ws;
  expression_reader<E> reader;
  reader_scope(const Space& exec, const E& e) {
    sync_inputs(e);
    materialize(exec, e, 0);
    reader.ev = eval::make_eval(e, 0, build_ctx{roles.data(), -1, {}, ws.temps.data(), ws.slot});
    reader.ext = e.get_extent();
    reader.flat = flat_readable(reader.ev, reader.ext);
  }
  template <class N>
  void materialize(const Space& exec, const N& n, int id) {
    if constexpr (is_elementwise(N::traits)) {
      eval::for_each_child_id(n, id, [&](const auto& c, int cid) { materialize(exec, c, cid); });
    } else {
      const auto x = n.get_extent();
      const auto r = ws.template allocate<typename N::value_type>(id, x);
      if (x.size() > 0) execute(exec, plan_of(exec, n, nullptr), n, r, x);
      roles[std::size_t(id)] = codegen::node_role::materialized;
    }
  }
};

/// Appends the plans of the kernels that materialize e's non-elementwise parts, in the order
/// reader_scope runs them.
template <class Space, class N>
void materialization_plans(const Space& exec, const N& n, codegen::program_plan& p) {
  if constexpr (is_elementwise(N::traits)) {
    codegen::for_each_child(n, [&](const auto& c) { materialization_plans(exec, c, p); });
  } else if (n.get_extent().size() > 0) {
    for (const auto& k : plan_of(exec, n, nullptr).plan.kernels) p.kernels.push_back(k);
  }
}

}  // namespace tessera::backends::exec
