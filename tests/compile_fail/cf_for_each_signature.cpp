// Must not compile: a for_each body that takes an index of the wrong rank.
#include <tessera/tessera.hpp>
int main() {
  tessera::parallel_for_each(
      tessera::extent<2>(8, 8).tile<4, 4>(), TESSERA_KERNEL(tessera::tile_group<4, 4>& g) {
        g.for_each([&](const tessera::tiled_index<4>&) {});
      });
}
