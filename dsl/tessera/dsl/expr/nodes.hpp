/// \file nodes.hpp
/// \brief Tier 1 expression nodes. A node stores its children and functor and checks shapes
///        when it is built; it computes nothing. Evaluation and the choice of kernels belong to
///        the code generator (codegen/) and the evaluators (backends/eval/).
///
/// Every node declares, Eigen-style: `traits` (node_kind.hpp: kind, fusion role, kernel family),
/// `children()` (a tuple of references to its operands), `label()` (what plans print), `rank`,
/// `value_type`, `get_extent()`, and carries `sched` (tile sizes from `.tile<...>()`; 0 = the
/// backend's default). Adding an elementwise operation is one line of ops.hpp's operator list;
/// a new elementwise node type is its struct (here or anywhere) and its evaluator
/// (backends/eval/).
#pragma once

#include <tessera/dsl/array.hpp>
#include <tessera/dsl/array_view.hpp>
#include <tessera/dsl/boundary.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/expr/node_kind.hpp>
#include <tessera/dsl/expr/ops.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tessera {

/// Tile sizes requested for an expression with `.tile<T0[,T1]>()`; 0 = backend default.
struct schedule {
  int tile[3] = {0, 0, 0};
  bool set() const { return tile[0] > 0; }
};

/// CRTP base of every node: gives `.tile<...>()`.
template <class D>
struct expr_base {
  using tessera_expression_tag = void;
  /// A copy of this expression that the code generator lowers with the given tile sizes
  /// (output tile of a transpose or matmul; cache/scratch tile of the generated kernel).
  template <int... T>
  D tile() const {
    static_assert(sizeof...(T) >= 1 && sizeof...(T) <= 3 && ((T > 0) && ...),
                  "expression.tile<T...>(): between 1 and 3 positive tile sizes");
    D d = static_cast<const D&>(*this);
    const int v[] = {T...};
    for (std::size_t i = 0; i < sizeof...(T); ++i) d.sched.tile[i] = v[i];
    return d;
  }
  schedule sched;
};

namespace impl {
template <class T>
struct is_array_like : std::false_type {};
template <class T, int N>
struct is_array_like<array<T, N>> : std::true_type {};
template <class T, int N>
struct is_array_like<array_view<T, N>> : std::true_type {};
template <class T>
struct is_node : std::bool_constant<std::is_base_of_v<expr_base<T>, T>> {};
}  // namespace impl

/// An array or array_view used as an expression leaf (holds the handle; no copy of the data).
template <class A>
struct terminal : expr_base<terminal<A>> {
  static constexpr node_traits traits = elementwise_node(node_kind::terminal);
  using value_type = std::remove_const_t<typename A::value_type>;
  static constexpr int rank = A::rank;
  A a;
  explicit terminal(const A& x) : a(x) {}
  explicit terminal(A&& x) : a(std::move(x)) {}
  extent<rank> get_extent() const { return a.extent; }
  std::tuple<> children() const { return {}; }
  /// Terminals are named by the graph builder (A, B, ... per distinct buffer).
  static std::string label() { return "array"; }
};

/// A scalar broadcast to the shape of the other operand.
template <class T>
struct scalar_node : expr_base<scalar_node<T>> {
  static constexpr node_traits traits = elementwise_node(node_kind::scalar);
  using value_type = T;
  static constexpr int rank = 0;
  T value;
  explicit scalar_node(T v) : value(v) {}
  std::tuple<> children() const { return {}; }
  static std::string label() { return "scalar"; }
};

