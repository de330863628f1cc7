// Extending Tessera as README's "Adding a node" says: a node type defined here, outside the
// library — its struct with traits, children and label, a builder, and its evaluator — and
// nothing else. It must fuse like the built-in elementwise nodes (matmul epilogue, tile_reduce
// prologue, staged-transpose kernel, reductions), print in explain(), and compute the right
// values (checked against Eigen: exact, the node only selects and scales).
#include "test_util.hpp"

namespace ext {
using tessera::extent;
using tessera::index;
using tessera::index_type;

/// clamp(a, lo, hi), elementwise: one operand, two scalars of the node itself.
template <class A>
struct clamp_node : tessera::expr_base<clamp_node<A>> {
  static constexpr tessera::node_traits traits =
      tessera::elementwise_node(tessera::node_kind::custom);
  using value_type = typename A::value_type;
  static constexpr int rank = A::rank;
  A a;
  value_type lo, hi;
  clamp_node(const A& x, value_type l, value_type h) : a(x), lo(l), hi(h) {}
  extent<rank> get_extent() const { return a.get_extent(); }
  auto children() const { return std::tie(a); }
  static std::string label() { return "clamp"; }
};

template <class A>
requires tessera::impl::expression_like<A>
auto clamp(const A& a, typename tessera::impl::expr_t<A>::value_type lo,
           typename tessera::impl::expr_t<A>::value_type hi) {
  return clamp_node<tessera::impl::expr_t<A>>(tessera::impl::as_expr(a), lo, hi);
}
}  // namespace ext

namespace tessera::backends::eval {
/// The evaluator of ext::clamp_node: per element, in any kernel of any backend.
template <class A>
struct eval<ext::clamp_node<A>> {
  using T = typename A::value_type;
  eval<A> a;
  T lo{}, hi{};
  eval() = default;
  eval(const ext::clamp_node<A>& e, int id, const build_ctx& b)
      : a(make_eval(e.a, child_id<0, ext::clamp_node<A>>(id), b)), lo(e.lo), hi(e.hi) {}
  TESSERA_FORCEINLINE T clip(T x) const { return x < lo ? lo : (hi < x ? hi : x); }
  template <class C>
  TESSERA_FORCEINLINE T flat(const C& c, index_type k) const {
    return clip(a.flat(c, k));
  }
  template <class C, int N>
  TESSERA_FORCEINLINE T at(const C& c, const index<N>& i) const {
    return clip(a.at(c, i));
  }
  template <class C>
  TESSERA_FORCEINLINE T at(const C& c, index_type i, index_type j) const {
    return clip(a.at(c, i, j));
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&& f) const {
    a.visit_staged(f);
  }
};
}  // namespace tessera::backends::eval

