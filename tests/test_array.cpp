// array<T,N> and array_view<T,N>: construction, copies, Eigen and Kokkos::View conversions,
// AMP's lazy-copy calls, and shape errors that leave the caller's data untouched.
#include "test_util.hpp"

#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

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

TEST_CASE("a moved array hands its data over: the source is left empty, no reference added") {
  auto m = tt::random_matrix<float>(5, 7);
  array<float, 2> a = from_eigen(m);
  const long refs = long(a.view().use_count());
  float* const data = a.data();
  array<float, 2> b(std::move(a));
  CHECK(b.data() == data);
  CHECK(long(b.view().use_count()) == refs);
  CHECK(b.extent == extent<2>(5, 7));
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  CHECK(tt::max_abs_diff(to_eigen(b), m) == 0.0);
  // Move assignment: the destination's old data is released, the source left empty.
  array<float, 2> c(2, 3);
  array<float, 2> c_alias = c;
  CHECK(c_alias.view().use_count() == 2);
  c = std::move(b);
  CHECK(c_alias.view().use_count() == 1);
  CHECK(c.data() == data);
  CHECK(long(c.view().use_count()) == refs);
  CHECK(b.data() == nullptr);
  CHECK(b.size() == 0);
  auto& self = c;
  c = std::move(self);  // self-move keeps the data
  CHECK(c.data() == data);
  CHECK(tt::max_abs_diff(to_eigen(c), m) == 0.0);
  // A moved-from array is an empty array: it can be assigned again.
  a = c + 1.f;
  CHECK(tt::max_abs_diff(to_eigen(a), (m.array() + 1.f).matrix()) == 0.0);
  // An expression holds one reference per terminal, whatever the depth of the tree (its
  // subexpressions are moved into their parents, not copied).
  array<float, 2> x = from_eigen(tt::random_matrix<float>(7, 7)), y = x.copy(), z = x.copy();
  {
    auto e = relu(transpose(matmul(x, y) + z) * 2.f);
    CHECK(x.view().use_count() == 2);
    CHECK(y.view().use_count() == 2);
    CHECK(z.view().use_count() == 2);
    auto w = where(x > y, x - shift(y, index<2>(1, 0), boundary::clamp), 0.f);
    CHECK(x.view().use_count() == 4);
    CHECK(y.view().use_count() == 4);
    auto t = tile_mean<7, 7>(tile_reduce<1, 1>(z * 3.f, ops::add{}));
    CHECK(z.view().use_count() == 3);
  }
  CHECK(x.view().use_count() == 1);
  // A moved array_view takes over its source's share: the data stays alive through it.
  std::vector<float> host(12);
  std::iota(host.begin(), host.end(), 0.f);
  array_view<float, 2> hv(3, 4, host);
  array_view<float, 2> moved(std::move(hv));
  CHECK(hv.extent == extent<2>(0, 0));
  CHECK(moved.extent == extent<2>(3, 4));
  CHECK(moved(2, 3) == 11.f);
  array_view<const float, 2> cv(x.section(index<2>(1, 1), extent<2>(2, 3)));
  array_view<const float, 2> cv2(3, 4, host);
  cv2 = std::move(cv);
  CHECK(cv.extent == extent<2>(0, 0));
  CHECK(cv2.extent == extent<2>(2, 3));
  x = 5.f;
  CHECK(sum(cv2) == 30.f);
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

// --- the data API C++ AMP samples use ----------------------------------------------------------

TEST_CASE("array_view: section, projection, view_as, reinterpret_as, const conversion") {
  std::vector<int> h(6 * 7);
  std::iota(h.begin(), h.end(), 0);
  array_view<int, 2> v(6, 7, h.data());
  // Section: rows 1..3, columns 2..5, written by a kernel.
  auto s = v.section(index<2>(1, 2), extent<2>(3, 4));
  CHECK(s.extent == extent<2>(3, 4));
  parallel_for_each(
      s.extent, TESSERA_KERNEL(const index<2>& i) { s[i] = -s[i]; });
  s.synchronize();
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 7; ++c) {
      const bool in = r >= 1 && r < 4 && c >= 2 && c < 6;
      CHECK(h[std::size_t(r * 7 + c)] == (in ? -(r * 7 + c) : r * 7 + c));
    }
  CHECK_THROWS_AS(v.section(index<2>(4, 0), extent<2>(3, 1)), shape_error);
  // Projection: v[2] is row 2 as a rank-1 view.
  array_view<int, 1> row2 = v[2];
  CHECK(row2.extent == extent<1>(7));
  CHECK(row2[3] == h[2 * 7 + 3]);
  CHECK_THROWS_AS(v[6], shape_error);
  // view_as and reinterpret_as.
  std::vector<float> f(12, 1.5f);
  array_view<float, 1> flat(12, f.data());
  auto grid = flat.view_as(extent<2>(3, 4));
  CHECK(grid(2, 3) == 1.5f);
  auto bits = flat.reinterpret_as<unsigned>();
  CHECK(bits.extent == extent<1>(12));
  unsigned want = 0;
  const float one_half = 1.5f;
  std::memcpy(&want, &one_half, sizeof want);
  CHECK(bits[0] == want);
  CHECK_THROWS_AS(flat.view_as(extent<2>(5, 4)), shape_error);
  // array_view<T> -> array_view<const T>, read by a kernel.
  array_view<const int, 2> cv = v;
  array<int, 1> sums{extent<1>(6)};
  parallel_for_each(
      sums.extent, TESSERA_KERNEL(const index<1>& i) {
        int acc = 0;
        for (int c = 0; c < 7; ++c) acc += cv(i[0], c);
        sums[i] = acc;
      });
  const auto sv = sums.to_vector();
  for (int r = 0; r < 6; ++r) {
    int want_r = 0;
    for (int c = 0; c < 7; ++c) want_r += h[std::size_t(r * 7 + c)];
    CHECK(sv[std::size_t(r)] == want_r);
  }
}

