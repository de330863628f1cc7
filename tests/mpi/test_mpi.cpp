// Tessera::mpi against exact values and Eigen, run at 1-4 processes (ctest: test_mpi_np<P>).
// Every process generates the same global data from the case's seed, so each can check what it
// holds locally; gathered results are compared on rank 0. Only CHECKs (no REQUIRE): a process
// that left a case early would leave the others waiting in a collective.
#include <tessera/mpi.hpp>

#include "../test_util.hpp"
#ifdef TESSERA_TEST_SCALAPACK
#include "scalapack_ref.hpp"
#endif

#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace mpi = tessera::mpi;
using tessera::extent;
using tessera::index_type;
template <int N>
using idx = tessera::index<N>;

namespace tessera_test {
bool is_query(int argc, char** argv);
int run(int argc, char** argv);
}  // namespace tessera_test

namespace {

int world_size() {
  return mpi::size();
}

template <class T>
std::vector<T> random_vector(index_type n) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(d(tt::rng()));
  return v;
}
index_type draw(index_type lo, index_type hi) {
  return std::uniform_int_distribution<index_type>(lo, hi)(tt::rng());
}
template <int N>
index_type flat(const extent<N>& e, const idx<N>& i) {
  index_type f = 0;
  for (int d = 0; d < N; ++d) f = f * e[d] + i[d];
  return f;
}
template <int N>
idx<N> unflat(const extent<N>& e, index_type f) {
  idx<N> i;
  for (int d = N - 1; d >= 0; --d) {
    i[d] = f % e[d];
    f /= e[d];
  }
  return i;
}
/// Element i of a global row-major vector under boundary policy b (a host reference).
template <class T, int N>
T boundary_read(const std::vector<T>& v, const extent<N>& e, idx<N> i,
                tessera::boundary::policy b) {
  using tessera::boundary::kind;
  for (int d = 0; d < N; ++d) {
    if (i[d] >= 0 && i[d] < e[d]) continue;
    if (b.k == kind::zero) return T(0);
    if (b.k == kind::constant) return static_cast<T>(b.value);
    i[d] = tessera::boundary::inside(b.k, i[d], e[d]);
  }
  return v[static_cast<std::size_t>(flat(e, i))];
}
struct max_op {
  KOKKOS_INLINE_FUNCTION float operator()(float x, float y) const { return x > y ? x : y; }
};
struct plus_op {
  KOKKOS_INLINE_FUNCTION float operator()(float x, float y) const { return x + y; }
};

/// A partition of `g`: block with a random tile, or block-cyclic with random blocks.
template <int N>
mpi::partition<N> random_partition(const extent<N>& g, const mpi::process_grid<N>& grid,
                                   bool cyclic) {
  extent<N> tile, block;
  for (int d = 0; d < N; ++d) {
    tile[d] = draw(1, 3);
    block[d] = tile[d] * draw(1, 4);
  }
  if (cyclic) return mpi::partition<N>::block_cyclic(g, grid, block, tile);
  return mpi::partition<N>(g, grid, tile);
}

template <int N>
void check_partition_math(const mpi::process_grid<N>& grid) {
  for (int trial = 0; trial < 12; ++trial) {
    extent<N> g;
    for (int d = 0; d < N; ++d) g[d] = trial == 0 ? 0 : trial == 1 ? 1 : draw(1, 23);
    const auto p = random_partition(g, grid, trial % 2 == 1);
    index_type total = 0;
    for (int r = 0; r < grid.size(); ++r) total += p.local_extent(grid.coords_of(r)).size();
    CHECK(total == g.size());
    for (int d = 0; d < N; ++d) CHECK(p.block()[d] % p.tile()[d] == 0);
    index_type bad = 0;
    for (index_type f = 0; f < g.size(); ++f) {
      const idx<N> gi = unflat(g, f);
      const idx<N> c = p.owner_coords(gi);
      const idx<N> l = p.to_local(gi);
      if (!p.local_extent(c).contains(l) || !(p.to_global(l, c) == gi) ||
          p.owner(gi) != grid.rank_of(c))
        ++bad;
      if (p.kind() == mpi::distribution::block && !(p.origin(c) + l == gi)) ++bad;
    }
    CHECK(bad == 0);
  }
}

