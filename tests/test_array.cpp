// array<T,N> and array_view<T,N>: construction, copies, Eigen and Kokkos::View conversions,
// AMP's lazy-copy calls, and shape errors that leave the caller's data untouched.
#include "test_util.hpp"

// `index` alone would also find POSIX ::index(); the using-declaration below hides it.
namespace {
using namespace tessera;
using tessera::index;

TEST_CASE("array <-> Eigen round trip on random shapes (including empty and 1)") {
  for (long r : tt::edge_sizes())
    for (long c : {0L, 1L, 5L, 33L}) {
      auto m = tt::random_matrix<float>(r, c);
      array<float, 2> a = from_eigen(m);
      CHECK(a.extent == extent<2>(r, c));
      CHECK(tt::max_abs_diff(to_eigen(a), m) == 0.0);
    }
}

TEST_CASE("from_eigen accepts column-major matrices and vectors") {
  Eigen::MatrixXd cm = Eigen::MatrixXd::Random(7, 3);
  array<double, 2> a = from_eigen(cm);
  CHECK(tt::max_abs_diff(to_eigen(a), cm) == 0.0);
  Eigen::VectorXf v = Eigen::VectorXf::LinSpaced(11, 0.f, 10.f);
  array<float, 1> av = from_eigen(v);
  CHECK(av.extent[0] == 11);
  CHECK(tt::max_abs_diff(to_eigen(av), v) == 0.0);
}

TEST_CASE("array from host iterators, to_vector, copy() is deep, copies share") {
  std::vector<int> src(12);
  for (int i = 0; i < 12; ++i) src[i] = i * i;
  array<int, 2> a(extent<2>(3, 4), src.begin(), src.end());
  CHECK(a.to_vector() == src);
  std::vector<int> back = a;  // AMP's implicit conversion
  CHECK(back == src);
  array<int, 2> shared = a;
  array<int, 2> deep = a.copy();
  parallel_for_each(
      a.extent, TESSERA_KERNEL(const index<2>& i) { a[i] = -1; });
  CHECK(shared.to_vector() == std::vector<int>(12, -1));
  CHECK(deep.to_vector() == src);
}

TEST_CASE("array wraps and exposes a Kokkos::View") {
  array<float, 2>::view_type v("v", 4, 5);
  Kokkos::deep_copy(v, 2.5f);
  array<float, 2> a(v);
  CHECK(a.extent == extent<2>(4, 5));
  CHECK(a.view().data() == v.data());
  auto m = to_eigen(a);
  CHECK(m.minCoeff() == 2.5f);
  CHECK(m.maxCoeff() == 2.5f);
}

TEST_CASE("array_view over caller memory: kernels write through, synchronize, discard_data") {
  std::vector<float> host(6, 1.f);
  {
    array_view<float, 2> v(extent<2>(2, 3), host);
    v.discard_data();
    parallel_for_each(
        v.extent, TESSERA_KERNEL(const index<2>& i) { v[i] = float(i[0] * 10 + i[1]); });
    v.synchronize();
    CHECK(host == std::vector<float>{0, 1, 2, 10, 11, 12});
  }
  // AMP-style constructor with sizes then pointer; const views for inputs.
  int a[] = {1, 4, 2, 5, 3, 6};
  array_view<const int, 2> av(3, 2, a);
  CHECK(av.extent == extent<2>(3, 2));
  array<int, 1> out(3);
  parallel_for_each(
      extent<1>(3), TESSERA_KERNEL(const index<1>& i) { out[i] = av(i[0], 0) + av(i[0], 1); });
  CHECK(out.to_vector() == std::vector<int>{5, 7, 9});
}

TEST_CASE("array_view over a row-major Eigen matrix") {
  eigen_matrix<double> m = eigen_matrix<double>::Zero(3, 4);
  auto v = make_array_view(m);
  parallel_for_each(
      v.extent, TESSERA_KERNEL(const index<2>& i) { v[i] = double(i[0] - i[1]); });
  v.synchronize();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) CHECK(m(r, c) == double(r - c));
}

TEST_CASE("bad shapes throw shape_error naming the function and sizes") {
  std::vector<float> small(5, 7.f);
  CHECK_THROWS_WITH_AS((array_view<float, 2>(extent<2>(2, 3), small)),
                       doctest::Contains("array_view"), shape_error);
  CHECK(small == std::vector<float>(5, 7.f));
  CHECK_THROWS_WITH_AS((array<float, 2>(extent<2>(2, 3), small.begin(), small.end())),
                       doctest::Contains("(2,3)"), shape_error);
  CHECK_THROWS_AS((array<float, 1>(extent<1>(-1))), shape_error);
}

}  // namespace
