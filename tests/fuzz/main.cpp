// tessera-fuzz's command line; the catalogue and the case runner are in fuzz.hpp.
#include "fuzz.hpp"

#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  CLI::App app{"tessera-fuzz: differential fuzzing of Tessera's Tier 1 against Eigen"};
  std::uint64_t cases = 1000, seed = 1, first = 0;
  fuzz::index_type max_dim = 48;
  bool verbose = false;
  app.add_option("--cases", cases, "number of cases");
  app.add_option("--seed", seed, "seed of the run");
  app.add_option("--first", first, "index of the first case (replay: --first K --cases 1)");
  app.add_option("--max-dim", max_dim, "usual largest extent (1/8 of the cases go to 3x)")
      ->check(CLI::Range(1, 4096));
  app.add_flag("--verbose", verbose, "print every case");
  app.allow_extras();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  const auto cat = fuzz::catalogue();
  std::uint64_t passed = 0, failed = 0, skipped = 0, exceptions = 0;
  for (std::uint64_t k = first; k < first + cases; ++k) {
    const fuzz::case_desc cd = fuzz::describe_case(seed, k, max_dim);
    const std::uint64_t shape_seed = cd.data_seed ^ 0x5851F42D4C957F2Dull;
    const fuzz::outcome o = fuzz::run_case(cd, shape_seed);
    const std::string name = fuzz::pattern_name(cat, cd.pattern);
    const bool mixed = name.rfind("mixed", 0) == 0;
    const std::string what =
        name + " [" + to_string(cd.type) + ", " + to_string(cd.how) +
        (cd.b_is_section ? ", b a section" : "") +
        (mixed && cd.dest_other && cd.how == fuzz::mode::existing ? ", other destination type"
                                                                  : "") +
        (name.find("sched") != std::string::npos ? fuzz::schedule_text(cd) : "") + "]";
    if (verbose)
      std::printf("case %llu: %s %s: %s\n", (unsigned long long)k, what.c_str(), o.shape.c_str(),
                  o.skipped ? "skipped"
                  : o.ok    ? "ok"
                            : "FAIL");
    if (o.skipped) {
      ++skipped;
    } else if (o.ok) {
      ++passed;
    } else {
      ++failed;
      exceptions += o.what.rfind("unexpected exception", 0) == 0;
      std::printf(
          "FAIL case %llu: %s %s\n  %s\n  replay: tessera-fuzz --seed %llu --first %llu "
          "--cases 1 --max-dim %lld\n",
          (unsigned long long)k, what.c_str(), o.shape.c_str(), o.what.c_str(),
          (unsigned long long)seed, (unsigned long long)k, (long long)max_dim);
      // Shrink: the same case with ever smaller shapes, while it still fails.
      fuzz::case_desc small = cd;
      fuzz::outcome last = o;
      for (fuzz::index_type d = cd.max_dim / 2; d >= 1; d /= 2) {
        bool found = false;
        for (std::uint64_t t = 0; t < 8 && !found; ++t) {
          small.max_dim = d;
          const fuzz::outcome r = fuzz::run_case(small, shape_seed + t);
          if (!r.ok && !r.skipped) {
            last = r;
            found = true;
          }
        }
        if (!found) break;
      }
      std::printf("  shrunk: %s %s\n  %s\n", what.c_str(), last.shape.c_str(), last.what.c_str());
    }
  }
  std::printf(
      "tessera-fuzz: seed %llu, cases %llu..%llu on %s: %llu passed, %llu mismatches "
      "(%llu unexpected exceptions), %llu skipped (mode not applicable)\n",
      (unsigned long long)seed, (unsigned long long)first, (unsigned long long)(first + cases - 1),
      tessera::backend_name().c_str(), (unsigned long long)passed,
      (unsigned long long)(failed - exceptions), (unsigned long long)exceptions,
      (unsigned long long)skipped);
  return failed ? 1 : 0;
}
