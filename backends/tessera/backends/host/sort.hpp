/// \file host/sort.hpp
/// \brief The CPU backends' tile sorts (backends/sort.hpp): a stable LSD radix sort over the
///        bytes of arithmetic keys, and the merge-path merge of two sorted runs.
///
/// Host code (no KOKKOS_FUNCTION): called only from backends/sort.hpp's host functors, which
/// run on execution spaces whose memory the host reads.
#pragma once

#include <tessera/dsl/config.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tessera::backends::host {

/// The unsigned integer of T's size.
template <class T>
using radix_word_t = std::conditional_t<
    sizeof(T) == 1, std::uint8_t,
    std::conditional_t<sizeof(T) == 2, std::uint16_t,
                       std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;

/// Element types a radix sort orders as `<` does: integers but bool, IEEE float and double.
template <class T>
inline constexpr bool radix_key_type = (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                        sizeof(T) <= 8) ||
                                       std::is_same_v<T, float> || std::is_same_v<T, double>;

/// x's key: unsigned, ordered as x is by `<` (descending: by `>`). Floats: the sign bit set on
/// positive values, every bit flipped on negative ones (IEEE order); -0 and +0 share a key
/// (they are equivalent under `<`, and a stable sort keeps their order). Every NaN has the
/// largest key: after +infinity (before it, descending).
template <bool Descending, class T>
TESSERA_HOST_FORCEINLINE radix_word_t<T> radix_key(const T& x) {
  using U = radix_word_t<T>;
  U u;
  std::memcpy(&u, &x, sizeof(T));
  constexpr U sign = U(U(1) << (8 * sizeof(T) - 1));
  if constexpr (std::is_floating_point_v<T>) {
    if (x == T(0)) u = 0;
    u = x != x ? U(~U(0)) : (u & sign) ? U(~u) : U(u | sign);
  } else if constexpr (std::is_signed_v<T>) {
    u = U(u ^ sign);
  }
  if constexpr (Descending) u = U(~u);
  return u;
}

/// Sorts a[0, n) stably by radix_key, one counting pass over every byte at once, then one
/// scatter pass per byte whose value not every key shares (least significant first), between
/// a and b[0, n) (b's contents are overwritten). The result is in a. Cost: (1 + passes) reads
/// and `passes` scattered writes of n elements, passes <= sizeof(T).
template <bool Descending, class T>
void radix_sort(T* a, T* b, std::int64_t n) {
  constexpr int digits = int(sizeof(T));
  if (n < 2) return;
  std::array<std::array<std::int64_t, 256>, digits> count{};
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = radix_key<Descending>(a[i]);
    for (int d = 0; d < digits; ++d) ++count[std::size_t(d)][(k >> (8 * d)) & 255u];
  }
  const auto first = radix_key<Descending>(a[0]);
  T* src = a;
  T* dst = b;
  for (int d = 0; d < digits; ++d) {
    auto& c = count[std::size_t(d)];
    if (c[(first >> (8 * d)) & 255u] == n) continue;  // every key has this byte
    std::array<std::int64_t, 256> at;
    std::int64_t s = 0;
    for (std::size_t v = 0; v < 256; ++v) {
      at[v] = s;
      s += c[v];
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const T x = src[i];
      dst[at[(radix_key<Descending>(x) >> (8 * d)) & 255u]++] = x;
    }
    T* t = src;
    src = dst;
    dst = t;
  }
  if (src != a)
    std::memcpy(static_cast<void*>(a), static_cast<const void*>(src), sizeof(T) * std::size_t(n));
}

/// The elements of A[0, la) among the first d elements of the stable merge of A and B[0, lb)
/// (A's element first among equivalent ones): the merge path's crossing of diagonal d.
template <class T, class Comp>
std::int64_t merge_path(const T* A, std::int64_t la, const T* B, std::int64_t lb, std::int64_t d,
                        const Comp& comp) {
  std::int64_t lo = d > lb ? d - lb : 0, hi = d < la ? d : la;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (!comp(B[d - 1 - mid], A[mid]))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// Outputs d0 .. d1 - 1 of the stable merge of A[0, la) and B[0, lb), into out[0, d1 - d0).
template <class T, class Comp>
void merge_range(const T* A, std::int64_t la, const T* B, std::int64_t lb, std::int64_t d0,
                 std::int64_t d1, T* out, const Comp& comp) {
  std::int64_t i = merge_path(A, la, B, lb, d0, comp), j = d0 - i;
  const std::int64_t ie = merge_path(A, la, B, lb, d1, comp), je = d1 - ie;
  // Both runs have elements left: one comparison per output.
  while (i < ie && j < je) {
    const bool take_b = comp(B[j], A[i]);
    *out++ = take_b ? B[j] : A[i];
    j += take_b;
    i += !take_b;
  }
  while (i < ie) *out++ = A[i++];
  while (j < je) *out++ = B[j++];
}

}  // namespace tessera::backends::host
