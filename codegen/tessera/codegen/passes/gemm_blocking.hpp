/// \file passes/gemm_blocking.hpp
/// \brief The launch parameters of the packed CPU matmul (cache blocking as launched), shared by
///        the phases pass (sizes of the packed buffers) and the mapping pass (league, launches).
#pragma once

#include <tessera/codegen/expr_graph.hpp>
#include <tessera/codegen/kernel_plan.hpp>

#include <algorithm>
#include <cstdint>

namespace tessera::codegen {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
inline std::int64_t round_up(std::int64_t x, std::int64_t m) {
  return ceil_div(x, m) * m;
}

/// Cache blocking of the packed CPU matmul C(M x N) = A(M x K) B(K x N) as launched (Goto &
/// van de Geijn 2008): kc = min(kc, K) capped so the packed mc x kc block fits scratch level 1;
/// mc a multiple of mr, lowered with several threads so that M splits into a multiple of the
/// thread count of equal row blocks; nc a multiple of nr; when there are fewer row blocks than
/// threads, each row block is also split over column ranges of its B panel.
inline gemm_params plan_gemm(std::int64_t M, std::int64_t N, std::int64_t K, int mc, int kc, int nc,
                             int mr, int nr, int threads, std::size_t scratch_l1,
                             std::size_t elem_bytes) {
  gemm_params p;
  p.mr = mr;
  p.nr = nr;
  std::int64_t kc_ = std::max<std::int64_t>(1, std::min<std::int64_t>(kc, K));
  std::int64_t mc_ = round_up(std::max<std::int64_t>(1, std::min<std::int64_t>(mc, M)), mr);
  if (threads > 1 && M > 0) {
    const std::int64_t blocks = round_up(ceil_div(M, mc_), threads);
    mc_ = std::max<std::int64_t>(mr, round_up(ceil_div(M, blocks), mr));
  }
  const std::int64_t max_kc =
      (static_cast<std::int64_t>(scratch_l1) - 64) / static_cast<std::int64_t>(elem_bytes) / mc_;
  if (kc_ > max_kc) kc_ = std::max<std::int64_t>(1, max_kc);
  const std::int64_t nc_ = round_up(std::max<std::int64_t>(1, std::min<std::int64_t>(nc, N)), nr);
  p.mc = int(mc_);
  p.kc = int(kc_);
  p.nc = int(nc_);
  // Empty (or, before validation, negative) sizes plan no work.
  p.m_blocks = M > 0 ? ceil_div(M, mc_) : 0;
  const std::int64_t n_panels = N > 0 ? ceil_div(std::min<std::int64_t>(nc_, N), nr) : 0;
  p.splits = p.m_blocks == 0 || p.m_blocks >= threads
                 ? 1
                 : std::max<std::int64_t>(1, std::min(n_panels, ceil_div(threads, p.m_blocks)));
  p.panels_per_split = ceil_div(n_panels, p.splits);
  p.launches = N > 0 ? ceil_div(N, nc_) * ceil_div(std::max<std::int64_t>(K, 1), kc_) : 0;
  return p;
}

/// The largest K of a direct (unpacked) matmul: the kernel pads a partial column panel of B
/// (K x nr) on the stack.
inline constexpr std::int64_t direct_gemm_max_k = 256;

/// True when C(M x N) = A(M x K) B(K x N) runs direct: A, B and C together in half of the
/// core's L2 (`l2` bytes), 1 <= K <= min(kc, direct_gemm_max_k) (one K block, so the same
/// additions in the same order as the packed form). Packing then costs more than it saves:
/// the micro-kernels read B's rows (nr columns per step) and broadcast A's elements where they
/// lie, a partial column panel padded on the stack. One core of a Zen 5 (AVX-512, 1 MiB L2),
/// float matmul(A, B) of n x n x n, per call, packed -> direct (Eigen): 8: 0.43 -> 0.20 us
/// (0.06), 32: 0.89 -> 0.50 (0.54), 64: 3.9 -> 2.5 (3.4), 128: 22 -> 18 (25).
inline bool direct_gemm_fits(std::int64_t M, std::int64_t N, std::int64_t K, int kc, std::size_t l2,
                             std::size_t elem_bytes) {
  if (K < 1 || K > kc || K > direct_gemm_max_k || M < 1 || N < 1 || l2 == 0) return false;
  const double bytes =
      (double(M) * double(K) + double(K) * double(N) + double(M) * double(N)) * double(elem_bytes);
  return bytes <= double(l2) / 2;
}

/// The packed matmul's launch parameters for matmul node `mm` of `g` on target `t`.
inline gemm_params packed_gemm_params(const expr_graph& g, const graph_node& mm, const target& t) {
  const bool dbl = mm.dtype == "double";
  const std::int64_t M = mm.extent[0], N = mm.extent[1];
  const std::int64_t K = g.nodes[mm.children[0]].extent[1];
  const gemm_blocking& b = dbl ? t.matmul.gemm_double : t.matmul.gemm_float;
  gemm_params p = plan_gemm(M, N, K, b.mc, b.kc, b.nc, b.mr, b.nr, t.concurrency, t.scratch_max[1],
                            mm.elem_bytes);
  p.a_prefetch = b.a_prefetch;
  p.origin = t.matmul.gemm_origin;
  if (direct_gemm_fits(M, N, K, p.kc, t.l2_bytes, mm.elem_bytes)) {
    p.direct = true;
    p.m_blocks = ceil_div(M, p.mr);
    p.splits = 1;
    p.panels_per_split = ceil_div(N, p.nr);
    // Small, or one thread: the row blocks on the calling thread (a launch costs more than
    // a second thread saves; see host::make_target).
    p.inline_run = !t.thread_per_logical && t.matmul.inline_madds > 0 &&
                   (M * N * K <= t.matmul.inline_madds || t.concurrency == 1);
    p.launches = p.inline_run ? 0 : 1;
  }
  return p;
}

}  // namespace tessera::codegen
