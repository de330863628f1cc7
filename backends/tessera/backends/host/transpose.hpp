/// \file host/transpose.hpp
/// \brief Building blocks of staged transposes on the host backends (Serial, OpenMP):
///        a 16 x 16 block transposed in vector registers, and whole-line stores that bypass
///        the cache (non-temporal) when the output is larger than the cache.
///
/// Why: an 8192^2 float transpose reads rows 32 KiB apart, so every element of a tile column
/// maps to the same L1 set and, on the write side, each output row of a tile lies on its own
/// page. Moving 16 x 16 blocks through registers (one 64-byte line per row on both sides) and
/// writing finished output lines with streaming stores (no read-for-ownership of the output,
/// no eviction of the input panel) turns the kernel from latency-bound into bandwidth-bound.
/// The in-register transpose is written once on GCC/Clang vector extensions: log2(N) stages of
/// two-source shuffles, each swapping the off-diagonal b x b blocks of every 2b x 2b block (b =
/// N/2, ..., 1), which the compilers lower to the target's permutes (AVX-512 vpermt2ps, NEON
/// zip/uzp, ...). Streaming stores are x86-only (AVX, AVX-512) and behind a guard; elsewhere
/// rows are stored normally.
///
/// Every function has a portable scalar path; the vector paths need GCC 12+ or Clang
/// (__builtin_shufflevector) and are never compiled for device passes.
#pragma once

#include <tessera/backends/host/simd.hpp>
#include <tessera/dsl/config.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tessera::backends::host {

/// Edge of the square blocks a staged transpose moves through registers (elements).
inline constexpr int transpose_block_size = 16;

