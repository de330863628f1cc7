// The tour's framework: options, timing, the workload table, JSON and plot output.
#pragma once

#include <tessera/tessera.hpp>

#include <CLI/CLI.hpp>
#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/handwritten_kokkos.hpp"
#include "common/workload_kernels.hpp"
#include "tour/result.hpp"

namespace tour {

struct options {
  double scale = 1.0;
  int reps = 3;
  bool tune = true;  ///< time the CPU kernels' memory threshold, prefetch, transposes, matmul
  std::string only, json, plot;
};

inline const char* workload_list() {
  return "tile_mean_2x2 tile_mean_4x4 tile_mean_16x16 matmul_1024 matmul transpose "
         "transpose_padded transpose_truncated sum elementwise race_demo abstraction_penalty";
}

/// The command line (CLI11). Kokkos' own --kokkos-* arguments are removed by scope_guard first
/// (any left are accepted). Throws CLI::ParseError (including for --help, which CLI11 reports as
/// a "success" error: app.exit(e) prints the help and returns 0).
inline options parse(CLI::App& app, int argc, char** argv) {
  options o;
  app.description(
      "tessera-tour: every seed workload through Tessera and Eigen in one run, verified, timed "
      "(best of N, interleaved) and tabulated");
  app.add_option("--scale", o.scale, "multiplies every element count (0, 4]")
      ->check(CLI::Range(1e-9, 4.0));
  app.add_option("--reps", o.reps, "timed runs per contender (best kept)")
      ->check(CLI::PositiveNumber);
  app.add_option("--only", o.only, std::string("run one workload: ") + workload_list());
  app.add_flag("!--no-tune", o.tune,
               "keep the CPU kernels' default memory threshold, prefetch, transpose and matmul "
               "choices (by default the tour first times them on this machine with "
               "tessera::tune_memory_threshold, tessera::tune_prefetch, "
               "tessera::tune_transpose_unaligned, tessera::tune_transpose and "
               "tessera::tune_matmul, 5-30 s)");
  app.add_option("--json", o.json, "write the results as JSON to this path");
  app.add_option("--plot", o.plot, "draw speedup vs Eigen (log scale) to PATH.svg or PATH.png");
  app.allow_extras();
  app.parse(argc, argv);
  for (const auto& extra : app.remaining())
    if (extra.rfind("--kokkos", 0) != 0) throw CLI::ExtrasError({extra});
  return o;
}

/// Wall time of one run of f (followed by a Kokkos fence); for interleaved comparisons.
template <class F>
double time_once(F&& f) {
  Kokkos::Timer t;
  f();
  Kokkos::fence();
  return t.seconds();
}

/// Best wall times of `reps` runs of each of fs..., interleaved run by run (f1, f2, ..., f1,
/// f2, ...) after one untimed warm-up of each, so all see the same machine state: their ratios
/// are what the tour reports. Returns the best time of each, in argument order (seconds).
template <class... F>
std::array<double, sizeof...(F)> best_times(int reps, F&&... fs) {
  (time_once(fs), ...);
  std::array<double, sizeof...(F)> best;
  best.fill(1e300);
  for (int r = 0; r < reps; ++r) {
    std::size_t k = 0;
    ((best[k] = std::min(best[k], time_once(fs)), ++k), ...);
  }
  return best;
}

/// Best wall time of `reps` runs of f (each followed by a Kokkos fence), after one untimed
/// warm-up run (first-touch page faults, the matmul autotuner, lazy allocations).
template <class F>
double best_time(int reps, F&& f) {
  f();
  Kokkos::fence();
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    Kokkos::Timer t;
    f();
    Kokkos::fence();
    best = std::min(best, t.seconds());
  }
  return best;
}

/// Side of a square matrix holding about scale * n^2 elements, rounded to a multiple of `mult`.
inline long scaled_side(long n, double scale, long mult) {
  long s = static_cast<long>(std::llround(n * std::sqrt(scale)));
  s = std::max(mult, s / mult * mult);
  return s;
}

inline tessera::eigen_matrix<float> random_matrix(long r, long c, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  tessera::eigen_matrix<float> m(r, c);
  for (long i = 0; i < m.size(); ++i) m.data()[i] = d(g);
  return m;
}