TEST_CASE("C++ AMP's array API: a(idx), view_as, reinterpret_as, array_view(e0, e1, container)") {
  // a(idx) and v(idx), in a kernel (device memory on GPU backends), ranks 1-3.
  array<int, 3> a3(extent<3>(2, 3, 4));
  parallel_for_each(
      a3.extent, TESSERA_KERNEL(const index<3>& i) { a3(i) = int(100 * i[0] + 10 * i[1] + i[2]); });
  const auto v3 = a3.to_vector();
  for (int k = 0; k < 24; ++k)
    CHECK(v3[std::size_t(k)] == 100 * (k / 12) + 10 * (k / 4 % 3) + k % 4);
  std::vector<double> hd(5, 0.0);
  array_view<double, 1> v1(5, hd);  // (e0, container)
  parallel_for_each(
      v1.extent, TESSERA_KERNEL(const index<1>& i) { v1(i) = 0.5 * double(i[0]); });
  v1.synchronize();
  CHECK(hd == std::vector<double>{0.0, 0.5, 1.0, 1.5, 2.0});
  // array_view<T, 2>(e0, e1, container) and <T, 3>(e0, e1, e2, container)
  std::vector<int> h(12);
  std::iota(h.begin(), h.end(), 0);
  array_view<int, 2> v2(3, 4, h);
  CHECK(v2.extent == extent<2>(3, 4));
  CHECK(v2(index<2>(2, 1)) == 9);
  array_view<int, 3> w3(2, 3, 2, h);
  CHECK(w3(index<3>(1, 2, 1)) == 11);
  CHECK_THROWS_AS((array_view<int, 2>(4, 4, h)), shape_error);  // 16 > 12 elements
  // array::view_as: the array's elements seen with another extent, sharing the data.
  array<float, 2> a(extent<2>(3, 4));
  parallel_for_each(
      a.extent, TESSERA_KERNEL(const index<2>& i) { a(i) = float(i[0] * 4 + i[1]); });
  auto flat = a.view_as(extent<1>(12));
  CHECK(flat.extent == extent<1>(12));
  std::vector<float> fv = flat.to_vector();
  for (int k = 0; k < 12; ++k) CHECK(fv[std::size_t(k)] == float(k));
  auto cube = a.view_as(extent<3>(2, 2, 3));
  parallel_for_each(
      cube.extent, TESSERA_KERNEL(const index<3>& i) { cube(i) = -cube(i); });
  cube.synchronize();
  const auto av = a.to_vector();  // the writes through the view reach the array
  for (int k = 0; k < 12; ++k) CHECK(av[std::size_t(k)] == -float(k));
  CHECK_THROWS_AS(a.view_as(extent<2>(4, 4)), shape_error);
  // array::reinterpret_as: the bytes as another element type.
  auto bits = a.reinterpret_as<unsigned>();
  CHECK(bits.extent == extent<1>(12));
  const auto bv = bits.to_vector();
  for (int k = 0; k < 12; ++k) {
    unsigned want = 0;
    const float x = -float(k);
    std::memcpy(&want, &x, sizeof want);
    CHECK(bv[std::size_t(k)] == want);
  }
  auto halves = array<double, 1>(extent<1>(3)).reinterpret_as<float>();
  CHECK(halves.extent == extent<1>(6));
  CHECK_THROWS_AS((array<char, 1>(extent<1>(6)).reinterpret_as<int>()), shape_error);
}

