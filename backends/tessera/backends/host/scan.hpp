/// \file host/scan.hpp
/// \brief The CPU backends' vector scan of a contiguous run (the scans of backends/scan.hpp):
///        W elements per vector register, scanned inside the register in log2(W) shift-and-
///        combine steps, then combined with the carry of the elements before them.
///
/// Host-only: included by the CPU backends, never by a GPU device pass.
#pragma once

#include <tessera/backends/host/simd.hpp>
#include <tessera/backends/host/transpose.hpp>
#include <tessera/dsl/expr/ops.hpp>

#include <limits>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace tessera::backends::host {

#if defined(TESSERA_HOST_SHUFFLE)
namespace scan_impl {
/// Lane j of step s (a power of two) of a Sklansky scan, from (identity, x): lanes whose bit s
/// is set take the last lane of the lower half of their block of 2s lanes, the others the
/// identity.
constexpr int sklansky_lane(int j, int s, int w) {
  return (j & s) ? w + (j & ~(2 * s - 1)) + s - 1 : j;
}
template <int S, int W, class V, class Op, std::size_t... J>
TESSERA_HOST_FORCEINLINE V scan_step(const V& x, const V& id, const Op& op,
                                     std::index_sequence<J...>) {
  return op(__builtin_shufflevector(id, x, sklansky_lane(int(J), S, W)...), x);
}
/// Inclusive scan of the W lanes of x with op, lane 0 first: after the step by s, lane j
/// holds the combination of lanes (j & ~(2s - 1)) .. j (Sklansky's scan in registers: each step
/// adds the last lane of a block's lower half to its upper half; the lanes of the lower halves
/// combine with op's identity). The shuffles of the first steps stay inside 128-bit lanes or
/// broadcast one lane, which CPUs run faster than general two-source permutations.
template <int S, int W, class V, class Op>
TESSERA_HOST_FORCEINLINE V scan_lanes(V x, const V& id, const Op& op) {
  if constexpr (S < W) {
    x = scan_step<S, W>(x, id, op, std::make_index_sequence<W>{});
    return scan_lanes<2 * S, W>(x, id, op);
  } else {
    return x;
  }
}
/// The identity of a recognised operator in A.
template <class Op, class A>
constexpr A identity() {
  using L = std::numeric_limits<A>;
  switch (ops::reduction_of<Op>) {
    case ops::reduction_kind::product:
      return A(1);
    case ops::reduction_kind::min:
      return L::has_infinity ? L::infinity() : L::max();
    case ops::reduction_kind::max:
      return L::has_infinity ? -L::infinity() : L::lowest();
    default:
      return A(0);
  }
}
/// Lane 0: c's lane First; lane j: s's lane j - 1 (an inclusive scan's lanes shifted into an
/// exclusive one).
template <int W, int First = 0, class V, std::size_t... J>
TESSERA_HOST_FORCEINLINE V exclusive_lanes(const V& c, const V& s, std::index_sequence<J...>) {
  return __builtin_shufflevector(c, s, (J == 0 ? First : W + int(J) - 1)...);
}
/// Loads W elements of T from p converted to A (a vector V of W lanes of A; simd::widen).
template <class V, class T, class A, int W>
TESSERA_HOST_FORCEINLINE V load_as(const T* p) {
  return simd::widen<A>(simd::load<simd::vec<T, W>>(p));
}
/// Whether a vector of `Bytes` bytes can be stored with one non-temporal store in this build.
template <std::size_t Bytes>
inline constexpr bool streamable_vector =
#if defined(TESSERA_HOST_X86_SIMD)
    Bytes == 32 || (Bytes == 64 && simd::bytes >= 64);
#else
    false;
#endif
/// Stores the W lanes of x, converted to T, to p; with `Stream` (p aligned to the vector's
/// size) by a non-temporal store, which writes the line without reading it first.
template <class T, int W, bool Stream = false, class V>
TESSERA_HOST_FORCEINLINE void store_as(T* p, const V& x) {
  using VT = simd::vec<T, W>;
  VT y;
  if constexpr (std::is_same_v<V, VT>)
    y = x;
  else
    y = __builtin_convertvector(x, VT);
  if constexpr (Stream && streamable_vector<sizeof(VT)>) {
#if defined(TESSERA_HOST_X86_SIMD)
    if constexpr (sizeof(VT) == 64)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(p), reinterpret_cast<__m512i>(y));
    else
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), reinterpret_cast<__m256i>(y));
#endif
  } else {
    simd::store(p, y);
  }
}
template <int W, class V, std::size_t... J>
TESSERA_HOST_FORCEINLINE V last_lane(const V& x, std::index_sequence<J...>) {
  return __builtin_shufflevector(x, x, (int(J) * 0 + W - 1)...);
}
}  // namespace scan_impl