/// A leaf computed from the index: element i is `f(i)` (Eigen's NullaryExpr), over extent
/// `ext`. F is a device-callable functor of `const index<N>&` (a TESSERA_KERNEL lambda on GPU
/// backends) returning an arithmetic value; it is copied into every kernel that reads the node.
template <class F, int N>
struct generate_node : expr_base<generate_node<F, N>> {
  static constexpr node_traits traits = elementwise_node(node_kind::generate);
  using value_type = std::remove_cvref_t<decltype(std::declval<const F&>()(index<N>()))>;
  static_assert(std::is_arithmetic_v<value_type>,
                "tessera::generate: the functor must return an arithmetic value");
  static constexpr int rank = N;
  F f;
  extent<N> ext;
  generate_node(const extent<N>& e, const F& fn) : f(fn), ext(e) {}
  extent<N> get_extent() const { return ext; }
  std::tuple<> children() const { return {}; }
  /// Plans print "fill" for a constant, "generate" for any other functor.
  static std::string label() {
    if constexpr (requires { F::label; })
      return F::label;
    else
      return "generate";
  }
};

namespace impl {
/// The functor of fill(): the value v at every index.
template <class T>
struct constant_fn {
  static constexpr const char* label = "fill";
  T v;
  template <int N>
  TESSERA_FORCEINLINE T operator()(const index<N>&) const {
    return v;
  }
};
}  // namespace impl

/// The expression whose element i is `f(i)`, over extent `e` (Eigen's `NullaryExpr`): index
/// expressions such as `A = generate(A.extent, TESSERA_KERNEL(const index<2>& i) { return
/// i[0] * n + i[1]; })`. It fuses like an array operand (no memory is read) and may appear
/// anywhere an array may.
/// \param e [in] the extent (rank 1..3)
/// \param f [in] device-callable functor of `const index<N>&` returning an arithmetic value
/// \throws shape_error on a negative extent (before any kernel runs)
template <int N, class F>
auto generate(const extent<N>& e, const F& f) {
  static_assert(N >= 1 && N <= 3, "tessera::generate: rank 1, 2 or 3");
  for (int d = 0; d < N; ++d)
    if (e[d] < 0) throw shape_error("tessera::generate: negative extent " + to_string(e));
  return generate_node<F, N>(e, f);
}

namespace impl {
/// `e` as an expression node: arrays and views become terminals, scalars scalar_nodes, nodes
/// stay themselves. An rvalue is moved (a subexpression built in the same statement: copying
/// it copied every array in it, one reference-count increment and decrement each, at every
/// level of the tree).
template <class E>
auto as_expr(E&& e) {
  using D = std::remove_cvref_t<E>;
  if constexpr (is_array_like<D>::value)
    return terminal<D>(std::forward<E>(e));
  else if constexpr (std::is_arithmetic_v<D>)
    return scalar_node<D>(e);
  else
    return D(std::forward<E>(e));
}
template <class E>
using expr_t = decltype(as_expr(std::declval<E>()));

template <class E>
concept expression_like = is_array_like<E>::value || is_node<E>::value;

/// The operands of a binary elementwise builder: expressions or scalars, at least one an
/// expression.
template <class A, class B>
concept binary_operands = (expression_like<A> || expression_like<B>)&&(
    expression_like<A> || std::is_arithmetic_v<A>)&&(expression_like<B> || std::is_arithmetic_v<B>);

template <class A, class B>
constexpr int binary_rank() {
  return A::rank > B::rank ? A::rank : B::rank;
}

template <int N, class A, class B>
extent<N> common_extent(const char* op, const A& a, const B& b) {
  if constexpr (A::rank == 0)
    return b.get_extent();
  else if constexpr (B::rank == 0)
    return a.get_extent();
  else {
    static_assert(A::rank == B::rank, "tessera: elementwise operands must have the same rank");
    if (!(a.get_extent() == b.get_extent()))
      throw shape_error(std::string("tessera::") + op + ": operand extents " +
                        to_string(a.get_extent()) + " and " + to_string(b.get_extent()) +
                        " differ");
    return a.get_extent();
  }
}
}  // namespace impl

/// `op(a)` elementwise.
template <class Op, class A>
struct unary_node : expr_base<unary_node<Op, A>> {
  static constexpr node_traits traits = elementwise_node(node_kind::unary);
  using value_type = std::remove_cvref_t<decltype(Op{}(std::declval<typename A::value_type>()))>;
  static constexpr int rank = A::rank;
  A a;
  explicit unary_node(A x) : a(std::move(x)) {}
  extent<rank> get_extent() const { return a.get_extent(); }
  auto children() const { return std::tie(a); }
  static std::string label() { return Op::symbol; }
};