#if defined(TESSERA_HOST_SHUFFLE)
namespace impl {
/// N lanes of T (N x sizeof(T) = 64 bytes: one AVX-512 register, two AVX or four NEON ones).
template <class T, int N>
using row_vec = simd::vec<T, N>;

/// Stage b of the transpose network on rows a (index i, bit b clear) and c (i + b): lane j of
/// the new row i is a[j] where bit b of j is clear, else c[j - b]; lane j of the new row i + b
/// is a[j + b] where bit b of j is clear, else c[j].
template <int B, class V, std::size_t... J>
TESSERA_HOST_FORCEINLINE void swap_blocks(V& a, V& c, std::index_sequence<J...>) {
  constexpr int N = int(sizeof...(J));
  const V lo = __builtin_shufflevector(a, c, ((J & B) ? int(N + J - B) : int(J))...);
  const V hi = __builtin_shufflevector(a, c, ((J & B) ? int(N + J) : int(J + B))...);
  a = lo;
  c = hi;
}

/// Lanes (q, q + 1) of a and b, interleaved, within each 4-lane (16-byte) group g:
/// a[4g + q], b[4g + q], a[4g + q + 1], b[4g + q + 1] (x86 unpcklps / unpckhps for q = 0 / 2).
template <int Q, class V, std::size_t... J>
TESSERA_HOST_FORCEINLINE V interleave4(const V& a, const V& b, std::index_sequence<J...>) {
  constexpr int N = int(sizeof...(J));
  return __builtin_shufflevector(
      a, b, (int(J) / 4 * 4 + Q + int(J) % 4 / 2 + (int(J) % 2 == 1 ? N : 0))...);
}
/// Within each 4-lane group: lanes (h, h + 1) of a, then lanes (h, h + 1) of b, for 4-byte
/// lanes (h = 0 or 2): shuffled as 8-byte lanes (x86 punpcklqdq / punpckhqdq, NEON zip of
/// 64-bit halves; spelled on 4-byte lanes, GCC's AVX-512 builds used a two-source permute with
/// an index register instead).
template <int H, class V, std::size_t... M>
TESSERA_HOST_FORCEINLINE V halves4(const V& a, const V& b, std::index_sequence<M...>) {
  constexpr int NL = int(sizeof...(M));  // 8-byte lanes
  using W = simd::vec<std::uint64_t, NL>;
  W a8, b8;
  std::memcpy(&a8, &a, sizeof(V));
  std::memcpy(&b8, &b, sizeof(V));
  const W r =
      __builtin_shufflevector(a8, b8, ((int(M) % 2 == 0 ? 0 : NL) + int(M) / 2 * 2 + H / 2)...);
  V out;
  std::memcpy(&out, &r, sizeof(V));
  return out;
}

/// In-register N x N transpose: r[k] = row k in, row k out of the transpose.
/// Stage B swaps the off-diagonal B x B blocks of every 2B x 2B block (the bit of the row
/// index worth B with that of the column index; the stages commute). For 4-byte elements in
/// rows of 4 or 8 lanes the last two stages are instead the 4 x 4 transposes of every 16-byte
/// group, by interleaves (the classic unpcklps / unpckhps then 64-bit unpacks): stage 1 alone
/// took two operations per row on x86 without AVX-512 (a shuffle and a blend), these take one
/// (an 8 x 8 block of floats at x86-64-v3: 24 shuffles instead of 32 and 8 blends; a 999 x 666
/// transpose, bound by its loads, ran no faster for it on a Zen 5 core).
template <class T, int N>
TESSERA_HOST_FORCEINLINE void transpose_rows(row_vec<T, N> r[N]) {
  // Every loop over rows unrolled (the rows then stay in registers): GCC's -O2 kept them in a
  // stack array (a 999 x 666 float transpose through 8 x 8 sub-blocks at 0.6x its -O3 speed).
  auto stage = [&](auto b) {
    constexpr int B = decltype(b)::value;
    TESSERA_GCC_UNROLL(16)
    for (int i = 0; i < N; ++i)
      if ((i & B) == 0) swap_blocks<B>(r[i], r[i + B], std::make_index_sequence<N>{});
  };
  if constexpr (N >= 16) stage(std::integral_constant<int, 8>{});
  if constexpr (N >= 8) stage(std::integral_constant<int, 4>{});
  if constexpr (sizeof(T) == 4 && (N == 4 || N == 8)) {
    constexpr auto lanes = std::make_index_sequence<N>{};
    constexpr auto pairs = std::make_index_sequence<N / 2>{};
    TESSERA_GCC_UNROLL(4)
    for (int g = 0; g < N; g += 4) {
      using V = row_vec<T, N>;
      const V t0 = interleave4<0>(r[g], r[g + 1], lanes);
      const V t1 = interleave4<0>(r[g + 2], r[g + 3], lanes);
      const V t2 = interleave4<2>(r[g], r[g + 1], lanes);
      const V t3 = interleave4<2>(r[g + 2], r[g + 3], lanes);
      r[g] = halves4<0>(t0, t1, pairs);
      r[g + 1] = halves4<2>(t0, t1, pairs);
      r[g + 2] = halves4<0>(t2, t3, pairs);
      r[g + 3] = halves4<2>(t2, t3, pairs);
    }
  } else {
    if constexpr (N >= 4) stage(std::integral_constant<int, 2>{});
    stage(std::integral_constant<int, 1>{});
  }
}

/// The N x N sub-block at `in` (row stride ld) transposed in registers, output row k handed
/// to store(k, row) (a plain, streaming or buffered store). Every load and store is spelled
/// out (one per row, no loop): a loop over a V[N] array kept the rows on the stack, and GCC
/// split the loads into 16-byte halves that the 32-byte shuffle loads could not forward from
/// (AVX2 8192^2 float transpose 12.6 GB/s).
template <class T, class E, int N, class Store, std::size_t... K>
TESSERA_HOST_FORCEINLINE void transpose_sub_block(const T* in, std::ptrdiff_t ld,
                                                  const Store& store, std::index_sequence<K...>) {
  using V = row_vec<E, N>;
  V r[N] = {simd::load<V>(in + std::ptrdiff_t(K) * ld)...};
#if defined(TESSERA_HOST_X86_SIMD)
  // Each row loaded whole: GCC otherwise folds the first stage (the 16-byte halves of rows k
  // and k + N / 2) into the loads, twice as many of them, each crossing a line as often where
  // the rows are not aligned (999 x 666 floats at x86-64-v3 on a Zen 5 core, one call, best of 300
  // alternated with OpenBLAS' somatcopy: 0.87-0.89x -> 0.94-0.98x its speed).
  TESSERA_GCC_UNROLL(16)
  for (int k = 0; k < N; ++k) asm("" : "+v"(r[k]));
#endif
  transpose_rows<E, N>(r);
  (store(int(K), r[K]), ...);
}
}  // namespace impl
#endif

/// True when this build writes streaming (non-temporal) stores (x86 with AVX or AVX-512).
#if defined(TESSERA_HOST_X86_SIMD)
inline constexpr bool streaming_supported = true;
#else
inline constexpr bool streaming_supported = false;
#endif

