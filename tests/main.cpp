// main of every test executable: Kokkos is initialized once for the whole run (not for doctest
// queries such as --list-test-cases), then doctest runs the cases (doctest_runner.cpp).
#include <tessera/tessera.hpp>

#include <optional>

namespace tessera_test {
bool is_query(int argc, char** argv);
int run(int argc, char** argv);
}  // namespace tessera_test

int main(int argc, char** argv) {
  std::optional<tessera::scope_guard> guard;
  if (!tessera_test::is_query(argc, argv)) guard.emplace(argc, argv);
  return tessera_test::run(argc, argv);
}