/// `op(a, b)` elementwise; a scalar operand is broadcast.
template <class Op, class A, class B>
struct binary_node : expr_base<binary_node<Op, A, B>> {
  using value_type = std::remove_cvref_t<decltype(
      Op{}(std::declval<typename A::value_type>(), std::declval<typename B::value_type>()))>;
  static constexpr int rank = impl::binary_rank<A, B>();
  static_assert(rank > 0, "tessera: an expression needs at least one array operand");
  static constexpr node_traits traits = elementwise_node(node_kind::binary);
  A a;
  B b;
  extent<rank> ext;
  binary_node(A x, B y)
      : a(std::move(x)), b(std::move(y)), ext(impl::common_extent<rank>(Op::symbol, a, b)) {}
  extent<rank> get_extent() const { return ext; }
  auto children() const { return std::tie(a, b); }
  static std::string label() { return Op::symbol; }
};

/// `shift(a, d, b)`: element i is a(i + d), same extent as a; reads outside a follow the
/// boundary policy b. A stencil is a sum of shifts of one operand.
template <class A>
struct shift_node : expr_base<shift_node<A>> {
  static constexpr node_traits traits = neighbour_node(node_kind::shift);
  using value_type = typename A::value_type;
  static constexpr int rank = A::rank;
  static_assert(rank >= 1, "tessera::shift: the operand must be an array or an expression");
  A a;
  index<rank> offset;
  boundary::policy bc;
  shift_node(A x, const index<rank>& d, boundary::policy b) : a(std::move(x)), offset(d), bc(b) {}
  extent<rank> get_extent() const { return a.get_extent(); }
  auto children() const { return std::tie(a); }
  /// "shift(+1,-2; clamp)"
  std::string label() const {
    std::string s = "shift(";
    for (int d = 0; d < rank; ++d) {
      if (d) s += ',';
      if (offset[d] >= 0) s += '+';
      s += std::to_string(offset[d]);
    }
    s += "; ";
    s += boundary_name();
    s += ')';
    return s;
  }
  /// The boundary policy's name, as plans print it.
  std::string boundary_name() const { return boundary::to_string(bc.k); }
  /// What the plan depends on beyond the type and extents (plan-cache fingerprint): the
  /// offsets (printed in plans) and the policy.
  std::array<std::int64_t, 2> plan_key() const {
    std::int64_t packed = 0;
    for (int d = 0; d < rank; ++d) packed = (packed << 21) | (offset[d] & ((1 << 21) - 1));
    return {packed, static_cast<std::int64_t>(bc.k)};
  }
};

/// `where(c, a, b)`: a where c is true, else b (elementwise; scalars broadcast).
template <class C, class A, class B>
struct where_node : expr_base<where_node<C, A, B>> {
  using value_type = std::common_type_t<typename A::value_type, typename B::value_type>;
  // The rank of the array operands (scalars have rank 0): where(A > B, 1.f, 0.f) has rank 2.
  static constexpr int rank = C::rank > impl::binary_rank<A, B>() ? C::rank
                                                                  : impl::binary_rank<A, B>();
  static_assert(rank > 0, "tessera::where: an expression needs at least one array operand");
  static constexpr node_traits traits = elementwise_node(node_kind::where);
  C c;
  A a;
  B b;
  extent<rank> ext;
  where_node(C c_, A x, B y) : c(std::move(c_)), a(std::move(x)), b(std::move(y)) {
    // Every array operand must have the same extent; scalars broadcast.
    bool have = false;
    auto visit = [&](const auto& o) {
      using O = std::remove_cvref_t<decltype(o)>;
      if constexpr (O::rank > 0) {
        static_assert(O::rank == rank, "tessera::where: operands must have the same rank");
        if (have && !(o.get_extent() == ext))
          throw shape_error("tessera::where: operand extents " + to_string(ext) + " and " +
                            to_string(o.get_extent()) + " differ");
        ext = o.get_extent();
        have = true;
      }
    };
    visit(c);
    visit(a);
    visit(b);
  }
  extent<rank> get_extent() const { return ext; }
  auto children() const { return std::tie(c, a, b); }
  static std::string label() { return "where"; }
};

