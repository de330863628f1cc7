// Reliability: the classes of wrong answers, crashes and unclear errors a differential fuzzer
// and a bad-input catalogue found, each pinned by a regression test. Every bad input is a clear
// exception naming the function and the sizes, thrown before any kernel runs, with the caller's
// data untouched. Tiled kernels never read past their operands on padded tiles (operands that
// end right before an unreadable page).
#include "test_util.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <limits>

namespace {
using namespace tessera;
using tessera::index;
using M = eigen_matrix<float>;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// --- many staged transposes, partial aliasing, empty results --------------------------------

TEST_CASE("five, six and nine staged transposes in one expression") {
  M ea = tt::random_matrix<float>(19, 37);
  array<float, 2> A = from_eigen(ea), D(37, 19);
  D = transpose(A) + transpose(A) + transpose(A) + transpose(A) + transpose(A);
  CHECK(tt::max_abs_diff(to_eigen(D), M(5.f * ea.transpose())) <= 1e-5);
  D = transpose(A) + transpose(A) * 2.f + transpose(A) + transpose(A) + transpose(A) - transpose(A);
  CHECK(tt::max_abs_diff(to_eigen(D), M(5.f * ea.transpose())) <= 1e-5);
  D = transpose(A) + transpose(A) + transpose(A) + transpose(A) + transpose(A) + transpose(A) +
      transpose(A) + transpose(A) + transpose(A);
  CHECK(tt::max_abs_diff(to_eigen(D), M(9.f * ea.transpose())) <= 1e-5);
  CHECK(
      plan(transpose(A) + transpose(A) + transpose(A) + transpose(A) + transpose(A) + transpose(A))
          .kernels.size() == 1);
}

TEST_CASE("partial aliasing by memory: overlapping row ranges of one buffer") {
  const long n = 24, k = 5;
  M base = tt::random_matrix<float>(2 * n, n);
  M bm = tt::random_matrix<float>(n, n);
  SUBCASE("arrays wrapping overlapping subviews of one View") {
    array<float, 2> all = from_eigen(base), B = from_eigen(bm);
    const auto v = all.view();
    array<float, 2> X(Kokkos::subview(v, std::make_pair(0L, n), Kokkos::ALL));
    array<float, 2> Y(Kokkos::subview(v, std::make_pair(k, k + n), Kokkos::ALL));
    const M x = base.topRows(n);
    Y = transpose(X);
    CHECK(tt::max_abs_diff(to_eigen(Y), M(x.transpose())) == 0.0);
    array<float, 2> all2 = from_eigen(base);
    const auto v2 = all2.view();
    array<float, 2> X2(Kokkos::subview(v2, std::make_pair(0L, n), Kokkos::ALL));
    array<float, 2> Y2(Kokkos::subview(v2, std::make_pair(k, k + n), Kokkos::ALL));
    Y2 = matmul(X2, B);
    CHECK(tt::max_abs_diff(to_eigen(Y2), M(x * bm)) <= 1e-4);
    array<float, 2> all3 = from_eigen(base);
    const auto v3 = all3.view();
    array<float, 2> X3(Kokkos::subview(v3, std::make_pair(0L, n), Kokkos::ALL));
    array<float, 2> Y3(Kokkos::subview(v3, std::make_pair(k, k + n), Kokkos::ALL));
    Y3 = X3 * 2.f + 1.f;  // elementwise, read at other rows than written
    CHECK(tt::max_abs_diff(to_eigen(Y3), M((2.f * x.array() + 1.f).matrix())) == 0.0);
    // No temporary where nothing overlaps.
    array<float, 2> Z(n, n);
    const auto mem = Z.describe_memory();
    const auto& low = backends::exec::plan_of(execution_space(), transpose(X3), &mem);
    CHECK_FALSE(low.fusion.output_aliases_input);
  }
  SUBCASE("array_view sections of caller memory as operands and destination") {
    M host = base;  // row-major, 2n x n
    array_view<float, 2> all = make_array_view(host);
    auto X = all.section(index<2>(0, 0), extent<2>(n, n));
    auto Y = all.section(index<2>(k, 0), extent<2>(n, n));
    assign(Y, transpose(X) + 0.f);
    Y.synchronize();
    const M want = base.topRows(n).transpose();
    CHECK(tt::max_abs_diff(M(host.middleRows(k, n)), want) == 0.0);
  }
}

TEST_CASE("an expression with zero elements is adopted by an empty array, like a non-empty one") {
  array<float, 2> A(0, 7), B(0, 7);
  array<float, 2> D;
  D = A + B;
  CHECK(D.extent == extent<2>(0, 7));
  array<float, 2> E;
  E = matmul(array<float, 2>(0, 3), array<float, 2>(3, 7));
  CHECK(E.extent == extent<2>(0, 7));
  array<float, 2> F = eval(transpose(A));
  CHECK(F.extent == extent<2>(7, 0));
}

TEST_CASE("matmul of mixed element types promotes like C++ arithmetic") {
  auto ea = tt::random_matrix<float>(9, 11);
  auto eb = tt::random_matrix<double>(11, 6);
  array<float, 2> A = from_eigen(ea);
  array<double, 2> B = from_eigen(eb);
  auto C = eval(matmul(A, B));
  static_assert(std::is_same_v<decltype(C), array<double, 2>>);
  CHECK(tt::max_abs_diff(to_eigen(C), eigen_matrix<double>(ea.cast<double>() * eb)) <= 1e-12);
  array<int, 2> I(extent<2>(9, 11));
  parallel_for_each(
      I.extent, TESSERA_KERNEL(const index<2>& i) { I[i] = int(i[0] - i[1]); });
  array<float, 2> ones(11, 11);
  ones = ones + 1.f;
  auto D = eval(matmul(I, ones) + 0.5f);
  static_assert(std::is_same_v<decltype(D), array<float, 2>>);
  const auto ei = to_eigen(I).cast<float>().eval();
  CHECK(tt::max_abs_diff(to_eigen(D), M((ei * M::Ones(11, 11)).array() + 0.5f)) <= 1e-4);
}

// --- bad input: clear errors, before anything runs ------------------------------------------

struct big_state {
  double v[8192];  // 64 KiB per logical thread
};

TEST_CASE("bad input catalogue: each a clear error naming the function and the sizes") {
  array<float, 2> out(32, 32);
  // tile_local of a large struct on a 32x32 tile: 64 MiB on CPUs, 64 KiB per GPU thread.
  auto big = TESSERA_KERNEL(tile_group<32, 32>& g) {
    auto s = g.tile_local<big_state>(big_state{});
    g.for_each([&](const tiled_index<32, 32>& t) { out[t.global] = float(s(t).v[0]); });
  };
  try {
    parallel_for_each(out.extent.tile<32, 32>(), big);
    FAIL("accepted");
  } catch (const resource_error& e) {
    CHECK(contains(e.what(), "parallel_for_each"));
    CHECK(contains(e.what(), "<32,32>"));
    CHECK(contains(e.what(), "tile_local"));
  }
  CHECK(sum(out) == 0.f);
  // 8 KiB per logical thread: 8 MiB of team scratch per 32x32 tile on CPUs, spills on GPUs; the
  // same portable limit on every backend.
  struct state_8k {
    float v[2048];
  };
  auto mid = TESSERA_KERNEL(tile_group<32, 32>& g) {
    auto s = g.tile_local<state_8k>(state_8k{});
    g.for_each([&](const tiled_index<32, 32>& t) { out[t.global] = s(t).v[0] + 1.f; });
  };
  CHECK_THROWS_WITH_AS(parallel_for_each(out.extent.tile<32, 32>(), mid),
                       doctest::Contains("8192 bytes of tile_local storage per logical thread; "
                                         "at most 4096 on every backend"),
                       resource_error);
  CHECK(sum(out) == 0.f);
  // Negative extents.
  CHECK_THROWS_WITH_AS(
      parallel_for_each(extent<1>(-5).tile<4>().pad(), TESSERA_KERNEL(tile_group<4>&){}),
                        doctest::Contains("negative extent (-5)"), shape_error);
  CHECK_THROWS_WITH_AS(parallel_for_each(extent<2>(3, -1), TESSERA_KERNEL(const index<2>&){}),
                                         doctest::Contains("negative extent (3,-1)"), shape_error);
  CHECK_THROWS_WITH_AS((array<float, 2>(extent<2>(-2, 3))), doctest::Contains("(-2,3)"),
                       shape_error);
  // Sizes whose product overflows.
  const long e22 = 1L << 22;
  CHECK_THROWS_WITH_AS((array<float, 3>(e22, e22, e22)), doctest::Contains("overflows"),
                       resource_error);
  // Too few elements for the extent: nothing allocated, nothing launched.
  std::vector<float> few(5);
  CHECK_THROWS_WITH_AS((array<float, 2>(extent<2>(2, 3), few.begin(), few.end())),
                       doctest::Contains("range has 5 elements, extent (2,3) needs 6"),
                       shape_error);
  CHECK_THROWS_AS((array_view<float, 2>(extent<2>(2, 3), few)), shape_error);
  // where() names itself.
  array<float, 2> a(3, 4), b(4, 3);
  CHECK_THROWS_WITH_AS(where(a > 0.f, a, b), doctest::Contains("tessera::where"), shape_error);
  // Elementwise and matmul shapes; the destination is untouched.
  array<float, 2> d(3, 4);
  parallel_for_each(
      d.extent, TESSERA_KERNEL(const index<2>& i) { d[i] = 7.f; });
  CHECK_THROWS_WITH_AS(d = a + b, doctest::Contains("(3,4) and (4,3)"), shape_error);
  CHECK_THROWS_WITH_AS(d = matmul(a, a), doctest::Contains("inner dimensions"), shape_error);
  CHECK_THROWS_WITH_AS(d = matmul(a, b), doctest::Contains("destination extent (3,4)"),
                       shape_error);
  CHECK(sum(d) == 7.f * 12);
  // Uneven tiled launch.
  CHECK_THROWS_WITH_AS(
      (parallel_for_each(d.extent.tile<2, 3>(), TESSERA_KERNEL(tile_group<2, 3>&){})),
       doctest::Contains("is not a multiple of the tile <2,3>"), shape_error);
  // Reductions of nothing.
  array<float, 1> none(extent<1>(0));
  CHECK_THROWS_WITH_AS(mean(none), doctest::Contains("tessera::mean: empty extent"), shape_error);
}

// --- no read past an operand on padded tiles (guard pages) -----------------------------------

/// `n` elements of T ending exactly where an unreadable page begins: any read past the end
/// faults. Host memory: on GPU backends array_views copy it to the device first.
template <class T>
class guarded_buffer {
 public:
  explicit guarded_buffer(std::size_t n) {
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = n * sizeof(T);
    data_pages_ = (bytes + page - 1) / page * page;
    len_ = data_pages_ + page;
    base_ = static_cast<char*>(
        mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(base_ != MAP_FAILED);
    REQUIRE(mprotect(base_ + data_pages_, page, PROT_NONE) == 0);
    p_ = reinterpret_cast<T*>(base_ + data_pages_ - bytes);
  }
  guarded_buffer(const guarded_buffer&) = delete;
  guarded_buffer& operator=(const guarded_buffer&) = delete;
  ~guarded_buffer() { munmap(base_, len_); }
  T* data() const { return p_; }

 private:
  char* base_ = nullptr;
  std::size_t len_ = 0, data_pages_ = 0;
  T* p_ = nullptr;
};

TEST_CASE("padded tiles never read epilogue or prologue operands out of bounds") {
  const long n = 17;  // not a multiple of any tile
  guarded_buffer<int> cbuf(std::size_t(n * n));
  for (long i = 0; i < n * n; ++i) cbuf.data()[i] = 2;
  array_view<const int, 2> C(extent<2>(n, n), cbuf.data());
  SUBCASE("tiled matmul (int) with an epilogue") {
    array<int, 2> A(n, 3), B(3, n), D(n, n);
    parallel_for_each(
        A.extent, TESSERA_KERNEL(const index<2>& i) { A[i] = 1; });
    parallel_for_each(
        B.extent, TESSERA_KERNEL(const index<2>& i) { B[i] = 1; });
    D = matmul(A, B) + C;
    CHECK(D.to_vector()[std::size_t(16 * n + 16)] == 5);
    D = (matmul(A, B) * C).tile<8, 8>();
    CHECK(D.to_vector()[std::size_t(n * n - 1)] == 6);
  }
  SUBCASE("float matmul with an epilogue (packed on CPUs, blocked on GPUs)") {
    guarded_buffer<float> fbuf(std::size_t(n * n));
    for (long i = 0; i < n * n; ++i) fbuf.data()[i] = 0.5f;
    array_view<const float, 2> F(extent<2>(n, n), fbuf.data());
    array<float, 2> A(n, 5), B(5, n), D(n, n);
    parallel_for_each(
        A.extent, TESSERA_KERNEL(const index<2>& i) { A[i] = 1.f; });
    parallel_for_each(
        B.extent, TESSERA_KERNEL(const index<2>& i) { B[i] = 1.f; });
    D = relu(matmul(A, B) - F);
    CHECK(D.to_vector()[std::size_t(n * n - 1)] == 4.5f);
  }
  SUBCASE("staged transposes") {
    array<int, 2> A(n, n), D(n, n);
    parallel_for_each(
        A.extent, TESSERA_KERNEL(const index<2>& i) { A[i] = int(i[0] * n + i[1]); });
    D = transpose(A) + C;
    CHECK(D.to_vector()[std::size_t(n * n - 1)] == int(n * n - 1) + 2);
    D = transpose(C) * 3 + A * 0;
    CHECK(D.to_vector()[std::size_t(n * n - 1)] == 6);
  }
  SUBCASE("tile_reduce prologue and epilogue") {
    guarded_buffer<int> big(std::size_t(16 * 24));
    for (int i = 0; i < 16 * 24; ++i) big.data()[i] = i % 7;
    array_view<const int, 2> X(extent<2>(16, 24), big.data());
    guarded_buffer<int> ebuf(std::size_t(4 * 6));
    for (int i = 0; i < 24; ++i) ebuf.data()[i] = 100;
    array_view<const int, 2> E(extent<2>(4, 6), ebuf.data());
    array<int, 2> D(4, 6);
    D = tile_reduce<4, 4>(X * 2 + 1, ops::add{}) + E;
    std::vector<int> want(24, 0);
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 24; ++c)
        want[std::size_t((r / 4) * 6 + c / 4)] += 2 * ((r * 24 + c) % 7) + 1;
    for (auto& w : want) w += 100;
    CHECK(D.to_vector() == want);
  }
  SUBCASE("Tier 2 program and Tier 0 kernel on a padded launch") {
    array<int, 2> D(n, n);
    auto prog = tile_program(TESSERA_KERNEL(tile_program_context<8, 8>& p) {
      auto s = p.tile_static<int[8][8]>("s");
      p.load(s, [&](const tiled_index<8, 8>& t) { return guarded_read(C, t.global); });
      p.store(
          D, [&](const tiled_index<8, 8>& t) { return s(t.local[0], t.local[1]) + C[t.global]; },
          reads(s));
    });
    parallel_for_each(D.extent.tile<8, 8>().pad(), prog);
    CHECK(D.to_vector()[std::size_t(n * n - 1)] == 4);
    parallel_for_each(checked, D.extent.tile<8, 8>().pad(), prog);
  }
}

}  // namespace