/// True when `p` can take whole-line streaming stores of B elements (64-byte aligned, and the
/// element size makes a row of B a whole number of cache lines).
template <class T>
inline bool streamable(const T* p) {
#if defined(TESSERA_HOST_X86_SIMD)
  return (sizeof(T) == 4 || sizeof(T) == 8) && std::is_trivially_copyable_v<T> &&
         reinterpret_cast<std::uintptr_t>(p) % 64 == 0;
#else
  (void)p;
  return false;
#endif
}

/// Writes the 64-byte line at `src` to `dst` (64-byte aligned) with a non-temporal store where
/// the build has them (x86 AVX / AVX-512), else an ordinary copy.
TESSERA_HOST_FORCEINLINE void stream_line(void* dst, const void* src) {
#if defined(TESSERA_HOST_X86_SIMD) && defined(__AVX512F__)
  _mm512_stream_si512(static_cast<__m512i*>(dst), _mm512_loadu_si512(src));
#elif defined(TESSERA_HOST_X86_SIMD)
  for (int b = 0; b < 64; b += 32)
    _mm256_stream_si256(
        reinterpret_cast<__m256i*>(static_cast<char*>(dst) + b),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const char*>(src) + b)));
#else
  std::memcpy(dst, src, 64);
#endif
}

/// Copies B = transpose_block_size elements from `src` to `dst`, with non-temporal stores when
/// `stream` (dst must then satisfy streamable()). Callers issue store_fence() before the data
/// is read by another thread or kernel.
template <class T>
TESSERA_HOST_FORCEINLINE void store_row(T* dst, const T* src, bool stream) {
  if constexpr ((sizeof(T) == 4 || sizeof(T) == 8) && std::is_trivially_copyable_v<T>) {
    if (stream) {
      constexpr int bytes = transpose_block_size * int(sizeof(T));
      for (int b = 0; b < bytes; b += 64)
        stream_line(reinterpret_cast<char*>(dst) + b, reinterpret_cast<const char*>(src) + b);
      return;
    }
  }
  (void)stream;
  std::memcpy(dst, src, sizeof(T) * transpose_block_size);
}

/// Elements of T from `p` to the next 64-byte line boundary (0 where p is on one; 0 to
/// 64 / sizeof(T) - 1). @pre p is aligned to sizeof(T)
template <class T>
TESSERA_HOST_FORCEINLINE std::ptrdiff_t elements_to_line(const T* p) {
  return std::ptrdiff_t((64 - reinterpret_cast<std::uintptr_t>(p) % 64) % 64 / sizeof(T));
}

/// Copies the n elements at `src` to `dst` (any alignment of either): the elements before
/// dst's first line boundary and after its last one with ordinary stores, the whole lines in
/// between with non-temporal stores where the build has them (stream_line). Callers issue
/// store_fence() before the data is read by another thread or kernel.
template <class T>
TESSERA_HOST_FORCEINLINE void stream_run(T* dst, const T* src, std::ptrdiff_t n) {
  static_assert(64 % sizeof(T) == 0, "stream_run: elements that tile a 64-byte line");
  constexpr std::ptrdiff_t line = 64 / std::ptrdiff_t(sizeof(T));
  const std::ptrdiff_t to_line = elements_to_line(dst);
  const std::ptrdiff_t head = to_line < n ? to_line : n;
  std::memcpy(dst, src, sizeof(T) * std::size_t(head));
  std::ptrdiff_t q = head;
  for (; q + line <= n; q += line) stream_line(dst + q, src + q);
  std::memcpy(dst + q, src + q, sizeof(T) * std::size_t(n - q));
}

