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
/// The shuffle network is the usual unpack / shuffle / lane-permute sequence (Intel 64 and
/// IA-32 Optimization Reference Manual, "Matrix transposition").
///
/// Every function has a portable scalar path; the vector paths are selected by the compiler's
/// target macros (AVX-512F, AVX) and never compiled for device passes.
#pragma once

#include <tessera/dsl/config.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if !defined(TESSERA_DEVICE_PASS) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    (defined(__AVX512F__) || defined(__AVX__))
#include <immintrin.h>
#define TESSERA_HOST_X86_SIMD 1
#endif

namespace tessera::backends::host {

/// Edge of the square blocks a staged transpose moves through registers (elements).
inline constexpr int transpose_block_size = 16;

/// Outputs at least this large (bytes) are written with non-temporal stores: they cannot stay
/// in cache for the next kernel anyway, and skipping the read-for-ownership halves the traffic
/// of the write side. Smaller outputs are stored normally so they remain cache-resident.
inline constexpr std::size_t streaming_store_min_bytes = std::size_t{32} << 20;

#if defined(TESSERA_HOST_X86_SIMD) && defined(__AVX512F__)
// GCC 12's AVX-512 headers initialise some intrinsics' results from _mm512_undefined_ps()
// and then warn about it (-Wuninitialized, GCC bug 105593) where they are inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
namespace detail {
/// In-register 16 x 16 transpose of 32-bit lanes: r[k] = row k in, row k out of the transpose.
inline void transpose16x16_ps(__m512 r[16]) {
  __m512 t[16];
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 16; k += 4) {
    r[k] = _mm512_shuffle_ps(t[k], t[k + 2], 0x44);
    r[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], 0xEE);
    r[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0x44);
    r[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0x88);
    t[k + 4] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0xDD);
    t[k + 8] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0x88);
    t[k + 12] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0xDD);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD);
    r[k + 4] = _mm512_shuffle_f32x4(t[k + 4], t[k + 12], 0x88);
    r[k + 12] = _mm512_shuffle_f32x4(t[k + 4], t[k + 12], 0xDD);
  }
}
/// In-register 8 x 8 transpose of 64-bit lanes.
inline void transpose8x8_pd(__m512d r[8]) {
  __m512d t[8];
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm512_unpacklo_pd(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_pd(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    r[k] = _mm512_shuffle_f64x2(t[k], t[k + 2], 0x88);
    r[k + 1] = _mm512_shuffle_f64x2(t[k + 1], t[k + 3], 0x88);
    r[k + 2] = _mm512_shuffle_f64x2(t[k], t[k + 2], 0xDD);
    r[k + 3] = _mm512_shuffle_f64x2(t[k + 1], t[k + 3], 0xDD);
  }
  for (int k = 0; k < 2; ++k) {
    t[k] = _mm512_shuffle_f64x2(r[k], r[k + 4], 0x88);
    t[k + 4] = _mm512_shuffle_f64x2(r[k], r[k + 4], 0xDD);
    t[k + 2] = _mm512_shuffle_f64x2(r[k + 2], r[k + 6], 0x88);
    t[k + 6] = _mm512_shuffle_f64x2(r[k + 2], r[k + 6], 0xDD);
  }
  for (int k = 0; k < 8; ++k) r[k] = t[k];
}
}  // namespace detail
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
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

/// Copies B = transpose_block_size elements from `src` to `dst`, with non-temporal stores when
/// `stream` (dst must then satisfy streamable()). Callers issue store_fence() before the data
/// is read by another thread or kernel.
template <class T>
TESSERA_HOST_FORCEINLINE void store_row(T* dst, const T* src, bool stream) {
#if defined(TESSERA_HOST_X86_SIMD)
  if constexpr ((sizeof(T) == 4 || sizeof(T) == 8) && std::is_trivially_copyable_v<T>) {
    if (stream) {
      constexpr int bytes = transpose_block_size * int(sizeof(T));
#if defined(__AVX512F__)
      for (int b = 0; b < bytes; b += 64)
        _mm512_stream_si512(reinterpret_cast<__m512i*>(reinterpret_cast<char*>(dst) + b),
                            _mm512_loadu_si512(reinterpret_cast<const char*>(src) + b));
#else
      for (int b = 0; b < bytes; b += 32)
        _mm256_stream_si256(reinterpret_cast<__m256i*>(reinterpret_cast<char*>(dst) + b),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                reinterpret_cast<const char*>(src) + b)));
#endif
      return;
    }
  }
#endif
  (void)stream;
  std::memcpy(dst, src, sizeof(T) * transpose_block_size);
}

/// out[ii * ldo + r] = in[r * ld + ii] for r, ii in [0, B), B = transpose_block_size: the B x B
/// block at `in` (row stride `ld` elements) transposed to `out` (row stride `ldo`). With
/// `stream`, the B rows of `out` are written with non-temporal stores (out must then satisfy
/// streamable() and ldo keep every row 64-byte aligned).
template <class T>
inline void transpose_block(const T* in, std::ptrdiff_t ld, T* out, std::ptrdiff_t ldo,
                            bool stream = false) {
  constexpr int B = transpose_block_size;
#if defined(TESSERA_HOST_X86_SIMD) && defined(__AVX512F__)
  if constexpr (sizeof(T) == 4 && std::is_trivially_copyable_v<T>) {
    __m512 r[16];
    for (int k = 0; k < 16; ++k)
      r[k] = _mm512_loadu_ps(reinterpret_cast<const float*>(in + k * ld));
    detail::transpose16x16_ps(r);
    float* o = reinterpret_cast<float*>(out);
    if (stream)
      for (int k = 0; k < 16; ++k) _mm512_stream_ps(o + k * ldo, r[k]);
    else
      for (int k = 0; k < 16; ++k) _mm512_storeu_ps(o + k * ldo, r[k]);
    return;
  } else if constexpr (sizeof(T) == 8 && std::is_trivially_copyable_v<T>) {
    for (int bi = 0; bi < B; bi += 8)
      for (int bj = 0; bj < B; bj += 8) {
        __m512d r[8];
        for (int k = 0; k < 8; ++k)
          r[k] = _mm512_loadu_pd(reinterpret_cast<const double*>(in + (bi + k) * ld + bj));
        detail::transpose8x8_pd(r);
        double* o = reinterpret_cast<double*>(out + bj * ldo + bi);
        if (stream)
          for (int k = 0; k < 8; ++k) _mm512_stream_pd(o + k * ldo, r[k]);
        else
          for (int k = 0; k < 8; ++k) _mm512_storeu_pd(o + k * ldo, r[k]);
      }
    return;
  }
#endif
  if (stream) {
    alignas(64) T line[B];
    for (int ii = 0; ii < B; ++ii) {
      for (int r = 0; r < B; ++r) line[r] = in[r * ld + ii];
      store_row(out + ii * ldo, line, true);
    }
    return;
  }
  for (int r = 0; r < B; ++r)
    for (int ii = 0; ii < B; ++ii) out[ii * ldo + r] = in[r * ld + ii];
}

/// True when an output of `n` elements at `p` is written with streaming stores: at least
/// streaming_store_min_bytes, and streamable(p).
template <class T>
inline bool stream_output(const T* p, std::size_t n) {
  return n * sizeof(T) >= streaming_store_min_bytes && streamable(p);
}

/// Orders earlier streaming stores before later stores (x86 sfence); no-op elsewhere.
inline void store_fence() {
#if defined(TESSERA_HOST_X86_SIMD)
  _mm_sfence();
#endif
}

}  // namespace tessera::backends::host
