/// \file tiled_extent.hpp
/// \brief `tiled_extent<T0[,T1[,T2]]>` (an extent split into compile-time tiles, with C++ AMP's
///        pad() and truncate()) and `tiled_index<T...>` (one logical thread's coordinates).
///        Every member is callable in kernels of every backend.
#pragma once

#include <tessera/dsl/index.hpp>
#include <tessera/dsl/per_thread.hpp>

namespace tessera {

template <class U>
class tile_static_ref;

namespace impl {
template <int... T>
constexpr bool positive_tiles() {
  return ((T > 0) && ...);
}
template <int K, int... T>
constexpr int tile_dim() {
  constexpr int d[] = {T..., 0, 0};
  return K < int(sizeof...(T)) ? d[K] : 0;
}
}  // namespace impl

/// An extent split into tiles of T0 (x T1 (x T2)) points, the tile sizes fixed at compile time.
/// A launch runs one tile per Kokkos team (league size = number of tiles).
/// Semantics follow C++ AMP: `extent<2>(999,666).tile<16,16>()` keeps the extent (999,666);
/// `.pad()` rounds every extent up to a tile multiple, (1008,672); `.truncate()` rounds it
/// down, (992,656). Launching an extent that is not a tile multiple throws shape_error, as
/// does a negative extent (pad() and truncate() leave negative extents negative).
/// \tparam T tile sizes per dimension, each > 0 (checked at compile time); rank = sizeof...(T)
template <int... T>
class tiled_extent : public extent<sizeof...(T)> {
  static_assert(sizeof...(T) >= 1 && sizeof...(T) <= 3,
                "tessera::tiled_extent<T...>: between 1 and 3 tile sizes");
  static_assert(impl::positive_tiles<T...>(),
                "tessera::tiled_extent<T...>: tile sizes must be positive (got a size <= 0)");

 public:
  static constexpr int rank = sizeof...(T);
  using base = extent<rank>;
  /// C++ AMP's tile_dim0, tile_dim1, tile_dim2 (0 beyond the rank).
  static constexpr int tile_dim0 = impl::tile_dim<0, T...>();
  static constexpr int tile_dim1 = impl::tile_dim<1, T...>();
  static constexpr int tile_dim2 = impl::tile_dim<2, T...>();
  /// Logical threads per tile (T0*T1*T2).
  static constexpr int tile_size = (T * ...);
  /// The tile shape as a value, e.g. (16,16) (C++ AMP's tile_extent).
  static constexpr base tile_extent = base(T...);

  constexpr tiled_extent() = default;
  TESSERA_INLINE constexpr explicit tiled_extent(const base& e) : base(e) {}
  /// The tiles of a sub-domain: the extent e starting at global index `origin` (see
  /// sub_domain::tile). Tile k's first logical thread has global index origin + k * tile_extent.
  TESSERA_INLINE constexpr tiled_extent(const base& e, const index<rank>& origin)
      : base(e), origin_(origin) {}

  /// The tile shape (same as tile_extent).
  TESSERA_INLINE static constexpr base get_tile_extent() { return base(T...); }
  /// The extent itself (C++ AMP's get_extent of a tiled_extent).
  TESSERA_INLINE constexpr base get_extent() const { return *this; }
  /// Global index of the first tile's first logical thread: (0, ...) unless the tiles come
  /// from a sub_domain. pad() and truncate() keep it.
  TESSERA_INLINE constexpr index<rank> get_origin() const { return origin_; }

  /// Every extent rounded up to a multiple of its tile size. Tiles past the original extent
  /// hold logical threads whose global index lies outside it: use guarded_read/guarded_write.
  TESSERA_INLINE constexpr tiled_extent pad() const {
    tiled_extent r(*this);
    constexpr int dims[rank] = {T...};
    for (int d = 0; d < rank; ++d)
      if (r[d] > 0) r[d] = (r[d] + dims[d] - 1) / dims[d] * dims[d];
    return r;
  }
  /// Every extent rounded down to a multiple of its tile size; the remainder is not covered by
  /// the launch and must be handled by the caller (e.g. by the last tiles, or a second launch).
  TESSERA_INLINE constexpr tiled_extent truncate() const {
    tiled_extent r(*this);
    constexpr int dims[rank] = {T...};
    for (int d = 0; d < rank; ++d)
      if (r[d] > 0) r[d] = r[d] / dims[d] * dims[d];
    return r;
  }
  /// True when every extent is a non-negative multiple of its tile size (a launchable extent).
  TESSERA_INLINE constexpr bool is_even() const {
    constexpr int dims[rank] = {T...};
    for (int d = 0; d < rank; ++d)
      if ((*this)[d] < 0 || (*this)[d] % dims[d] != 0) return false;
    return true;
  }
  /// Number of tiles along each dimension (rounded down).
  TESSERA_INLINE constexpr base tile_counts() const {
    constexpr int dims[rank] = {T...};
    base c;
    for (int d = 0; d < rank; ++d) c[d] = (*this)[d] / dims[d];
    return c;
  }
  /// Number of tiles (the league size of a launch).
  TESSERA_INLINE constexpr index_type tile_count() const { return tile_counts().size(); }

