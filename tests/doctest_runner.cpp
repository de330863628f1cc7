// The doctest implementation and runner, kept apart from Kokkos: this unit is plain host C++
// (no Kokkos or HIP headers), so device compilers never see doctest's implementation
// (Debian's hipcc, clang 15, crashes compiling it for the device in C++20 mode).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace tessera_test {

/// Counts the test cases that ran: a run whose --test-case filter matches nothing is an error
/// (ctest runs each case by name; a name doctest cannot match, e.g. one with a `;` that CMake
/// splits, would otherwise pass without running anything).
struct ran_counter : doctest::IReporter {
  static inline int cases = 0;
  explicit ran_counter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++cases; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("tessera_ran_counter", 1, ran_counter);

/// The random seed of the running test case: a hash of its name (so a case's data does not
/// depend on which cases ran before it), or TESSERA_TEST_SEED when set; printed when the case
/// fails, to replay it.
struct seed_state {
  static inline std::uint64_t seed = 20261120;
  static inline unsigned long serial = 0;
};
std::uint64_t case_seed() {
  return seed_state::seed;
}
unsigned long case_serial() {
  return seed_state::serial;
}

struct seed_listener : doctest::IReporter {
  explicit seed_listener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& in) override {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a of the case's name
    for (const char* c = in.m_name; c && *c; ++c) h = (h ^ std::uint64_t(*c)) * 1099511628211ull;
    if (const char* env = std::getenv("TESSERA_TEST_SEED")) h = std::strtoull(env, nullptr, 10);
    seed_state::seed = h;
    ++seed_state::serial;
    name_ = in.m_name;
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& st) override {
    if (st.numAssertsFailedCurrentTest > 0 || st.failure_flags != 0)
      std::fprintf(stderr,
                   "tessera tests: case \"%s\" drew its random data from seed %llu (replay: "
                   "TESSERA_TEST_SEED=%llu)\n",
                   name_, static_cast<unsigned long long>(seed_state::seed),
                   static_cast<unsigned long long>(seed_state::seed));
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  const char* name_ = "";
};
REGISTER_LISTENER("tessera_seed", 2, seed_listener);

bool has_test_case_filter(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    for (std::string_view f : {"--test-case=", "-tc=", "--dt-test-case=", "--dt-tc="})
      if (a.starts_with(f)) return true;
  }
  return false;
}

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
  const int status = ctx.run();
  if (status == 0 && ran_counter::cases == 0 && has_test_case_filter(argc, argv)) {
    std::fprintf(stderr, "tessera tests: the --test-case filter matched no test case\n");
    return 1;
  }
  return status;
}

}  // namespace tessera_test
