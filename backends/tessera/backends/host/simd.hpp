/// \file host/simd.hpp
/// \brief The SIMD vocabulary of the host kernels (Serial, OpenMP), written once on GCC/Clang
///        vector extensions: the target's vector width and register count, `vec<T, W>` (W lanes
///        of T), unaligned loads and stores. GCC and Clang lower these to AVX-512, AVX2, SSE,
///        NEON or scalar code as the target allows. ISA intrinsics only where a compiler
///        lowers the generic form badly or cannot express it, beside the generic form
///        (widen(): float to double; add_on_fma(): additions on the multiply-add units).
///
/// Host-only: included by the CPU backends' kernels, never by a GPU device pass.
#pragma once

#include <tessera/dsl/config.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

// Two-source vector shuffles (__builtin_shufflevector): Clang, GCC 12+, never in device passes.
#if !defined(TESSERA_DEVICE_PASS) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12))
#define TESSERA_HOST_SHUFFLE 1
#include <utility>
#endif

// x86 with AVX or AVX-512, host passes only: the few operations asked for by name
// (widen(), add_on_fma(), streaming stores in transpose.hpp).
#if !defined(TESSERA_DEVICE_PASS) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    (defined(__AVX512F__) || defined(__AVX__))
#include <immintrin.h>
#define TESSERA_HOST_X86_SIMD 1
#endif

// Clang splits 512-bit vector types into two 256-bit halves unless the function asks for the
// full width (it prefers 256-bit vectors on AVX-512 targets); GCC honours vector_size as is.
// Put on the host kernels whose vectors are meant to fill a 512-bit register.
#if defined(__clang__) && (defined(__AVX512F__) || defined(TESSERA_GEMM_SIMD_BYTES))
#define TESSERA_SIMD_FULL_WIDTH __attribute__((min_vector_width(512)))
#else
#define TESSERA_SIMD_FULL_WIDTH
#endif

// The CPU row loops whose operands come from memory (plan.row_prefetches: PRK's stencil as
// sections of 8000^2 doubles) are compiled for 256-bit vectors on AVX-512 GCC builds: with
// their leading rows prefetched, 31-32 GB/s against 25-26 with 512-bit vectors on a Zen 5
// core (a likely cause, not measured: every 512-bit load one or two elements off a line
// boundary spans two lines, half of the 256-bit ones do). Loops over data in cache keep the full
// width (a 200^2 stencil: 67 GB/s at 512 bits, 47 at 256). Clang already prefers 256-bit vectors
// for loops on AVX-512 targets.
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__) && \
    !defined(TESSERA_DEVICE_PASS) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define TESSERA_MEMORY_ROWS __attribute__((noinline, target("prefer-vector-width=256")))
#define TESSERA_MEMORY_ROWS_VECTOR_BYTES 32
#else
#define TESSERA_MEMORY_ROWS
#define TESSERA_MEMORY_ROWS_VECTOR_BYTES 0
#endif

// vec<T, W> may be wider than the target's registers (16 floats on AVX2): GCC's -Wpsabi then
// notes that passing or returning one would change the ABI of an out-of-line call, which these
// always-inlined helpers never are.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace tessera::backends::host::simd {

// Bytes per SIMD register and number of SIMD registers. Override the width with
// -DTESSERA_GEMM_SIMD_BYTES=N (a power of two; 4 or 8 gives the scalar kernels).
#if defined(TESSERA_GEMM_SIMD_BYTES)
inline constexpr int bytes = TESSERA_GEMM_SIMD_BYTES;
inline constexpr int registers = TESSERA_GEMM_SIMD_BYTES >= 64 ? 32 : 16;
#elif defined(__AVX512F__)
inline constexpr int bytes = 64;
inline constexpr int registers = 32;
#elif defined(__AVX__)
inline constexpr int bytes = 32;
inline constexpr int registers = 16;
#elif defined(__aarch64__)
inline constexpr int bytes = 16;
inline constexpr int registers = 32;
#elif defined(__SSE2__) || defined(__ARM_NEON) || defined(__ALTIVEC__)
inline constexpr int bytes = 16;
inline constexpr int registers = 16;
#else
inline constexpr int bytes = 0;  // no SIMD: scalar kernels
inline constexpr int registers = 16;
#endif

/// Lanes of T in one register of the target (1 without SIMD).
template <class T>
inline constexpr int lanes = bytes / int(sizeof(T)) >= 2 ? bytes / int(sizeof(T)) : 1;

