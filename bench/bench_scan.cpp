// bench-scan: Tier 1 scans, histograms and sorts against their peers in one run, with the copy
// bandwidth of the execution space's memory measured alongside (Kokkos::deep_copy of the same
// bytes: the limit a scan, which reads n and writes n elements, can reach).
//   scan: tessera::inclusive_scan / exclusive_scan vs Kokkos::parallel_scan (a sum functor)
//         and std::inclusive_scan (sequential, on a host copy); float data.
//   histogram: tessera::histogram vs a Kokkos ScatterView histogram and a plain host loop,
//         the same bin formula; float data uniform in [0, 1).
//   sort: tessera::sort (in place) vs std::sort, std::stable_sort (sequential, on a host copy)
//         and Kokkos::sort, on uniform random floats and 32-bit ints; each run sorts a fresh
//         copy of the same data (the copy is not timed); "copies" is the sort's time in units
//         of one copy of the data.
// Best of --reps runs each; ratios are Tessera's time against the best peer's.
// Usage: bench-scan [--reps N] [--max-log2 K] [--only scan|histogram|sort]   (threads:
// OMP_NUM_THREADS for OpenMP builds)
#include <tessera/tessera.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_ScatterView.hpp>
#include <Kokkos_Sort.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

/// The best time of f over reps runs, setup() (untimed) before each.
template <class S, class F>
double best_of(int reps, S&& setup, F&& f) {
  double b = 1e30;
  for (int r = 0; r < reps; ++r) {
    setup();
    Kokkos::fence();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    Kokkos::fence();
    b = std::min(b, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return b;
}
template <class F>
double best_of(int reps, F&& f) {
  return best_of(
      reps, [] {}, f);
}

/// Kokkos' scan of a sum: the functor Kokkos' documentation shows.
struct kokkos_sum_scan {
  Kokkos::View<const float*> in;
  Kokkos::View<float*> out;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, float& update, bool final) const {
    update += in(i);
    if (final) out(i) = update;
  }
};

struct kokkos_histogram {
  Kokkos::View<const float*> in;
  Kokkos::Experimental::ScatterView<std::int64_t*> bins;
  std::int64_t nbins;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    auto a = bins.access();
    const double v = double(in(i));
    if (v >= 0.0 && v < 1.0) {
      std::int64_t b = std::int64_t(v * double(nbins));
      if (b >= nbins) b = nbins - 1;
      a(b) += 1;
    }
  }
};

