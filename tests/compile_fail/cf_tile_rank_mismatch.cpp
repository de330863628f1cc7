// Must not compile: a rank-2 extent tiled with one tile size.
#include <tessera/tessera.hpp>
int main() {
  auto te = tessera::extent<2>(8, 8).tile<4>();
  (void)te;
}
