/// \file boundary.hpp
/// \brief Boundary policies: what a read outside an operand's extent returns. Used by Tier 1's
///        `shift(e, d, b)` and by Tier 0's halo loads (`tile_group::load_halo`). Halide's
///        BoundaryConditions are the model. With n the extent of a dimension and j the index read:
///         * `zero`: T(0);  `constant(v)`: v converted to T;
///         * `clamp`: the nearest edge element (j < 0 reads 0, j >= n reads n - 1; Halide's
///           repeat_edge);
///         * `periodic`: j mod n (Halide's repeat_image);
///         * `mirror`: reflected about the edge, the edge repeated (-1 reads 0, -2 reads 1, n
///           reads n - 1; Halide's mirror_image), for any distance (period 2n).
///        An operand with an empty dimension has no element to repeat: every policy reads T(0)
///        (zero) or v (constant) there.
#pragma once

#include <tessera/dsl/index.hpp>

namespace tessera::boundary {

enum class kind { zero, constant, clamp, periodic, mirror };
/// A boundary policy (its value is used by `constant` only).
struct policy {
  kind k = kind::zero;
  double value = 0.0;
};
inline constexpr policy zero{kind::zero, 0.0};
inline constexpr policy clamp{kind::clamp, 0.0};
inline constexpr policy periodic{kind::periodic, 0.0};
inline constexpr policy mirror{kind::mirror, 0.0};
/// Reads outside the operand return v (converted to the element type).
constexpr policy constant(double v) {
  return {kind::constant, v};
}
inline const char* to_string(kind k) {
  switch (k) {
    case kind::zero:
      return "zero";
    case kind::constant:
      return "constant";
    case kind::clamp:
      return "clamp";
    case kind::periodic:
      return "periodic";
    case kind::mirror:
      return "mirror";
  }
  return "?";
}
/// True when the policy reads an element of the operand for j outside (clamp, periodic,
/// mirror), false when it supplies a value (zero, constant).
TESSERA_INLINE constexpr bool remaps(kind k) {
  return k == kind::clamp || k == kind::periodic || k == kind::mirror;
}
/// Index j of a dimension of extent n > 0, j outside [0, n), mapped inside by the clamp,
/// periodic or mirror policy k.
TESSERA_INLINE constexpr index_type inside(kind k, index_type j, index_type n) {
  if (k == kind::clamp) return j < 0 ? 0 : n - 1;
  if (k == kind::periodic) {
    const index_type m = j % n;
    return m < 0 ? m + n : m;
  }
  index_type m = j % (2 * n);  // mirror: period 2n, the edge repeated
  if (m < 0) m += 2 * n;
  return m < n ? m : 2 * n - 1 - m;
}
/// Element i of `src` (an array, array_view or anything indexable by index<N>) of extent
/// `ext` under policy b, as type T: src[i] inside, the policy's element or value outside.
template <class T, class Src, int N>
TESSERA_FORCEINLINE T read(const Src& src, const extent<N>& ext, index<N> i, const policy& b) {
  bool in = true;
  for (int d = 0; d < N; ++d) in = in && i[d] >= 0 && i[d] < ext[d];
  if (in) return static_cast<T>(src[i]);
  bool empty = false;
  for (int d = 0; d < N; ++d) empty = empty || ext[d] <= 0;
  if (b.k == kind::zero || (empty && b.k != kind::constant)) return T(0);
  if (b.k == kind::constant) return static_cast<T>(b.value);
  for (int d = 0; d < N; ++d)
    if (i[d] < 0 || i[d] >= ext[d]) i[d] = inside(b.k, i[d], ext[d]);
  return static_cast<T>(src[i]);
}

}  // namespace tessera::boundary