/// `matmul(a, b)`: (M x K) times (K x N).
template <class A, class B>
struct matmul_node : expr_base<matmul_node<A, B>> {
  using value_type = std::common_type_t<typename A::value_type, typename B::value_type>;
  static constexpr int rank = 2;
  static_assert(A::rank == 2 && B::rank == 2, "tessera::matmul: both operands must be rank 2");
  static_assert(std::is_same_v<typename A::value_type, typename B::value_type>,
                "tessera::matmul_node: operands of one element type (matmul() converts them)");
  /// A kernel core (elementwise ops above it are its epilogue), ahead of tile_reduce.
  static constexpr node_traits traits = {node_kind::matmul, fusion_role::core,
                                         kernel_family::matmul, 2, false};
  A a;
  B b;
  matmul_node(A x, B y) : a(std::move(x)), b(std::move(y)) {
    if (a.get_extent()[1] != b.get_extent()[0])
      throw shape_error("tessera::matmul: inner dimensions differ: A " + to_string(a.get_extent()) +
                        " x B " + to_string(b.get_extent()));
  }
  extent<2> get_extent() const { return extent<2>(a.get_extent()[0], b.get_extent()[1]); }
  auto children() const { return std::tie(a, b); }
  static std::string label() { return "matmul"; }
};

/// `transpose(a)`: (M x N) -> (N x M).
template <class A>
struct transpose_node : expr_base<transpose_node<A>> {
  /// Staged through scratch by a tiled elementwise kernel without a core.
  static constexpr node_traits traits = {node_kind::transpose, fusion_role::staged,
                                         kernel_family::staged_transpose, 0, false};
  using value_type = typename A::value_type;
  static constexpr int rank = 2;
  static_assert(A::rank == 2, "tessera::transpose: the operand must be rank 2");
  A a;
  explicit transpose_node(A x) : a(std::move(x)) {}
  extent<2> get_extent() const { return extent<2>(a.get_extent()[1], a.get_extent()[0]); }
  auto children() const { return std::tie(a); }
  static std::string label() { return "transpose"; }
};

/// `tile_reduce<R,C>(a, op)` / `tile_mean<R,C>(a)`: one output element per R x C tile of a
/// (M x N with M % R == 0 and N % C == 0) -> (M/R x N/C).
template <int R, int C, class Op, class A, bool Mean>
struct tile_reduce_node : expr_base<tile_reduce_node<R, C, Op, A, Mean>> {
  static_assert(R > 0 && C > 0, "tessera::tile_reduce<R,C>: tile sizes must be positive");
  static_assert(A::rank == 2, "tessera::tile_reduce<R,C>: the operand must be rank 2");
  /// A kernel core (its elementwise input is its prologue, ops above it its epilogue).
  static constexpr node_traits traits = {node_kind::tile_reduce, fusion_role::core,
                                         kernel_family::tile_reduce, 1, false};
  using value_type = typename A::value_type;
  using op_type = Op;
  static constexpr int rank = 2;
  static constexpr int rows = R, cols = C;
  static constexpr bool mean = Mean;
  A a;
  Op op;
  tile_reduce_node(A x, Op o) : a(std::move(x)), op(o) {
    const auto e = a.get_extent();
    if (e[0] % R != 0 || e[1] % C != 0)
      throw shape_error(std::string("tessera::") + (Mean ? "tile_mean<" : "tile_reduce<") +
                        std::to_string(R) + "," + std::to_string(C) + ">: extent " + to_string(e) +
                        " is not a multiple of the tile");
  }
  extent<2> get_extent() const { return extent<2>(a.get_extent()[0] / R, a.get_extent()[1] / C); }
  auto children() const { return std::tie(a); }
  static std::string label() {
    return std::string(Mean ? "tile_mean<" : "tile_reduce<") + std::to_string(R) + "," +
           std::to_string(C) + ">";
  }
};

