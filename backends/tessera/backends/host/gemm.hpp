/// \file host/gemm.hpp
/// \brief Cache-blocked matrix multiply for the host backends (Serial, OpenMP):
///        `C = epilogue(A * B)` with packed panels and a register-blocked micro-kernel,
///        parallelised with Kokkos on `Kokkos::DefaultHostExecutionSpace`.
///
/// Algorithm (Goto & van de Geijn 2008, "Anatomy of high-performance matrix multiplication",
/// ACM TOMS 34(3); micro-kernel design after BLIS, Van Zee & van de Geijn 2015, "BLIS: a
/// framework for rapidly instantiating BLAS functionality", ACM TOMS 41(3)):
///
/// ```
/// for jc in [0, N) step nc                      B panel  kc x nc  -> shared buffer (L3)
///   for pc in [0, K) step kc                    packed once per (jc, pc), in parallel
///     for ic in [0, M) step mc    (parallel)    A block  mc x kc  -> team scratch (L2)
///       for jr in [0, nc) step NR               B micro-panel kc x NR stays in L1
///         for ir in [0, mc) step MR             A micro-panel MR x kc streams from L2
///           C(ir.., jr..) (+)= A~(ir) * B~(jr)  MR x NR accumulators in registers
/// ```
/// Packed A micro-panels are stored k-major (MR values of one column of A per k), packed B
/// micro-panels k-major as well (NR values of one row of B per k), both zero-padded to full
/// MR / NR, so the micro-kernel never branches on edges; partial tiles are handled when C is
/// written. The accumulation over K blocks goes through C itself: the first K block stores,
/// later ones add, and the last one applies the epilogue (exactly once per element).
#pragma once

#include <tessera/backends/host/simd.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/codegen/passes/mapping.hpp>
#include <tessera/codegen/plan_cache.hpp>
#include <tessera/dsl/config.hpp>
#include <tessera/dsl/errors.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace tessera::backends::host {

/// Cache blocking of gemm: the loop bounds of the Goto scheme (see the file comment).
/// mc, kc, nc are element counts: rows of A per packed block (rounded up to a multiple of MR by
/// gemm), depth of one packed block, columns of B per packed panel (rounded up to a multiple
/// of NR). mr, nr record the micro-tile of the element type the blocking was made for; they are
/// informational (printed by describe) and gemm ignores them, 0 = not recorded.
using codegen::gemm_blocking;

/// Text form for plan printers, e.g. "mc=96 kc=256 nc=2048 mr=6 nr=16" (mr/nr only when set).
inline std::string describe(const gemm_blocking& b) {
  std::string s =
      "mc=" + std::to_string(b.mc) + " kc=" + std::to_string(b.kc) + " nc=" + std::to_string(b.nc);
  if (b.mr > 0 && b.nr > 0) s += " mr=" + std::to_string(b.mr) + " nr=" + std::to_string(b.nr);
  return s;
}

namespace impl {

// --- target description ---------------------------------------------------------------------
inline constexpr int simd_bytes = simd::bytes;
inline constexpr int simd_registers = simd::registers;

/// Micro-tile of the register-blocked kernel for element type T: MR rows x NR = NV * W
/// columns of C held in MR * NV vector accumulators of W lanes. With 32 registers (AVX-512)
/// 12 x 2 accumulators, with 16 registers 6 x 2 (the AVX2 6 x 16 float kernel), leaving room
/// for the NV vectors of B and a broadcast of A; without SIMD a 4 x 4 scalar tile.
template <class T>
struct micro_tile {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "tessera::backends::host::gemm: element type must be float or double");
  static constexpr int W = simd_bytes / int(sizeof(T)) >= 2 ? simd_bytes / int(sizeof(T)) : 1;
  static constexpr int NV = W == 1 ? 4 : 2;
  static constexpr int NR = W * NV;
  static constexpr int MR = W == 1 ? 4 : (simd_registers >= 32 ? 12 : 6);
};