/// True when scan_run has a vector form for element type T, accumulator A and operator Op:
/// arithmetic types and the recognised operators (sum, product, min, max).
template <class T, class A, class Op>
inline constexpr bool vector_scan =
    std::is_arithmetic_v<T>&& std::is_arithmetic_v<A> && !std::is_same_v<T, bool> &&
    ops::reduction_of<Op> != ops::reduction_kind::other && simd::lanes<A> >= 2;

/// Scans n contiguous elements in[0..n) into out[0..n) with op, starting from carry `acc`
/// (the combination of everything before in[0]): out[j] = acc (op) in[0] (op) ... (op) in[j]
/// (Exclusive: up to in[j - 1], out[0] = acc), computed in A and converted to T; acc ends as the
/// combination through in[n-1]. Inside a register the lanes combine as a log-step tree, so a
/// floating-point sum may differ from a left-to-right one in the last bits of A (for float data A
/// is double: the result is the exact prefix sum rounded once to float, up to n * 2^-53 of the sum
/// of magnitudes; the identity fills the lanes a step shifts in, so a prefix that is -0.0 may come
/// out as +0.0). The carry chain is one combine per 2W elements. in and out may be the same
/// pointer. Stream: every store is non-temporal (out + W * k aligned to W * sizeof(T) bytes).
template <bool Exclusive, int W, bool Stream, class T, class A, class Op>
requires vector_scan<T, A, Op> TESSERA_HOST_FORCEINLINE void scan_block(const T* in, T* out,
                                                                        index_type n, A& acc,
                                                                        const Op&) {
  using op_t = ops::canonical_reduction<Op>;
  const op_t op{};
  using V = simd::vec<A, W>;
  V c, id;  // every lane the carry; every lane the identity
  for (int l = 0; l < W; ++l) {
    c[l] = acc;
    id[l] = scan_impl::identity<Op, A>();
  }
  auto load = [&](index_type k) {
    return scan_impl::load_as<V, T, A, W>(in + k);
  };
  auto store = [&](index_type k, const V& v) {
    scan_impl::store_as<T, W, Stream>(out + k, v);
  };
  index_type j = 0;
  // Two registers a step, scanned as one run of 2W lanes (the second register combines with
  // the first's last lane); both then combine with the carry, and the next carry is the carry
  // combined with the run's last lane: the chain from one step to the next is one combine per
  // 2W elements.
  for (; j + 2 * W <= n; j += 2 * W) {
    const V x0 = scan_impl::scan_lanes<1, W>(load(j), id, op);
    const V x1 = op(scan_impl::last_lane<W>(x0, std::make_index_sequence<W>{}),
                    scan_impl::scan_lanes<1, W>(load(j + W), id, op));
    V s0, s1;
    if constexpr (Exclusive) {
      // Each lane takes the run's value one lane down (lane 0 of the first register the
      // identity, of the second the first's last lane), then the carry.
      s0 = op(c, scan_impl::exclusive_lanes<W>(id, x0, std::make_index_sequence<W>{}));
      s1 = op(c, scan_impl::exclusive_lanes<W, W - 1>(x0, x1, std::make_index_sequence<W>{}));
    } else {
      s0 = op(c, x0);
      s1 = op(c, x1);
    }
    c = op(c, scan_impl::last_lane<W>(x1, std::make_index_sequence<W>{}));
    store(j, s0);
    store(j + W, s1);
  }
  for (; j + W <= n; j += W) {
    const V x = scan_impl::scan_lanes<1, W>(load(j), id, op);
    V s = op(c, x);
    if constexpr (Exclusive) s = scan_impl::exclusive_lanes<W>(c, s, std::make_index_sequence<W>{});
    c = op(c, scan_impl::last_lane<W>(x, std::make_index_sequence<W>{}));
    store(j, s);
  }
  A a = c[0];
  for (; j < n; ++j) {
    const A x = A(in[j]);
    if constexpr (Exclusive) {
      out[j] = T(a);
      a = op(a, x);
    } else {
      a = op(a, x);
      out[j] = T(a);
    }
  }
  acc = a;
}

