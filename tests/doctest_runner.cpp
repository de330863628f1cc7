// The doctest implementation and runner, kept apart from Kokkos: this unit is plain host C++
// (no Kokkos or HIP headers), so device compilers never see doctest's implementation
// (Debian's hipcc, clang 15, crashes compiling it for the device in C++20 mode).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <string_view>

namespace tessera_test {

/// True when the command line only asks doctest a question (--list-test-cases, --help, ...):
/// answered without initializing Kokkos, so test discovery at build time needs no device.
bool is_query(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a.starts_with("--dt-"))
      a.remove_prefix(5);
    else if (a.starts_with("--"))
      a.remove_prefix(2);
    else if (a.starts_with("-"))
      a.remove_prefix(1);
    for (std::string_view q :
         {"list-test-cases", "ltc", "list-test-suites", "lts", "list-reporters", "lr", "help", "h",
          "?", "version", "v", "count", "c"})
      if (a == q || (a.starts_with(q) && a.size() > q.size() && a[q.size()] == '=')) return true;
  }
  return false;
}

/// Runs the test cases selected by the command line; returns doctest's exit status.
int run(int argc, char** argv) {
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}

}  // namespace tessera_test
