// Must not compile: the kernel's tile_group does not match the tiled extent's tiles.
#include <tessera/tessera.hpp>
int main() {
  tessera::parallel_for_each(tessera::extent<2>(8, 8).tile<4, 4>(),
                             TESSERA_KERNEL(tessera::tile_group<2, 2>&){});
}
