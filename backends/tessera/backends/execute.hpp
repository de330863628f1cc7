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
  assign(execution_space(), dst, e);
}
template <class T, int N, class E>
requires requires {
  typename E::tessera_expression_tag;
}
void assign(const array_view<T, N>& dst, const E& e) {
  assign(execution_space(), dst, e);
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
  return eval(execution_space(), e);
}

/// The program plan of an expression (assigned to a fresh array) as a value: the kernels in
/// execution order, exactly as an assignment launches them. Nothing runs; nothing is timed.
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
codegen::program_plan plan(const E& e) {
  tessera::impl::require_runtime("tessera::plan");
  return backends::exec::plan_of(execution_space(), e, nullptr).plan;
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

/// Reductions of expressions: the expression is read element by element inside the reduction
/// (fused; non-elementwise parts such as matmul are materialized first). Same results,
/// accuracy and errors as the array overloads in reduce.hpp.
#define TESSERA_EXPR_REDUCTION(fn)                              \
  template <class E, class... Args>                             \
  requires requires {                                           \
    typename E::tessera_expression_tag;                         \
  }                                                             \
  auto fn(const E& e, const Args&... args) {                    \
    return fn(execution_space(), e, args...);                   \
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
  return plan(execution_space(), r, e);
}
template <class E>
requires requires {
  typename E::tessera_expression_tag;
}
codegen::program_plan plan(reduction r, const E& e, reproducible_t) {
  return plan(execution_space(), r, e, ops::add{}, true);
}
template <class E, class Op>
requires(requires { typename E::tessera_expression_tag; } &&
         !std::is_same_v<Op, reproducible_t>) codegen::program_plan
    plan(reduction r, const E& e, const Op& op) {
  return plan(execution_space(), r, e, op);
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
