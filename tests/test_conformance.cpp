// The conformance suite: the same cases on every execution space of this build that Tessera can
// launch on (launchable_space: Kokkos::Serial and Kokkos::OpenMP in an OpenMP build — the CPU
// family on Serial, the GPU family on OpenMP in the GPU emulation; the device space in a CUDA
// or HIP build), each entry point given an instance of that space (Kokkos' TEST_CATEGORY
// pattern). Reference: Eigen; tolerances as the component tests (float matmul 1e-5 relative to
// K max|a||b|, sums 1e-5 relative, everything else exact).
#include "test_util.hpp"

#include <tuple>

TYPE_TO_STRING(Kokkos::Serial);
#ifdef KOKKOS_ENABLE_OPENMP
TYPE_TO_STRING(Kokkos::OpenMP);
#endif
#ifdef KOKKOS_ENABLE_CUDA
TYPE_TO_STRING(Kokkos::Cuda);
#endif
#ifdef KOKKOS_ENABLE_HIP
TYPE_TO_STRING(Kokkos::HIP);
#endif

namespace {
using namespace tessera;
using M = eigen_matrix<float>;
using tessera::index;

/// The launchable spaces among the backends of this build, the default first, each once.
template <class Out, class... S>
struct unique_launchable {
  using type = Out;
};
template <class... O, class H, class... R>
struct unique_launchable<std::tuple<O...>, H, R...> {
  using type = typename unique_launchable<
      std::conditional_t<launchable_space<H> && !(std::is_same_v<H, O> || ...), std::tuple<O..., H>,
                         std::tuple<O...>>,
      R...>::type;
};
using spaces = unique_launchable<std::tuple<>, execution_space
#ifdef KOKKOS_ENABLE_SERIAL
                                 ,
                                 Kokkos::Serial
#endif
#ifdef KOKKOS_ENABLE_OPENMP
                                 ,
                                 Kokkos::OpenMP
#endif
#ifdef KOKKOS_ENABLE_CUDA
                                 ,
                                 Kokkos::Cuda
#endif
#ifdef KOKKOS_ENABLE_HIP
                                 ,
                                 Kokkos::HIP
#endif
                                 >::type;

/// Seed 000 on execution space Space: the mean of each S x S tile through tile_static.
template <class Space, int S>
struct tile_average {
  array<float, 2> m, avg;
  TESSERA_INLINE void operator()(basic_tile_group<Space, S, S>& g) const {
    auto v = g.template tile_static<float[S][S]>("v");
    g.for_each([&](const tiled_index<S, S>& t) { v(t.local[0], t.local[1]) = m[t.global]; });
    g.barrier.wait();
    g.for_each([&](const tiled_index<S, S>& t) {
      if (t.local_linear() == 0) {
        float s = 0;
        for (int r = 0; r < S; ++r)
          for (int c = 0; c < S; ++c) s += v(r, c);
        avg[t.tile] = s / float(S * S);
      }
    });
  }
};
/// Element-parallel: out(i, j) = 10 i + j.
struct iota2 {
  array<int, 2> out;
  TESSERA_INLINE void operator()(const index<2>& i) const { out[i] = int(10 * i[0] + i[1]); }
};

TEST_CASE_TEMPLATE_DEFINE("conformance: Tier 0 on every launchable execution space", Space,
                          tier0_id) {
  const Space exec;
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  array<float, 2> m(extent<2>(8, 8), raw.begin(), raw.end()), avg(4, 4);
  parallel_for_each(exec, m.extent.tile<2, 2>(), tile_average<Space, 2>{m, avg});
  exec.fence();
  CHECK(avg.to_vector() == std::vector<float>{4.5, 6.5, 8.5, 10.5, 20.5, 22.5, 24.5, 26.5, 36.5,
                                              38.5, 40.5, 42.5, 52.5, 54.5, 56.5, 58.5});
  array<int, 2> o(3, 5);
  parallel_for_each(exec, o.extent, iota2{o});
  exec.fence();
  const auto eo = to_eigen(o);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) CHECK(eo(i, j) == 10 * i + j);
}
TEST_CASE_TEMPLATE_APPLY(tier0_id, spaces);

TEST_CASE_TEMPLATE_DEFINE("conformance: Tier 1 and reductions on every launchable execution space",
                          Space, tier1_id) {
  const Space exec;
  for (const auto& s : {std::array<long, 3>{1, 1, 1}, {37, 29, 41}, {64, 48, 33}}) {
    const long m = s[0], k = s[1], n = s[2];
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    const M ea = tt::random_matrix<float>(m, k), eb = tt::random_matrix<float>(k, n),
            ec = tt::random_matrix<float>(m, n);
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), C = from_eigen(ec), D(m, n), T(k, m),
                    Ab(m, k);
    assign(exec, D, relu(matmul(A, B) * 1.5f + 0.25f * C));
    assign(exec, T, transpose(A) + 1.f);
    assign(exec, Ab, 2.f * A - exp(A));
    exec.fence();
    const double tol = 1e-5 * double(k + 1);
    CHECK(tt::max_abs_diff(to_eigen(D), M((1.5f * (ea * eb) + 0.25f * ec).cwiseMax(0.f))) <= tol);
    CHECK(tt::max_abs_diff(to_eigen(T), M((ea.transpose().array() + 1.f).matrix())) == 0.0);
    CHECK(tt::max_abs_diff(to_eigen(Ab), M((2.f * ea.array() - ea.array().exp()).matrix())) <=
          1e-6);
    const double ref = ea.cast<double>().sum();
    CHECK(std::abs(sum(exec, A) - ref) <= 1e-5 * (1 + std::abs(ref)));
    CHECK(std::abs(sum(exec, A * A) - ea.cast<double>().squaredNorm()) <=
          1e-5 * (1 + ea.cast<double>().squaredNorm()));
    CHECK(reduce(exec, A, -1e30f, ops::max{}) == ea.maxCoeff());
    CHECK(sum(exec, A, reproducible) == sum(exec, A, reproducible));
  }
  array<float, 2> X = from_eigen(tt::random_matrix<float>(32, 24)), Y(8, 6);
  assign(exec, Y, tile_mean<4, 4>(X));
  exec.fence();
  const auto ex = to_eigen(X);
  M ref(8, 6);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 6; ++j) ref(i, j) = ex.block(4 * i, 4 * j, 4, 4).mean();
  CHECK(tt::max_abs_diff(to_eigen(Y), ref) <= 1e-6);
}
TEST_CASE_TEMPLATE_APPLY(tier1_id, spaces);

}  // namespace
