/// \file execute.hpp
/// \brief Tier 1's public entry points: `array = expr` (through assign), `assign(exec, dst,
///        expr)`, `eval(expr)`, `plan(expr)`, `explain(expr)`, and the reductions of expressions
///        with their plans. The executor is exec/executor.hpp, the reading of expressions by
///        reductions exec/reader.hpp.
#pragma once

#include <tessera/backends/exec/executor.hpp>
#include <tessera/backends/exec/reader.hpp>
#include <tessera/backends/reduce.hpp>

#include <string>

namespace tessera {

/// Evaluates `e` into `dst` with as few kernels as the code generator can fuse, on execution
/// space instance `exec` (asynchronous unless temporaries were needed). `dst` may overlap
/// operands of `e` in any way (the same array, sections or views of one buffer): a temporary
/// is used exactly where a kernel would read what it already wrote.
/// \param dst [in] an array<T,N>, or an array_view<T,N> (a section of caller memory, ...)
/// \param e [in] a Tier 1 expression of rank N and the same extent
/// \throws shape_error when dst's extent differs from e's (dst untouched); usage_error when
///         Kokkos is not running; resource_error when a kernel's scratch exceeds the backend's
///         limit — all before any kernel runs
template <launchable_space Space, class T, int N, class E>
requires requires {
  typename E::tessera_expression_tag;
}
void assign(const Space& exec, const array<T, N>& dst, const E& e) {
  backends::exec::assign_buffer(exec, dst, e);
}
template <launchable_space Space, class T, int N, class E>
requires requires {
  typename E::tessera_expression_tag;
}
void assign(const Space& exec, const array_view<T, N>& dst, const E& e) {
  backends::exec::assign_buffer(exec, dst, e);
}
template <class T, int N, class E>
requires requires {
  typename E::tessera_expression_tag;
}
void assign(const array<T, N>& dst, const E& e) {
  assign(tessera::impl::default_instance(), dst, e);
}
template <class T, int N, class E>
requires requires {
  typename E::tessera_expression_tag;
}
void assign(const array_view<T, N>& dst, const E& e) {
  assign(tessera::impl::default_instance(), dst, e);
}

/// Sets every element of `dst` to `v` converted to its element type (`A = 2.0f` on an array):
/// one elementwise kernel, planned and explained like any assignment (its operand is a
/// generated constant, printed "fill").
/// \param dst [in] an array<T,N> or an array_view<T,N> (T not const)
/// \throws usage_error when Kokkos is not running (before any kernel runs)
template <launchable_space Space, class D, class U>
requires(impl::is_array_like<D>::value&& std::is_arithmetic_v<U>) void fill(const Space& exec,
                                                                            const D& dst,
                                                                            const U& v) {
  using T = typename D::value_type;
  static_assert(!std::is_const_v<T>, "tessera::fill: a view of const T cannot be written");
  assign(exec, dst, generate(dst.extent, impl::constant_fn<T>{static_cast<T>(v)}));
}
template <class D, class U>
requires(impl::is_array_like<D>::value&& std::is_arithmetic_v<U>) void fill(const D& dst,
                                                                            const U& v) {
  fill(tessera::impl::default_instance(), dst, v);
}

/// Evaluates an expression into a new array (element type: the expression's value_type), on
/// `exec`. \throws as assign
template <launchable_space Space, class E>
requires requires {
  typename E::tessera_expression_tag;
}
auto eval(const Space& exec, const E& e) {
  array<typename E::value_type, E::rank> out(e.get_extent());
  assign(exec, out, e);
  return out;
}
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
auto eval(const E& e) {
  return eval(tessera::impl::default_instance(), e);
}

/// The program plan of an expression (assigned to a fresh array) as a value: the kernels in
/// execution order, exactly as an assignment launches them. Nothing runs; nothing is timed.
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
codegen::program_plan plan(const E& e) {
  tessera::impl::require_runtime("tessera::plan");
  return backends::exec::plan_of(tessera::impl::default_instance(), e, nullptr).plan;
}
/// The same plan as text: kernels with league/team/vector sizes, scratch bytes per level,
/// every buffer's memory space, barriers and the hazards they resolve, fusion notes.
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
std::string explain(const E& e) {
  return codegen::to_string(plan(e));
}

/// The plan of `dst = e` for this destination: as plan(e), but with the operands' overlap
/// with dst's memory known, so the temporary and the copy an aliasing assignment needs (or
/// their absence: `A = A + B` runs in place) and the store mode are the ones assign(dst, e)
/// uses. Nothing runs. \param dst an array or array_view (a section, ...) of e's extent
/// \throws shape_error when the extents differ
template <class D, class E>
requires(impl::is_array_like<D>::value&& requires {
  typename E::tessera_expression_tag;
}) codegen::program_plan plan(const D& dst, const E& e) {
  tessera::impl::require_runtime("tessera::plan(dst, e)");
  static_assert(D::rank == E::rank, "tessera::plan(dst, e): dst and e have different ranks");
  if (!(dst.extent == e.get_extent()))
    throw shape_error("tessera::plan(dst, e): the destination's extent " + to_string(dst.extent) +
                      " and the expression's " + to_string(e.get_extent()) + " differ");
  const auto mem = dst.describe_memory();
  return backends::exec::plan_of(tessera::impl::default_instance(), e, &mem).plan;
}
/// The plan of `dst = e` as text (see plan(dst, e)).
template <class D, class E>
requires(impl::is_array_like<D>::value&& requires {
  typename E::tessera_expression_tag;
}) std::string explain(const D& dst, const E& e) {
  return codegen::to_string(plan(dst, e));
}

/// Reductions of expressions: the expression is read element by element inside the reduction
/// (fused; non-elementwise parts such as matmul are materialized first). Same results,
/// accuracy and errors as the array overloads in reduce.hpp.
#define TESSERA_EXPR_REDUCTION(fn)                              \
  template <class E, class... Args>                             \
  requires requires {                                           \
    typename E::tessera_expression_tag;                         \
  }                                                             \
  auto fn(const E& e, const Args&... args) {                    \
    return fn(tessera::impl::default_instance(), e, args...);   \
  }                                                             \
  template <launchable_space Space, class E, class... Args>     \
  requires requires {                                           \
    typename E::tessera_expression_tag;                         \
  }                                                             \
  auto fn(const Space& exec, const E& e, const Args&... args) { \
    backends::exec::reader_scope<Space, E> scope(exec, e);      \
    return fn(exec, scope.reader, args...);                     \
  }

/// The plan of reduction r of an expression on exec, as the reduction runs it: the kernels
/// that compute its non-elementwise parts into temporaries, then the reduction kernel, which
/// reads the rest element by element. Nothing runs. \throws as the reduction would
template <launchable_space Space, class E, class Op = ops::add>
requires requires {
  typename E::tessera_expression_tag;
}
codegen::program_plan plan(const Space& exec, reduction r, const E& e, const Op& op = {},
                           bool reproducible = false) {
  tessera::impl::require_runtime("tessera::plan(reduction)");
  codegen::program_plan p;
  const auto x = backends::impl::checked_extent("tessera::plan(reduction)", e);
  if (x.size() == 0) return p;
  backends::exec::materialization_plans(exec, e, p);
  p.kernels.push_back(backends::impl::reduction_kernel_plan<typename E::value_type>(
      exec, r, x.size(), op, reproducible));
  p.kernels.back().name += ": " + codegen::describe_node(codegen::build_graph(e), 0);
  return p;
}
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
codegen::program_plan plan(reduction r, const E& e) {
  return plan(tessera::impl::default_instance(), r, e);
}
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
codegen::program_plan plan(reduction r, const E& e, reproducible_t) {
  return plan(tessera::impl::default_instance(), r, e, ops::add{}, true);
}
template <class E, class Op>
requires(requires { typename E::tessera_expression_tag; } &&
         !std::is_same_v<Op, reproducible_t>) codegen::program_plan
    plan(reduction r, const E& e, const Op& op) {
  return plan(tessera::impl::default_instance(), r, e, op);
}
template <class E, class... Args>
requires requires {
  typename E::tessera_expression_tag;
}
std::string explain(reduction r, const E& e, const Args&... args) {
  return codegen::to_string(plan(r, e, args...));
}

TESSERA_EXPR_REDUCTION(sum)
TESSERA_EXPR_REDUCTION(mean)
TESSERA_EXPR_REDUCTION(min_value)
TESSERA_EXPR_REDUCTION(max_value)
TESSERA_EXPR_REDUCTION(reduce)
#undef TESSERA_EXPR_REDUCTION

}  // namespace tessera