template <int N>
void check_scatter_gather(const mpi::process_grid<N>& grid) {
  for (int trial = 0; trial < 10; ++trial) {
    extent<N> g;
    for (int d = 0; d < N; ++d) g[d] = trial == 0 ? 0 : trial == 1 ? 1 : draw(1, N == 3 ? 9 : 37);
    const auto p = random_partition(g, grid, trial % 2 == 0);
    const auto data = random_vector<double>(g.size());
    mpi::distributed_array<double, N> A(p);
    A.scatter(data);
    const auto mine = A.local_to_host();
    index_type bad = 0;
    for (index_type k = 0; k < static_cast<index_type>(mine.size()); ++k) {
      const idx<N> gi = p.to_global(unflat(A.local_extent(), k));
      if (mine[static_cast<std::size_t>(k)] != data[static_cast<std::size_t>(flat(g, gi))]) ++bad;
    }
    CHECK(bad == 0);
    const auto back = A.gather(0);
    if (grid.rank() == 0) CHECK(back == data);
    if (grid.rank() != 0) CHECK(back.empty());
  }
}

template <int N>
void check_halos(const mpi::process_grid<N>& grid, tessera::boundary::policy b) {
  for (int trial = 0; trial < 4; ++trial) {
    idx<N> h;
    extent<N> g;
    for (int d = 0; d < N; ++d) {
      h[d] = draw(trial == 0 ? 0 : 1, 2);
      g[d] = h[d] * grid.dims()[d] + draw(0, N == 3 ? 6 : 17);  // every block at least h wide
      if (g[d] == 0) g[d] = 1;
    }
    mpi::partition<N> p(g, grid);
    // A halo wider than the smallest block is refused on every process.
    bool wide_ok = true;
    for (int d = 0; d < N; ++d) {
      const index_type a = (g[d] + p.block()[d] - 1) / p.block()[d];
      const index_type last = g[d] - (a - 1) * p.block()[d];
      if (h[d] > std::min(last, p.block()[d])) wide_ok = false;
    }
    if (!wide_ok) {
      CHECK_THROWS_AS((mpi::distributed_array<float, N>(p, h, b)), tessera::shape_error);
      continue;
    }
    const auto data = random_vector<float>(g.size());
    mpi::distributed_array<float, N> A(p, h, b);
    A.scatter(data);
    if (trial % 2 == 0)
      A.exchange_halo();
    else
      A.exchange_halo(tessera::execution_space());  // on an execution-space instance
    // Every element of the padded storage: the global element it stands for, or the policy's.
    const auto& st = A.storage();
    const std::vector<float> padded = st.to_vector();
    index_type bad = 0;
    for (index_type k = 0; k < static_cast<index_type>(padded.size()); ++k) {
      const idx<N> s = unflat(st.extent, k);
      const idx<N> gi = A.origin() + s - h;
      const float want = boundary_read(data, g, gi, b);
      if (padded[static_cast<std::size_t>(k)] != want) ++bad;
    }
    CHECK_MESSAGE(bad == 0, "halo " << tessera::to_string(h) << " global " << tessera::to_string(g)
                                    << " boundary " << tessera::boundary::to_string(b.k));
  }
}

template <int N>
void check_fold(const mpi::process_grid<N>& grid, tessera::boundary::policy b) {
  idx<N> h;
  extent<N> g;
  for (int d = 0; d < N; ++d) {
    h[d] = draw(1, 2);
    g[d] = h[d] * grid.dims()[d] + draw(0, 9);
  }
  mpi::partition<N> p(g, grid);
  mpi::distributed_array<double, N> A(p, h, b);
  tessera::fill(A.storage(), 1.0);
  A.fold_halo(tessera::execution_space(), mpi::combine::sum);
  // Expected: 1 + the number of halo cells (on any process) standing for each global element.
  std::vector<double> want(static_cast<std::size_t>(g.size()), 1.0);
  for (int r = 0; r < grid.size(); ++r) {
    const idx<N> c = grid.coords_of(r);
    const extent<N> le = p.local_extent(c);
    if (le.size() == 0) continue;
    extent<N> pe = le;
    for (int d = 0; d < N; ++d) pe[d] += 2 * h[d];
    for (index_type k = 0; k < pe.size(); ++k) {
      const idx<N> s = unflat(pe, k);
      idx<N> gi = p.origin(c) + s - h;
      bool interior = true, outside = false;
      for (int d = 0; d < N; ++d) {
        interior = interior && s[d] >= h[d] && s[d] < h[d] + le[d];
        if (gi[d] < 0 || gi[d] >= g[d]) {
          outside = true;
          gi[d] = (gi[d] % g[d] + g[d]) % g[d];
        }
      }
      if (interior || (outside && b.k != tessera::boundary::kind::periodic)) continue;
      want[static_cast<std::size_t>(flat(g, gi))] += 1.0;
    }
  }
  const auto got = A.gather(0);
  if (grid.rank() == 0) CHECK(got == want);
}

}  // namespace

