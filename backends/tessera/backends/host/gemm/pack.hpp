/// \file host/gemm/pack.hpp
/// \brief Packing of the CPU gemm: blocks of A into MR-row micro-panels and panels of B into
///        NR-column micro-panels, k-major and zero-padded so the micro-kernel never branches.
#pragma once

#include <tessera/backends/host/gemm/micro_kernel.hpp>

#include <cstdint>

namespace tessera::backends::host {
namespace impl {

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

}  // namespace impl
}  // namespace tessera::backends::host
