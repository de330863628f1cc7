/// \file readable.hpp
/// \brief The `readable<E>` concept: anything with a rank, an extent and element access by
///        index, readable inside kernels. `array`, `array_view` and array expressions model it;
///        reductions (`sum`, `reduce`, ...) accept any model.
#pragma once

#include <tessera/dsl/index.hpp>

#include <concepts>
#include <type_traits>
#include <utility>

namespace tessera {

namespace impl {
template <class T>
concept non_void = !std::is_void_v<T>;

// E::rank, convertible to int, between 1 and 3.
template <class E>
concept has_static_rank = requires {
  { E::rank } -> std::convertible_to<int>;
};
template <class E>
inline constexpr bool rank_1_to_3 = E::rank >= 1 && E::rank <= 3;
template <class E>
concept readable_rank = has_static_rank<E> && rank_1_to_3<E>;

// e.get_extent() returns extent<E::rank>.
template <class E>
concept readable_extent = requires(const E& e) {
  { e.get_extent() } -> std::same_as<extent<E::rank>>;
};

// Element access with exactly E::rank index_type arguments, returning a value.
template <class E>
concept element_readable = (E::rank == 1 &&
                            requires(const E& e, index_type i) {
                              { e(i) } -> non_void;
                            }) ||
                           (E::rank == 2 &&
                            requires(const E& e, index_type i, index_type j) {
                              { e(i, j) } -> non_void;
                            }) ||
                           (E::rank == 3 &&
                            requires(const E& e, index_type i, index_type j, index_type k) {
                              { e(i, j, k) } -> non_void;
                            });

template <class E, int N = E::rank>
struct readable_value;
template <class E>
struct readable_value<E, 1> {
  using type = std::remove_cvref_t<decltype(std::declval<const E&>()(index_type{}))>;
};
template <class E>
struct readable_value<E, 2> {
  using type = std::remove_cvref_t<decltype(std::declval<const E&>()(index_type{}, index_type{}))>;
};
template <class E>
struct readable_value<E, 3> {
  using type = std::remove_cvref_t<decltype(std::declval<const E&>()(index_type{}, index_type{},
                                                                     index_type{}))>;
};
}  // namespace impl

/// A readable N-dimensional value: `E::rank` (1, 2 or 3), `e.get_extent()` returning
/// `extent<E::rank>`, and element access `e(i)`, `e(i, j)` or `e(i, j, k)` with `index_type`
/// arguments (row-major, component 0 slowest) returning a value, callable inside kernels of
/// every backend (the concept can check the signature, not that the call is device-callable).
///
/// Models: `array<T,N>`, `array_view<T,N>`, array expressions.
/// \code
///   static_assert(tessera::readable<tessera::array<float, 2>>);
///   template <tessera::readable E> auto first(const E& e) { return e(0); }
/// \endcode
template <class E>
concept readable = impl::readable_rank<E> && impl::readable_extent<E> && impl::element_readable<E>;

/// The element type of a readable: `e(i...)` with references and cv-qualifiers removed.
/// `readable_value_t<array_view<const float, 2>>` is `float`.
template <readable E>
using readable_value_t = typename impl::readable_value<E>::type;

}  // namespace tessera
