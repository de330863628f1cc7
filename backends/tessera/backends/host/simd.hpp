/// \file host/simd.hpp
/// \brief The SIMD vocabulary of the host kernels (Serial, OpenMP), written once on GCC/Clang
///        vector extensions: the target's vector width and register count, `vec<T, W>` (W lanes
///        of T), unaligned loads and stores. GCC and Clang lower these to AVX-512, AVX2, SSE,
///        NEON or scalar code as the target allows; no ISA intrinsics.
///
/// Host-only: included by the CPU backends' kernels, never by a GPU device pass.
#pragma once

#include <tessera/dsl/config.hpp>

#include <cstdint>
#include <cstring>

// Clang splits 512-bit vector types into two 256-bit halves unless the function asks for the
// full width (it prefers 256-bit vectors on AVX-512 targets); GCC honours vector_size as is.
// Put on the host kernels whose vectors are meant to fill a 512-bit register.
#if defined(__clang__) && (defined(__AVX512F__) || defined(TESSERA_GEMM_SIMD_BYTES))
#define TESSERA_SIMD_FULL_WIDTH __attribute__((min_vector_width(512)))
#else
#define TESSERA_SIMD_FULL_WIDTH
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

/// Asks for the cache line holding element p[ahead] to be read into every cache level
/// (GCC/Clang `__builtin_prefetch`: prefetcht0 on x86, PRFM PLDL1KEEP on AArch64). The
/// address is formed in integers, so it may lie past the end of p's array: a prefetch never
/// faults. \param ahead elements (not bytes)
template <class T>
TESSERA_HOST_FORCEINLINE void prefetch(const T* p, long ahead) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) +
                                                   static_cast<std::uintptr_t>(ahead) * sizeof(T)),
                     0, 3);
}

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

}  // namespace tessera::backends::host::simd