#if defined(TESSERA_HOST_SHUFFLE)
namespace impl {
/// transpose_block through N x N sub-blocks of VB-byte vector rows (N = VB / sizeof(T)).
template <int VB, class T>
TESSERA_HOST_FORCEINLINE void transpose_block_rows(const T* in, std::ptrdiff_t ld, T* out,
                                                   std::ptrdiff_t ldo, bool stream) {
  constexpr int B = transpose_block_size;
  using E = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr int N = VB / int(sizeof(T));
  // A sub-block row is a whole cache line: streamed as it is; else the block is assembled
  // in output order and streamed by whole lines.
  constexpr bool whole_line = N * int(sizeof(T)) == 64;
  using V = row_vec<E, N>;
  alignas(64) T buf[whole_line ? 1 : B][B];
  constexpr auto rows = std::make_index_sequence<N>{};
  for (int bi = 0; bi < B; bi += N)
    for (int bj = 0; bj < B; bj += N) {
      const T* const i = in + bi * ld + bj;
      T* const o = out + bj * ldo + bi;
      if (!stream) {
        transpose_sub_block<T, E, N>(
            i, ld, [&](int k, const V& v) { simd::store(o + k * ldo, v); }, rows);
      } else if constexpr (whole_line) {
        transpose_sub_block<T, E, N>(
            i, ld, [&](int k, const V& v) { stream_line(o + k * ldo, &v); }, rows);
      } else {
        transpose_sub_block<T, E, N>(
            i, ld, [&](int k, const V& v) { simd::store(&buf[bj + k][bi], v); }, rows);
      }
    }
  if constexpr (!whole_line) {
    if (stream)
      for (int ii = 0; ii < B; ++ii) store_row(out + ii * ldo, buf[ii], true);
  }
}
}  // namespace impl
#endif

#if defined(TESSERA_HOST_SHUFFLE)
namespace impl {
/// transpose_block for 4-byte T through 4 x 4 transposes: four operand rows at a time, each
/// loaded as two 8-lane (32-byte) vectors, the 4 x 4 groups of every 16-byte lane group
/// transposed by interleaves (unpcklps / unpckhps, then 64-bit unpacks), and every output
/// row written in 16-byte pieces. For outputs whose rows do not start on a line: a 16-byte
/// store crosses a line a third as often as a 32-byte one, and the four operand rows are read
/// whole lines at a time. Measured on a 2-core AMD EPYC (Zen 5), 999 x 666 floats (output row
/// stride 3,996 bytes), one call, best of 400 alternated with OpenBLAS' somatcopy: native
/// (AVX-512) 0.85-0.87x -> 0.93-0.94x its speed (8 x 8 sub-blocks of 32-byte rows before);
/// x86-64-v3 0.93-0.95x either way.
template <class T>
TESSERA_HOST_FORCEINLINE void transpose_block_quads(const T* in, std::ptrdiff_t ld, T* out,
                                                    std::ptrdiff_t ldo) {
  static_assert(sizeof(T) == 4);
  constexpr int B = transpose_block_size;
  using V = row_vec<std::uint32_t, 8>;
  using Q = row_vec<std::uint32_t, 4>;
  constexpr auto lanes = std::make_index_sequence<8>{};
  constexpr auto pairs = std::make_index_sequence<4>{};
  // Lanes 0-3 of v to output row `o`, lanes 4-7 to the row four below, each copied from the
  // vector's own bytes: GCC then stores the upper half straight from the register
  // (vextracti128 to memory), where a shuffle into a 4-lane vector first took a vperm2i128
  // and a store (100 x 96 floats on a Zen 4 core: 1.40 -> 1.28 us).
  auto store_halves = [ldo](T* o, const V& v) {
    std::memcpy(o, &v, sizeof(Q));
    std::memcpy(o + 4 * ldo, reinterpret_cast<const char*>(&v) + sizeof(Q), sizeof(Q));
  };
  for (int g = 0; g < B; g += 4)      // operand rows g..g+3: output columns
    for (int h = 0; h < B; h += 8) {  // operand columns h..h+7: output rows
      const T* const i = in + g * ld + h;
      const V r0 = simd::load<V>(i), r1 = simd::load<V>(i + ld), r2 = simd::load<V>(i + 2 * ld),
              r3 = simd::load<V>(i + 3 * ld);
      const V t0 = interleave4<0>(r0, r1, lanes), t1 = interleave4<0>(r2, r3, lanes);
      const V t2 = interleave4<2>(r0, r1, lanes), t3 = interleave4<2>(r2, r3, lanes);
      T* const o = out + h * ldo + g;
      store_halves(o, halves4<0>(t0, t1, pairs));
      store_halves(o + ldo, halves4<2>(t0, t1, pairs));
      store_halves(o + 2 * ldo, halves4<0>(t2, t3, pairs));
      store_halves(o + 3 * ldo, halves4<2>(t2, t3, pairs));
    }
}

/// Eight output rows of a 16 x 16 block of 4-byte T: out[q * ldo + r] = in[r * ld + q] for q in
/// [0, 8), r in [0, 16), as two 8 x 8 transposes of 32-byte rows (operand rows 0-7, then 8-15,
/// of operand columns 0-7), each output row written in two 32-byte pieces. transpose_blocks'
/// `strips` kernel calls it for the upper half of every block of a row of blocks, then for the
/// lower half.
template <class T>
TESSERA_HOST_FORCEINLINE void transpose_strip_rows(const T* in, std::ptrdiff_t ld, T* out,
                                                   std::ptrdiff_t ldo) {
  static_assert(sizeof(T) == 4);
  using V = row_vec<std::uint32_t, 8>;
  constexpr auto rows = std::make_index_sequence<8>{};
  transpose_sub_block<T, std::uint32_t, 8>(
      in, ld, [&](int q, const V& v) { simd::store(out + q * ldo, v); }, rows);
  transpose_sub_block<T, std::uint32_t, 8>(
      in + 8 * ld, ld, [&](int q, const V& v) { simd::store(out + q * ldo + 8, v); }, rows);
}
}  // namespace impl
#endif