TEST_CASE("process grids and partitions: local extents, owners, local and global indices") {
  mpi::process_grid<1> g1;
  mpi::process_grid<2> g2;
  mpi::process_grid<3> g3;
  CHECK(g1.size() == world_size());
  CHECK(g2.size() == world_size());
  CHECK(g3.size() == world_size());
  CHECK(g2.rank() == mpi::rank(g2.comm()));
  CHECK(g2.rank_of(g2.coords()) == g2.rank());
  check_partition_math(g1);
  check_partition_math(g2);
  check_partition_math(g3);
  // A 1 x P grid and a P x 1 grid (uneven blocks at 3 processes).
  check_partition_math(mpi::process_grid<2>(MPI_COMM_WORLD, extent<2>(1, 0)));
  check_partition_math(mpi::process_grid<2>(MPI_COMM_WORLD, extent<2>(0, 1)));
  // Bad input: clear errors, the same on every process.
  CHECK_THROWS_AS(mpi::process_grid<2>(MPI_COMM_WORLD, extent<2>(world_size() + 1, 1)),
                  tessera::shape_error);
  CHECK_THROWS_AS(
      mpi::partition<2>::block_cyclic(extent<2>(10, 10), g2, extent<2>(3, 4), extent<2>(2, 2)),
      tessera::shape_error);
  CHECK_THROWS_AS(mpi::partition<2>(extent<2>(-1, 3), g2), tessera::shape_error);
  mpi::partition<2> p(extent<2>(5, 5), g2);
  CHECK_THROWS_AS(p.owner(idx<2>(5, 0)), tessera::shape_error);
  // Halos need the block distribution.
  CHECK_THROWS_AS(
      (mpi::distributed_array<float, 2>(
          mpi::partition<2>::block_cyclic(extent<2>(64, 64), g2, extent<2>(2, 2)), idx<2>(1, 1))),
      tessera::shape_error);
}

TEST_CASE("scatter and gather round trips, block and block-cyclic, ranks 1-3") {
  check_scatter_gather(mpi::process_grid<1>());
  check_scatter_gather(mpi::process_grid<2>());
  check_scatter_gather(mpi::process_grid<3>());
  // A root that holds the wrong number of elements: an error on every process, nothing written.
  mpi::distributed_array<float, 1> A(mpi::partition<1>(extent<1>(10), mpi::process_grid<1>()));
  std::vector<float> wrong(mpi::rank() == 0 ? 9 : 0, 1.f);
  CHECK_THROWS_AS(A.scatter(wrong), tessera::shape_error);
  CHECK(mpi::sum(A) == 0.f);
}

