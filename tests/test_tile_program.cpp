// Tier 2 composed tile programs: results against Eigen, barriers placed exactly where scratch is
// read after write or written after read (and nowhere else), and checked mode confirms the
// inserted barriers are enough.
#include "test_util.hpp"

namespace {
using namespace tessera;
using tessera::index;

/// Seed 002's tiled matmul as a Tier 2 program: no barrier is written by hand.
template <int TS, bool Checked = false>
void matmul_program(const array<float, 2>& A, const array<float, 2>& B, const array<float, 2>& C) {
  const index_type K = A.extent[1];
  auto prog = tile_program(TESSERA_KERNEL(tile_program_context<TS, TS>& p) {
    auto a = p.template tile_static<float[TS][TS]>("a_tile");
    auto b = p.template tile_static<float[TS][TS]>("b_tile");
    auto acc = p.template tile_local<float>(0.f, "acc");
    for (index_type k0 = 0; k0 < K; k0 += TS) {
      p.load(a, [&](const tiled_index<TS, TS>& t) {
        return guarded_read(A, index<2>(t.global[0], k0 + t.local[1]));
      });
      p.load(b, [&](const tiled_index<TS, TS>& t) {
        return guarded_read(B, index<2>(k0 + t.local[0], t.global[1]));
      });
      p.compute(reads(a, b), [&](const tiled_index<TS, TS>& t) {
        float s = acc(t);
        for (int k = 0; k < TS; ++k) s += a(t.local[0], k) * b(k, t.local[1]);
        acc(t) = s;
      });
    }
    p.store(C, [&](const tiled_index<TS, TS>& t) { return acc(t); });
  });
  auto te = C.extent.template tile<TS, TS>().pad();
  if constexpr (Checked)
    parallel_for_each(checked, te, prog);
  else
    parallel_for_each(te, prog);
}

TEST_CASE("Tier 2 tiled matmul matches Eigen on random shapes, checked mode finds no race") {
  for (const auto& shape :
       tt::matmul_shapes({{1, 1, 1}, {16, 16, 16}, {17, 33, 5}, {40, 7, 64}}, 3, 100)) {
    const long m = shape[0], k = shape[1], n = shape[2];
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    auto ea = tt::random_matrix<float>(m, k), eb = tt::random_matrix<float>(k, n);
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), C(m, n), D(m, n);
    matmul_program<8>(A, B, C);
    matmul_program<8, true>(A, B, D);
    eigen_matrix<float> ref = ea * eb;
    CHECK(tt::max_abs_diff(to_eigen(C), ref) <= 1e-5 * (k + 1));
    CHECK(tt::max_abs_diff(to_eigen(D), ref) <= 1e-5 * (k + 1));
  }
}

TEST_CASE("Tier 2 plan: two barriers per k-step, each with its hazard") {
  array<float, 2> A(32, 48), B(48, 32);
  const index_type K = 48;
  auto prog = tile_program(TESSERA_KERNEL(tile_program_context<16, 16>& p) {
    auto a = p.template tile_static<float[16][16]>("a_tile");
    auto b = p.template tile_static<float[16][16]>("b_tile");
    for (index_type k0 = 0; k0 < K; k0 += 16) {
      p.load(a, [&](const tiled_index<16, 16>&) { return 0.f; });
      p.load(b, [&](const tiled_index<16, 16>&) { return 0.f; });
      p.compute(reads(a, b), [&](const tiled_index<16, 16>&) {});
    }
  });
  const auto plan = tessera::plan(extent<2>(32, 32).tile<16, 16>(), prog);
  CHECK(plan.scratch_bytes[0] == 2048);
  // k-step 0: barrier before compute; k-steps 1, 2: before the loads (WAR) and before compute.
  REQUIRE(plan.barriers.size() == 2 * (K / 16) - 1);
  CHECK(plan.barriers[0].hazard.rfind("read-after-write on a_tile before compute", 0) == 0);
  CHECK(plan.barriers[1].hazard.rfind("write-after-read on a_tile before load", 0) == 0);
  CHECK(plan.barriers[2].hazard.rfind("read-after-write on a_tile before compute", 0) == 0);
  CHECK(plan.barriers[0].fence == "tile_static memory");
}

TEST_CASE("no barrier where none is needed") {
  array<float, 2> out(8, 8);
  auto prog = tile_program(TESSERA_KERNEL(tile_program_context<4, 4>& p) {
    auto a = p.template tile_static<float[4][4]>("a");
    auto b = p.template tile_static<float[4][4]>("b");
    p.load(a, [&](const tiled_index<4, 4>& t) { return float(t.local[0]); });  // writes a
    p.load(b,
           [&](const tiled_index<4, 4>& t) { return float(t.local[1]); });  // writes b: no hazard
    p.compute(reads(a, b), [&](const tiled_index<4, 4>&) {});               // RAW: barrier
    p.compute(reads(a), [&](const tiled_index<4, 4>&) {});                  // read after read: none
    p.store(
        out,
        [&](const tiled_index<4, 4>& t) { return a(3 - t.local[0], 0) + b(0, 3 - t.local[1]); },
        reads(a, b));  // none
  });
  const auto plan = tessera::plan(out.extent.tile<4, 4>(), prog);
  REQUIRE(plan.barriers.size() == 1);
  CHECK(plan.barriers[0].after_phase == 0);
  parallel_for_each(checked, out.extent.tile<4, 4>(), prog);
  parallel_for_each(out.extent.tile<4, 4>(), prog);
  auto o = to_eigen(out);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) CHECK(o(r, c) == float(3 - r % 4 + 3 - c % 4));
}

TEST_CASE("seed 000 tile averages as a Tier 2 program") {
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  array<float, 2> m(extent<2>(8, 8), raw.begin(), raw.end()), avg(4, 4);
  auto prog = tile_program(TESSERA_KERNEL(tile_program_context<2, 2>& p) {
    auto v = p.template tile_static<float[2][2]>("tileValues");
    p.load(v, [&](const tiled_index<2, 2>& t) { return m[t.global]; });
    p.compute(reads(v), [&](const tiled_index<2, 2>& t) {
      if (t.local_linear() == 0) avg[t.tile] = (v(0, 0) + v(0, 1) + v(1, 0) + v(1, 1)) / 4.f;
    });
  });
  parallel_for_each(checked, m.extent.tile<2, 2>(), prog);
  CHECK(avg.to_vector() == std::vector<float>{4.5, 6.5, 8.5, 10.5, 20.5, 22.5, 24.5, 26.5, 36.5,
                                              38.5, 40.5, 42.5, 52.5, 54.5, 56.5, 58.5});
  const std::string s = explain(m.extent.tile<2, 2>(), prog);
  CHECK(s.find("read-after-write on tileValues before compute") != std::string::npos);
}

}  // namespace
