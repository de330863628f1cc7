// An array that outlives its scope_guard (here a function-local static, destroyed after main
// returns and the guard has finalized Kokkos): Tessera says which array on stderr and leaves
// its memory to the operating system, instead of Kokkos terminating the process.
#include <tessera/tessera.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  static tessera::array<float, 2> late(3, 4);
  late = late + 1.f;
  std::printf("sum %g\n", double(tessera::sum(late)));
  return 0;
}