TEST_CASE("copy between arrays, views and host containers, views over arrays read back") {
  std::vector<double> src(20);
  std::iota(src.begin(), src.end(), 1.0);
  array<double, 2> a{extent<2>(4, 5)};
  tessera::copy(src.begin(), src.end(), a);
  array<double, 2> b{extent<2>(4, 5)};
  tessera::copy(a, b);
  std::vector<double> back(20);
  tessera::copy(b, back.begin());
  CHECK(back == src);
  // Into a section of a view over host memory, converting element types.
  std::vector<float> host(8 * 8, 0.f);
  array_view<float, 2> hv(8, 8, host.data());
  tessera::copy(a, hv.section(index<2>(2, 1), extent<2>(4, 5)));
  hv.synchronize();
  CHECK(host[2 * 8 + 1] == 1.f);
  CHECK(host[5 * 8 + 5] == 20.f);
  // An array_view over an array reads the array's current data on the host.
  array_view<double, 2> over(b);
  CHECK(over(3, 4) == 20.0);
  CHECK_THROWS_AS(tessera::copy(a, array<double, 2>(extent<2>(5, 4))), shape_error);
  CHECK_THROWS_AS(tessera::copy(src.begin(), src.begin() + 3, b), shape_error);
  CHECK(b.to_vector() == src);  // untouched by the failed copies
  // Overlapping copy inside one buffer goes through a temporary.
  std::vector<int> o(10);
  std::iota(o.begin(), o.end(), 0);
  array_view<int, 1> ov(10, o.data());
  tessera::copy(ov.section(0, 8), ov.section(2, 8));
  ov.synchronize();
  CHECK(o == std::vector<int>{0, 1, 0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("copy in runs of rows: long and short rows, sections, ranks 1 to 3, conversions") {
  // CPUs copy runs of up to impl::copy_run_elements consecutive elements of a row per
  // iteration (longer rows in several runs), GPUs one element per iteration.
  using runs2 = impl::copy_runs<const float, double, 2>;
  CHECK(runs2::iterations(extent<2>(3, 9000), 4096) == 9);
  CHECK(runs2::iterations(extent<2>(3, 9000), 1) == 27000);
  CHECK(runs2::iterations(extent<2>(5, 4096), 4096) == 5);
  runs2 f{};
  f.ext = extent<2>(3, 9000);
  f.split(9);
  CHECK(f.runs_per_row == 3);
  CHECK(f.run == 3000);
  f.split(27000);
  CHECK(f.run == 1);
  std::mt19937 g(17);
  const std::vector<std::pair<index_type, index_type>> shapes = {{1, 1},     {3, 9000}, {4100, 3},
                                                                 {17, 4097}, {2, 8192}, {1, 12289}};
  for (const auto& shape : shapes) {
    const index_type m = shape.first, n = shape.second;
    CAPTURE(m);
    CAPTURE(n);
    std::vector<float> src(std::size_t(m * n));
    for (auto& x : src) x = float(g() % 100000) * 0.25f;
    array<float, 2> a(extent<2>(m, n), src.begin(), src.end());
    // Into a section of a larger host view, converted to double; the border stays untouched.
    std::vector<double> host(std::size_t((m + 2) * (n + 3)), -1.0);
    array_view<double, 2> hv(m + 2, n + 3, host.data());
    tessera::copy(a, hv.section(index<2>(1, 2), extent<2>(m, n)));
    hv.synchronize();
    bool same = true, border = true;
    for (index_type i = 0; i < m + 2; ++i)
      for (index_type j = 0; j < n + 3; ++j) {
        const double got = host[std::size_t(i * (n + 3) + j)];
        if (i >= 1 && i <= m && j >= 2 && j < n + 2)
          same = same && got == double(src[std::size_t((i - 1) * n + j - 2)]);
        else
          border = border && got == -1.0;
      }
    CHECK(same);
    CHECK(border);
    // And from that section back into an array.
    array<float, 2> back(extent<2>(m, n));
    tessera::copy(array_view<const double, 2>(hv).section(index<2>(1, 2), extent<2>(m, n)), back);
    CHECK(back.to_vector() == src);
  }
  // Ranks 1 and 3.
  std::vector<int> v1(10007);
  std::iota(v1.begin(), v1.end(), -5000);
  array<int, 1> r1(extent<1>(10007), v1.begin(), v1.end()), s1(extent<1>(10007));
  tessera::copy(r1, s1);
  CHECK(s1.to_vector() == v1);
  std::vector<double> v3(2 * 3 * 5000);
  std::iota(v3.begin(), v3.end(), 0.5);
  array<double, 3> r3(extent<3>(2, 3, 5000), v3.begin(), v3.end()), s3(extent<3>(2, 3, 5000));
  tessera::copy(r3, s3);
  CHECK(s3.to_vector() == v3);
  // From host iterators into an array (through its host mirror), converting.
  std::vector<int> ints(3 * 4100);
  std::iota(ints.begin(), ints.end(), -7);
  array<float, 2> fa(extent<2>(3, 4100));
  tessera::copy(ints.begin(), ints.end(), fa);
  CHECK(fa.to_vector() == std::vector<float>(ints.begin(), ints.end()));
}

}  // namespace