/// The matrix (or vector) Eigen reads in a workload whose Tessera operand is `a`, made from
/// the host matrix `m`: on host backends `a`'s own memory, so that both contenders read the
/// same pages (with a copy each, which pages a copy got, huge or not, moved the ratio of
/// memory-bound workloads between processes); elsewhere, where `a` lives in device memory, `m`.
/// M: the Eigen type of the map (a row-major matrix, or Eigen::VectorXf for c = 1). The
/// workload's reference is Eigen's result from this map, so on host backends `a` is first
/// checked to hold exactly m's elements (as if the reference were computed from m).
/// \throws std::runtime_error where it does not
template <class M = tessera::eigen_matrix<float>, int N>
Eigen::Map<const M> eigen_operand(const tessera::array<float, N>& a,
                                  const tessera::eigen_matrix<float>& m) {
  if constexpr (tessera::host_accessible_memory) {
    if (!std::equal(m.data(), m.data() + m.size(), a.data()))
      throw std::runtime_error(
          "tour: the Tessera operand differs from the matrix it was made from");
    return {a.data(), m.rows(), m.cols()};
  } else {
    return {m.data(), m.rows(), m.cols()};
  }
}

/// memcpy bandwidth of the execution space's memory: Kokkos::deep_copy between two Views,
/// counted as bytes read + bytes written.
inline double memcpy_gbs(double scale, int reps) {
  const long n = std::max(1L << 20, static_cast<long>((1L << 26) * scale));
  Kokkos::View<float*> a("a", n), b("b", n);
  Kokkos::deep_copy(a, 1.f);
  const double t = best_time(std::max(reps, 3), [&] { Kokkos::deep_copy(b, a); });
  return 2.0 * n * sizeof(float) / t * 1e-9;
}

using workload_fn = std::function<result(const options&)>;
struct workload {
  std::string name;
  workload_fn run;
};
std::vector<workload> workloads();

inline void print_table(const std::vector<result>& rs) {
  std::printf("\n%-20s %-16s %11s %10s %11s %9s %10s %6s\n", "workload", "size", "tessera_s",
              "rate", "eigen_s", "vs_eigen", "max_err", "result");
  for (const auto& r : rs) {
    char rate[32] = "-";
    if (r.gflops > 0)
      std::snprintf(rate, sizeof rate, "%.2f GF/s", r.gflops);
    else if (r.gbs > 0)
      std::snprintf(rate, sizeof rate, "%.2f GB/s", r.gbs);
    char speed[32] = "-";
    if (r.eigen_s > 0 && r.tessera_s > 0)
      std::snprintf(speed, sizeof speed, "%.2fx", r.eigen_s / r.tessera_s);
    std::printf("%-20s %-16s %11.5f %10s %11.5f %9s %10.2e %6s%s%s\n", r.workload.c_str(),
                r.size.c_str(), r.tessera_s, rate, r.eigen_s, speed, r.max_abs_error,
                r.pass ? "PASS" : "FAIL", r.note.empty() ? "" : "  ", r.note.c_str());
  }
}

/// Bar chart of speedup vs Eigen per workload, drawn by gnuplot (Debian package gnuplot-nox).
inline void write_plot(const std::string& path, const std::vector<result>& rs) {
  const std::string data = path + ".dat";
  {
    std::ofstream d(data);
    for (const auto& r : rs)
      if (r.eigen_s > 0 && r.tessera_s > 0)
        d << '"' << r.workload << "\" " << r.eigen_s / r.tessera_s << "\n";
  }
  const bool png = path.size() > 4 && path.substr(path.size() - 4) == ".png";
  const std::string script = path + ".gp";
  {
    std::ofstream g(script);
    g << "set terminal " << (png ? "pngcairo" : "svg") << " size 900,480\n"
      << "set output '" << path << "'\n"
      << "set title 'Tessera speedup vs Eigen (" << tessera::backend_name() << ", "
      << tessera::backend_concurrency() << " threads)'\n"
      << "set termoption noenhanced\n"
      << "set style fill solid 0.6\nset boxwidth 0.6\nset xtics rotate by -30\n"
      << "set ylabel 'speedup (Eigen time / Tessera time), log scale'\n"
      << "set logscale y 10\nset yrange [0.1:*]\nset grid ytics mytics\n"
      << "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2\n"
      << "plot '" << data << "' using 2:xtic(1) with boxes notitle\n";
  }
  const std::string cmd = "gnuplot '" + script + "'";
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error("gnuplot failed (install it: apt-get install gnuplot-nox)");
  std::remove(script.c_str());
  std::remove(data.c_str());
}