/// Whether scans should use 512-bit registers on this CPU: false on AMD family 19h (Zen 4
/// executes 512-bit operations as two 256-bit halves and scans faster in 256-bit registers),
/// true elsewhere (Intel; Zen 5, measured faster in 512-bit registers). Read once from CPUID.
inline bool full_width_shuffles() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  static const bool full = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return true;
    const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
    if (!__get_cpuid(1, &a, &b, &c, &d)) return true;
    const unsigned family = ((a >> 8) & 0xf) + (((a >> 8) & 0xf) == 0xf ? (a >> 20) & 0xff : 0);
    return !(amd && family == 0x19);
  }();
  return full;
#else
  return true;
#endif
}

/// The in-register scan is bound by shuffles and conversions: log2(W) shuffles per vector, one
/// more for the carry. Vectors of the widest kind where full_width_shuffles() (a Zen 5 core:
/// float data with a double carry, 2^20 elements, 39 GB/s in 8 lanes against 30 in 4), of 32
/// bytes elsewhere (a Zen 4 core: 2.2 G/s in 4 lanes, 1.95 G/s in 8).
/// Calls f(std::integral_constant<int, W>{}) with the W chosen for accumulator A.
template <class A, class F>
TESSERA_HOST_FORCEINLINE void with_scan_width(F&& f) {
  constexpr int wide = simd::lanes<A>;
  if constexpr (wide * int(sizeof(A)) > 32) {
    if (full_width_shuffles())
      f(std::integral_constant<int, wide>{});
    else
      f(std::integral_constant<int, 32 / int(sizeof(A))>{});
  } else {
    f(std::integral_constant<int, wide>{});
  }
}

template <bool Exclusive, class T, class A, class Op>
requires vector_scan<T, A, Op> TESSERA_HOST_FORCEINLINE void scan_block(const T* in, T* out,
                                                                        index_type n, A& acc,
                                                                        const Op& op) {
  with_scan_width<A>(
      [&](auto w) { scan_block<Exclusive, decltype(w)::value, false>(in, out, n, acc, op); });
}

/// scan_block with the output written by streaming stores when `stream` (outputs larger than
/// the caches, not read by the scan: no read-for-ownership, 2 transfers per element instead of
/// 3). Up to the first 64-byte boundary of out the stores are ordinary; after it each register
/// of results is streamed as it is computed where the build has a non-temporal store of its
/// size (x86 AVX, AVX-512), else each 256 elements are scanned into an L1 buffer and streamed
/// in whole lines. A store fence ends the run.
template <bool Exclusive, class T, class A, class Op>
requires vector_scan<T, A, Op>
void scan_run(const T* in, T* out, index_type n, A& acc, const Op& op, bool stream) {
  constexpr index_type L = 256;
  if (!stream || n < 4 * L || !(sizeof(T) == 4 || sizeof(T) == 8) ||
      reinterpret_cast<std::uintptr_t>(out) % sizeof(T) != 0) {
    scan_block<Exclusive>(in, out, n, acc, op);
    return;
  }
  const index_type head = elements_to_line(out);
  scan_block<Exclusive>(in, out, head, acc, op);
  with_scan_width<A>([&](auto w) {
    constexpr int W = decltype(w)::value;
    if constexpr (scan_impl::streamable_vector<W * sizeof(T)>) {
      scan_block<Exclusive, W, true>(in + head, out + head, n - head, acc, op);
    } else {
      index_type j = head;
      alignas(64) T buf[L];
      for (; j + L <= n; j += L) {
        scan_block<Exclusive, W, false>(in + j, buf, L, acc, op);
        for (index_type b = 0; b < L; b += index_type(64 / sizeof(T)))
          stream_line(out + j + b, buf + b);
      }
      scan_block<Exclusive, W, false>(in + j, out + j, n - j, acc, op);
    }
  });
  store_fence();
}
#endif

}  // namespace tessera::backends::host

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
