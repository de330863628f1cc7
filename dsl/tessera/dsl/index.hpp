/// \file index.hpp
/// \brief `index<N>` and `extent<N>`: C++ AMP's index space, ranks 1 to 3, 64-bit coordinates.
///        Every member is callable in kernels of every backend.
#pragma once

#include <tessera/dsl/config.hpp>

#include <ostream>
#include <string>
#include <type_traits>

namespace tessera {

template <int... T>
class tiled_extent;

namespace impl {
/// Shared by index<N> and extent<N>: N 64-bit components with C++ AMP's arithmetic. The
/// arithmetic operators are componentwise; with a scalar they apply it to every component.
template <class D, int N>
struct coords {
  static_assert(N >= 1 && N <= 3, "tessera::index<N> / extent<N>: rank N must be 1, 2 or 3");
  static constexpr int rank = N;
  index_type v[N] = {};

  TESSERA_INLINE constexpr index_type& operator[](int d) { return v[d]; }
  TESSERA_INLINE constexpr const index_type& operator[](int d) const { return v[d]; }

#define TESSERA_COORD_OPS(op)                                        \
  TESSERA_INLINE constexpr D& operator op##=(const D& o) {           \
    for (int d = 0; d < N; ++d) v[d] op## = o.v[d];                  \
    return static_cast<D&>(*this);                                   \
  }                                                                  \
  TESSERA_INLINE constexpr D& operator op##=(index_type s) {         \
    for (int d = 0; d < N; ++d) v[d] op## = s;                       \
    return static_cast<D&>(*this);                                   \
  }                                                                  \
  TESSERA_INLINE constexpr friend D operator op(D a, const D& b) {   \
    return a op## = b;                                               \
  }                                                                  \
  TESSERA_INLINE constexpr friend D operator op(D a, index_type s) { \
    return a op## = s;                                               \
  }
  TESSERA_COORD_OPS(+)
  TESSERA_COORD_OPS(-)
  TESSERA_COORD_OPS(*)
  TESSERA_COORD_OPS(/)
  TESSERA_COORD_OPS(%)
#undef TESSERA_COORD_OPS
  /// Pre-/post-increment and decrement apply to every component (C++ AMP).
  TESSERA_INLINE constexpr D& operator++() {
    return *this += 1;
  }
  TESSERA_INLINE constexpr D& operator--() {
    return *this -= 1;
  }
  TESSERA_INLINE constexpr D operator++(int) {
    D r = static_cast<D&>(*this);
    ++*this;
    return r;
  }
  TESSERA_INLINE constexpr D operator--(int) {
    D r = static_cast<D&>(*this);
    --*this;
    return r;
  }
  TESSERA_INLINE constexpr friend D operator-(const D& a) {
    D r = a;
    for (int d = 0; d < N; ++d) r.v[d] = -a.v[d];
    return r;
  }
  TESSERA_INLINE constexpr friend bool operator==(const D& a, const D& b) {
    for (int d = 0; d < N; ++d)
      if (a.v[d] != b.v[d]) return false;
    return true;
  }
  TESSERA_INLINE constexpr friend bool operator!=(const D& a, const D& b) {
    return !(a == b);
  }
};
}  // namespace impl

/// A point in an N-dimensional index space (row-major: component 0 is the slowest).
/// Arithmetic (`+ - * / %`, compound forms, with an index or a scalar, unary `-`, `++`/`--`)
/// is componentwise, as in C++ AMP.
/// \tparam N rank, 1..3
template <int N>
struct index : impl::coords<index<N>, N> {
  constexpr index() = default;
  /// index<2>(i, j) etc.; the number of arguments must equal N.
  template <class... I>
  requires(sizeof...(I) == N && (std::is_integral_v<I> && ...)) TESSERA_INLINE
      constexpr index(I... i) {
    const index_type c[N] = {static_cast<index_type>(i)...};
    for (int d = 0; d < N; ++d) this->v[d] = c[d];
  }
  /// From N components (C++ AMP's `index(const int components[])`).
  template <class I>
  requires std::is_integral_v<I> TESSERA_INLINE constexpr explicit index(const I (&c)[N]) {
    for (int d = 0; d < N; ++d) this->v[d] = static_cast<index_type>(c[d]);
  }
};

