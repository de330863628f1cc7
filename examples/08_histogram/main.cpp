// Histogram and cumulative distribution: the counts of n samples of a normal distribution in
// 64 bins over [-4, 4) (Tier 1 histogram: private bins per tile, added once per tile), the
// empirical distribution function as an inclusive scan of the counts, and running maxima of
// a 2-D field along each dimension (inclusive_scan with maximum<>), and the quartiles of the
// samples from a Tier 1 sort (each must lie in the bin where the cumulative counts cross its
// rank). Checked against a host histogram with the same bin formula, std::inclusive_scan,
// std::stable_sort and Eigen; prints the plans.
//
//   example_08_histogram [n]
#include "../common/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  const long n = argc > 1 ? std::atol(argv[1]) : 4000037;
  constexpr long bins = 64;
  const double lo = -4.0, hi = 4.0;

  std::mt19937 gen(8);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> host(static_cast<std::size_t>(n));
  for (auto& x : host) x = d(gen);
  tessera::array<float, 1> A(tessera::extent<1>(n), host.begin(), host.end());

  // Tier 1: counts, then the cumulative counts (fused: the scan reads the counts array).
  const tessera::array<tessera::index_type, 1> counts = tessera::histogram(A, bins, {lo, hi});
  const tessera::array<tessera::index_type, 1> cdf = tessera::inclusive_scan(counts);

  // Reference.
  std::vector<tessera::index_type> want(bins, 0);
  for (const float x : host) {
    const double v = x;
    if (v >= lo && v < hi)
      ++want[std::size_t(std::min(bins - 1, long((v - lo) * (bins / (hi - lo)))))];
  }
  std::vector<tessera::index_type> want_cdf(bins);
  std::inclusive_scan(want.begin(), want.end(), want_cdf.begin());
  bool ok = true;
  ok &= workloads::verdict("histogram == host histogram (same bin formula)",
                           counts.to_vector() == want);
  ok &= workloads::verdict(
      "cumulative counts == std::inclusive_scan", cdf.to_vector() == want_cdf,
      std::to_string(want_cdf.back()) + " of " + std::to_string(n) + " samples in [-4, 4)");

  // Quartiles from the sorted samples: the sample of rank k lies in the first bin whose
  // cumulative count exceeds k - (the samples below lo).
  const std::vector<float> sorted = tessera::sorted(A).to_vector();
  std::vector<float> want_sorted = host;
  std::stable_sort(want_sorted.begin(), want_sorted.end());
  ok &= workloads::verdict("sorted samples == std::stable_sort", sorted == want_sorted);
  if (n >= 4) {
    const long below =
        long(std::lower_bound(sorted.begin(), sorted.end(), float(lo)) - sorted.begin());
    bool inside = true;
    std::string q;
    for (const long k : {n / 4, n / 2, 3 * n / 4}) {
      const double x = sorted[std::size_t(k)];
      if (!(x >= lo && x < hi)) continue;
      const long b =
          long(std::upper_bound(want_cdf.begin(), want_cdf.end(), k - below) - want_cdf.begin());
      const double b0 = lo + double(b) * (hi - lo) / bins;
      inside &= x >= b0 && x < b0 + (hi - lo) / bins;
      q += (q.empty() ? "" : ", ") + std::to_string(x);
    }
    ok &= workloads::verdict("quartiles lie in the bins the cumulative counts give", inside,
                             "quartiles " + q);
  }

  // Running maxima of a 2-D field along each dimension, against Eigen.
  const long r = 301, c = 517;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  tessera::eigen_matrix<float> f(r, c);
  for (long i = 0; i < f.size(); ++i) f.data()[i] = u(gen);
  const tessera::array<float, 2> F = tessera::from_eigen(f);
  const auto down = tessera::to_eigen(tessera::inclusive_scan(F, 0, tessera::maximum<>()));
  const auto across = tessera::to_eigen(tessera::inclusive_scan(F, 1, tessera::maximum<>()));
  tessera::eigen_matrix<float> wd = f, wa = f;
  for (long i = 1; i < r; ++i) wd.row(i) = wd.row(i).cwiseMax(wd.row(i - 1));
  for (long j = 1; j < c; ++j) wa.col(j) = wa.col(j).cwiseMax(wa.col(j - 1));
  ok &= workloads::verdict("running maxima down columns == Eigen", down == wd);
  ok &= workloads::verdict("running maxima along rows == Eigen", across == wa);

  std::printf("%s", tessera::explain_histogram(A, bins, {lo, hi}).c_str());
  std::printf("%s",
              tessera::explain(tessera::scan_kind::inclusive, F, 0, tessera::maximum<>()).c_str());
  std::printf("%s", tessera::explain_sort(A).c_str());
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