/// Asks for the cache line holding element p[ahead] to be read (GCC/Clang
/// `__builtin_prefetch`): Locality 3 into every cache level (prefetcht0 on x86, PRFM
/// PLDL1KEEP on AArch64), 2 into L2 and outward, not L1 (prefetcht1, PLDL2KEEP). The address
/// is formed in integers, so it may lie past the end of p's array: a prefetch never faults.
/// \param ahead elements (not bytes)
template <int Locality = 3, class T>
TESSERA_HOST_FORCEINLINE void prefetch(const T* p, long ahead) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) +
                                                   static_cast<std::uintptr_t>(ahead) * sizeof(T)),
                     0, Locality);
}

/// Asks for the cache line holding element p[ahead] in order to write it (GCC/Clang
/// `__builtin_prefetch` for writing: `prefetchw` on x86 targets with PRFCHW, else as
/// prefetch(); PRFM PSTL1KEEP on AArch64), into every cache level. Never faults, as
/// prefetch(). \param ahead elements (not bytes)
template <class T>
TESSERA_HOST_FORCEINLINE void prefetch_write(const T* p, long ahead) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) +
                                                   static_cast<std::uintptr_t>(ahead) * sizeof(T)),
                     1, 3);
}

/// A compiler scheduling fence (an empty GCC/Clang `asm` with a memory clobber): no load or
/// store is moved across it at compile time; the CPU still reorders as it always does, and no
/// instruction is emitted. Keeps runs of loads in the address order the code gives them.
TESSERA_HOST_FORCEINLINE void order_loads() {
  asm volatile("" ::: "memory");
}

// x86 with fused multiply-add (FMA3: Haswell and Zen on): add_on_fma() issues additions to the
// multiply-add units.
#if defined(TESSERA_HOST_X86_SIMD) && defined(__FMA__)
#define TESSERA_HOST_ADD_ON_FMA 1
#endif

template <class T, int W>
struct vec_type {
  typedef T type __attribute__((vector_size(W * sizeof(T))));
};
template <class T>
struct vec_type<T, 1> {
  using type = T;
};
/// W lanes of T as one GCC/Clang vector (T itself when W == 1): + - * / and comparisons act
/// lane-wise.
template <class T, int W = lanes<T>>
using vec = typename vec_type<T, W>::type;

/// Unaligned load of a vector V from p (sizeof(V) bytes).
template <class V, class T>
TESSERA_HOST_FORCEINLINE V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
/// Unaligned store of vector v to p.
template <class T, class V>
TESSERA_HOST_FORCEINLINE void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof(V));
}

