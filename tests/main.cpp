// doctest main shared by every test executable: Kokkos is initialized once for the whole run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <tessera/tessera.hpp>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