namespace {
using namespace tessera;
using M = eigen_matrix<float>;

M clip(const M& m, float lo, float hi) {
  return m.cwiseMax(lo).cwiseMin(hi);
}

TEST_CASE("a node type defined outside the library fuses and computes like a built-in one") {
  const auto ea = tt::random_matrix<float>(37, 29), eb = tt::random_matrix<float>(29, 41);
  array<float, 2> A = from_eigen(ea), B = from_eigen(eb);
  // Alone: one elementwise kernel, labelled by the node.
  array<float, 2> C = ext::clamp(A, -0.5f, 0.5f) * 2.f;
  CHECK(tt::max_abs_diff(to_eigen(C), M(2.f * clip(ea, -0.5f, 0.5f))) == 0.0);
  const auto p = plan(ext::clamp(A, -0.5f, 0.5f) * 2.f);
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].family == kernel_family::elementwise);
  CHECK(tt::has(explain(ext::clamp(A, -0.5f, 0.5f)), "clamp(A)"));
  // A matmul epilogue: still one kernel.
  const M prod = ea * eb;
  const auto pm = plan(ext::clamp(matmul(A, B), -1.f, 1.f) + 1.f);
  REQUIRE(pm.kernels.size() == 1);
  CHECK(pm.kernels[0].family == kernel_family::matmul);
  array<float, 2> D = ext::clamp(matmul(A, B), -1.f, 1.f) + 1.f;
  CHECK(tt::max_abs_diff(to_eigen(D), M((clip(prod, -1.f, 1.f).array() + 1.f).matrix())) <= 1e-5);
  // A tile_reduce prologue (read directly by the reduction): one kernel.
  array<float, 2> A36 = from_eigen(tt::random_matrix<float>(36, 28));
  const auto e36 = to_eigen(A36);
  const auto pr = plan(tile_mean<2, 2>(ext::clamp(A36, -0.25f, 0.25f)));
  REQUIRE(pr.kernels.size() == 1);
  CHECK(pr.kernels[0].family == kernel_family::tile_reduce);
  array<float, 2> R = tile_mean<2, 2>(ext::clamp(A36, -0.25f, 0.25f));
  const M c36 = clip(e36, -0.25f, 0.25f);
  M ref(18, 14);
  for (int i = 0; i < 18; ++i)
    for (int j = 0; j < 14; ++j) ref(i, j) = c36.block(2 * i, 2 * j, 2, 2).mean();
  CHECK(tt::max_abs_diff(to_eigen(R), ref) <= 1e-6);
  // Around a staged transpose, and under it: one kernel each.
  array<float, 2> T = ext::clamp(transpose(A), 0.f, 0.5f);
  CHECK(tt::max_abs_diff(to_eigen(T), clip(M(ea.transpose()), 0.f, 0.5f)) == 0.0);
  CHECK(plan(ext::clamp(transpose(A), 0.f, 0.5f)).kernels.size() == 1);
  array<float, 2> U = transpose(ext::clamp(A, 0.f, 0.5f));
  CHECK(tt::max_abs_diff(to_eigen(U), M(clip(ea, 0.f, 0.5f).transpose())) == 0.0);
  // Reductions read it element by element.
  CHECK(sum(ext::clamp(A, 0.f, 1.f)) == doctest::Approx(clip(ea, 0.f, 1.f).sum()).epsilon(1e-5));
  CHECK(max_value(ext::clamp(A, -2.f, 0.25f)) == clip(ea, -2.f, 0.25f).maxCoeff());
}

// One operator vocabulary: the ops:: functors and the std-style names are the same operators
// for elementwise expressions, tile_reduce and whole-array reductions.
TEST_CASE("ops::max and maximum<> mean the same in tile_reduce, reduce and expressions") {
  const auto ea = tt::random_matrix<float>(24, 32);
  array<float, 2> A = from_eigen(ea);
  array<float, 2> x = tile_reduce<4, 8>(A, ops::max{}), y = tile_reduce<4, 8>(A, maximum<>{}),
                  z = tile_reduce<4, 8>(A, maximum<float>{});
  CHECK(x.to_vector() == y.to_vector());
  CHECK(x.to_vector() == z.to_vector());
  array<float, 2> s1 = tile_reduce<2, 2>(A, ops::add{}), s2 = tile_reduce<2, 2>(A, plus<>{});
  CHECK(s1.to_vector() == s2.to_vector());
  CHECK(reduce(A, -1e30f, ops::max{}) == reduce(A, -1e30f, maximum<>{}));
  CHECK(reduce(A, -1e30f, ops::max{}) == ea.maxCoeff());
  CHECK(reduce(A, 1e30f, ops::min{}) == ea.minCoeff());
  // Comparisons and logical operators build masks; where takes scalar branches.
  array<float, 2> B = from_eigen(tt::random_matrix<float>(24, 32));
  array<float, 2> m = where(A > B, 1.f, 0.f);
  array<float, 2> e = where(A == A && !(A != A), 1.f, 0.f);
  const auto eb = to_eigen(B);
  for (int i = 0; i < 24; ++i)
    for (int j = 0; j < 32; ++j) {
      CHECK(to_eigen(m)(i, j) == (ea(i, j) > eb(i, j) ? 1.f : 0.f));
      CHECK(to_eigen(e)(i, j) == 1.f);
    }
}

}  // namespace
