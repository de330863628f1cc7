// doctest main shared by every test executable: Kokkos is initialized once for the whole run.
// Queries (--list-test-cases, --help, ...) answer without Kokkos, so test discovery at build time
// needs no device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <tessera/tessera.hpp>

#include <optional>
#include <string_view>

namespace {
bool is_query(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a.starts_with("--dt-")) a.remove_prefix(5);
    else if (a.starts_with("--")) a.remove_prefix(2);
    else if (a.starts_with("-")) a.remove_prefix(1);
    for (const char* q : {"list-test-cases", "ltc", "list-test-suites", "lts", "list-reporters",
                          "lr", "help", "h", "?", "version", "v", "count", "c"})
      if (a == q || (a.starts_with(q) && a.size() > std::string_view(q).size() &&
                     a[std::string_view(q).size()] == '='))
        return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  std::optional<tessera::scope_guard> guard;
  if (!is_query(argc, argv)) guard.emplace(argc, argv);
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