/// The shape of an N-dimensional index space: number of elements along each dimension.
/// \tparam N rank, 1..3
template <int N>
struct extent : impl::coords<extent<N>, N> {
  constexpr extent() = default;
  template <class... I>
  requires(sizeof...(I) == N && (std::is_integral_v<I> && ...)) TESSERA_INLINE
      constexpr extent(I... e) {
    const index_type c[N] = {static_cast<index_type>(e)...};
    for (int d = 0; d < N; ++d) this->v[d] = c[d];
  }
  /// From N components (C++ AMP's `extent(const int components[])`).
  template <class I>
  requires std::is_integral_v<I> TESSERA_INLINE constexpr explicit extent(const I (&c)[N]) {
    for (int d = 0; d < N; ++d) this->v[d] = static_cast<index_type>(c[d]);
  }

  /// Number of points (product of the extents); 0 for an empty extent. The product is not
  /// checked for overflow here (Tessera's allocations and launches check it).
  TESSERA_INLINE constexpr index_type size() const {
    index_type s = 1;
    for (int d = 0; d < N; ++d) s *= this->v[d];
    return s;
  }
  /// True when 0 <= idx[d] < (*this)[d] for every d.
  TESSERA_INLINE constexpr bool contains(const index<N>& idx) const {
    // Branch-free (one unsigned compare per dimension) so guarded loops vectorize.
    bool in = true;
    for (int d = 0; d < N; ++d)
      in &= static_cast<std::uint64_t>(idx[d]) < static_cast<std::uint64_t>(this->v[d]);
    return in;
  }
  /// Splits this extent into tiles of T0 x T1 x T2 points (one size per dimension).
  /// The result must be made even with pad() or truncate() before a launch unless every
  /// extent is a multiple of its tile size. Compile-time errors: wrong number of sizes,
  /// size <= 0.
  template <int... T>
  TESSERA_INLINE constexpr tiled_extent<T...> tile() const {
    static_assert(sizeof...(T) == N,
                  "tessera::extent<N>::tile<T...>(): give exactly one tile size per dimension");
    return tiled_extent<T...>(*this);
  }
  /// `extent + index` / `extent - index` (C++ AMP): the extent grown or shrunk by idx.
  TESSERA_INLINE constexpr friend extent operator+(extent e, const index<N>& i) {
    for (int d = 0; d < N; ++d) e.v[d] += i.v[d];
    return e;
  }
  TESSERA_INLINE constexpr friend extent operator-(extent e, const index<N>& i) {
    for (int d = 0; d < N; ++d) e.v[d] -= i.v[d];
    return e;
  }
  using impl::coords<extent<N>, N>::operator+=;
  using impl::coords<extent<N>, N>::operator-=;
  TESSERA_INLINE constexpr extent& operator+=(const index<N>& i) { return *this = *this + i; }
  TESSERA_INLINE constexpr extent& operator-=(const index<N>& i) { return *this = *this - i; }
};

template <class... I>
index(I...) -> index<sizeof...(I)>;
template <class... I>
extent(I...) -> extent<sizeof...(I)>;

namespace impl {
/// Row-major rank of `i` in extent `e` (no bounds check).
template <int N>
TESSERA_FORCEINLINE constexpr index_type linearize(const extent<N>& e, const index<N>& i) {
  index_type r = i[0];
  for (int d = 1; d < N; ++d) r = r * e[d] + i[d];
  return r;
}
/// The index of row-major rank `r` in extent `e` (inverse of linearize).
template <int N>
TESSERA_FORCEINLINE constexpr index<N> unflatten(const extent<N>& e, index_type r) {
  index<N> i;
  for (int d = N - 1; d > 0; --d) {
    i[d] = r % e[d];
    r /= e[d];
  }
  i[0] = r;
  return i;
}
}  // namespace impl

/// "(a,b,c)" — used in error messages.
template <class P>
requires requires(P p) {
  P::rank;
  p[0];
}
std::string to_string(const P& p) {
  std::string s = "(";
  for (int d = 0; d < P::rank; ++d) {
    if (d) s += ',';
    s += std::to_string(p[d]);
  }
  return s + ")";
}
template <int N>
std::ostream& operator<<(std::ostream& os, const index<N>& i) {
  return os << to_string(i);
}
template <int N>
std::ostream& operator<<(std::ostream& os, const extent<N>& e) {
  return os << to_string(e);
}

}  // namespace tessera
