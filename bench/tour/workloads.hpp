// The tour's workloads: each runs through Tessera and Eigen, verifies, and reports one row.
#pragma once

namespace tour {

using tessera::eigen_matrix;

/// Seed 000 at scale: the mean of every S x S tile of an n x n matrix.
template <int S>
result tile_mean(const options& o) {
  const long n = scaled_side(8192, o.scale, 16);
  auto m = random_matrix(n, n, 1);
  tessera::array<float, 2> a = tessera::from_eigen(m), out(n / S, n / S);
  const auto in = eigen_operand(a, m);
  result r;
  r.workload = "tile_mean_" + std::to_string(S) + "x" + std::to_string(S);
  r.size = std::to_string(n) + "^2";
  eigen_matrix<float> ref(n / S, n / S);
  const auto times = best_times(
      o.reps, [&] { out = tessera::tile_mean<S, S>(a); },
      [&] {
        for (long i = 0; i < n / S; ++i)
          for (long j = 0; j < n / S; ++j) ref(i, j) = in.template block<S, S>(S * i, S * j).mean();
      });
  r.tessera_s = times[0];
  r.eigen_s = times[1];
  r.gbs = double(n) * n * sizeof(float) / r.tessera_s * 1e-9;
  r.max_abs_error = (tessera::to_eigen(out) - ref).cwiseAbs().maxCoeff();
  r.tolerance = 1e-6;
  r.pass = r.max_abs_error <= r.tolerance;
  return r;
}

/// C = A * B, f32, n x n (2048 or 1024 at scale 1).
template <long N>
result matmul(const options& o) {
  const long n = scaled_side(N, o.scale, 16);
  auto ma = random_matrix(n, n, 2), mb = random_matrix(n, n, 3);
  tessera::array<float, 2> a = tessera::from_eigen(ma), b = tessera::from_eigen(mb), c(n, n);
  result r;
  r.workload = N == 2048 ? "matmul" : "matmul_" + std::to_string(N);
  r.size = std::to_string(n) + "^2";
  eigen_matrix<float> ref(n, n);
  const auto times = best_times(
      o.reps, [&] { c = tessera::matmul(a, b); }, [&] { ref.noalias() = ma * mb; });
  r.tessera_s = times[0];
  r.eigen_s = times[1];
  r.gflops = 2.0 * n * n * n / r.tessera_s * 1e-9;
  r.max_abs_error = (tessera::to_eigen(c) - ref).cwiseAbs().maxCoeff();
  r.tolerance = 2e-6 * n;
  r.pass = r.max_abs_error <= r.tolerance;
  return r;
}

/// Transposes of n x n (even, 8192^2 at scale 1) and of seed 003's 999 x 666, padded and
/// truncated; all exact.
inline result transpose_square(const options& o) {
  const long n = scaled_side(8192, o.scale, 16);
  auto m = random_matrix(n, n, 4);
  tessera::array<float, 2> a = tessera::from_eigen(m), t(n, n);
  const auto in = eigen_operand(a, m);
  result r;
  r.workload = "transpose";
  r.size = std::to_string(n) + "^2";
  eigen_matrix<float> ref(n, n);
  // Against memory bandwidth: a copy of the same bytes, timed alongside.
  Kokkos::View<float*> src("src", n * n), dst("dst", n * n);
  Kokkos::deep_copy(src, 1.f);
  const auto times = best_times(
      o.reps, [&] { t = tessera::transpose(a); }, [&] { ref.noalias() = in.transpose(); },
      [&] { Kokkos::deep_copy(dst, src); });
  r.tessera_s = times[0];
  r.eigen_s = times[1];
  r.vs_memcpy = times[2] / times[0];
  r.gbs = 2.0 * n * n * sizeof(float) / r.tessera_s * 1e-9;
  r.max_abs_error = (tessera::to_eigen(t) - ref).cwiseAbs().maxCoeff();
  r.pass = r.max_abs_error == 0;
  return r;
}

template <bool Padded>
result transpose_uneven(const options& o) {
  auto m = random_matrix(999, 666, 5);
  tessera::array<float, 2> a = tessera::from_eigen(m), t(666, 999);
  const auto in = eigen_operand(a, m);
  result r;
  r.workload = Padded ? "transpose_padded" : "transpose_truncated";
  r.size = "999x666";
  r.tessera_s = best_time(o.reps, [&] {
    if constexpr (Padded)
      workloads::transpose_padded<16>(a, t);
    else
      workloads::transpose_truncated<16>(a, t);
  });
  eigen_matrix<float> ref(666, 999);
  r.eigen_s = best_time(o.reps, [&] { ref.noalias() = in.transpose(); });
  r.gbs = 2.0 * 999 * 666 * sizeof(float) / r.tessera_s * 1e-9;
  r.max_abs_error = (tessera::to_eigen(t) - ref).cwiseAbs().maxCoeff();
  r.pass = r.max_abs_error == 0;
  return r;
}

/// Fused elementwise `2A + 3B - C` over n floats (2^24 at scale 1): one kernel, one pass.
inline result elementwise(const options& o) {
  const long n = std::max(1024L, static_cast<long>((1L << 24) * o.scale));
  auto ea = random_matrix(n, 1, 6), eb = random_matrix(n, 1, 7), ec = random_matrix(n, 1, 8);
  tessera::array<float, 1> a(tessera::extent<1>(n), ea.data(), ea.data() + n),
      b(tessera::extent<1>(n), eb.data(), eb.data() + n),
      c(tessera::extent<1>(n), ec.data(), ec.data() + n), d(n);
  result r;
  r.workload = "elementwise";
  r.size = std::to_string(n);
  const auto va = eigen_operand<Eigen::VectorXf>(a, ea), vb = eigen_operand<Eigen::VectorXf>(b, eb),
             vc = eigen_operand<Eigen::VectorXf>(c, ec);
  Eigen::VectorXf ref(n);
  const auto times = best_times(
      o.reps, [&] { d = 2.f * a + 3.f * b - c; },
      [&] { ref.noalias() = 2.f * va + 3.f * vb - vc; });
  r.tessera_s = times[0];
  r.eigen_s = times[1];
  r.gbs = 4.0 * n * sizeof(float) / r.tessera_s * 1e-9;
  r.max_abs_error = (tessera::to_eigen(d) - ref).cwiseAbs().maxCoeff();
  r.tolerance = 1e-6;
  r.pass = r.max_abs_error <= r.tolerance;
  return r;
}

/// Seed 000's racy `total += ...` must be reported by checked mode, and the correct kernel must
/// pass it with the seed's numbers.
inline result race_demo(const options&) {
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  tessera::array<float, 2> m(tessera::extent<2>(8, 8), raw.begin(), raw.end()), avg(4, 4);
  result r;
  r.workload = "race_demo";
  r.size = "8x8, 2x2 tiles";
  bool reported = false;
  Kokkos::Timer t;
  try {
    workloads::tile_average_racy<2>(m, avg, /*checked=*/true);
  } catch (const tessera::race_error& e) {
    reported = e.site.buffer == "total";
  }
  workloads::tile_average<2>(m, avg, workloads::barrier_variant::wait, /*checked=*/true);
  r.tessera_s = t.seconds();
  const float want00 = 4.5f, want33 = 58.5f;
  const auto got = tessera::to_eigen(avg);
  r.max_abs_error = std::max(std::abs(got(0, 0) - want00), std::abs(got(3, 3) - want33));
  r.pass = reported && r.max_abs_error == 0;
  r.note = reported ? "race reported in checked mode" : "race NOT reported";
  return r;
}

inline std::vector<workload> workloads() {
  return {
      {"tile_mean_2x2", tile_mean<2>},
      {"tile_mean_4x4", tile_mean<4>},
      {"tile_mean_16x16", tile_mean<16>},
      {"matmul_1024", matmul<1024>},
      {"matmul", matmul<2048>},
      {"transpose", transpose_square},
      {"transpose_padded", transpose_uneven<true>},
      {"transpose_truncated", transpose_uneven<false>},
      {"sum", sum_workload},
      {"elementwise", elementwise},
      {"race_demo", race_demo},
  };
}

}  // namespace tour