TEST_CASE("element-wise expressions and tile means over local parts need no messages") {
  mpi::process_grid<2> grid;
  for (int trial = 0; trial < 6; ++trial) {
    const extent<2> g(draw(1, 61), draw(1, 47));
    const auto p = random_partition(g, grid, trial % 2 == 1);
    const auto a = random_vector<float>(g.size()), b = random_vector<float>(g.size());
    mpi::distributed_array<float, 2> A(p), B(p), D(p);
    A.scatter(a);
    B.scatter(b);
    mpi::assign(
        D, [](auto x, auto y) { return tessera::relu(2.f * x + y); }, A, B);
    const auto d = D.gather();
    if (grid.rank() == 0) {
      index_type bad = 0;
      for (std::size_t k = 0; k < a.size(); ++k)
        if (d[k] != std::max(0.f, 2.f * a[k] + b[k])) ++bad;
      CHECK(bad == 0);
    }
    // Mixed element types: a double destination from float operands.
    mpi::distributed_array<double, 2> E(p);
    mpi::assign(
        E, [](auto x) { return x * 0.5f; }, A);
    const auto e = E.gather();
    if (grid.rank() == 0) CHECK(e[0] == static_cast<double>(a[0] * 0.5f));
  }
  // Tile means: tiles of 4x4 never straddle two processes; the result's partition is the
  // operand's coarsened by the tile.
  const extent<2> g(4 * draw(1, 13), 4 * draw(1, 11));
  const mpi::partition<2> p(g, grid, extent<2>(4, 4));
  const auto a = random_vector<float>(g.size());
  mpi::distributed_array<float, 2> A(p), M(p.coarsened(extent<2>(4, 4)));
  A.scatter(a);
  mpi::assign(
      M, [](auto x) { return tessera::tile_mean<4, 4>(x); }, A);
  const auto m = M.gather();
  if (grid.rank() == 0) {
    double worst = 0;
    for (index_type i = 0; i < g[0] / 4; ++i)
      for (index_type j = 0; j < g[1] / 4; ++j) {
        double s = 0;
        for (int u = 0; u < 4; ++u)
          for (int v = 0; v < 4; ++v)
            s += a[static_cast<std::size_t>((4 * i + u) * g[1] + 4 * j + v)];
        worst = std::max(worst, std::abs(s / 16 - m[static_cast<std::size_t>(i * (g[1] / 4) + j)]));
      }
    CHECK(worst < 1e-6);
  }
  // Mismatched partitions: an error naming both, never a silent redistribution.
  mpi::distributed_array<float, 2> X(mpi::partition<2>(g, grid, extent<2>(2, 2)));
  try {
    mpi::assign(
        X, [](auto x, auto y) { return x + y; }, A, X);
    CHECK_MESSAGE(false, "mismatched partitions were accepted");
  } catch (const tessera::shape_error& e) {
    const std::string what = e.what();
    CHECK(what.find("tessera::mpi::assign") != std::string::npos);
    CHECK(what.find("tiles (4,4)") != std::string::npos);
    CHECK(what.find("tiles (2,2)") != std::string::npos);
  }
}

TEST_CASE("halo exchange: every boundary, radius 1-2, ranks 1-3, faces, edges and corners") {
  using namespace tessera;
  for (const auto b : {boundary::zero, boundary::constant(2.5), boundary::clamp, boundary::mirror,
                       boundary::periodic}) {
    check_halos(mpi::process_grid<1>(), b);
    check_halos(mpi::process_grid<2>(), b);
    check_halos(mpi::process_grid<3>(), b);
    check_halos(mpi::process_grid<2>(MPI_COMM_WORLD, extent<2>(0, 1)), b);
  }
}