/// The vector V whose first n lanes (0 <= n <= W, W the lanes of V) are p[0..n) and whose
/// others are `fill`; no element at or beyond p + n is read (p is not touched for n = 0).
/// Remainders of rows shorter than a vector: x86 AVX2 and AVX-512 builds load with a lane mask
/// (the masked lanes are not read, so cannot fault), elsewhere the n elements are copied.
template <class V, class T>
TESSERA_HOST_FORCEINLINE V load_first(const T* p, int n, T fill) {
  constexpr int W = int(sizeof(V) / sizeof(T));
  if (n >= W) return load<V>(p);
#if defined(TESSERA_HOST_X86_SIMD) && (defined(__AVX2__) || defined(__AVX512F__))
  // Lanes of 4 or 8 bytes, any type: loaded as the bits of floats or doubles (a load never
  // changes them).
  if constexpr ((sizeof(T) == 4 || sizeof(T) == 8) && std::is_trivially_copyable_v<T>) {
    using F = std::conditional_t<sizeof(T) == 4, float, double>;
    const F* const f = reinterpret_cast<const F*>(p);
    F ff;
    std::memcpy(&ff, &fill, sizeof(F));
#if defined(__AVX512F__) && defined(__AVX512VL__)
    const auto m = static_cast<__mmask16>((1u << (n > 0 ? n : 0)) - 1u);
    if constexpr (sizeof(T) == 4 && W == 16)
      return reinterpret_cast<V>(_mm512_mask_loadu_ps(_mm512_set1_ps(ff), m, f));
    else if constexpr (sizeof(T) == 4 && W == 8)
      return reinterpret_cast<V>(_mm256_mask_loadu_ps(_mm256_set1_ps(ff), __mmask8(m), f));
    else if constexpr (sizeof(T) == 4 && W == 4)
      return reinterpret_cast<V>(_mm_mask_loadu_ps(_mm_set1_ps(ff), __mmask8(m), f));
    else if constexpr (sizeof(T) == 8 && W == 8)
      return reinterpret_cast<V>(_mm512_mask_loadu_pd(_mm512_set1_pd(ff), __mmask8(m), f));
    else if constexpr (sizeof(T) == 8 && W == 4)
      return reinterpret_cast<V>(_mm256_mask_loadu_pd(_mm256_set1_pd(ff), __mmask8(m), f));
    else if constexpr (sizeof(T) == 8 && W == 2)
      return reinterpret_cast<V>(_mm_mask_loadu_pd(_mm_set1_pd(ff), __mmask8(m), f));
#elif defined(__AVX2__)
    if constexpr ((sizeof(T) == 4 && (W == 8 || W == 4)) ||
                  (sizeof(T) == 8 && (W == 4 || W == 2))) {
      using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
      using IV = typename vec_type<I, W>::type;
      IV iota{};
      for (int l = 0; l < W; ++l) iota[l] = I(l);
      const IV m = iota < (IV{} + I(n));  // all ones in the lanes to load
      if constexpr (sizeof(T) == 4 && W == 8)
        return reinterpret_cast<V>(_mm256_blendv_ps(
            _mm256_set1_ps(ff), _mm256_maskload_ps(f, reinterpret_cast<__m256i>(m)),
            reinterpret_cast<__m256>(m)));
      else if constexpr (sizeof(T) == 4 && W == 4)
        return reinterpret_cast<V>(_mm_blendv_ps(_mm_set1_ps(ff),
                                                 _mm_maskload_ps(f, reinterpret_cast<__m128i>(m)),
                                                 reinterpret_cast<__m128>(m)));
      else if constexpr (sizeof(T) == 8 && W == 4)
        return reinterpret_cast<V>(_mm256_blendv_pd(
            _mm256_set1_pd(ff), _mm256_maskload_pd(f, reinterpret_cast<__m256i>(m)),
            reinterpret_cast<__m256d>(m)));
      else
        return reinterpret_cast<V>(_mm_blendv_pd(_mm_set1_pd(ff),
                                                 _mm_maskload_pd(f, reinterpret_cast<__m128i>(m)),
                                                 reinterpret_cast<__m128d>(m)));
    }
#endif
  }
#endif
  alignas(sizeof(V)) T b[W];
  for (int l = 0; l < W; ++l) b[l] = l < n ? p[l] : fill;
  return load<V>(b);
}