template <class T, int W>
using simd_type = simd::vec_type<T, W>;
using simd::load;
using simd::store;

/// The micro-kernel: acc = sum_k a~(:, k) b~(k, :) over kc steps of the packed micro-panels
/// `a` (kc x MR, k-major) and `b` (kc x NR, k-major), then writes the m x n valid part of the
/// MR x NR tile to `c` (row-major, leading dimension ldc): c = acc (first K block),
/// c += acc (later blocks), and on the last K block c = ep(i0 + r, j0 + j, c + acc).
/// @pre 1 <= m <= MR, 1 <= n <= NR, kc >= 1; padding rows/columns of a, b are zero.
template <class T, class Ep>
TESSERA_SIMD_FULL_WIDTH inline void micro_kernel(index_type kc, const T* __restrict a,
                                                 const T* __restrict b, T* __restrict c,
                                                 index_type ldc, int m, int n, bool accumulate,
                                                 bool finish, const Ep& ep, index_type i0,
                                                 index_type j0) {
  using S = micro_tile<T>;
  constexpr int MR = S::MR, NV = S::NV, W = S::W, NR = S::NR;
  using V = typename simd_type<T, W>::type;
  // Start fetching the C tile (read for writing) while the k loop runs.
  for (int r = 0; r < m; ++r) {
    __builtin_prefetch(c + r * ldc, 1, 3);
    __builtin_prefetch(c + r * ldc + n - 1, 1, 3);
  }
  V acc[MR][NV];
  TESSERA_GCC_UNROLL(32)
  for (int r = 0; r < MR; ++r) TESSERA_GCC_UNROLL(8)
  for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  TESSERA_GCC_UNROLL(2)
  for (index_type k = 0; k < kc; ++k) {
    V bv[NV];
    TESSERA_GCC_UNROLL(8)
    for (int v = 0; v < NV; ++v) bv[v] = load<V>(b + v * W);
    TESSERA_GCC_UNROLL(32)
    for (int r = 0; r < MR; ++r) {
      const T ar = a[r];
      TESSERA_GCC_UNROLL(8)
      for (int v = 0; v < NV; ++v) acc[r][v] += ar * bv[v];
    }
    a += MR;
    b += NR;
  }
  if (m == MR && n == NR && !finish) {
    TESSERA_GCC_UNROLL(32)
    for (int r = 0; r < MR; ++r) TESSERA_GCC_UNROLL(8)
    for (int v = 0; v < NV; ++v) {
      T* p = c + r * ldc + v * W;
      store(p, accumulate ? acc[r][v] + load<V>(p) : acc[r][v]);
    }
    return;
  }
  if (m == MR && n == NR) {
    // A full tile's epilogue, row by row: a loop of NR independent elements the compiler
    // vectorizes when the epilogue inlines without per-element branches.
    for (int r = 0; r < MR; ++r) {
      alignas(64) T row[NR];
      TESSERA_GCC_UNROLL(8)
      for (int v = 0; v < NV; ++v) store(row + v * W, acc[r][v]);
      T* const cr = c + r * ldc;
      if (accumulate)
        for (int j = 0; j < NR; ++j) cr[j] = ep(i0 + r, j0 + j, T(cr[j] + row[j]));
      else
        for (int j = 0; j < NR; ++j) cr[j] = ep(i0 + r, j0 + j, row[j]);
    }
    return;
  }
  alignas(64) T tile[MR * NR];
  TESSERA_GCC_UNROLL(32)
  for (int r = 0; r < MR; ++r) TESSERA_GCC_UNROLL(8)
  for (int v = 0; v < NV; ++v) store(tile + r * NR + v * W, acc[r][v]);
  for (int r = 0; r < m; ++r) {
    T* const cr = c + r * ldc;
    const T* const tr = tile + r * NR;
    for (int j = 0; j < n; ++j) {
      const T v = accumulate ? cr[j] + tr[j] : tr[j];
      cr[j] = finish ? ep(i0 + r, j0 + j, v) : v;
    }
  }
}

