// The tour's `sum` workload: seed 004's huge-array sum through tessera::sum and Eigen.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tour {

/// Seed 004: the sum of n floats (2^28 = 1 GiB at scale 1) by tessera::sum (one Kokkos
/// parallel_reduce, double accumulators) and by Eigen's VectorXf::sum(), best of o.reps each,
/// taking turns.
/// Data x_i in [0.5, 1.5), from an integer hash of i (filled on the device). max_abs_error is
/// Tessera's |relative error| against Eigen's sum in double of the same floats; tolerance
/// 5.0001 * 2^-24, tessera::sum's documented bound for positive data (2^-24 for the final
/// rounding + 4.0001 * 2^-24 for the float blocks and double lanes). The note gives Eigen's
/// own relative error and the reproducible variant's time relative to tessera::sum.
inline result sum_workload(const options& o) {
  const long n = std::max(1L << 20, static_cast<long>((1L << 28) * o.scale));
  tessera::array<float, 1> a(n);
  tessera::parallel_for_each(
      a.extent, KOKKOS_LAMBDA(const tessera::index<1>& i) {
        const std::uint64_t h = (static_cast<std::uint64_t>(i[0]) * 0x9E3779B97F4A7C15ull) >> 41;
        a[i] = 0.5f + static_cast<float>(h) * (1.0f / (1 << 23));
      });
  Kokkos::fence();
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.view());
  const Eigen::Map<const Eigen::VectorXf> v(host.data(), n);

  result r;
  r.workload = "sum";
  r.size = std::to_string(n);
  // The three take turns (best of o.reps each), so a slow phase of the machine does not fall on
  // one of them only.
  float s = 0, s_repro = 0, s_eigen = 0;
  const auto times = best_times(
      o.reps, [&] { s = tessera::sum(a); },
      [&] { s_repro = tessera::sum(a, tessera::reproducible); }, [&] { s_eigen = v.sum(); });
  r.tessera_s = times[0];
  const double repro_s = times[1];
  r.eigen_s = times[2];
  r.gbs = double(n) * sizeof(float) / r.tessera_s * 1e-9;

  const double ref = v.cast<double>().sum();
  auto rel = [&](float x) {
    return std::abs((double(x) - ref) / ref);
  };
  r.max_abs_error = std::max(rel(s), rel(s_repro));
  r.tolerance = 5.0001 * std::ldexp(1.0, -24);
  r.pass = r.max_abs_error <= r.tolerance;
  char note[96];
  std::snprintf(note, sizeof note, "rel. error; Eigen's %.1e; reproducible %.2fx time",
                rel(s_eigen), repro_s / r.tessera_s);
  r.note = note;
  return r;
}

}  // namespace tour