/// How transpose_blocks writes blocks of 4-byte elements whose output rows do not start on a
/// 64-byte line (a row stride that is not whole lines, e.g. seed 003's 999 x 666), in builds
/// with vectors of 32 bytes or more. Such a row stores into two lines wherever a piece crosses
/// one, and a block's 16 output rows are 16 write streams a row stride apart.
///
/// `strips` (the default) writes a row of blocks (one transpose_blocks call: a run of output
/// columns) in two strips of 8 output rows, each strip across every block of the run before the
/// next, through 8 x 8 transposes of 32-byte rows: 8 write streams at a time, each written in
/// one run of 32-byte pieces as long as the row of blocks, where the other kernels write 16
/// rows a block (64 bytes) at a time. Measured on a 2-core AMD EPYC Zen 4 (-march=native,
/// floats, output rows 7 floats longer than the transpose, 64 x 256 tiles, best of 40, every
/// kernel timed in turn), GB/s read + written, strips / quads / halves / halves_prefetched /
/// OpenBLAS 0.3.21 somatcopy: output written again and again (in cache) 96 x 96 83.7 / 72.2 /
/// 73.6 / 59.4 / 75.2; 400 x 336 70.5 / 64.3 / 54.9 / 47.7 / 70.2; 992 x 656 55.3-57.4 /
/// 46.6-48.9 / 45.1-46.0 / 41.7-42.2 / 52.2-56.4; 992 x 656 with 64 MiB written between runs
/// (the output from memory) 26.0-27.2 / 19.0-20.6 / 25.4-26.3 / 26.7-28.6 / 19.3-21.6.
/// `halves_prefetched` asks for the lines of the block two blocks on along each output row
/// before writing a block; `quads` moves 4 x 4 transposes and writes 16-byte pieces (on a Zen 5
/// core 0.93-0.94x somatcopy's speed at 999 x 666, halves 0.85-0.87x; strips not measured
/// there). `halves_prefetched_near` asks instead, right before writing a block, for the line
/// each of its output rows ends in (the one line of the row the block before did not write):
/// the 16 rows' ownership requests then overlap where each row's stores would wait for its
/// own. With the output in cache (L3) the lines arrive soon, and two blocks ahead asks too
/// early: on an Intel Xeon guest (AVX-512, 2 MiB of L2; floats, best of 300 alternated with
/// OpenBLAS 0.3.21 somatcopy, outputs written again and again) 999 x 666 at 29.7 GB/s read +
/// written, against 28.4 one block ahead, 26.9 two blocks ahead, 20.4 for `halves`, 17.1 for
/// `strips` and 27.2 for somatcopy (x86-64-v3: 29.8 / 28.8 two blocks ahead / 27.2); 1801 x
/// 1799 24.0 against 21.1 two blocks ahead. tessera::tune_transpose_unaligned times them all on
/// the running machine.
enum class unaligned_block_store : unsigned char {
  quads,   ///< 4 x 4 transposes, every output row written in 16-byte pieces, block by block
  halves,  ///< 8 x 8 transposes of 32-byte rows, every output row in 32-byte pieces, by block
  halves_prefetched,  ///< halves, each block's output lines prefetched two blocks ahead
  strips,  ///< halves' transposes, 8 output rows at a time across a row of blocks (the default)
  halves_prefetched_near,  ///< halves, each block's new output lines prefetched just before it
};

