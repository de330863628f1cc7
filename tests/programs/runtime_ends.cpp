// The runtime's end seen by Tessera however Kokkos::finalize is reached: here Kokkos is started
// and ended by the program itself, with scope_guards inside that do not own it. Every
// operation after Kokkos::finalize throws usage_error before it runs (Tessera's answer to
// "is the runtime running" is cached while a scope_guard has seen it start, and a finalize
// hook clears it), and an array that outlives the runtime is reported, not freed.
#include <tessera/tessera.hpp>

#include <cstdio>
#include <vector>

namespace {
int failures = 0;
void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}
/// Whether f() throws tessera::usage_error naming the runtime.
template <class F>
bool throws_not_running(F&& f) {
  try {
    f();
  } catch (const tessera::usage_error& e) {
    return std::string(e.what()).find("the Kokkos runtime is not running") != std::string::npos;
  } catch (...) {
    return false;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  std::vector<float> host(37, 1.5f);
  const tessera::array_view<const float, 1> v(tessera::extent<1>(37), host.data());
  auto* late = new tessera::array<float, 2>(3, 4);
  {
    tessera::scope_guard a(argc, argv);  // Kokkos already runs: this guard does not own it
    tessera::scope_guard b;
    expect(!a.owns_runtime() && !b.owns_runtime(), "guards inside a running Kokkos own nothing");
    expect(tessera::sum(v) == 37 * 1.5f, "sum while the runtime runs");
    *late = *late * 0.f + 2.f;
    expect(tessera::sum(*late) == 24.f, "sum of an array while the runtime runs");
  }
  expect(tessera::sum(v) == 37 * 1.5f, "sum after the guards ended (Kokkos still runs)");
  Kokkos::finalize();
  expect(throws_not_running([&] { (void)tessera::sum(v); }), "sum after Kokkos::finalize");
  expect(throws_not_running([] { tessera::array<float, 1> x(8); }),
         "an allocation after Kokkos::finalize");
  delete late;  // outlived the runtime: reported on stderr, its memory left to the system
  std::printf("runtime_ends: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