/// Packs rows [0, mb) x columns [0, kb) of A (row-major, leading dimension lda) into MR-row
/// micro-panels: panel q holds A(q*MR + r, k) at dst[q*kb*MR + k*MR + r], rows past mb zero.
template <class T>
inline void pack_a(index_type mb, index_type kb, const T* a, index_type lda, T* dst) {
  constexpr int MR = micro_tile<T>::MR;
  for (index_type i0 = 0; i0 < mb; i0 += MR, dst += kb * MR) {
    const int m = int(std::min<index_type>(MR, mb - i0));
    const T* rows[MR];
    for (int r = 0; r < MR; ++r) rows[r] = a + (i0 + (r < m ? r : 0)) * lda;
    if (m == MR) {
      for (index_type k = 0; k < kb; ++k) TESSERA_GCC_UNROLL(32)
      for (int r = 0; r < MR; ++r) dst[k * MR + r] = rows[r][k];
    } else {
      for (index_type k = 0; k < kb; ++k)
        for (int r = 0; r < MR; ++r) dst[k * MR + r] = r < m ? rows[r][k] : T(0);
    }
  }
}

/// Packs columns [0, n) (n <= NR) x rows [0, kb) of B (row-major, leading dimension ldb) into
/// one NR-column micro-panel: dst[k*NR + j] = B(k, j), columns past n zero.
template <class T>
inline void pack_b_panel(index_type kb, int n, const T* b, index_type ldb, T* dst) {
  constexpr int NR = micro_tile<T>::NR;
  if (n == NR) {
    for (index_type k = 0; k < kb; ++k) std::memcpy(dst + k * NR, b + k * ldb, sizeof(T) * NR);
  } else {
    for (index_type k = 0; k < kb; ++k) {
      for (int j = 0; j < n; ++j) dst[k * NR + j] = b[k * ldb + j];
      for (int j = n; j < NR; ++j) dst[k * NR + j] = T(0);
    }
  }
}

inline index_type round_up(index_type x, index_type m) {
  return (x + m - 1) / m * m;
}

template <class T>
T* align64(T* p) {
  return reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(p) + 63) & ~std::uintptr_t{63});
}

/// Per-core data cache sizes in bytes (L1d, L2, L3), from sysconf where the C library reports
/// them, else typical values of current x86-64 / AArch64 server cores.
struct cache_sizes {
  long l1, l2, l3;
};
inline cache_sizes host_caches() {
  cache_sizes c{32 * 1024, 1024 * 1024, 8 * 1024 * 1024};
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && \
    defined(_SC_LEVEL3_CACHE_SIZE)
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE),
             l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l1 >= 8 * 1024) c.l1 = l1;
  if (l2 >= 64 * 1024) c.l2 = l2;
  if (l3 >= 1024 * 1024) c.l3 = l3;
#endif
  return c;
}

inline void check_blocking(const char* fn, const gemm_blocking& b) {
  if (b.mc <= 0 || b.kc <= 0 || b.nc <= 0)
    throw shape_error(std::string(fn) + ": blocking " + describe(b) + " must be positive");
}

}  // namespace impl

/// Register tile (rows, columns of C per micro-kernel call) of gemm for element type T on this
/// target, e.g. 6 x 16 for float with AVX2, 12 x 32 with AVX-512.
template <class T>
inline constexpr int gemm_mr = impl::micro_tile<T>::MR;
template <class T>
inline constexpr int gemm_nr = impl::micro_tile<T>::NR;