// ---------------------------------------------------------------------------------------------
// Builders. Operands may be arrays, array_views, nodes or (for elementwise ops) scalars.

#define TESSERA_BINARY_BUILDER(name, fn, expr, sym)                              \
  template <class A, class B>                                                    \
  requires impl::binary_operands<std::remove_cvref_t<A>, std::remove_cvref_t<B>> \
  auto fn(A&& a, B&& b) {                                                        \
    return binary_node<ops::name, impl::expr_t<A>, impl::expr_t<B>>(             \
        impl::as_expr(std::forward<A>(a)), impl::as_expr(std::forward<B>(b)));   \
  }
/// The binary elementwise builders (`A + B`, `min(A, B)`, `A == 2.f`, ...), one per entry of
/// ops.hpp's TESSERA_BINARY_OPS; an operand may be a scalar, which is broadcast.
TESSERA_BINARY_OPS(TESSERA_BINARY_BUILDER)
#undef TESSERA_BINARY_BUILDER

#define TESSERA_UNARY_BUILDER(name, fn, expr, sym)                                    \
  template <class A>                                                                  \
  requires impl::expression_like<std::remove_cvref_t<A>>                              \
  auto fn(A&& a) {                                                                    \
    return unary_node<ops::name, impl::expr_t<A>>(impl::as_expr(std::forward<A>(a))); \
  }
/// The unary elementwise builders (`-A`, `exp(A)`, `relu(A)`, ...), one per entry of ops.hpp's
/// TESSERA_UNARY_OPS.
TESSERA_UNARY_OPS(TESSERA_UNARY_BUILDER)
#undef TESSERA_UNARY_BUILDER

/// `where(cond, a, b)`: a where cond is nonzero, else b. \throws shape_error extents differ
template <class C, class A, class B>
requires(impl::expression_like<std::remove_cvref_t<C>> ||
         impl::expression_like<std::remove_cvref_t<A>> ||
         impl::expression_like<std::remove_cvref_t<B>>) auto where(C&& c, A&& a, B&& b) {
  return where_node<impl::expr_t<C>, impl::expr_t<A>, impl::expr_t<B>>(
      impl::as_expr(std::forward<C>(c)), impl::as_expr(std::forward<A>(a)),
      impl::as_expr(std::forward<B>(b)));
}

namespace impl {
/// `e` (an expression node, taken by value: moved in by the builders) as an expression of
/// element type T: itself, or wrapped in a conversion.
template <class T, class E>
auto as_type(E e) {
  if constexpr (std::is_same_v<typename E::value_type, T>)
    return e;
  else
    return unary_node<ops::cast<T>, E>(std::move(e));
}
}  // namespace impl

namespace impl {
/// `dst op= e` for an array or array_view dst: checks e's extent against dst's first (so a
/// mismatch names the operator and leaves dst untouched), then assigns `dst op e` through the
/// Tier 1 customization point `assign` (found by argument-dependent lookup: backends layer).
template <class D, char Op, class E>
void compound_assign(const D& dst, const E& e, compound_tag<Op>) {
  static_assert(!std::is_const_v<typename D::value_type>,
                "tessera: a view of const T cannot be updated in place");
  static_assert(expression_like<E> || std::is_arithmetic_v<E>,
                "tessera: the right-hand side of += -= *= /= is an expression, an array, an "
                "array_view or an arithmetic scalar");
  if constexpr (expression_like<E>) {
    static_assert(expr_t<E>::rank == D::rank,
                  "tessera: += -= *= /= need an expression of the destination's rank");
    const auto x = as_expr(e).get_extent();
    if (!(x == dst.extent))
      throw shape_error(std::string("tessera: operator") + Op + "=: the destination's extent " +
                        to_string(dst.extent) + " and the right-hand side's " + to_string(x) +
                        " differ");
  }
  if constexpr (Op == '+')
    assign(dst, dst + e);
  else if constexpr (Op == '-')
    assign(dst, dst - e);
  else if constexpr (Op == '*')
    assign(dst, dst * e);
  else
    assign(dst, dst / e);
}
}  // namespace impl

