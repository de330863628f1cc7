/// \file runtime.hpp
/// \brief `scope_guard`: initializes Kokkos for the lifetime of a scope unless the caller
///        already did, and finalizes it only if it initialized it.
#pragma once

#include <tessera/dsl/config.hpp>
#include <tessera/dsl/errors.hpp>

#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

namespace impl {
/// True from a scope_guard's start until Kokkos::finalize begins (a finalize hook clears it):
/// while it holds, runtime_running() is one load instead of a call of Kokkos::is_initialized()
/// in libkokkoscore (2.7 ns a call on a Zen 4 core, Kokkos 3.4; Tessera asks once or twice per
/// operation and once per array destroyed). False where Kokkos was started without a
/// scope_guard: runtime_running() then asks Kokkos.
inline std::atomic<bool> runtime_seen_running{false};
/// Whether this initialization of Kokkos has the finalize hook that clears
/// runtime_seen_running (one per initialization, however many scope_guards see it).
inline std::atomic<bool> runtime_hook_pushed{false};

/// Whether the Kokkos runtime is running: Kokkos::is_initialized(), answered without a call
/// while a scope_guard has seen it start.
inline bool runtime_running() noexcept {
  return runtime_seen_running.load(std::memory_order_relaxed) || Kokkos::is_initialized();
}

/// What Tessera does when the runtime ends (memory pools free the Kokkos memory they keep).
struct runtime_end_actions {
  std::mutex m;
  std::vector<std::function<void()>> actions;
};
/// The process's list (made once, never destroyed: it outlives every runtime).
inline runtime_end_actions& end_actions() {
  static runtime_end_actions* const a = new runtime_end_actions();
  return *a;
}
/// Registers f to run whenever a runtime that a scope_guard has seen ends, first thing in
/// Kokkos::finalize (before Kokkos finalizes its memory spaces), on the finalizing thread.
inline void at_runtime_end(std::function<void()> f) {
  runtime_end_actions& a = end_actions();
  const std::lock_guard<std::mutex> lock(a.m);
  a.actions.push_back(std::move(f));
}

/// Called by each scope_guard once Kokkos runs: pushes (once per initialization) the finalize
/// hook that clears the flags and runs the at_runtime_end actions, then sets
/// runtime_seen_running. Kokkos runs its finalize hooks first thing in Kokkos::finalize,
/// whoever calls it, so the flag never outlives the runtime.
inline void note_runtime_running() {
  if (!runtime_hook_pushed.exchange(true)) {
    Kokkos::push_finalize_hook([] {
      runtime_seen_running.store(false);
      runtime_hook_pushed.store(false);
      std::vector<std::function<void()>> run;
      {
        runtime_end_actions& a = end_actions();
        const std::lock_guard<std::mutex> lock(a.m);
        run = a.actions;
      }
      for (const auto& f : run) f();
    });
  }
  runtime_seen_running.store(true);
}
}  // namespace impl

/// RAII Kokkos runtime: `int main(int argc, char** argv) { tessera::scope_guard g(argc, argv);`
/// Kokkos arguments (`--kokkos-num-threads=2`, ...) are honoured.
class scope_guard {
 public:
  scope_guard() {
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize();
      owns_ = true;
    }
    impl::note_runtime_running();
  }
  scope_guard(int& argc, char** argv) {
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize(argc, argv);
      owns_ = true;
    }
    impl::note_runtime_running();
  }
  scope_guard(const scope_guard&) = delete;
  scope_guard& operator=(const scope_guard&) = delete;
  ~scope_guard() {
    if (owns_) Kokkos::finalize();
  }
  /// True when this guard initialized Kokkos (and will finalize it).
  bool owns_runtime() const { return owns_; }

 private:
  bool owns_ = false;
};

namespace impl {
/// Throws usage_error naming `fn` unless the Kokkos runtime is running (a launch or allocation
/// before a scope_guard exists, or after it ended).
inline void require_runtime(const char* fn) {
  if (!runtime_running()) [[unlikely]]
    throw usage_error(std::string(fn) +
                      ": the Kokkos runtime is not running; create a tessera::scope_guard (or "
                      "call Kokkos::initialize) first, and launch nothing after it ends");
}
/// Called by an array that still owns memory when the Kokkos runtime has ended (it outlived
/// its scope_guard): Kokkos cannot free memory after Kokkos::finalize (it terminates the
/// process), so the array leaves its memory to the operating system; the first time, says
/// which array and how to fix the program on stderr.
inline void report_outlived_runtime(const std::string& what) {
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) return;
  std::fprintf(stderr,
               "tessera: %s was destroyed after the Kokkos runtime ended (its tessera::scope_guard "
               "or Kokkos::finalize ran first); its memory is left to the operating system. "
               "Declare arrays inside the scope_guard's scope (or reset them before it ends). "
               "Further arrays destroyed this way are not reported.\n",
               what.c_str());
}

/// The instance of the default execution space that Tessera's calls without one run on, made
/// once per process while the runtime is running: on Kokkos 4 each `Kokkos::OpenMP()` (and
/// `Cuda()`, `HIP()`) allocates a shared-pointer control block: one made and freed per call
/// took a 16-element sum from 58 to 75 ns on one OpenMP thread (Zen 5, Kokkos 4.6). The
/// same instance every call, so the same queue and the same kernels as before. It is never
/// destroyed (a handle; the runtime owns what it refers to); before the runtime starts or
/// after it ends, a fresh instance each call, as Kokkos would make.
inline const execution_space& default_instance() {
  if (!runtime_running()) [[unlikely]] {
    thread_local std::optional<execution_space> fresh;
    fresh.emplace();
    return *fresh;
  }
  static const execution_space* const made = new execution_space();
  return *made;
}

/// exec.fence(), with a label made once: Kokkos 4's default argument builds a 46-character
/// std::string (an allocation) on every call, and Tessera fences once per reduction, scan and
/// CPU matmul.
template <class Space>
void fence(const Space& exec) {
  if constexpr (requires(const std::string& s) { exec.fence(s); }) {
    static const std::string label = "tessera: fence before reading earlier kernels' results";
    exec.fence(label);
  } else {
    exec.fence();
  }
}

/// The concurrency of the execution space instance `exec`, read from it: with deprecated
/// code enabled (Kokkos 4's default), `OpenMP` and others declare only a static
/// `concurrency(const Space& = Space())`, which `exec.concurrency()` calls with a default
/// instance made (and freed) on every call (see default_instance); given `exec` it makes none.
template <class Space>
int concurrency_of(const Space& exec) {
  if constexpr (requires { Space::concurrency(exec); })
    return Space::concurrency(exec);
  else
    return exec.concurrency();
}
}  // namespace impl

/// Name of the Kokkos execution space Tessera launches on ("Serial", "OpenMP", "Cuda", ...);
/// "OpenMP (GPU emulation)" in a GPU-emulation build.
inline std::string backend_name() {
  return std::string(Kokkos::DefaultExecutionSpace::name()) +
         (gpu_emulation ? " (GPU emulation)" : "");
}
/// Concurrency of that execution space (threads on CPUs).
inline int backend_concurrency() {
  return impl::concurrency_of(impl::default_instance());
}
/// Kokkos version as "major.minor.patch".
inline std::string kokkos_version() {
  const int v = KOKKOS_VERSION;
  const int pat = v % 100;
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         (pat < 10 ? "0" : "") + std::to_string(pat);
}

}  // namespace tessera