/// A source of elements that a fold reads like memory but computes where it reads them (an
/// elementwise expression, reduce/fold.hpp): the vector folds take one in place of a pointer.
/// s + i is the source i elements on; s.load_into(v) fills vector v with the W elements at s,
/// s.load_first_into(v, n, fill) with its first n elements and `fill` beyond (only those n
/// computed). A pointer is not one.
template <class P>
concept element_source = requires(const P& s, index_type i) {
  typename P::value_type;
  { s + i } -> std::same_as<P>;
};
/// The element type of a pointer or an element_source.
template <class P>
struct element_of {
  using type = std::remove_cv_t<std::remove_pointer_t<P>>;
};
template <element_source P>
struct element_of<P> {
  using type = typename P::value_type;
};
template <class P>
using element_t = typename element_of<P>::type;
/// load and load_first of an element_source: its elements computed into a vector.
#if defined(__clang__)  // (GCC's warning is off for the whole file, above)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpsabi"
#endif
template <class V, element_source P>
TESSERA_HOST_FORCEINLINE V load(const P& s) {
  V v;
  s.load_into(v);
  return v;
}
template <class V, element_source P>
TESSERA_HOST_FORCEINLINE V load_first(const P& s, int n, typename P::value_type fill) {
  V v;
  s.load_first_into(v, n, fill);
  return v;
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
/// Lane by lane, a where the lane's index is below n, else b.
template <class V>
TESSERA_HOST_FORCEINLINE V select_first(int n, const V& a, const V& b) {
  using T = std::remove_cvref_t<decltype(a[0])>;
  constexpr int W = int(sizeof(V) / sizeof(T));
  static_assert(sizeof(T) <= 8 && (sizeof(T) & (sizeof(T) - 1)) == 0,
                "select_first: lanes of 1, 2, 4 or 8 bytes");
  using I = std::conditional_t<
      sizeof(T) == 1, std::int8_t,
      std::conditional_t<sizeof(T) == 2, std::int16_t,
                         std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>>>;
  using IV = typename vec_type<I, W>::type;
  IV iota{};
  for (int l = 0; l < W; ++l) iota[l] = I(l);
  const IV m = iota < (IV{} + I(n));
  IV ai, bi;
  std::memcpy(&ai, &a, sizeof(V));
  std::memcpy(&bi, &b, sizeof(V));
  const IV r = (ai & m) | (bi & ~m);
  V out;
  std::memcpy(&out, &r, sizeof(V));
  return out;
}

/// The W lanes of v (W elements of T) converted to A, lane by lane. GCC 12 splits a widening
/// `__builtin_convertvector` from float to double into halves, converted one by one and joined
/// again (four operations instead of one, on the busiest FP ports of a scan or a sum); where the
/// build has x86 AVX or AVX-512 the one conversion instruction is asked for by name, elsewhere
/// the generic conversion stands.
template <class A, class V>
TESSERA_HOST_FORCEINLINE auto widen(const V& v) {
  if constexpr (std::is_arithmetic_v<V>) {
    return static_cast<A>(v);
  } else {
    using T = std::remove_cvref_t<decltype(v[0])>;
    constexpr int W = int(sizeof(V) / sizeof(T));
    using AV = vec<A, W>;
    if constexpr (std::is_same_v<T, A>) {
      return v;
    } else {
#if defined(TESSERA_HOST_X86_SIMD)
      if constexpr (std::is_same_v<T, float> && std::is_same_v<A, double>) {
#if defined(__AVX512F__)
        if constexpr (W == 8)
          return reinterpret_cast<AV>(_mm512_cvtps_pd(reinterpret_cast<__m256>(v)));
#endif
        if constexpr (W == 4)
          return reinterpret_cast<AV>(_mm256_cvtps_pd(reinterpret_cast<__m128>(v)));
      }
#endif
      return __builtin_convertvector(v, AV);
    }
  }
}

/// Whether add_on_fma() issues additions to the multiply-add units (x86 FMA3) or adds.
#if defined(TESSERA_HOST_ADD_ON_FMA)
inline constexpr bool adds_on_fma = true;
#else
inline constexpr bool adds_on_fma = false;
#endif

/// A vector V with 1 in every lane that the compiler cannot see is 1 (an empty GCC/Clang `asm`
/// that may have changed it; no instruction is emitted), for add_on_fma(), whose a * 1 + b
/// the compiler would otherwise fold back into a + b (LLVM does).
template <class V>
TESSERA_HOST_FORCEINLINE V opaque_one() {
  V one = V{} + 1;
#if defined(TESSERA_HOST_ADD_ON_FMA)
  if constexpr (!std::is_arithmetic_v<V>) asm("" : "+v"(one));
#endif
  return one;
}

/// a + b, lane by lane, with the bits of a + b. Where the build has x86 FMA and V fills one
/// register of 16, 32 or 64 bytes, computed as the fused multiply-add a * one + b (a * 1 is
/// exact and the sum is rounded once, as a + b is; `one` from opaque_one()), which runs on the
/// multiply-add units: AMD's Zen cores add on two pipes and multiply-add on two others, Haswell
/// adds on one port and multiply-adds on two, later Intel cores do both on the same ports. A
/// loop with more additions than loads (a compensated sum) then gets more issue slots for
/// them, never fewer. Elsewhere a + b.
template <class V>
TESSERA_HOST_FORCEINLINE V add_on_fma(const V& a, const V& b, [[maybe_unused]] const V& one) {
#if defined(TESSERA_HOST_ADD_ON_FMA)
  if constexpr (!std::is_arithmetic_v<V>) {
    using T = std::remove_cvref_t<decltype(a[0])>;
    if constexpr (std::is_same_v<T, double> && sizeof(V) == 16)
      return reinterpret_cast<V>(_mm_fmadd_pd(reinterpret_cast<__m128d>(a),
                                              reinterpret_cast<__m128d>(one),
                                              reinterpret_cast<__m128d>(b)));
    else if constexpr (std::is_same_v<T, double> && sizeof(V) == 32)
      return reinterpret_cast<V>(_mm256_fmadd_pd(reinterpret_cast<__m256d>(a),
                                                 reinterpret_cast<__m256d>(one),
                                                 reinterpret_cast<__m256d>(b)));
    else if constexpr (std::is_same_v<T, float> && sizeof(V) == 16)
      return reinterpret_cast<V>(_mm_fmadd_ps(
          reinterpret_cast<__m128>(a), reinterpret_cast<__m128>(one), reinterpret_cast<__m128>(b)));
    else if constexpr (std::is_same_v<T, float> && sizeof(V) == 32)
      return reinterpret_cast<V>(_mm256_fmadd_ps(
          reinterpret_cast<__m256>(a), reinterpret_cast<__m256>(one), reinterpret_cast<__m256>(b)));
#if defined(__AVX512F__)
    else if constexpr (std::is_same_v<T, double> && sizeof(V) == 64)
      return reinterpret_cast<V>(_mm512_fmadd_pd(reinterpret_cast<__m512d>(a),
                                                 reinterpret_cast<__m512d>(one),
                                                 reinterpret_cast<__m512d>(b)));
    else if constexpr (std::is_same_v<T, float> && sizeof(V) == 64)
      return reinterpret_cast<V>(_mm512_fmadd_ps(
          reinterpret_cast<__m512>(a), reinterpret_cast<__m512>(one), reinterpret_cast<__m512>(b)));
#endif
  }
#endif
  return a + b;
}

#if defined(TESSERA_HOST_SHUFFLE)
namespace impl {
/// Source lane of lane k when two vectors of L lanes, each holding groups of G lanes, fold
/// into one holding groups of G / 2: a's groups first, then b's (lanes L.. are b's); `second`
/// picks the second half of each group.
constexpr int fold_pair_lane(int k, int G, int L, bool second) {
  const int h = G / 2, n = L / G, g = k / h, r = k % h;
  return (g < n ? g * G + r : L + (g - n) * G + r) + (second ? h : 0);
}
/// Source lane of lane k when the first Wd lanes of one vector, groups of G, fold into its
/// first Wd / 2 lanes, groups of G / 2 (lanes past Wd / 2 keep their value).
constexpr int fold_half_lane(int k, int G, int Wd, bool second) {
  if (k >= Wd / 2) return k;
  const int h = G / 2;
  return (k / h) * G + k % h + (second ? h : 0);
}
template <int G, int L, class V, class Op, std::size_t... J>
TESSERA_HOST_FORCEINLINE V fold_pair(const V& a, const V& b, const Op& op,
                                     std::index_sequence<J...>) {
  return op(__builtin_shufflevector(a, b, fold_pair_lane(int(J), G, L, false)...),
            __builtin_shufflevector(a, b, fold_pair_lane(int(J), G, L, true)...));
}
template <int G, int Wd, class V, class Op, std::size_t... J>
TESSERA_HOST_FORCEINLINE V fold_half(const V& a, const Op& op, std::index_sequence<J...>) {
  return op(__builtin_shufflevector(a, a, fold_half_lane(int(J), G, Wd, false)...),
            __builtin_shufflevector(a, a, fold_half_lane(int(J), G, Wd, true)...));
}
template <int G, int M, int Wd, int L, class V, class Op>
TESSERA_HOST_FORCEINLINE void fold_steps(V* v, const Op& op) {
  if constexpr (G > 1 && M >= 2) {
    for (int p = 0; p < M / 2; ++p)
      v[p] = fold_pair<G, L>(v[2 * p], v[2 * p + 1], op, std::make_index_sequence<L>{});
    fold_steps<G / 2, M / 2, Wd, L>(v, op);
  } else if constexpr (G > 1) {
    v[0] = fold_half<G, Wd>(v[0], op, std::make_index_sequence<L>{});
    fold_steps<G / 2, 1, Wd / 2, L>(v, op);
  }
}
}  // namespace impl

/// Combines every group of G consecutive elements of a line of NV vectors (NV x L elements, L
/// lanes each) with `op`, in registers: groups wider than a vector first combine their
/// vectors lane-wise, then log2 of the remaining group width steps of two-source shuffles
/// halve the groups, folding two vectors into one while more than one is left (AVX-512
/// vpermt2ps, NEON uzp). After the call the Q = NV x L / G results lie, in line order, in
/// the first Q lanes of v[0], v[1], ... (max(1, Q / L) vectors). The combination order is a
/// tree (neighbouring pairs first), not left to right: `op` must be associative, and a
/// floating-point result may differ from a sequential combination in the last bits. G and NV
/// powers of two, G <= NV x L.
template <int G, int NV, class V, class Op>
TESSERA_HOST_FORCEINLINE void fold_groups(V* v, const Op& op) {
  constexpr int L = int(sizeof(V) / sizeof(v[0][0]));
  static_assert((G & (G - 1)) == 0 && (NV & (NV - 1)) == 0 && G <= NV * L);
  if constexpr (G > L) {
    constexpr int S = G / L;  // vectors per group
    for (int p = 0; p < NV / S; ++p) {
      V a = v[p * S];
      for (int s = 1; s < S; ++s) a = op(a, v[p * S + s]);
      v[p] = a;
    }
    impl::fold_steps<L, NV / S, L, L>(v, op);
  } else {
    impl::fold_steps<G, NV, L, L>(v, op);
  }
}
#endif

}  // namespace tessera::backends::host::simd

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