/// Blocking derived from the cache sizes of the host (sysconf, with fallbacks of 32 KiB L1d,
/// 1 MiB L2, 8 MiB L3): kc so that a packed kc x NR micro-panel of B is 4/3 of L1d, mc so that
/// the packed mc x kc block of A fills half of L2 (at most 16 micro-panels, which also keeps
/// enough row blocks for the threads), nc so that the kc x nc panel of B uses a quarter of L3
/// (at most 4096 columns). All values are element counts; mc is a multiple of MR, nc of NR, kc
/// of 16.
/// Why kc is deeper than L1d: the micro-kernel reads A and B as two sequential streams that L2
/// serves at a fraction of its bandwidth (about 15 bytes per cycle), while every call also
/// loads and stores its MR x NR tile of C, which on large products comes from memory; a deeper
/// kc spreads that over more FMAs. Measured on a 2-core AVX-512 EPYC (48 KiB L1d), kc 512
/// instead of 256 (the B micro-panel in two thirds of L1d): +2-5 % at 1024^2-4096^2 on one
/// thread, +4-9 % on two.
/// Example: AVX-512, 48 KiB L1d, 1 MiB L2 per core, float (MR x NR = 12 x 32): mc=192 kc=512
/// nc=4096.
/// \tparam T float or double
template <class T>
gemm_blocking default_blocking() {
  using S = impl::micro_tile<T>;
  const impl::cache_sizes c = impl::host_caches();
  const long e = long(sizeof(T));
  long kc = c.l1 * 4 / 3 / (S::NR * e);
  kc = std::clamp(kc / 16 * 16, 64L, 512L);
  long mc = c.l2 / 2 / (kc * e);
  mc = std::clamp(mc / S::MR * S::MR, long(S::MR), 16L * S::MR);
  long nc = c.l3 / 4 / (kc * e);
  nc = std::clamp(nc / S::NR * S::NR, long(S::NR), 4096L / S::NR * S::NR);
  return {int(mc), int(kc), int(nc), S::MR, S::NR};
}

/// The launch parameters of gemm for C(M x N) = A(M x K) B(K x N) with blocking `blk` on
/// `threads` threads (codegen::plan_gemm: what the plan of a Tier 1 matmul shows).
template <class T>
codegen::gemm_params plan(index_type M, index_type N, index_type K, const gemm_blocking& blk,
                          int threads) {
  using S = impl::micro_tile<T>;
  using team_policy = Kokkos::TeamPolicy<Kokkos::DefaultHostExecutionSpace>;
  return codegen::plan_gemm(M, N, K, blk.mc, blk.kc, blk.nc, S::MR, S::NR, threads,
                            std::size_t(team_policy::scratch_size_max(1)), sizeof(T));
}