/// Every unaligned_block_store, in the order tessera::tune_transpose_unaligned times them.
inline constexpr std::array<unaligned_block_store, 5> unaligned_block_stores{
    unaligned_block_store::strips, unaligned_block_store::quads, unaligned_block_store::halves,
    unaligned_block_store::halves_prefetched, unaligned_block_store::halves_prefetched_near};

/// The kernel's short name, one word for a command line's argument: "strips", "quads",
/// "halves", "halves-prefetched" or "halves-prefetched-near".
inline const char* short_name(unaligned_block_store s) {
  switch (s) {
    case unaligned_block_store::strips:
      return "strips";
    case unaligned_block_store::quads:
      return "quads";
    case unaligned_block_store::halves:
      return "halves";
    case unaligned_block_store::halves_prefetched:
      return "halves-prefetched";
    case unaligned_block_store::halves_prefetched_near:
      return "halves-prefetched-near";
  }
  return "?";
}

/// The kernel's name, as tune_transpose_unaligned reports it: "strips (32-byte pieces, 8 rows at
/// a time)", "quads (16-byte pieces)", "halves (32-byte pieces)", "halves, output lines
/// prefetched" or "halves, output lines prefetched just before".
inline const char* to_string(unaligned_block_store s) {
  switch (s) {
    case unaligned_block_store::strips:
      return "strips (32-byte pieces, 8 rows at a time)";
    case unaligned_block_store::quads:
      return "quads (16-byte pieces)";
    case unaligned_block_store::halves:
      return "halves (32-byte pieces)";
    case unaligned_block_store::halves_prefetched:
      return "halves, output lines prefetched";
    case unaligned_block_store::halves_prefetched_near:
      return "halves, output lines prefetched just before";
  }
  return "?";
}

/// Where a CPU transpose's output lines are taken to be when its blocks are written, from the
/// output's size: `cache` where the output is under a third of the last-level cache (written
/// again, or read by the program around it, it stays there), else `memory`. The best kernel
/// differs between the two (tessera::tune_transpose_unaligned times each where it applies):
/// on a Zen 5 core (floats, alternated, best of 8; output rows 1 to 3 floats longer than the
/// transpose, 32 MiB of L3) `strips` wrote 999 x 666 at 71-74 GB/s read + written against
/// 58-65 for the others, 1201 x 1199 (5.8 MB out) 67-68 against 50-61 and 1501 x 1499 (9.0 MB)
/// 48-50 against 44-51, where `halves` wrote 1801 x 1799 (13 MB) at 25-29 GB/s against 23-25,
/// 2501 x 2499 (25 MB) 15-16 against 13 and 3537 x 3541 (50 MB) 14-15 against 13 (x86-64-v3 the
/// same but for the gap: 1.0-1.1x).
enum class transpose_output_place : unsigned char {
  cache,   ///< an output under a third of the last-level cache
  memory,  ///< larger outputs
};

/// The place of an output of `out_bytes` bytes with a last-level cache of `llc_bytes`.
inline transpose_output_place output_place_of(std::size_t out_bytes, std::size_t llc_bytes) {
  return out_bytes >= llc_bytes / 3 ? transpose_output_place::memory
                                    : transpose_output_place::cache;
}

/// How CPU transposes launched from now on write blocks of 4-byte elements whose output rows do
/// not start on a cache line, for outputs in `place` (strips until
/// tessera::set_transpose_unaligned changes it). Read once per launch; thread-safe; the values
/// are the same every way.
inline std::atomic<unaligned_block_store>& transpose_unaligned_setting(
    transpose_output_place place) {
  static std::atomic<unaligned_block_store> cache{unaligned_block_store::strips},
      memory{unaligned_block_store::strips};
  return place == transpose_output_place::cache ? cache : memory;
}

/// True when every row of a block's output starts on a 64-byte line: `out` 64-byte aligned and
/// its row stride (elements of T) whole lines.
template <class T>
inline bool block_rows_line_aligned(const T* out, std::ptrdiff_t ldo) {
  return reinterpret_cast<std::uintptr_t>(out) % 64 == 0 &&
         (ldo * std::ptrdiff_t(sizeof(T))) % 64 == 0;
}

