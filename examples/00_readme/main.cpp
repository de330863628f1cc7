#include <tessera/tessera.hpp>

#include <iostream>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);  // Kokkos initialize/finalize
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  tessera::array_view<const float, 2> m(tessera::extent<2>(8, 8), raw);
  tessera::array<float, 2> avg(4, 4);
  tessera::parallel_for_each(
      m.extent.tile<2, 2>(), TESSERA_KERNEL(tessera::tile_group<2, 2>& g) {
        auto v = g.tile_static<float[2][2]>("v");  // team scratch, one per tile
        g.for_each(
            [&](const tessera::tiled_index<2, 2>& t) { v(t.local[0], t.local[1]) = m[t.global]; });
        g.barrier.wait();  // team barrier + memory fence
        g.for_each([&](const tessera::tiled_index<2, 2>& t) {
          if (t.local_linear() == 0) avg[t.tile] = (v(0, 0) + v(0, 1) + v(1, 0) + v(1, 1)) / 4;
        });
      });
  std::cout << tessera::to_eigen(avg) << "\n";  // 4.5 6.5 8.5 10.5 / 20.5 ...
}