/// C = ep(A * B): cache-blocked, packed, register-blocked matrix multiply on a host execution
/// space (Serial or OpenMP), launched exactly as the plan `p` says.
///
/// \tparam T float or double
/// \tparam Epilogue callable as `T ep(index_type i, index_type j, T acc)`; its result is stored
///         to C(i, j). Called exactly once per element of C, after the full-K accumulation,
///         possibly concurrently from several host threads (must be thread-safe; may read
///         other memory, not C). Identity: `[](auto, auto, T v) { return v; }`.
/// \param exec [in] the host execution space instance the launches go to
/// \param M, N, K [in] C is M x N, A is M x K, B is K x N (elements; any may be 0; K == 0
///        gives C(i, j) = ep(i, j, 0))
/// \param A [in] row-major, A(i, k) = A[i * lda + k]; lda >= K
/// \param B [in] row-major, B(k, j) = B[k * ldb + j]; ldb >= N
/// \param C [out] row-major, C(i, j) = C[i * ldc + j]; ldc >= N; its prior contents are
///        ignored. @pre C does not overlap A or B.
/// \param ep [in] the epilogue
/// \param p [in] launch parameters (plan<T>(M, N, K, blocking, threads)); mc, nc multiples of
///        MR, NR; the packed mc x kc block fits scratch level 1
/// \param label [in] Kokkos label of the main launches (the B-panel packing adds " (pack B)")
/// \throws shape_error negative M, N or K; lda < K, ldb < N or ldc < N; blocking values <= 0.
///         Thrown before anything is read or written.
/// \throws resource_error more than INT_MAX / 64 row blocks, before anything runs.
///
/// Execution: for each (jc, pc) block, one Kokkos::parallel_for packs the kc x nc panel of B
/// into a buffer shared by all threads, and a second one (TeamPolicy, p.m_blocks * p.splits
/// teams of one member) packs each team's A block into its team scratch (level 1) and runs
/// the micro-kernel over its block of C. Teams never wait on each other. The summation order
/// depends only on the blocking, so equal inputs, blocking and thread count give equal bits.
/// Returns after a fence of `exec`: C is complete.
///
/// Source: Goto & van de Geijn 2008, "Anatomy of high-performance matrix multiplication"; the
/// micro-kernel and packing layout follow BLIS (Van Zee & van de Geijn 2015).
template <class T, class Space, class Epilogue>
void gemm(const Space& exec, index_type M, index_type N, index_type K, const T* A, index_type lda,
          const T* B, index_type ldb, T* C, index_type ldc, const Epilogue& ep,
          const codegen::gemm_params& p, const std::string& label = "tessera::host::gemm") {
  using S = impl::micro_tile<T>;
  constexpr int MR = S::MR, NR = S::NR;
  static_assert(std::is_invocable_r_v<T, const Epilogue&, index_type, index_type, T>,
                "tessera::backends::host::gemm: the epilogue must be callable as "
                "ep(index_type i, index_type j, T acc) and return T");
  if (M < 0 || N < 0 || K < 0)
    throw shape_error("gemm: negative size M=" + std::to_string(M) + " N=" + std::to_string(N) +
                      " K=" + std::to_string(K));
  if (lda < K || ldb < N || ldc < N) {
    std::string what;
    auto check = [&](const char* name, index_type ld, const char* dim, index_type len) {
      if (ld < len)
        what += std::string(what.empty() ? "" : ", ") + name + "=" + std::to_string(ld) + " < " +
                dim + "=" + std::to_string(len);
    };
    check("lda", lda, "K", K);
    check("ldb", ldb, "N", N);
    check("ldc", ldc, "N", N);
    throw shape_error("gemm: leading dimension smaller than the row length (" + what +
                      "; A is MxK, B is KxN, C is MxN, row-major)");
  }
  if (p.mc <= 0 || p.kc <= 0 || p.nc <= 0 || p.mc % MR != 0 || p.nc % NR != 0)
    throw shape_error("gemm: launch parameters mc=" + std::to_string(p.mc) +
                      " kc=" + std::to_string(p.kc) + " nc=" + std::to_string(p.nc) +
                      " must be positive, mc a multiple of " + std::to_string(MR) + " and nc of " +
                      std::to_string(NR));
  if (M == 0 || N == 0) return;

  if (K == 0) {
    backends::impl::launch(label + " (K=0)",
                           Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, M),
                           [=](index_type i) {
                             for (index_type j = 0; j < N; ++j) C[i * ldc + j] = ep(i, j, T(0));
                           });
    exec.fence();
    return;
  }

  using team_policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  const index_type mc = p.mc, kc = p.kc, nc = p.nc;
  const index_type m_blocks = (M + mc - 1) / mc;
  if (m_blocks > INT_MAX / 64)
    throw resource_error("gemm: M=" + std::to_string(M) + " needs " + std::to_string(m_blocks) +
                         " row blocks of mc=" + std::to_string(mc) +
                         ", more than a Kokkos league holds; use a larger mc");
  const std::size_t a_bytes = std::size_t(mc * kc) * sizeof(T) + 64;
  const int level = p.scratch_level;

  // Shared packed B panel (kc x nc), allocated once per call.
  Kokkos::View<T*, Kokkos::HostSpace> b_buf(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "tessera::host::gemm B panel"),
      std::size_t(kc * nc) + 64 / sizeof(T));
  T* const bp = impl::align64(b_buf.data());
  const index_type splits = p.splits;

  for (index_type jc = 0; jc < N; jc += nc) {
    const index_type nb = std::min(nc, N - jc);
    const index_type n_panels = (nb + NR - 1) / NR;
    const index_type panels_per_split = (n_panels + splits - 1) / splits;
    for (index_type pc = 0; pc < K; pc += kc) {
      const index_type kb = std::min(kc, K - pc);
      const bool accumulate = pc > 0, finish = pc + kb == K;
      const T* const bsrc = B + pc * ldb + jc;
      backends::impl::launch(
          label + " (pack B)",
          Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, n_panels),
          [=](index_type q) {
            impl::pack_b_panel(kb, int(std::min<index_type>(NR, nb - q * NR)), bsrc + q * NR, ldb,
                               bp + q * kb * NR);
          });
      team_policy policy(exec, int(m_blocks * splits), 1);
      policy.set_scratch_size(p.scratch_level, Kokkos::PerTeam(a_bytes));
      backends::impl::launch(label, policy, [=](const typename team_policy::member_type& team) {
        const index_type ib = team.league_rank() / splits, js = team.league_rank() % splits;
        const index_type ic = ib * mc, mb = std::min(mc, M - ic);
        T* const ap = impl::align64(static_cast<T*>(team.team_scratch(level).get_shmem(a_bytes)));
        impl::pack_a(mb, kb, A + ic * lda + pc, lda, ap);
        const index_type p_end = std::min(n_panels, (js + 1) * panels_per_split);
        for (index_type q = js * panels_per_split; q < p_end; ++q) {
          const index_type j0 = jc + q * NR;
          const int n = int(std::min<index_type>(NR, N - j0));
          const T* const bpp = bp + q * kb * NR;
          for (index_type i = 0; i < mb; i += MR) {
            const int m = int(std::min<index_type>(MR, mb - i));
            impl::micro_kernel(kb, ap + i * kb, bpp, C + (ic + i) * ldc + j0, ldc, m, n, accumulate,
                               finish, ep, ic + i, j0);
          }
        }
      });
    }
  }
  exec.fence();
}