/// out[ii * ldo + r] = in[r * ld + ii] for r, ii in [0, B), B = transpose_block_size, for each
/// of `count` blocks along a row of blocks of the output: block k is the B x B block at
/// in + k B ld (row stride `ld` elements) transposed to out + k B (row stride `ldo`). With
/// `stream`, the rows of `out` are written with non-temporal stores (out must then satisfy
/// streamable() and ldo keep every row 64-byte aligned). One call per row of blocks: the
/// choice of kernel and the block's address arithmetic once, not once per block (a call per
/// block spent about a third of a 999 x 666 float transpose in its prologue on a Zen 5 core,
/// x86-64-v3). `unaligned`: the kernel of 4-byte blocks whose output rows do not start on a
/// line (unaligned_block_store); the values are the same either way.
template <class T>
inline void transpose_blocks(const T* in, std::ptrdiff_t ld, T* out, std::ptrdiff_t ldo,
                             std::ptrdiff_t count, bool stream = false,
                             unaligned_block_store unaligned = unaligned_block_store::strips) {
  constexpr int B = transpose_block_size;
  const std::ptrdiff_t step_in = std::ptrdiff_t(B) * ld;
  (void)unaligned;  // only 4-byte types with vectors of 32 bytes or more have the choice
#if defined(TESSERA_HOST_SHUFFLE)
  // N x N sub-blocks of one vector register per row, N = the target's vector width in T
  // (at most a 64-byte line): the whole block for 4-byte types on AVX-512, four 8 x 8 blocks
  // for 8-byte ones or on AVX2, 4 x 4 blocks on SSE and NEON. Wider rows than the registers
  // would be shuffled through the stack (AVX2: 8192^2 float transpose 4.8 GB/s with 16 x 16,
  // 12.8 GB/s with 8 x 8 sub-blocks, on a Zen 4 core).
  constexpr int VB = simd::bytes < 64 ? simd::bytes : 64;
  if constexpr ((sizeof(T) == 4 || sizeof(T) == 8) && std::is_trivially_copyable_v<T> && VB >= 16) {
    // 64-byte output rows that do not start on a line (a row stride that is not whole lines)
    // each store into two lines: 32-byte rows then cross half as often, and the 16-byte pieces
    // of 4-byte types' 4 x 4 transposes (transpose_block_quads) less still. Misaligned loads cost
    // less than the extra shuffles of 32-byte rows, so only the output side decides. Measured
    // on a Zen 5 core (AVX-512, floats, one call, best of 200): 100 x 96 (output rows 400 bytes
    // apart) 1271 ns with 64-byte rows, 961-981 ns with 32-byte ones; 96 x 100 (input rows 400
    // bytes apart, output rows whole lines) 761-801 ns with 64-byte rows, 841-851 with 32-byte
    // ones; 96 x 96 531-661 ns.
    if constexpr (sizeof(T) == 4 && VB >= 32) {
      if (!stream && unaligned == unaligned_block_store::strips &&
          !block_rows_line_aligned(out, ldo)) {
        for (int h = 0; h < B; h += 8)  // output rows [h, h + 8) of every block, then the next 8
          for (std::ptrdiff_t k = 0; k < count; ++k)
            impl::transpose_strip_rows(in + k * step_in + h, ld, out + k * B + h * ldo, ldo);
        return;
      }
      if (!stream && unaligned == unaligned_block_store::quads &&
          !block_rows_line_aligned(out, ldo)) {
        for (std::ptrdiff_t k = 0; k < count; ++k)
          impl::transpose_block_quads(in + k * step_in, ld, out + k * B, ldo);
        return;
      }
      if (!stream &&
          (unaligned == unaligned_block_store::halves_prefetched ||
           unaligned == unaligned_block_store::halves_prefetched_near) &&
          !block_rows_line_aligned(out, ldo)) {
        // The last element of a row of the block two blocks on, or of this block (the line
        // the row ends in: the block before wrote the one it starts in).
        const std::ptrdiff_t ahead =
            (unaligned == unaligned_block_store::halves_prefetched ? 2 * B : 0) + B - 1;
        for (std::ptrdiff_t k = 0; k < count; ++k) {
          T* const o = out + k * B;
          for (int r = 0; r < B; ++r) simd::prefetch_write(o + r * ldo, ahead);
          impl::transpose_block_rows<32>(in + k * step_in, ld, o, ldo, false);
        }
        return;
      }
    }
    if constexpr (VB == 64) {  // (AVX2: the target's own rows are 32 bytes already)
      if (!stream && !block_rows_line_aligned(out, ldo)) {
        for (std::ptrdiff_t k = 0; k < count; ++k)
          impl::transpose_block_rows<32>(in + k * step_in, ld, out + k * B, ldo, false);
        return;
      }
    }
    if (stream) {
      for (std::ptrdiff_t k = 0; k < count; ++k)
        impl::transpose_block_rows<VB>(in + k * step_in, ld, out + k * B, ldo, true);
    } else {
      for (std::ptrdiff_t k = 0; k < count; ++k)
        impl::transpose_block_rows<VB>(in + k * step_in, ld, out + k * B, ldo, false);
    }
    return;
  }
#endif
  for (std::ptrdiff_t k = 0; k < count; ++k) {
    const T* const bin = in + k * step_in;
    T* const bout = out + k * B;
    if (stream) {
      alignas(64) T line[B];
      for (int ii = 0; ii < B; ++ii) {
        for (int r = 0; r < B; ++r) line[r] = bin[r * ld + ii];
        store_row(bout + ii * ldo, line, true);
      }
    } else {
      for (int r = 0; r < B; ++r)
        for (int ii = 0; ii < B; ++ii) bout[ii * ldo + r] = bin[r * ld + ii];
    }
  }
}