/// Abstraction penalty: the seed's tiled matmul written with Tier 0 vs the same algorithm
/// hand-written with Kokkos TeamPolicy (bench/common), interleaved rep by rep. Returns the ratio
/// Tier 0 time / hand-written time (target <= 1.05).
inline double abstraction_penalty(const options& o, long& n_out) {
  const long n = scaled_side(1024, o.scale, 16);
  n_out = n;
  auto ma = random_matrix(n, n, 11), mb = random_matrix(n, n, 12);
  tessera::array<float, 2> a = tessera::from_eigen(ma), b = tessera::from_eigen(mb), c(n, n),
                           d(n, n);
  const auto times = best_times(
      o.reps, [&] { bench::seed_kokkos_matmul(a.data(), b.data(), d.data(), n); },
      [&] { workloads::matmul_tiled<16>(a, b, c); });
  const double th = times[0], t0 = times[1];
  const double err = (tessera::to_eigen(c) - tessera::to_eigen(d)).cwiseAbs().maxCoeff();
  if (err > 1e-5 * n) throw std::runtime_error("abstraction penalty: results differ");
  return t0 / th;
}

/// The targets of the performance work, as ratios from this run.
inline void print_ratios(const std::vector<result>& rs, double memcpy, double penalty, long pn) {
  std::printf("\nratios (this run):\n");
  for (const auto& r : rs) {
    if (r.eigen_s > 0 && r.tessera_s > 0)
      std::printf("  %-20s %6.2fx Eigen", r.workload.c_str(), r.eigen_s / r.tessera_s);
    else
      continue;
    if (r.vs_memcpy > 0)
      std::printf("   %5.2fx memcpy bandwidth (copy timed alongside)", r.vs_memcpy);
    else if (r.gbs > 0)
      std::printf("   %5.2fx memcpy bandwidth", r.gbs / memcpy);
    std::printf("\n");
  }
  if (penalty > 0)
    std::printf("  abstraction penalty (Tier 0 seed matmul %ld^2 / hand-written Kokkos): %.2fx\n",
                pn, penalty);

  // The performance targets, checked against this run's ratios. Eigen's sum runs on one
  // thread in every build (its gemm uses the OpenMP threads of an OpenMP build), so with 2+
  // threads the sum target is 1.5x.
  const int threads = tessera::backend_concurrency();
  struct target {
    const char* workload;
    const char* what;
    double bound;
    bool at_most;
  };
  const target targets[] = {
      {"matmul_1024", "x Eigen", 0.8, false},
      {"matmul", "x Eigen", 0.8, false},
      {"transpose", "x memcpy", 0.6, false},
      {"tile_mean_2x2", "x Eigen", 1.0, false},
      {"tile_mean_4x4", "x Eigen", 1.0, false},
      {"tile_mean_16x16", "x Eigen", 1.0, false},
      {"elementwise", "x Eigen", 1.0, false},
      {"sum", "x Eigen", threads >= 2 ? 1.5 : 1.0, false},
      {"abstraction penalty", "x hand-written", 1.05, true},
  };
  std::printf("\ntargets (%d thread%s; ratios move by ~5-10%% between runs on a shared machine):\n",
              threads, threads == 1 ? "" : "s");
  for (const auto& t : targets) {
    double v = -1;
    if (t.at_most) {
      v = penalty > 0 ? penalty : -1;
    } else {
      for (const auto& r : rs)
        if (r.workload == t.workload && r.tessera_s > 0 && r.eigen_s > 0)
          v = std::string(t.what) != "x memcpy" ? r.eigen_s / r.tessera_s
              : r.vs_memcpy > 0                 ? r.vs_memcpy
                                                : r.gbs / memcpy;
    }
    if (v < 0) continue;  // not run (--only)
    const bool met = t.at_most ? v <= t.bound : v >= t.bound;
    std::printf("  %-20s %6.2f%-15s target %s %.2f   %s\n", t.workload, v, t.what,
                t.at_most ? "<=" : ">=", t.bound, met ? "met" : "NOT met");
  }
}

