// Must not compile: a tile size of 0.
#include <tessera/tessera.hpp>
int main() {
  auto te = tessera::extent<2>(8, 8).tile<0, 4>();
  (void)te;
}
