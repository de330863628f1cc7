/// \file host/gemm/micro_kernel.hpp
/// \brief The register-blocked micro-kernel of the CPU gemm: an MR x NR tile of C in vector
///        accumulators, fed by packed micro-panels of A and B (GCC/Clang vector extensions,
///        host/simd.hpp), storing, accumulating or applying the epilogue per K block.
#pragma once

#include <tessera/backends/host/simd.hpp>
#include <tessera/dsl/config.hpp>

#include <cstdint>
#include <type_traits>
#include <utility>

namespace tessera::backends::host {
namespace impl {

// --- target description ---------------------------------------------------------------------
inline constexpr int simd_bytes = simd::bytes;
inline constexpr int simd_registers = simd::registers;

/// Micro-tile of the register-blocked kernel for element type T: MR rows x NR = NV * W
/// columns of C held in MR * NV vector accumulators of W lanes. With 32 registers (AVX-512)
/// 12 x 2 accumulators; with 16 registers 6 x 2 for float (the AVX2 6 x 16 kernel) and 4 x 3
/// for double (AVX2 4 x 12), leaving room for the NV vectors of B and a broadcast of A; without
/// SIMD a 4 x 4 scalar tile.
/// Why doubles take 4 x 3 with 16 registers: each k step reads MR elements of A's packed
/// micro-panel, which streams from L2, for MR * NV multiply-adds. AVX2's 6 x 8 double tile
/// asks 48 bytes of A per 12 multiply-adds (8 bytes per cycle at two a cycle), twice the
/// float tile's rate; 4 x 12 asks 32. On an Intel Xeon guest (x86-64-v3, C = C + A B of
/// doubles, mc 192, kc 256, A prefetched 32 k steps ahead; alternated with OpenBLAS's Haswell
/// dgemm, best of 5-7, three runs at 1024^2), against OpenBLAS: 6 x 8 0.97x, 4 x 12 0.99x at
/// 1024^2; 512^2 0.95 -> 1.01x; 1000^2 0.96 -> 1.00x; 2048^2 0.99 -> 1.01x. Floats as 4 x 24
/// ran within 2 % of 6 x 16 at kc 256 and 3-4 % behind at kc 512 (a 48 KiB B micro-panel).
template <class T>
struct micro_tile {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "tessera::backends::host::gemm: element type must be float or double");
  static constexpr int W = simd_bytes / int(sizeof(T)) >= 2 ? simd_bytes / int(sizeof(T)) : 1;
  static constexpr bool narrow_doubles = simd_registers < 32 && sizeof(T) == 8;
  static constexpr int NV = W == 1 ? 4 : narrow_doubles ? 3 : 2;
  static constexpr int NR = W * NV;
  static constexpr int MR = W == 1 ? 4 : simd_registers >= 32 ? 12 : narrow_doubles ? 4 : 6;
};

template <class T, int W>
using simd_type = simd::vec_type<T, W>;
using simd::load;
using simd::store;

/// The micro-kernel's K loop: acc = sum_k a~(:, k) b~(k, :) over kc steps of the packed
/// micro-panels `a` (kc x MR, k-major) and `b` (kc x NR, k-major). With `to_c` (a full MR x NR
/// tile that no epilogue finishes) acc is written to `c` (row-major, leading dimension ldc):
/// c = acc, or c += acc with `accumulate`; else acc is stored to `tile` (MR x NR, row-major,
/// 64-byte aligned) for the caller to finish.
/// One function per element type, never inlined into its callers: the MR x NV accumulators,
/// the NV vectors of B and the broadcast of A take 15 or 16 of AVX2's 16 vector registers, and once
/// inlined into a kernel with a fused epilogue, GCC 12 kept one accumulator on the stack
/// (relu(A B a + b C), 2048^2 floats, on a Zen 3 core: 35 GFLOP/s against 75 without the
/// epilogue). NV: vectors of B per row, micro_tile's, or 1 for a partial micro-panel of at
/// most W columns (its first W columns only; never `to_c`).
/// PrefetchA: each k step also prefetches `a` a_ahead elements ahead (gemm_blocking::a_prefetch
/// k steps; past the micro-panel's end, the next one's start, as the driver packs them in a
/// row). A's micro-panels stream from L2 while B's stays in L1, and at x86-64-v3 (then 6 x 8
/// doubles, A read at 8 bytes per cycle) an Intel Xeon guest's L1 prefetchers did not keep up:
/// 1024^2 doubles with kc 256 ran 0.92-0.95x OpenBLAS's Haswell kernel with A prefetched 32 k
/// steps ahead against 0.87-0.91x without (alternated, best of 5 each, four runs), while the
/// 512-bit kernels there gained nothing: tune() times it on the machine that runs it.
template <class T, int NV = micro_tile<T>::NV, bool PrefetchA = false>
TESSERA_HOST_NOINLINE TESSERA_SIMD_FULL_WIDTH void micro_kernel_k_loop(
    index_type kc, const T* __restrict a, const T* __restrict b, T* __restrict c, index_type ldc,
    int m, int n, bool to_c, bool accumulate, T* __restrict tile, index_type a_ahead = 0) {
  using S = micro_tile<T>;
  constexpr int MR = S::MR, W = S::W;
  static_assert(NV >= 1 && NV <= S::NV, "micro_kernel_k_loop: at most micro_tile's NV vectors");
  using V = typename simd_type<T, W>::type;
  // Start fetching the C tile (read for writing) while the k loop runs: every line of each
  // row's n elements. A row of more than a line that does not start on one spans a line more
  // (4 x 12 doubles, rows of 96 bytes: three lines where the row stride is not whole 32-byte
  // pieces); with its first and last elements alone the middle line was a demand miss, and
  // C = C + A B of 999^2 doubles ran 0.86-0.91x OpenBLAS where 1000^2 ran 1.00x.
  constexpr int line = 64 / int(sizeof(T));
  for (int r = 0; r < m; ++r) {
    for (int j = 0; j < n; j += line) __builtin_prefetch(c + r * ldc + j, 1, 3);
    __builtin_prefetch(c + r * ldc + n - 1, 1, 3);
  }
  V acc[MR][NV];
  TESSERA_GCC_UNROLL(32)
  for (int r = 0; r < MR; ++r) TESSERA_GCC_UNROLL(8)
  for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  TESSERA_GCC_UNROLL(2)
  for (index_type k = 0; k < kc; ++k) {
    if constexpr (PrefetchA) __builtin_prefetch(a + a_ahead, 0, 3);
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
    b += S::NR;
  }
  if (to_c) {
    TESSERA_GCC_UNROLL(32)
    for (int r = 0; r < MR; ++r) TESSERA_GCC_UNROLL(8)
    for (int v = 0; v < NV; ++v) {
      T* p = c + r * ldc + v * W;
      store(p, accumulate ? acc[r][v] + load<V>(p) : acc[r][v]);
    }
    return;
  }
  TESSERA_GCC_UNROLL(32)
  for (int r = 0; r < MR; ++r) TESSERA_GCC_UNROLL(8)
  for (int v = 0; v < NV; ++v) store(tile + r * S::NR + v * W, acc[r][v]);
}

/// Writes the m x n valid part of an MR x NR accumulator tile (row-major, 64-byte aligned) to
/// `c` (row-major, leading dimension ldc): c = tile, or c + tile with `accumulate`, passed
/// through ep(i0 + r, j0 + j, .) with `finish`. Row by row: a loop of independent elements
/// the compiler vectorizes when the epilogue inlines without per-element branches.
template <class T, class Ep>
TESSERA_HOST_FORCEINLINE void store_tile(const T* tile, T* c, index_type ldc, int m, int n,
                                         bool accumulate, bool finish, const Ep& ep, index_type i0,
                                         index_type j0) {
  using S = micro_tile<T>;
  constexpr int MR = S::MR, NR = S::NR;
  const bool full = m == MR && n == NR;
  for (int r = 0; r < m; ++r) {
    T* const cr = c + r * ldc;
    const T* const tr = tile + r * NR;
    if (full && finish) {
      if (accumulate)
        for (int j = 0; j < NR; ++j) cr[j] = ep(i0 + r, j0 + j, T(cr[j] + tr[j]));
      else
        for (int j = 0; j < NR; ++j) cr[j] = ep(i0 + r, j0 + j, tr[j]);
      continue;
    }
    for (int j = 0; j < n; ++j) {
      const T v = accumulate ? cr[j] + tr[j] : tr[j];
      cr[j] = finish ? ep(i0 + r, j0 + j, v) : v;
    }
  }
}

/// The micro-kernel: the K loop (micro_kernel_k_loop) over kc steps of the packed micro-panels
/// `a` (kc x MR, k-major) and `b` (kc x NR, k-major), then the m x n valid part of the MR x NR
/// tile written to `c` (row-major, leading dimension ldc): c = acc (first K block), c += acc
/// (later blocks), and on the last K block c = ep(i0 + r, j0 + j, c + acc). a_prefetch: k steps
/// ahead that the K loop prefetches `a` (gemm_blocking::a_prefetch; 0: none).
/// @pre 1 <= m <= MR, 1 <= n <= NR, kc >= 1, a_prefetch >= 0; padding rows/columns of a, b are
///      zero.
template <class T, class Ep>
inline void micro_kernel(index_type kc, const T* a, const T* b, T* c, index_type ldc, int m, int n,
                         bool accumulate, bool finish, const Ep& ep, index_type i0, index_type j0,
                         int a_prefetch = 0) {
  using S = micro_tile<T>;
  constexpr int MR = S::MR, NR = S::NR;
  const bool full = m == MR && n == NR;
  alignas(64) T tile[MR * NR];
  // A partial micro-panel of at most W columns: one vector of B per row, half the multiply-adds
  // (3000 x 100 x 3000 floats, N = 3 x 32 + 4 on AVX-512, Zen 5 core, alternated runs:
  // 163-165 -> 170-178 GFLOP/s, 0.88-0.89x -> 0.97-0.98x OpenBLAS). The same bits.
  if (S::NV > 1 && n <= S::W)
    micro_kernel_k_loop<T, 1>(kc, a, b, c, ldc, m, n, false, accumulate, tile);
  else if (a_prefetch > 0)
    micro_kernel_k_loop<T, S::NV, true>(kc, a, b, c, ldc, m, n, full && !finish, accumulate, tile,
                                        index_type(a_prefetch) * MR);
  else
    micro_kernel_k_loop(kc, a, b, c, ldc, m, n, full && !finish, accumulate, tile);
  if (full && !finish) return;
  store_tile(tile, c, ldc, m, n, accumulate, finish, ep, i0, j0);
}

/// The K loop of the direct (unpacked) micro-kernel: acc = sum_k A(r, k) B(k, :) for the
/// R rows at `a` (leading dimension lda; rows from m on repeat row m - 1, their sums unused)
/// and the NR columns at `b` (leading dimension ldb, all NR readable), K steps; the same
/// accumulators and the same operations in the same order as micro_kernel_k_loop, so the
/// same bits as the packed form for one K block. Stores acc to `tile` (MR x NR, row-major).
/// NV: vectors of B per row, micro_tile's, or 1 for a last column panel of at most W columns
/// (half the multiply-adds; only the first NV W columns are read at b and stored to `tile`).
/// Not inlined, as micro_kernel_k_loop.
template <class T, int R, int NV = micro_tile<T>::NV>
TESSERA_HOST_NOINLINE TESSERA_SIMD_FULL_WIDTH void direct_k_loop(
    index_type K, const T* __restrict a, index_type lda, const T* __restrict b, index_type ldb,
    int m, T* __restrict tile) {
  using S = micro_tile<T>;
  constexpr int W = S::W;
  static_assert(NV >= 1 && NV <= S::NV, "direct_k_loop: at most micro_tile's NV vectors of B");
  using V = typename simd_type<T, W>::type;
  const T* ar[R];
  for (int r = 0; r < R; ++r) ar[r] = a + (r < m ? r : m - 1) * lda;
  V acc[R][NV];
  TESSERA_GCC_UNROLL(32)
  for (int r = 0; r < R; ++r) TESSERA_GCC_UNROLL(8)
  for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  for (index_type k = 0; k < K; ++k) {
    V bv[NV];
    TESSERA_GCC_UNROLL(8)
    for (int v = 0; v < NV; ++v) bv[v] = load<V>(b + v * W);
    TESSERA_GCC_UNROLL(32)
    for (int r = 0; r < R; ++r) {
      const T x = ar[r][k];
      TESSERA_GCC_UNROLL(8)
      for (int v = 0; v < NV; ++v) acc[r][v] += x * bv[v];
    }
    b += ldb;
  }
  TESSERA_GCC_UNROLL(32)
  for (int r = 0; r < R; ++r) TESSERA_GCC_UNROLL(8)
  for (int v = 0; v < NV; ++v) store(tile + r * S::NR + v * W, acc[r][v]);
}

/// The direct micro-kernel: the m x n tile of C at `c` (rows i0.., columns j0..) from the
/// rows of A at `a` and the columns of B at `b`, read in place (partial column panels:
/// direct_padded_micro_kernel); rows past m take the kernel for MR / 2 or MR / 4 rows where
/// those hold them. Then c = ep(i0 + r, j0 + j, acc), or ep(.., c + acc) with add_to_c, as
/// micro_kernel's last K block.
/// A last partial panel of n <= W columns takes the kernel with one vector of B per row: half
/// the multiply-adds of a full-width tile. Measured alternately on a Zen 5 core (AVX-512,
/// floats; N = 100 is 3 x 32 + 4 columns, 112 is 3 x 32 + 16), full width -> one vector:
/// 100^3 11.7-12.1 -> 10.6-10.9 us, 96 x 112 x 96 10.7 -> 9.7-9.8, 36 x 100 x 100 4.2-4.4 ->
/// 3.9, 200^3 79-80 -> 71-73. (The same kernel reading a panel padded to W columns only, row
/// stride 64 bytes, ran 3-7 % slower than full width: the pad stays NR wide.)
/// @pre 1 <= m <= MR, 1 <= n <= NR, K >= 1, NR columns readable at b
template <class T, class Ep>
inline void direct_micro_kernel(index_type K, const T* a, index_type lda, const T* b,
                                index_type ldb, T* c, index_type ldc, int m, int n, bool add_to_c,
                                const Ep& ep, index_type i0, index_type j0) {
  using S = micro_tile<T>;
  constexpr int MR = S::MR, NR = S::NR;
  alignas(64) T tile[MR * NR];
  auto rows = [&](auto nv) {
    constexpr int NV = decltype(nv)::value;
    constexpr int R2 = MR / 2 > 0 ? MR / 2 : 1, R4 = MR / 4 > 0 ? MR / 4 : 1;
    if (m > R2)
      direct_k_loop<T, MR, NV>(K, a, lda, b, ldb, m, tile);
    else if (m > R4)
      direct_k_loop<T, R2, NV>(K, a, lda, b, ldb, m, tile);
    else
      direct_k_loop<T, R4, NV>(K, a, lda, b, ldb, m, tile);
  };
  if (S::NV > 1 && n <= S::W)
    rows(std::integral_constant<int, 1>{});
  else
    rows(std::integral_constant<int, S::NV>{});
  store_tile(tile, c, ldc, m, n, add_to_c, true, ep, i0, j0);
}

/// direct_micro_kernel of a partial column panel (n < NR): its K x n elements of B copied
/// into a zero-padded K x NR panel on the stack first, so nothing is read past B's columns.
/// @pre 1 <= K <= KMax
template <int KMax, class T, class Ep>
TESSERA_HOST_NOINLINE void direct_padded_micro_kernel(index_type K, const T* a, index_type lda,
                                                      const T* b, index_type ldb, T* c,
                                                      index_type ldc, int m, int n, bool add_to_c,
                                                      const Ep& ep, index_type i0, index_type j0) {
  constexpr int NR = micro_tile<T>::NR;
  alignas(64) T pad[KMax * NR];
  for (index_type k = 0; k < K; ++k)
    for (int j = 0; j < NR; ++j) pad[k * NR + j] = j < n ? b[k * ldb + j] : T(0);
  direct_micro_kernel(K, a, lda, pad, NR, c, ldc, m, n, add_to_c, ep, i0, j0);
}

}  // namespace impl
}  // namespace tessera::backends::host