 private:
  index<rank> origin_{};
};

/// A sub-domain: the points origin + i, 0 <= i < extent (an extent with an origin). Launching
/// over one runs the kernel only there, e.g. on the interior of a grid, so a stencil that
/// reads R points around each point needs no bounds tests:
/// \code
///   // B(i, j) = A's 5-point average on [1, n-1)^2; the border of B is not written
///   tessera::parallel_for_each(tessera::interior(A.extent, 1),
///                              TESSERA_KERNEL(const tessera::index<2>& i) {
///     B[i] = 0.2f * (A[i] + A(i[0] - 1, i[1]) + A(i[0] + 1, i[1]) + A(i[0], i[1] - 1) +
///                    A(i[0], i[1] + 1));
///   });
/// \endcode
/// `sub_domain::tile<T...>()` gives the tiled form: tile k's first logical thread has global
/// index origin + k * tile_extent (padding and truncation as for an extent; a padded sub-domain
/// has logical threads outside it: test `dom.contains(t.global)`). Kokkos' MDRangePolicy
/// takes the same begin/end pair.
template <int N>
struct sub_domain {
  static constexpr int rank = N;
  index<N> origin;            ///< global index of the first point (any sign)
  tessera::extent<N> extent;  ///< points per dimension (>= 0 to launch)
  constexpr sub_domain() = default;
  TESSERA_INLINE constexpr sub_domain(const index<N>& o, const tessera::extent<N>& e)
      : origin(o), extent(e) {}
  /// The whole extent e, from (0, ...).
  TESSERA_INLINE constexpr explicit sub_domain(const tessera::extent<N>& e) : extent(e) {}
  /// True when origin <= i < origin + extent in every dimension.
  TESSERA_INLINE constexpr bool contains(const index<N>& i) const {
    for (int d = 0; d < N; ++d)
      if (i[d] < origin[d] || i[d] >= origin[d] + extent[d]) return false;
    return true;
  }
  /// The sub-domain split into tiles of T0 x T1 x T2 points (see tiled_extent).
  template <int... T>
  TESSERA_INLINE constexpr tiled_extent<T...> tile() const {
    static_assert(sizeof...(T) == N,
                  "tessera::sub_domain<N>::tile<T...>(): give exactly one tile size per dimension");
    return tiled_extent<T...>(extent, origin);
  }
};
/// The interior of extent e at distance r from every edge: origin (r, ...), extent e - 2r in
/// every dimension (0 where e <= 2r). The points a radius-r stencil can update without reading
/// outside e.
template <int N>
TESSERA_INLINE constexpr sub_domain<N> interior(const extent<N>& e, index_type r) {
  sub_domain<N> s;
  for (int d = 0; d < N; ++d) {
    s.origin[d] = r;
    s.extent[d] = e[d] > 2 * r ? e[d] - 2 * r : 0;
  }
  return s;
}

/// The coordinates of one logical thread in a tiled launch.
/// `global = tile_origin + local`, `tile_origin = origin + tile * tile_extent` (origin: the
/// launch's sub-domain origin, usually (0, ...)). Converts to
/// `index<rank>` (the global index), so `a[t]` reads a's element at t.global, as in C++ AMP.
template <int... T>
struct tiled_index {
  static constexpr int rank = sizeof...(T);
  static constexpr int tile_size = (T * ...);
  static constexpr int tile_dim0 = impl::tile_dim<0, T...>();
  static constexpr int tile_dim1 = impl::tile_dim<1, T...>();
  static constexpr int tile_dim2 = impl::tile_dim<2, T...>();
  /// The tile shape as a value.
  static constexpr extent<rank> tile_extent = extent<rank>(T...);
  index<rank> global;       ///< position in the (padded) compute domain
  index<rank> local;        ///< position inside the tile, 0 <= local[d] < T_d
  index<rank> tile;         ///< which tile
  index<rank> tile_origin;  ///< global index of the tile's local (0,...,0)
  /// Row-major rank of `local` inside the tile, 0 <= r < T0*T1*T2.
  TESSERA_INLINE constexpr int local_linear() const {
    constexpr int dims[rank] = {T...};
    int r = 0;
    for (int d = 0; d < rank; ++d) r = r * dims[d] + static_cast<int>(local[d]);
    return r;
  }
  /// The global index (C++ AMP's implicit conversion of a tiled_index).
  TESSERA_INLINE constexpr operator index<rank>() const { return global; }
  /// The tile shape (same as tile_extent).
  TESSERA_INLINE static constexpr extent<rank> get_tile_extent() { return extent<rank>(T...); }

  /// C++ AMP's `t.barrier`, in a per-thread kernel (`kernel(const tiled_index<T...>& t)`):
  /// `t.barrier.wait()` waits until every logical thread of the tile has reached it (and the
  /// three fence variants). Not a barrier in a phase kernel's for_each body.
  per_thread_barrier barrier;

  /// C++ AMP's `tile_static U name;` in a per-thread kernel: a buffer of type U (a scalar or a C
  /// array such as float[16][16], at most 3 extents) shared by the tile's logical threads,
  /// uninitialized: `auto s = t.tile_static<float[16][16]>("s");`. A declaration is identified
  /// by its name, source line and type: run again (in a loop, as seed 002 declares its tiles,
  /// or in a helper called twice) it names the same storage, as a C++ AMP tile_static variable
  /// does; two unnamed declarations of one type on one line share storage (name them). At most
  /// 16 distinct declarations. Team scratch under the GPU mapping, a per-tile arena on CPUs;
  /// checked mode bounds-checks and race-checks it. Defined in tile_group.hpp.
  /// \param name [in] shown by explain() and checked-mode findings; file, line: the caller's
  template <class U>
  TESSERA_INLINE tile_static_ref<U> tile_static(const char* name = nullptr,
                                                const char* file = __builtin_FILE(),
                                                unsigned line = __builtin_LINE()) const;
};

}  // namespace tessera