/// The explicit tunings of the CPU kernels, each timed on this machine and printed (its line
/// starting with `prefix`): the memory threshold first (the other choices depend on it), then
/// the software prefetch, the unaligned transpose blocks, the transpose staging and the matmul
/// blocking of floats and doubles. None under the GPU mapping (the emulation), and none on a
/// GPU backend: only CPU kernels have these choices. tessera-tour and tessera-peers run it
/// first unless told --no-tune.
inline void run_cpu_tunings([[maybe_unused]] const char* prefix) {
#if defined(KOKKOS_ENABLE_SERIAL) || defined(KOKKOS_ENABLE_OPENMP)
  // CPU kernels that stream from memory: whether a software prefetch helps depends on the
  // core's hardware prefetchers, which no cache size tells; timed here, explicitly.
  if (!tessera::backends::backend<tessera::execution_space>::make_target().thread_per_logical) {
    // Where memory starts for the kernels (streaming stores, prefetch): a guest's reported
    // last-level cache may be shared or absent; timed first, as the other choices depend on it.
    Kokkos::Timer t;
    const std::size_t threshold = tessera::tune_memory_threshold();
    std::printf("%smemory threshold (tessera::tune_memory_threshold, %.1f s): %.1f MiB\n", prefix,
                t.seconds(), double(threshold) / double(1 << 20));
    t.reset();
    const tessera::prefetch_tuning p = tessera::tune_prefetch();
    std::printf("%sprefetch (tessera::tune_prefetch, %.1f s): %s\n", prefix, t.seconds(),
                tessera::describe(p).c_str());
    // Blocks of transposes whose output rows do not start on a line (seed 003's 999 x 666):
    // 16- or 32-byte pieces, the output's lines prefetched or not, whichever this core writes
    // faster, for outputs in cache and for larger ones.
    t.reset();
    const tessera::transpose_unaligned_choice u = tessera::tune_transpose_unaligned();
    std::printf("%sunaligned transpose blocks (tessera::tune_transpose_unaligned, %.0f ms): %s\n",
                prefix, t.seconds() * 1e3, tessera::describe(u).c_str());
    // Streamed transposes (8192^2): tiles staged in scratch, written block by block from
    // registers, or in wide rows (1 KiB runs per output row), whichever this core and its
    // memory write faster.
    t.reset();
    const tessera::transpose_staging s = tessera::tune_transpose();
    std::printf("%stranspose staging (tessera::tune_transpose, %.1f s): %s\n", prefix, t.seconds(),
                to_string(s));
    // The matmul's cache blocking and its A prefetch, around the one derived from the cache
    // sizes: whether the micro-kernel outruns the core's L1 prefetchers no cache size tells.
    t.reset();
    const tessera::matmul_blocking mf = tessera::tune_matmul<float>();
    const tessera::matmul_blocking md = tessera::tune_matmul<double>();
    std::printf("%smatmul blocking (tessera::tune_matmul, %.1f s): float %s, double %s\n", prefix,
                t.seconds(), tessera::backends::host::describe(mf).c_str(),
                tessera::backends::host::describe(md).c_str());
  }
#endif
}

inline int run_all(const options& opt) {
  const double memcpy = memcpy_gbs(opt.scale, opt.reps);
  std::printf("tessera-tour: backend %s, threads %d, Kokkos %s, compiler %s\n",
              tessera::backend_name().c_str(), tessera::backend_concurrency(),
              tessera::kokkos_version().c_str(),
#if defined(__clang__)
              "clang " __clang_version__
#elif defined(__GNUC__)
              "g++ " __VERSION__
#else
              "unknown"
#endif
  );
  std::printf("memcpy bandwidth (deep_copy, read+write): %.2f GB/s; scale %g, best of %d\n", memcpy,
              opt.scale, opt.reps);
  if (opt.tune) run_cpu_tunings("");
  std::vector<result> rs;
  bool found = opt.only.empty() || opt.only == "abstraction_penalty";
  for (const auto& w : workloads()) {
    if (!opt.only.empty() && w.name != opt.only) continue;
    found = true;
    std::printf("  running %-20s ...", w.name.c_str());
    std::fflush(stdout);
    Kokkos::Timer t;
    result r;
    try {
      r = w.run(opt);
    } catch (const std::exception& e) {
      r.workload = w.name;
      r.pass = false;
      r.note = std::string("error: ") + e.what();
    }
    std::printf(" %s (%.1f s)\n", r.pass ? "PASS" : "FAIL", t.seconds());
    rs.push_back(r);
  }
  if (!found) {
    std::fprintf(stderr, "tessera-tour: no workload named '%s' (workloads: %s)\n", opt.only.c_str(),
                 workload_list());
    return 2;
  }
  print_table(rs);
  double penalty = 0;
  long pn = 0;
  if (opt.only.empty() || opt.only == "abstraction_penalty") {
    try {
      penalty = abstraction_penalty(opt, pn);
    } catch (const std::exception& e) {
      std::printf("abstraction penalty: %s\n", e.what());
    }
  }
  print_ratios(rs, memcpy, penalty, pn);
  if (!opt.json.empty()) {
    write_json(
        opt.json, rs, memcpy,
        {tessera::backend_name(), tessera::backend_concurrency(), tessera::kokkos_version()});
    std::printf("wrote %s\n", opt.json.c_str());
  }
  if (!opt.plot.empty()) {
    write_plot(opt.plot, rs);
    std::printf("wrote %s\n", opt.plot.c_str());
  }
  bool ok = true;
  for (const auto& r : rs) ok &= r.pass;
  std::printf("%s: %zu workloads, %s\n", ok ? "PASS" : "FAIL", rs.size(),
              ok ? "all verified against Eigen" : "some failed verification");
  return ok ? 0 : 1;
}

}  // namespace tour

#include "workload_sum.hpp"
#include "workloads.hpp"
