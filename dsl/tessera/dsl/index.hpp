/// \file index.hpp
/// \brief `index<N>` and `extent<N>`: C++ AMP's index space, ranks 1 to 3, 64-bit coordinates.
#pragma once

#include <tessera/dsl/config.hpp>

#include <ostream>
#include <string>

namespace tessera {

template <int... T>
class tiled_extent;

/// A point in an N-dimensional index space (row-major: component 0 is the slowest).
/// \tparam N rank, 1..3
template <int N>
struct index {
  static_assert(N >= 1 && N <= 3, "tessera::index<N>: rank N must be 1, 2 or 3");
  static constexpr int rank = N;
  index_type v[N] = {};

  TESSERA_INLINE constexpr index() = default;
  /// index<2>(i, j) etc.; the number of arguments must equal N.
  template <class... I>
  requires(sizeof...(I) == N && N > 0 && (std::is_integral_v<I> && ...)) TESSERA_INLINE
      constexpr index(I... i)
      : v{static_cast<index_type>(i)...} {}

  TESSERA_INLINE constexpr index_type& operator[](int d) { return v[d]; }
  TESSERA_INLINE constexpr const index_type& operator[](int d) const { return v[d]; }

  TESSERA_INLINE constexpr friend index operator+(index a, const index& b) {
    for (int d = 0; d < N; ++d) a.v[d] += b.v[d];
    return a;
  }
  TESSERA_INLINE constexpr friend index operator-(index a, const index& b) {
    for (int d = 0; d < N; ++d) a.v[d] -= b.v[d];
    return a;
  }
  TESSERA_INLINE constexpr friend bool operator==(const index& a, const index& b) {
    for (int d = 0; d < N; ++d)
      if (a.v[d] != b.v[d]) return false;
    return true;
  }
};

/// The shape of an N-dimensional index space: number of elements along each dimension.
/// \tparam N rank, 1..3
template <int N>
struct extent {
  static_assert(N >= 1 && N <= 3, "tessera::extent<N>: rank N must be 1, 2 or 3");
  static constexpr int rank = N;
  index_type v[N] = {};

  TESSERA_INLINE constexpr extent() = default;
  template <class... I>
  requires(sizeof...(I) == N && (std::is_integral_v<I> && ...)) TESSERA_INLINE
      constexpr extent(I... e)
      : v{static_cast<index_type>(e)...} {}

  TESSERA_INLINE constexpr index_type& operator[](int d) { return v[d]; }
  TESSERA_INLINE constexpr const index_type& operator[](int d) const { return v[d]; }

  /// Number of points (product of the extents); 0 for an empty extent.
  TESSERA_INLINE constexpr index_type size() const {
    index_type s = 1;
    for (int d = 0; d < N; ++d) s *= v[d];
    return s;
  }
  /// True when 0 <= idx[d] < (*this)[d] for every d.
  TESSERA_INLINE constexpr bool contains(const index<N>& idx) const {
    // Branch-free (one unsigned compare per dimension) so guarded loops vectorize.
    bool in = true;
    for (int d = 0; d < N; ++d)
      in &= static_cast<std::uint64_t>(idx[d]) < static_cast<std::uint64_t>(v[d]);
    return in;
  }
  /// Splits this extent into tiles of T0 x T1 x T2 points (one size per dimension).
  /// The result must be made even with pad() or truncate() before a launch unless every
  /// extent is a multiple of its tile size. Compile-time errors: wrong number of sizes,
  /// size <= 0.
  template <int... T>
  constexpr tiled_extent<T...> tile() const {
    static_assert(sizeof...(T) == N,
                  "tessera::extent<N>::tile<T...>(): give exactly one tile size per dimension");
    return tiled_extent<T...>(*this);
  }
  TESSERA_INLINE constexpr friend bool operator==(const extent& a, const extent& b) {
    for (int d = 0; d < N; ++d)
      if (a.v[d] != b.v[d]) return false;
    return true;
  }
};

template <class... I>
index(I...) -> index<sizeof...(I)>;
template <class... I>
extent(I...) -> extent<sizeof...(I)>;

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