/// One block: transpose_blocks with count 1.
template <class T>
inline void transpose_block(const T* in, std::ptrdiff_t ld, T* out, std::ptrdiff_t ldo,
                            bool stream = false) {
  transpose_blocks(in, ld, out, ldo, 1, stream);
}

#if defined(TESSERA_HOST_SHUFFLE)
namespace impl {
/// transpose_block_part through N x N sub-blocks of VB-byte vector rows.
template <int VB, class T>
TESSERA_HOST_FORCEINLINE void transpose_block_part_rows(const T* in, std::ptrdiff_t ld, T* out,
                                                        std::ptrdiff_t ldo, int k0, int j0) {
  constexpr int B = transpose_block_size;
  using E = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr int N = VB / int(sizeof(T));
  using V = row_vec<E, N>;
  constexpr auto rows = std::make_index_sequence<N>{};
  for (int bi = 0; bi < B; bi += N) {  // output columns [bi, bi + N)
    if (bi + N <= j0) continue;
    for (int bj = 0; bj < B; bj += N) {  // output rows [bj, bj + N)
      if (bj + N <= k0) continue;
      T* const o = out + bj * ldo + bi;
      transpose_sub_block<T, E, N>(
          in + bi * ld + bj, ld,
          [&](int k, const V& v) {
            if (bj + k < k0) return;
            if (bi >= j0) {
              simd::store(o + k * ldo, v);
            } else {
              for (int q = j0 - bi; q < N; ++q) {
                const E lane = v[q];  // (Clang takes no address of a vector element)
                std::memcpy(o + k * ldo + q, &lane, sizeof(T));
              }
            }
          },
          rows);
    }
  }
}
}  // namespace impl
#endif

/// Part of the transposed B x B block at `in` (row stride `ld`; B = transpose_block_size, every
/// element of the block readable): out[k * ldo + j] = in[j * ld + k] for output rows k in
/// [k0, B) and columns j in [j0, B) only; the rest of `out`'s B x B area is not touched. The
/// edge of a transpose whose extents are at least B but not multiples of it: its last blocks
/// are read as full blocks ending at the edge (overlapping the blocks before them, reads only)
/// and only their own elements written, moved through vector registers like full blocks.
template <class T>
inline void transpose_block_part(const T* in, std::ptrdiff_t ld, T* out, std::ptrdiff_t ldo, int k0,
                                 int j0) {
  constexpr int B = transpose_block_size;
#if defined(TESSERA_HOST_SHUFFLE)
  constexpr int VB = simd::bytes < 64 ? simd::bytes : 64;
  if constexpr ((sizeof(T) == 4 || sizeof(T) == 8) && std::is_trivially_copyable_v<T> && VB >= 16) {
    if constexpr (VB == 64) {
      if (!block_rows_line_aligned(out, ldo)) {
        impl::transpose_block_part_rows<32>(in, ld, out, ldo, k0, j0);
        return;
      }
    }
    impl::transpose_block_part_rows<VB>(in, ld, out, ldo, k0, j0);
    return;
  }
#endif
  for (int k = k0; k < B; ++k)
    for (int j = j0; j < B; ++j) out[k * ldo + j] = in[j * ld + k];
}

/// Orders earlier streaming stores before later stores (x86 sfence); no-op elsewhere.
inline void store_fence() {
#if defined(TESSERA_HOST_X86_SIMD)
  _mm_sfence();
#endif
}

}  // namespace tessera::backends::host