TEST_CASE(
    "a distributed star stencil with the split exchange equals Tier 1 shifts on one process") {
  using namespace tessera;
  mpi::process_grid<2> grid;
  for (const auto b : {boundary::zero, boundary::periodic, boundary::clamp}) {
    const index_type R = 2;
    const extent<2> g(R * grid.dims()[0] + draw(0, 40), R * grid.dims()[1] + draw(0, 40));
    const mpi::partition<2> p(g, grid);
    const auto a = random_vector<double>(g.size());
    mpi::distributed_array<double, 2> A(p, idx<2>(R, R), b), B(p), C(p);
    A.scatter(a);
    auto x = A.begin_exchange_halo();
    mpi::assign(
        C, [](auto v) { return 2.0 * v; }, A);  // overlapped with the messages
    x.wait();
    tessera::assign(B.local(), 0.4 * A.shifted(idx<2>(0, 0)) +
                                   0.1 * (A.shifted(idx<2>(-1, 0)) + A.shifted(idx<2>(1, 0)) +
                                          A.shifted(idx<2>(0, -1)) + A.shifted(idx<2>(0, 1))) +
                                   0.05 * (A.shifted(idx<2>(-2, 0)) + A.shifted(idx<2>(2, 0)) +
                                           A.shifted(idx<2>(0, -2)) + A.shifted(idx<2>(0, 2))));
    CHECK_THROWS_AS(A.shifted(idx<2>(3, 0)), shape_error);
    const auto got = B.gather();
    if (grid.rank() == 0) {
      array<double, 2> G(g, a.data());
      array<double, 2> W = 0.4 * G +
                           0.1 * (shift(G, idx<2>(-1, 0), b) + shift(G, idx<2>(1, 0), b) +
                                  shift(G, idx<2>(0, -1), b) + shift(G, idx<2>(0, 1), b)) +
                           0.05 * (shift(G, idx<2>(-2, 0), b) + shift(G, idx<2>(2, 0), b) +
                                   shift(G, idx<2>(0, -2), b) + shift(G, idx<2>(0, 2), b));
      const auto want = W.to_vector();
      double worst = 0;
      for (std::size_t k = 0; k < want.size(); ++k)
        worst = std::max(worst, std::abs(want[k] - got[k]));
      CHECK(worst < 1e-14);
    }
    const auto c = C.gather();
    if (grid.rank() == 0) CHECK(c[0] == 2.0 * a[0]);
  }
}

TEST_CASE("fold_halo adds ghost contributions into their owners (zero and periodic)") {
  using namespace tessera;
  for (const auto b : {boundary::zero, boundary::periodic}) {
    check_fold(mpi::process_grid<1>(), b);
    check_fold(mpi::process_grid<2>(), b);
    check_fold(mpi::process_grid<3>(), b);
  }
}

TEST_CASE("sums: Tessera's accuracy, and reproducible bits for any process count") {
  mpi::process_grid<2> grid;
  for (int trial = 0; trial < 6; ++trial) {
    const extent<2> g(trial == 0 ? 0 : draw(1, 300), draw(1, 500));
    const mpi::partition<2> p(g, grid, extent<2>(draw(1, 8), draw(1, 8)));
    const auto a = random_vector<float>(g.size());
    mpi::distributed_array<float, 2> A(p);
    A.scatter(a);
    double exact = 0, mag = 0;
    for (float v : a) {
      exact += v;
      mag += std::abs(v);
    }
    const float s = mpi::sum(A);
    CHECK(std::abs(s - exact) <= 1e-6 * mag + 1e-7 * std::abs(exact));
    const float r = mpi::sum(A, tessera::reproducible);
    CHECK(std::abs(r - exact) <= 1e-6 * mag + 1e-7 * std::abs(exact));
    // The same global array and tiles on one process (MPI_COMM_SELF): the same bits.
    mpi::process_grid<2> self(MPI_COMM_SELF);
    mpi::distributed_array<float, 2> S(mpi::partition<2>(g, self, p.tile()));
    S.scatter(a);
    CHECK(std::bit_cast<std::uint32_t>(mpi::sum(S, tessera::reproducible)) ==
          std::bit_cast<std::uint32_t>(r));
    // Every process holds the same value.
    float lo = r, hi = r;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi);
    if (g.size() > 0) {
      CHECK(std::abs(mpi::mean(A) - exact / static_cast<double>(g.size())) <= 1e-6 * mag);
      CHECK(mpi::reduce(A, -1e30f, max_op{}) == *std::max_element(a.begin(), a.end()));
    } else {
      CHECK_THROWS_AS(mpi::mean(A), tessera::shape_error);
      CHECK(mpi::reduce(A, 7.f, plus_op{}) == 7.f);
    }
  }
  // Doubles, 1-D and 3-D, block-cyclic.
  mpi::process_grid<1> g1;
  const extent<1> e1(draw(1000, 100000));
  const auto d1 = random_vector<double>(e1.size());
  mpi::distributed_array<double, 1> D1(
      mpi::partition<1>::block_cyclic(e1, g1, extent<1>(96), extent<1>(32)));
  D1.scatter(d1);
  double ex = 0, mag = 0;
  for (double v : d1) {
    ex += v;
    mag += std::abs(v);
  }
  CHECK(std::abs(mpi::sum(D1) - ex) <= 1e-14 * mag);
  mpi::process_grid<1> self1(MPI_COMM_SELF);
  mpi::distributed_array<double, 1> S1(mpi::partition<1>(e1, self1, extent<1>(32)));
  S1.scatter(d1);
  CHECK(std::bit_cast<std::uint64_t>(mpi::sum(S1, tessera::reproducible)) ==
        std::bit_cast<std::uint64_t>(mpi::sum(D1, tessera::reproducible)));
}