/// `shift(e, d, b)`: the expression whose element i is e(i + d) (same extent as e), reads
/// outside e following boundary policy b (boundary::zero, constant(v), clamp, periodic,
/// mirror). A star stencil of radius 1 on A, full grid, zero outside:
///   `B = 0.5f * A + 0.125f * (shift(A, index<2>(-1, 0), boundary::zero) + shift(A,
///   index<2>(1, 0), boundary::zero) + shift(A, index<2>(0, -1), boundary::zero) + shift(A,
///   index<2>(0, 1), boundary::zero))` — one kernel. Interior-only updates use sections
///   instead (`A.section(...)`, no boundary).
/// Evaluated inside its consumer's kernel; non-elementwise parts of e (matmul, transpose,
/// tile_reduce) are computed into a temporary first, and a destination overlapping e gets a
/// temporary (a kernel would read neighbours it already wrote).
/// \param d [in] offset per dimension (any sign and size)
/// \throws shape_error when a component of d is outside (-2^20, 2^20) (before any kernel runs)
template <class E, int N>
requires impl::expression_like<std::remove_cvref_t<E>>
auto shift(E&& e, const index<N>& d, boundary::policy b) {
  using X = impl::expr_t<E>;
  static_assert(X::rank == N, "tessera::shift: the offset's rank must be the operand's");
  for (int k = 0; k < N; ++k)
    if (d[k] <= -(1 << 20) || d[k] >= (1 << 20))
      throw shape_error("tessera::shift: offset " + to_string(d) +
                        " out of range (each component in (-2^20, 2^20))");
  return shift_node<X>(impl::as_expr(std::forward<E>(e)), d, b);
}

/// `matmul(A, B)`: (M x K) x (K x N) -> (M x N), in the common type of the element types
/// (float x double is a double product; int x float a float one), as C++'s usual arithmetic
/// conversions would give. \throws shape_error inner dimensions differ
template <class A, class B>
requires(impl::expression_like<std::remove_cvref_t<A>>&&
             impl::expression_like<std::remove_cvref_t<B>>) auto matmul(A&& a, B&& b) {
  using T = std::common_type_t<typename impl::expr_t<A>::value_type,
                               typename impl::expr_t<B>::value_type>;
  auto x = impl::as_type<T>(impl::as_expr(std::forward<A>(a)));
  auto y = impl::as_type<T>(impl::as_expr(std::forward<B>(b)));
  return matmul_node<decltype(x), decltype(y)>(std::move(x), std::move(y));
}

/// `transpose(A)`: (M x N) -> (N x M).
template <class A>
requires impl::expression_like<std::remove_cvref_t<A>>
auto transpose(A&& a) {
  return transpose_node<impl::expr_t<A>>(impl::as_expr(std::forward<A>(a)));
}

/// Reduces every R x C tile of A with `op` (any associative, commutative operator: ops::add,
/// ops::max, tessera::maximum<>, ... as for reduce()): (M x N) -> (M/R x N/C).
/// \throws shape_error when M % R or N % C is not 0
template <int R, int C, class A, class Op>
requires impl::expression_like<std::remove_cvref_t<A>>
auto tile_reduce(A&& a, Op op) {
  return tile_reduce_node<R, C, Op, impl::expr_t<A>, false>(impl::as_expr(std::forward<A>(a)), op);
}
/// The mean of every R x C tile of A (seed 000 as an expression): (M x N) -> (M/R x N/C).
template <int R, int C, class A>
requires impl::expression_like<std::remove_cvref_t<A>>
auto tile_mean(A&& a) {
  return tile_reduce_node<R, C, ops::add, impl::expr_t<A>, true>(impl::as_expr(std::forward<A>(a)),
                                                                 ops::add{});
}

}  // namespace tessera
