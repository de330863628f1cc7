/// \file eigen.hpp
/// \brief Conversions between Tessera arrays and Eigen matrices/vectors (the reference every
///        Tessera result is checked against).
#pragma once

#include <tessera/dsl/array.hpp>

#include <Eigen/Core>

namespace tessera {

/// Row-major dynamic Eigen matrix: the natural counterpart of array<T,2> (LayoutRight).
template <class T>
using eigen_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using eigen_vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

/// Copies an array<T,2> (rows x cols) to the host as a row-major Eigen matrix.
template <class T>
eigen_matrix<T> to_eigen(const array<T, 2>& a) {
  eigen_matrix<T> m(a.extent[0], a.extent[1]);
  if (m.size() == 0) return m;
  Kokkos::deep_copy(impl::wrap_view<impl::unmanaged_host_view_t<T, 2>>(m.data(), a.extent),
                    a.view());
  return m;
}
/// Copies an array<T,1> to the host as an Eigen column vector.
template <class T>
eigen_vector<T> to_eigen(const array<T, 1>& a) {
  eigen_vector<T> v(a.extent[0]);
  if (v.size() == 0) return v;
  Kokkos::deep_copy(impl::wrap_view<impl::unmanaged_host_view_t<T, 1>>(v.data(), a.extent),
                    a.view());
  return v;
}

/// Copies any Eigen matrix expression into a new array<T,2> (rows x cols), whatever its storage
/// order; Eigen vectors (compile-time one column) become array<T,1>.
template <class Derived>
auto from_eigen(const Eigen::DenseBase<Derived>& m) {
  using T = typename Derived::Scalar;
  if constexpr (Derived::ColsAtCompileTime == 1) {
    eigen_vector<T> tmp = m;
    array<T, 1> a(extent<1>(tmp.size()));
    if (tmp.size())
      Kokkos::deep_copy(a.view(),
                        impl::wrap_view<impl::unmanaged_host_view_t<T, 1>>(tmp.data(), a.extent));
    return a;
  } else {
    eigen_matrix<T> tmp = m;
    array<T, 2> a(extent<2>(tmp.rows(), tmp.cols()));
    if (tmp.size())
      Kokkos::deep_copy(a.view(),
                        impl::wrap_view<impl::unmanaged_host_view_t<T, 2>>(tmp.data(), a.extent));
    return a;
  }
}

/// An array_view over a row-major Eigen matrix's own storage (no copy). Column-major matrices
/// are rejected at compile time: their memory is the transpose of what a row-major view expects.
template <class T, int R, int C, int Opt, int MR, int MC>
array_view<T, 2> make_array_view(Eigen::Matrix<T, R, C, Opt, MR, MC>& m) {
  static_assert((Opt & Eigen::RowMajor) || C == 1,
                "tessera::make_array_view(Eigen matrix): the matrix must be RowMajor "
                "(use tessera::eigen_matrix<T>)");
  return array_view<T, 2>(extent<2>(m.rows(), m.cols()), m.data());
}

}  // namespace tessera