TEST_CASE("SUMMA matmul against Eigen: block and block-cyclic, uneven panels, alpha and beta") {
  mpi::process_grid<2> grid;
  for (int trial = 0; trial < 8; ++trial) {
    const index_type m = draw(1, 70), k = trial == 0 ? 0 : draw(1, 90), n = draw(1, 60);
    const bool cyclic = trial % 2 == 1;
    const extent<2> ba(draw(1, 16), draw(1, 16)), bb(draw(1, 16), ba[1] == 1 ? 1 : draw(1, 16));
    const auto pa = cyclic ? mpi::partition<2>::block_cyclic(extent<2>(m, k), grid, ba)
                           : mpi::partition<2>(extent<2>(m, k), grid);
    const auto pb = cyclic ? mpi::partition<2>::block_cyclic(extent<2>(k, n), grid, bb)
                           : mpi::partition<2>(extent<2>(k, n), grid);
    const auto pc = mpi::partition<2>::block_cyclic(extent<2>(m, n), grid,
                                                    extent<2>(pa.block()[0], pb.block()[1]));
    const auto a = random_vector<float>(m * k), b = random_vector<float>(k * n),
               c = random_vector<float>(m * n);
    mpi::distributed_array<float, 2> A(pa), B(pb), C(pc);
    A.scatter(a);
    B.scatter(b);
    C.scatter(c);
    const float alpha = trial < 4 ? 1.f : 0.75f, beta = trial % 3 == 0 ? 0.f : 0.5f;
    mpi::matmul(C, A, B, alpha, beta);
    const auto got = C.gather();
    if (grid.rank() == 0) {
      using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      const M ea = Eigen::Map<const M>(a.data(), m, k), eb = Eigen::Map<const M>(b.data(), k, n),
              ec = Eigen::Map<const M>(c.data(), m, n);
      const M want = alpha * (ea * eb) + beta * ec;
      const M have = Eigen::Map<const M>(got.data(), m, n);
      CHECK((want - have).cwiseAbs().maxCoeff() <= 1e-5f * static_cast<float>(k + 1));
    }
  }
  // An epilogue in the last step: C = relu(A B - 0.1 C), with k across several panels.
  {
    const index_type m = draw(1, 40), k = draw(300, 700), n = draw(1, 40);
    const mpi::partition<2> pa(extent<2>(m, k), grid), pb(extent<2>(k, n), grid);
    const auto pc = mpi::partition<2>::block_cyclic(extent<2>(m, n), grid,
                                                    extent<2>(pa.block()[0], pb.block()[1]));
    const auto a = random_vector<double>(m * k), b = random_vector<double>(k * n),
               c = random_vector<double>(m * n);
    mpi::distributed_array<double, 2> A(pa), B(pb), C(pc);
    A.scatter(a);
    B.scatter(b);
    C.scatter(c);
    mpi::matmul(C, A, B, 1.0, -0.1, [](auto x) { return tessera::relu(x); });
    const auto got = C.gather();
    if (grid.rank() == 0) {
      using M = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      const M want = (Eigen::Map<const M>(a.data(), m, k) * Eigen::Map<const M>(b.data(), k, n) -
                      0.1 * Eigen::Map<const M>(c.data(), m, n))
                         .cwiseMax(0.0);
      CHECK((want - Eigen::Map<const M>(got.data(), m, n)).cwiseAbs().maxCoeff() < 1e-11);
    }
  }
  // C += A B (beta = 1) on doubles; explain lists the broadcasts.
  const extent<2> e(33, 29);
  const mpi::partition<2> p(e, grid, extent<2>(4, 4));
  const auto a = random_vector<double>(e.size());
  mpi::distributed_array<double, 2> A(p), B(p), C(p);
  mpi::distributed_array<double, 2> Ax(mpi::partition<2>(extent<2>(33, 33), grid, extent<2>(4, 4))),
      Bx(mpi::partition<2>(extent<2>(33, 29), grid, extent<2>(4, 4)));
  Ax.scatter(random_vector<double>(33 * 33));
  CHECK_THROWS_AS(mpi::matmul(C, A, B), tessera::shape_error);  // 33x29 by 33x29
  const std::string plan = mpi::explain_matmul(C, Ax, Bx);
  CHECK(plan.find("MPI_Ibcast") != std::string::npos);
  CHECK(plan.find("SUMMA") != std::string::npos);
  // C's rows partitioned unlike A's: an error naming both.
  mpi::distributed_array<double, 2> Cbad(
      mpi::partition<2>::block_cyclic(extent<2>(33, 29), grid, extent<2>(3, 4)));
  if (grid.dims()[0] > 1) CHECK_THROWS_AS(mpi::matmul(Cbad, Ax, Bx), tessera::shape_error);
  std::vector<double> c0 = random_vector<double>(33 * 29);
  C.scatter(c0);
  Bx.scatter(a);
  mpi::matmul(C, Ax, Bx, 1.0, 1.0);
  const auto got = C.gather();
  const auto av = Ax.gather();
  if (grid.rank() == 0) {
    using M = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const M want = Eigen::Map<const M>(av.data(), 33, 33) * Eigen::Map<const M>(a.data(), 33, 29) +
                   Eigen::Map<const M>(c0.data(), 33, 29);
    CHECK((want - Eigen::Map<const M>(got.data(), 33, 29)).cwiseAbs().maxCoeff() < 1e-12);
  }
}

