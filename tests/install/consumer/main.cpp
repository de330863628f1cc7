// Consumer of an installed Tessera: seed 000's 4x4 tile averages of 0..63 checked exactly.
#include <tessera/tessera.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  tessera::array<float, 2> m(tessera::extent<2>(8, 8), raw.begin(), raw.end());
  tessera::array<float, 2> avg(2, 2);
  tessera::parallel_for_each(
      m.extent.tile<4, 4>(), TESSERA_KERNEL(tessera::tile_group<4, 4>& g) {
        auto v = g.tile_static<float[4][4]>();
        g.for_each(
            [&](const tessera::tiled_index<4, 4>& t) { v(t.local[0], t.local[1]) = m[t.global]; });
        g.barrier.wait();
        g.for_each([&](const tessera::tiled_index<4, 4>& t) {
          if (t.local_linear() == 0) {
            float s = 0;
            for (int r = 0; r < 4; ++r)
              for (int c = 0; c < 4; ++c) s += v(r, c);
            avg[t.tile] = s / 16;
          }
        });
      });
  const std::vector<float> got = avg, want = {13.5f, 17.5f, 45.5f, 49.5f};
  const bool ok = got == want;
  std::printf("consumer: %s (%g %g %g %g)\n", ok ? "PASS" : "FAIL", got[0], got[1], got[2], got[3]);
  return ok ? 0 : 1;
}