/// Sorts of uniform random T (floats in [0, 1), ints over the whole range), 2^16 .. 2^max_log2.
template <class T>
void bench_sort(const char* name, int reps, int max_log2, std::mt19937& rng) {
  using tessera::index_type;
  std::printf("\n%-10s %9s %9s %9s %9s %9s %9s %9s\n", name, "copy", "std::sort", "stable",
              "Kokkos", "Tessera", "vs best", "copies");
  std::printf("%-10s %9s %9s %9s %9s %9s %9s %9s\n", "sort n", "GB/s", "Melem/s", "Melem/s",
              "Melem/s", "Melem/s", "peer", "");
  for (int lg = 16; lg <= max_log2; lg += 4) {
    const index_type n = index_type(1) << lg;
    std::vector<T> h(static_cast<std::size_t>(n)), w(h.size());
    if constexpr (std::is_floating_point_v<T>) {
      std::uniform_real_distribution<T> u(0, 1);
      for (auto& x : h) x = u(rng);
    } else {
      for (auto& x : h) x = T(rng());
    }
    const Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> hv(h.data(), h.size());
    Kokkos::View<T*> kv("sort", n), kin("sort in", n);
    Kokkos::deep_copy(kin, hv);
    tessera::array<T, 1> a{tessera::extent<1>(n)};
    const tessera::array<T, 1> src(tessera::extent<1>(n), h.begin(), h.end());
    const auto fresh_host = [&] {
      std::copy(h.begin(), h.end(), w.begin());
    };
    const auto fresh_view = [&] {
      Kokkos::deep_copy(kv, kin);
    };
    const auto fresh_array = [&] {
      tessera::copy(src, a);
    };
    const double t_copy = best_of(reps, fresh_view);
    const double t_std = best_of(reps, fresh_host, [&] { std::sort(w.begin(), w.end()); });
    const double t_stable =
        best_of(reps, fresh_host, [&] { std::stable_sort(w.begin(), w.end()); });
    const double t_kokkos = best_of(reps, fresh_view, [&] { Kokkos::sort(kv); });
    const double t_tessera = best_of(reps, fresh_array, [&] { tessera::sort(a); });
    const auto got = a.to_vector();
    if (!std::equal(got.begin(), got.end(), w.begin())) {
      std::printf("sort of 2^%d: Tessera's order differs from std::stable_sort's\n", lg);
      std::exit(1);
    }
    const double me = double(n) / 1e6;
    std::printf("2^%-8d %9.1f %9.1f %9.1f %9.1f %9.1f %8.2fx %9.1f\n", lg,
                2.0 * sizeof(T) * double(n) / t_copy / 1e9, me / t_std, me / t_stable,
                me / t_kokkos, me / t_tessera, std::min({t_std, t_stable, t_kokkos}) / t_tessera,
                t_tessera / t_copy);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("bench-scan: Tier 1 scans and histograms against Kokkos and the standard library");
  int reps = 7, max_log2 = 24;
  app.add_option("--reps", reps, "runs per measurement (best kept)")->check(CLI::PositiveNumber);
  app.add_option("--max-log2", max_log2, "largest size, log2 of the elements")
      ->check(CLI::Range(10, 30));
  std::string only;
  app.add_option("--only", only, "run one part")
      ->check(CLI::IsMember({"scan", "histogram", "sort"}));
  CLI11_PARSE(app, argc, argv);
  tessera::scope_guard guard(argc, argv);
  using tessera::index_type;
  std::printf("bench-scan on %s (concurrency %d), best of %d\n", tessera::backend_name().c_str(),
              tessera::execution_space().concurrency(), reps);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);

  const auto part = [&](const char* p) {
    return only.empty() || only == p;
  };
  if (part("scan")) {
    std::printf("\n%-10s %9s %9s %9s %9s %9s %9s %9s\n", "scan n", "copy", "std", "Kokkos", "incl",
                "excl", "vs best", "of copy");
    std::printf("%-10s %9s %9s %9s %9s %9s %9s %9s\n", "", "GB/s", "GB/s", "GB/s", "GB/s", "GB/s",
                "peer", "");
    for (int lg = 16; lg <= max_log2; lg += 4) {
      const index_type n = index_type(1) << lg;
      std::vector<float> h(static_cast<std::size_t>(n)), ho(static_cast<std::size_t>(n));
      for (auto& x : h) x = u(rng);
      const tessera::array<float, 1> a(tessera::extent<1>(n), h.begin(), h.end());
      tessera::array<float, 1> out{tessera::extent<1>(n)};
      Kokkos::View<float*> kin("in", n), kout("out", n);
      Kokkos::deep_copy(kin, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                 h.data(), h.size()));
      const double bytes = 8.0 * double(n);  // read n, write n
      const double t_copy = best_of(reps, [&] { Kokkos::deep_copy(kout, kin); });
      const double t_std =
          best_of(reps, [&] { std::inclusive_scan(h.begin(), h.end(), ho.begin()); });
      const double t_kokkos = best_of(reps, [&] {
        Kokkos::parallel_scan("kokkos scan",
                              Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, n),
                              kokkos_sum_scan{kin, kout});
      });
      const double t_incl = best_of(reps, [&] { tessera::inclusive_scan(a, out); });
      const double t_excl = best_of(reps, [&] { tessera::exclusive_scan(a, out); });
      const double peer = std::min(t_std, t_kokkos);
      std::printf("2^%-8d %9.1f %9.1f %9.1f %9.1f %9.1f %8.2fx %8.0f%%\n", lg, bytes / t_copy / 1e9,
                  bytes / t_std / 1e9, bytes / t_kokkos / 1e9, bytes / t_incl / 1e9,
                  bytes / t_excl / 1e9, peer / t_incl, 100.0 * t_copy / t_incl);
    }
  }
  if (part("sort")) {
    bench_sort<float>("float", reps, max_log2, rng);
    bench_sort<std::int32_t>("int32", reps, max_log2, rng);
  }
  if (!part("histogram")) return 0;
  const index_type n = index_type(1) << std::min(max_log2, 24);
  std::vector<float> h(static_cast<std::size_t>(n));
  for (auto& x : h) x = u(rng);
  const tessera::array<float, 1> a(tessera::extent<1>(n), h.begin(), h.end());
  Kokkos::View<float*> kin("in", n);
  Kokkos::deep_copy(kin, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                             h.data(), h.size()));
  std::printf("\n%-16s %9s %9s %9s %9s   (%lld floats)\n", "histogram bins", "loop", "Scatter",
              "Tessera", "vs best", static_cast<long long>(n));
  std::printf("%-16s %9s %9s %9s %9s\n", "", "GB/s", "GB/s", "GB/s", "peer");
  for (index_type bins : {index_type(16), index_type(256), index_type(4096), index_type(65536)}) {
    std::vector<std::int64_t> hl(static_cast<std::size_t>(bins));
    const double t_loop = best_of(reps, [&] {
      std::fill(hl.begin(), hl.end(), 0);
      for (const float x : h) {
        const double v = double(x);
        if (v >= 0.0 && v < 1.0) {
          std::int64_t b = std::int64_t(v * double(bins));
          if (b >= bins) b = bins - 1;
          ++hl[static_cast<std::size_t>(b)];
        }
      }
    });
    Kokkos::View<std::int64_t*> kb("bins", bins);
    Kokkos::Experimental::ScatterView<std::int64_t*> sv(kb);
    const double t_scatter = best_of(reps, [&] {
      sv.reset();
      Kokkos::parallel_for("scatter histogram",
                           Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, n),
                           kokkos_histogram{kin, sv, bins});
      Kokkos::Experimental::contribute(kb, sv);
    });
    tessera::array<index_type, 1> counts(bins);
    const double t_tessera = best_of(reps, [&] { tessera::histogram(a, counts, {0.0, 1.0}); });
    const auto c = counts.to_vector();
    if (!std::equal(c.begin(), c.end(), hl.begin())) {
      std::printf("histogram with %lld bins: counts differ from the host loop\n",
                  static_cast<long long>(bins));
      return 1;
    }
    const double bytes = 4.0 * double(n);
    std::printf("%-16lld %9.2f %9.2f %9.2f %8.2fx\n", static_cast<long long>(bins),
                bytes / t_loop / 1e9, bytes / t_scatter / 1e9, bytes / t_tessera / 1e9,
                std::min(t_loop, t_scatter) / t_tessera);
  }
  return 0;
}