/// gemm on the default host execution space with blocking `blk` (planned for its threads).
template <class T, class Epilogue>
void gemm(index_type M, index_type N, index_type K, const T* A, index_type lda, const T* B,
          index_type ldb, T* C, index_type ldc, const Epilogue& ep, gemm_blocking blk) {
  impl::check_blocking("gemm", blk);
  const Kokkos::DefaultHostExecutionSpace exec;
  gemm(exec, M, N, K, A, lda, B, ldb, C, ldc, ep, plan<T>(M, N, K, blk, exec.concurrency()));
}

namespace impl {

/// Times gemm<T> with blocking b on an n^3 problem: best of `reps` runs, seconds.
template <class T>
double time_blocking(const gemm_blocking& b, index_type n, int reps, const std::vector<T>& a,
                     const std::vector<T>& bm, std::vector<T>& c) {
  auto id = [](index_type, index_type, T v) {
    return v;
  };
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm(n, n, n, a.data(), n, bm.data(), n, c.data(), n, id, b);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

/// The autotuner behind tune(). Candidates: default_blocking, kc x 1/2, 3/2, 2,
/// mc x 1/2, 2, and (2 mc, kc / 2), (mc / 2, 2 kc), clipped to the tuning problem (512^3) and
/// deduplicated. Round 1 times each candidate (best of 3); round 2 times the default and the
/// round-1 winner again, alternately. A candidate replaces the default only when its best time is
/// at least 3% better, so that timing noise alone does not move the choice.
template <class T>
gemm_blocking autotune() {
  using S = micro_tile<T>;
  constexpr index_type n = 512;
  const gemm_blocking d = default_blocking<T>();
  std::vector<T> a(n * n), b(n * n), c(n * n);
  for (index_type i = 0; i < n * n; ++i) {
    a[i] = T((i * 7 + 3) % 17) / T(17) - T(0.5);
    b[i] = T((i * 5 + 1) % 13) / T(13) - T(0.5);
  }
  std::vector<gemm_blocking> cands;
  auto add = [&](long mc, long kc) {
    mc = std::clamp(mc / S::MR * S::MR, long(S::MR), long(n) / S::MR * S::MR);
    kc = std::clamp(kc / 16 * 16, 32L, long(n));
    const gemm_blocking g{int(mc), int(kc), d.nc, S::MR, S::NR};
    for (const auto& x : cands)
      if (x.mc == g.mc && x.kc == g.kc) return;
    cands.push_back(g);
  };
  add(d.mc, d.kc);  // cands[0]: the default (clipped)
  for (double fk : {0.5, 1.5, 2.0}) add(d.mc, long(d.kc * fk));
  for (double fm : {0.5, 2.0}) add(long(d.mc * fm), d.kc);
  add(long(d.mc * 2), long(d.kc / 2));
  add(long(d.mc / 2), long(d.kc * 2));
  (void)time_blocking(cands[0], n, 1, a, b, c);  // warm-up: caches, scratch arenas, threads
  std::vector<double> t(cands.size());
  std::size_t win = 0;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    t[i] = time_blocking(cands[i], n, 3, a, b, c);
    if (t[i] < t[win]) win = i;
  }
  if (win == 0) return d;
  for (int r = 0; r < 3; ++r) {  // interleaved, so that drifting machine load hits both alike
    t[0] = std::min(t[0], time_blocking(cands[0], n, 1, a, b, c));
    t[win] = std::min(t[win], time_blocking(cands[win], n, 1, a, b, c));
  }
  return t[win] < 0.97 * t[0] ? cands[win] : d;
}

}  // namespace impl