TEST_CASE("redistribute and transpose between any partitions, element types converted") {
  mpi::process_grid<2> g2;
  mpi::process_grid<2> rows(MPI_COMM_WORLD, extent<2>(0, 1)), cols(MPI_COMM_WORLD, extent<2>(1, 0));
  for (int trial = 0; trial < 8; ++trial) {
    const extent<2> g(trial == 0 ? 1 : draw(1, 45), draw(1, 38));
    const auto& gs = trial % 3 == 0 ? rows : g2;
    const auto& gd = trial % 3 == 1 ? cols : g2;
    const auto ps = random_partition(g, gs, trial % 2 == 0);
    const auto pd = random_partition(g, gd, trial % 2 == 1);
    const auto a = random_vector<float>(g.size());
    mpi::distributed_array<float, 2> A(ps);
    const index_type hb = trial % 2 == 0 ? 1 : 0;  // halos (block partitions only)
    mpi::distributed_array<double, 2> B(pd, idx<2>(hb, hb));
    A.scatter(a);
    mpi::redistribute(B, A);
    const auto b = B.gather();
    if (g2.rank() == 0) {
      index_type bad = 0;
      for (std::size_t k = 0; k < a.size(); ++k)
        if (b[k] != static_cast<double>(a[k])) ++bad;
      CHECK(bad == 0);
    }
    const auto pt = random_partition(extent<2>(g[1], g[0]), gd, trial % 2 == 0);
    mpi::distributed_array<float, 2> T(pt);
    mpi::transpose(T, A);
    const auto t = T.gather();
    if (g2.rank() == 0) {
      index_type bad = 0;
      for (index_type i = 0; i < g[0]; ++i)
        for (index_type j = 0; j < g[1]; ++j)
          if (t[static_cast<std::size_t>(j * g[0] + i)] !=
              a[static_cast<std::size_t>(i * g[1] + j)])
            ++bad;
      CHECK(bad == 0);
    }
    CHECK(mpi::explain_redistribute(B, A).find("MPI_Alltoallv") != std::string::npos);
  }
  mpi::distributed_array<float, 1> X(mpi::partition<1>(extent<1>(10), mpi::process_grid<1>())),
      Y(mpi::partition<1>(extent<1>(11), mpi::process_grid<1>()));
  CHECK_THROWS_AS(mpi::redistribute(Y, X), tessera::shape_error);
  // 3-D, block to block-cyclic.
  mpi::process_grid<3> g3;
  const extent<3> e(draw(1, 9), draw(1, 9), draw(1, 9));
  const auto c = random_vector<double>(e.size());
  mpi::distributed_array<double, 3> C(random_partition(e, g3, false)),
      D(random_partition(e, g3, true));
  C.scatter(c);
  mpi::redistribute(D, C);
  const auto d = D.gather();
  if (g3.rank() == 0) CHECK(d == c);
}

