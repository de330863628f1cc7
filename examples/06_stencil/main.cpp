// Heat diffusion on a grid (explicit Euler, 5-point Laplacian, zero outside the grid): the same
// time steps written as one line of Tier 1 shifts and as a Tier 0 tile kernel that stages each
// tile plus a halo of one point in tile_static memory (load_halo), both compared with a plain
// C++ loop. The grid (default 257 x 131, 10 steps) is not a multiple of the 16 x 16 tiles.
//
//   example_06_stencil [rows cols steps]
#include "../common/report.hpp"

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  const long rows = argc > 3 ? std::atol(argv[1]) : 257, cols = argc > 3 ? std::atol(argv[2]) : 131;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 10;
  const float c = 0.2f;  // diffusion number (stable below 0.25)
  using tessera::boundary::zero;
  using ix = tessera::index<2>;

  std::mt19937 gen(6);
  std::uniform_real_distribution<float> d(0.f, 1.f);
  std::vector<float> u0(static_cast<std::size_t>(rows * cols));
  for (auto& x : u0) x = d(gen);

  // Reference: a plain loop, zero outside the grid.
  std::vector<float> ref = u0, next(ref.size());
  auto at = [&](const std::vector<float>& u, long i, long j) {
    return i < 0 || j < 0 || i >= rows || j >= cols ? 0.f : u[std::size_t(i * cols + j)];
  };
  for (int s = 0; s < steps; ++s) {
    for (long i = 0; i < rows; ++i)
      for (long j = 0; j < cols; ++j)
        next[std::size_t(i * cols + j)] =
            at(ref, i, j) + c * (at(ref, i - 1, j) + at(ref, i + 1, j) + at(ref, i, j - 1) +
                                 at(ref, i, j + 1) - 4.f * at(ref, i, j));
    ref.swap(next);
  }
  auto max_error = [&](const tessera::array<float, 2>& u) {
    const std::vector<float> got = u.to_vector();
    double e = 0;
    for (std::size_t k = 0; k < got.size(); ++k) e = std::max(e, std::abs(double(got[k]) - ref[k]));
    return e;
  };
  auto detail = [](double e) {
    char b[64];
    std::snprintf(b, sizeof b, "max error %.2g", e);
    return std::string(b);
  };
  bool ok = true;

  // Tier 1: each step is one kernel; A and B swap roles (a destination that overlapped its
  // shifted operand would take a temporary).
  {
    tessera::array<float, 2> A(tessera::extent<2>(rows, cols), u0.begin(), u0.end());
    tessera::array<float, 2> B(rows, cols);
    for (int s = 0; s < steps; ++s) {
      B = A +
          c * (tessera::shift(A, ix(-1, 0), zero) + tessera::shift(A, ix(1, 0), zero) +
               tessera::shift(A, ix(0, -1), zero) + tessera::shift(A, ix(0, 1), zero) - 4.f * A);
      std::swap(A, B);
    }
    const double e = max_error(A);
    ok &= workloads::verdict("Tier 1 shifts == C++ loop", e <= 1e-5, detail(e));
    std::printf("%s", tessera::explain(B, A + c * (tessera::shift(A, ix(-1, 0), zero) +
                                                   tessera::shift(A, ix(1, 0), zero) +
                                                   tessera::shift(A, ix(0, -1), zero) +
                                                   tessera::shift(A, ix(0, 1), zero) - 4.f * A))
                          .c_str());
  }

  // Tier 0: one team per 16 x 16 tile; the tile plus its halo is read once into tile_static
  // memory, then every logical thread reads its four neighbours there.
  {
    tessera::array<float, 2> A(tessera::extent<2>(rows, cols), u0.begin(), u0.end());
    tessera::array<float, 2> B(rows, cols);
    for (int s = 0; s < steps; ++s) {
      const tessera::array<float, 2>& in = A;
      tessera::array<float, 2>& out = B;
      tessera::parallel_for_each(
          out.extent.tile<16, 16>().pad(), TESSERA_KERNEL(tessera::tile_group<16, 16> & g) {
            auto h = g.load_halo<1>(in, zero, "u");
            // Only the logical threads inside the grid (the last tiles are padded).
            g.for_each(out.extent, [&](const tessera::tiled_index<16, 16>& t) {
              const int i = int(t.local[0]), j = int(t.local[1]);
              out[t.global] = h(i, j) + c * (h(i - 1, j) + h(i + 1, j) + h(i, j - 1) + h(i, j + 1) -
                                             4.f * h(i, j));
            });
          });
      std::swap(A, B);
    }
    const double e = max_error(A);
    ok &= workloads::verdict("Tier 0 load_halo == C++ loop", e <= 1e-5, detail(e));
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