/// The blocking Tier 1 matmuls of element type T use: default_blocking<T>() (derived from the
/// cache sizes, deterministic) until set_blocking or tune replaces it. Thread-safe.
template <class T>
gemm_blocking current_blocking();

namespace impl {
template <class T>
struct blocking_registry {
  std::mutex mutex;
  gemm_blocking value = default_blocking<T>();
  const char* origin = "derived from the cache sizes";
  static blocking_registry& get() {
    static blocking_registry r;
    return r;
  }
};
}  // namespace impl

template <class T>
gemm_blocking current_blocking() {
  auto& r = impl::blocking_registry<T>::get();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.value;
}
/// Where current_blocking<T>() came from: "derived from the cache sizes", "tuned",
/// "set by the caller".
template <class T>
const char* blocking_origin() {
  auto& r = impl::blocking_registry<T>::get();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.origin;
}
/// Makes `b` the blocking of later Tier 1 matmuls of element type T (plans made before are
/// not reused). \throws shape_error a value <= 0
template <class T>
void set_blocking(const gemm_blocking& b, const char* origin = "set by the caller") {
  impl::check_blocking("tessera::set_matmul_blocking", b);
  auto& r = impl::blocking_registry<T>::get();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.value = b;
    r.origin = origin;
  }
  ++codegen::target_generation();
}

/// Times a few candidates around default_blocking<T>() (mc and kc scaled by 1/2 .. 2) on a
/// 512 x 512 x 512 problem on the default host execution space (all its threads) and makes the
/// fastest current (see impl::autotune: the default wins unless a candidate is 3% faster).
/// Explicit: nothing calls it implicitly; explain() never times anything. About 30 products of
/// that size (~0.1 s at 100 GFLOP/s). @pre Kokkos is initialized; not inside a parallel region.
/// \return the chosen blocking
template <class T>
gemm_blocking tune() {
  const gemm_blocking b = impl::autotune<T>();
  set_blocking<T>(b, "tuned");
  return b;
}

}  // namespace tessera::backends::host
