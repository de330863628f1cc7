// tessera-tour: runs each seed workload through Tessera and through Eigen in one run, verifies
// the results, and prints a table (plus optional JSON and a bar chart of speedup vs Eigen).
//
//   tessera-tour [--scale F] [--reps N] [--only WORKLOAD] [--json PATH] [--plot PATH.svg|.png]
//
// --scale multiplies every element count (default 1: 8192^2 tile means and transpose, 1024^2
// and 2048^2 matmul, 2^28-float sum, 2^24 elementwise); --reps takes the best of N timed runs
// (default 3); --only runs one workload (or abstraction_penalty). A full run ends with the
// ratios and the performance targets they are checked against.
// Exit status 1 if any verification fails.
#include "tour.hpp"

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);  // removes Kokkos' --kokkos-* arguments
  CLI::App app{"tessera-tour"};
  tour::options opt;
  try {
    opt = tour::parse(app, argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return tour::run_all(opt);
}