#ifdef TESSERA_TEST_SCALAPACK
TEST_CASE("SUMMA matmul equals ScaLAPACK psgemm and pdgemm on the same grid and data") {
  mpi::process_grid<2> grid;
  scalapack_ref::context ctx(grid);
  for (int trial = 0; trial < 6; ++trial) {
    const index_type m = draw(1, 80), k = draw(1, 80), n = draw(1, 80), b = draw(1, 12);
    const bool cyclic = trial % 2 == 0;
    auto part = [&](index_type r, index_type c) {
      return cyclic ? mpi::partition<2>::block_cyclic(extent<2>(r, c), grid, extent<2>(b, b))
                    : mpi::partition<2>(extent<2>(r, c), grid);
    };
    const auto a = random_vector<double>(m * k), bb = random_vector<double>(k * n),
               c = random_vector<double>(m * n);
    mpi::distributed_array<double, 2> A(part(m, k)), B(part(k, n)), C(part(m, n)), R(part(m, n));
    A.scatter(a);
    B.scatter(bb);
    C.scatter(c);
    R.scatter(c);
    mpi::matmul(C, A, B, 0.5, 2.0);
    CHECK(scalapack_ref::gemm(ctx, R, A, B, 0.5, 2.0) == 0);
    const auto x = C.local_to_host(), y = R.local_to_host();
    double worst = 0;
    for (std::size_t q = 0; q < x.size(); ++q) worst = std::max(worst, std::abs(x[q] - y[q]));
    CHECK(worst < 1e-12 * static_cast<double>(k + 1));
    // float: psgemm
    mpi::distributed_array<float, 2> Af(part(m, k)), Bf(part(k, n)), Cf(part(m, n)), Rf(part(m, n));
    mpi::assign(
        Af, [](auto v) { return v; }, A);
    mpi::assign(
        Bf, [](auto v) { return v; }, B);
    mpi::matmul(Cf, Af, Bf);
    CHECK(scalapack_ref::gemm(ctx, Rf, Af, Bf, 1.f, 0.f) == 0);
    const auto xf = Cf.local_to_host(), yf = Rf.local_to_host();
    float wf = 0;
    for (std::size_t q = 0; q < xf.size(); ++q) wf = std::max(wf, std::abs(xf[q] - yf[q]));
    CHECK(wf < 1e-5f * static_cast<float>(k + 1));
  }
}
#endif

TEST_CASE("explain lists the messages and collectives of halo exchanges and sums") {
  using namespace tessera;
  mpi::process_grid<2> grid;
  mpi::distributed_array<float, 2> A(mpi::partition<2>(extent<2>(40, 40), grid), idx<2>(1, 1),
                                     boundary::periodic);
  const std::string x = mpi::explain_exchange(A);
  CHECK(x.find("MPI_Isend") != std::string::npos);
  CHECK(x.find("periodic") != std::string::npos);
  // Periodic: 8 neighbours in 2-D (some of them this process itself on small grids).
  CHECK(A.halo_traffic().messages == 8);
  CHECK(A.halo_traffic().bytes == static_cast<index_type>(sizeof(float)) *
                                      (2 * A.local_extent()[0] + 2 * A.local_extent()[1] + 4));
  CHECK(mpi::explain_sum(A).find("MPI_Allgather") != std::string::npos);
  CHECK(mpi::explain_sum(A, true).find("pairwise") != std::string::npos);
}

// The doctest runner on every process; the exit status is the worst of them all.
int main(int argc, char** argv) {
  if (tessera_test::is_query(argc, argv)) return tessera_test::run(argc, argv);
  tessera::mpi::environment env(argc, argv);
  int rc = tessera_test::run(argc, argv);
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mpi::rank() == 0)
    std::printf("tessera::mpi tests on %d processes: %s\n", mpi::size(),
                worst == 0 ? "passed on every process" : "FAILED on at least one process");
  return worst;
}
