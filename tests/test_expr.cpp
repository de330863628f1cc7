// Tier 1 expressions against Eigen on random shapes (fixed seed): every node kind and the fused
// combinations; aliasing; shape errors that leave the destination untouched.
// Tolerances: elementwise float ops 1e-6 relative; matmul |err| <= 1e-5 * (K + 1).
#include "test_util.hpp"

#include <numeric>
#include <set>

// `index` alone would also find POSIX ::index(); the using-declaration below hides it.
namespace {
using namespace tessera;
using tessera::index;
using tt::max_abs_diff;

using M = eigen_matrix<float>;

std::vector<std::pair<long, long>> shapes() {
  std::vector<std::pair<long, long>> s = {{1, 1},   {0, 5},   {7, 0}, {13, 17},
                                          {16, 16}, {31, 64}, {97, 3}};
  for (int i = 0; i < 4; ++i) s.push_back({tt::random_size(1, 150), tt::random_size(1, 150)});
  return s;
}

TEST_CASE("elementwise chains with scalars, unary math, min/max, where") {
  for (const auto& shape : shapes()) {
    const long r = shape.first, c = shape.second;
    CAPTURE(r);
    CAPTURE(c);
    M ea = tt::random_matrix<float>(r, c), eb = tt::random_matrix<float>(r, c),
      ec = tt::random_matrix<float>(r, c);
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), Cc = from_eigen(ec), D(r, c);
    D = 2.f * A + 3.f * B - Cc;
    CHECK(max_abs_diff(to_eigen(D), M(2.f * ea + 3.f * eb - ec)) <= 1e-6);
    D = exp(A) / (abs(B) + 1.f) - sqrt(abs(Cc));
    M ref = (ea.array().exp() / (eb.array().abs() + 1.f) - ec.array().abs().sqrt()).matrix();
    CHECK(max_abs_diff(to_eigen(D), ref) <= 1e-5);
    D = relu(A - B) + min(A, B) * max(B, Cc);
    ref = ((ea - eb).cwiseMax(0.f).array() + ea.cwiseMin(eb).array() * eb.cwiseMax(ec).array())
              .matrix();
    CHECK(max_abs_diff(to_eigen(D), ref) <= 1e-6);
    D = where(A > B, A, -B);
    ref = (ea.array() > eb.array()).select(ea, -eb);
    CHECK(max_abs_diff(to_eigen(D), ref) == 0.0);
    auto E = eval(A * A - 1.f);
    static_assert(std::is_same_v<decltype(E), array<float, 2>>);
    CHECK(max_abs_diff(to_eigen(E), M(ea.array().square() - 1.f)) <= 1e-6);
  }
}

TEST_CASE("elementwise on ranks 1 and 3, integers, and array_view operands") {
  std::vector<int> h(60);
  for (int i = 0; i < 60; ++i) h[i] = i - 30;
  array_view<int, 3> v(extent<3>(3, 4, 5), h);
  array<int, 3> out = v * 2 + 1;
  auto o = out.to_vector();
  for (int i = 0; i < 60; ++i) CHECK(o[i] == 2 * (i - 30) + 1);
  array<double, 1> x(extent<1>(1000));
  x = x + 0.5;
  x = x * x;
  auto xv = x.to_vector();
  CHECK(xv.front() == 0.25);
  CHECK(xv.back() == 0.25);
}

TEST_CASE("matmul, alone and with a fused epilogue") {
  for (const auto& shape : tt::matmul_shapes(
           {{1, 1, 1}, {0, 4, 3}, {5, 0, 3}, {17, 13, 31}, {64, 64, 64}, {33, 100, 7}}, 3, 130)) {
    const long m = shape[0], k = shape[1], n = shape[2];
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    M ea = tt::random_matrix<float>(m, k), eb = tt::random_matrix<float>(k, n),
      ec = tt::random_matrix<float>(m, n);
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), Cc = from_eigen(ec), D(m, n);
    const double tol = 1e-5 * double(k + 1);
    D = matmul(A, B);
    M ab = (ea.cast<double>() * eb.cast<double>()).cast<float>();
    CHECK(max_abs_diff(to_eigen(D), ab) <= tol);
    const float alpha = 1.5f, beta = -0.25f;
    D = relu(matmul(A, B) * alpha + beta * Cc);
    M ref = (alpha * ab + beta * ec).cwiseMax(0.f);
    CHECK(max_abs_diff(to_eigen(D), ref) <= 2 * tol);
    // Operands that are expressions themselves are materialized first.
    D = matmul(A * 2.f, B - 1.f) + 1.f;
    ref = ((2.f * ea).cast<double>() * (eb.array() - 1.f).matrix().cast<double>()).cast<float>();
    ref.array() += 1.f;
    CHECK(max_abs_diff(to_eigen(D), ref) <= 4 * tol * (1 + 1));
  }
}

// Outputs as large as the last-level cache (32 MiB on the machines these sizes were written
// for; tt::streaming_scaled scales them to this one) take the host backends' streaming-store
// path; the sizes end in partial chunks and partial lines.
TEST_CASE("elementwise chains on streaming-size outputs") {
  const long n = tt::streaming_scaled((1L << 23) + 4096 + 256 + 7, 4096);
  M ea = tt::random_matrix<float>(n, 1), eb = tt::random_matrix<float>(n, 1),
    ec = tt::random_matrix<float>(n, 1);
  array<float, 1> A(extent<1>(n), ea.data(), ea.data() + n),
      B(extent<1>(n), eb.data(), eb.data() + n), Cc(extent<1>(n), ec.data(), ec.data() + n), D(n);
  D = 2.f * A + 3.f * B - Cc;
  const std::vector<float> got = D.to_vector();
  double err = 0;
  for (long k = 0; k < n; ++k)
    err = std::max(err, double(std::abs(got[k] - (2.f * ea(k) + 3.f * eb(k) - ec(k)))));
  CHECK(err <= 1e-6);

  using MD = eigen_matrix<double>;
  MD ed = tt::random_matrix<double>(1501, 2799), ee = tt::random_matrix<double>(1501, 2799);
  array<double, 2> E = from_eigen(ed), F = from_eigen(ee), G(1501, 2799);
  G = exp(E) * F - 1.0;
  CHECK(max_abs_diff(to_eigen(G), MD((ed.array().exp() * ee.array() - 1.0).matrix())) <= 1e-12);
}

TEST_CASE("transpose: alone, fused with elementwise, with a schedule, on uneven shapes") {
  for (const auto& shape : shapes()) {
    const long r = shape.first, c = shape.second;
    CAPTURE(r);
    CAPTURE(c);
    M ea = tt::random_matrix<float>(r, c), eb = tt::random_matrix<float>(c, r);
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), T(c, r);
    T = transpose(A);
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
    T = transpose(A) + B;
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose() + eb)) <= 1e-6);
    T = transpose(A * 2.f).tile<8, 8>() - B;
    CHECK(max_abs_diff(to_eigen(T), M(2.f * ea.transpose() - eb)) <= 1e-6);
    array<float, 2> U = transpose(transpose(A));  // nested: inner one materialized
    CHECK(max_abs_diff(to_eigen(U), ea) == 0.0);
  }
}

// Host backends move 16 x 16 blocks through registers, skip scratch for plain transposes and
// stream outputs as large as the last-level cache, a team walking several tiles down a column
// of the output; these shapes span several tiles, end in partial blocks and (the first three)
// cross the streaming threshold. The third is two tile columns wide: its columns of tiles are
// split between teams, the last group shorter than the others.
TEST_CASE("transpose: multi-tile and streaming-size outputs, 4- and 8-byte types") {
  const bool big = tt::backend_streams("transpose streaming-size outputs");
  const long long_side = big ? tt::streaming_scaled(4000, 128) : 300, wide = big ? 2100 : 210,
             mid = big ? 1100 : 110, tall = big ? tt::streaming_scaled(170003, 128) : 5003;
  {
    M ea = tt::random_matrix<float>(long_side, wide),
      eb = tt::random_matrix<float>(wide, long_side);
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), T(wide, long_side);
    T = transpose(A);
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
    T = transpose(A) * 2.f + B;
    CHECK(max_abs_diff(to_eigen(T), M(2.f * ea.transpose() + eb)) <= 1e-6);
    // Streamed on CPUs with write runs: where the default tile's operand rows (`wide` floats
    // apart) exceed L2 together, full tiles are assembled in scratch and leave row by row, the
    // last row and column of tiles (partial) block by block; elsewhere blocks go out directly.
    const auto target = backends::backend<execution_space>::make_target();
    if (big && target.transpose.stream_run_bytes > 0) {
      const std::size_t l2 = target.l2_bytes > 0 ? target.l2_bytes : std::size_t(256) << 10;
      const bool exceed = std::size_t(target.transpose.tile[1]) * std::size_t(wide) * 4 > l2;
      CHECK(tt::has(explain(T, transpose(A)), "each tile assembled in scratch") == exceed);
    }
  }
  {
    using MD = eigen_matrix<double>;
    MD ea = tt::random_matrix<double>(long_side, mid);
    array<double, 2> A = from_eigen(ea), T(mid, long_side);
    T = transpose(A);
    CHECK(max_abs_diff(to_eigen(T), MD(ea.transpose())) == 0.0);
  }
  {
    M ea = tt::random_matrix<float>(50, tall), eb = tt::random_matrix<float>(tall, 50);
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), T(tall, 50);
    T = transpose(A);
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
    T = transpose(A) - B;
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose() - eb)) <= 1e-6);
  }
  for (const auto& shape : {std::pair<long, long>{600, 333}, {257, 47}, {33, 529}, {1030, 40}}) {
    const long r = shape.first, c = shape.second;
    CAPTURE(r);
    CAPTURE(c);
    const eigen_matrix<int> ei = eigen_matrix<int>::NullaryExpr(
        r, c, [](Eigen::Index i, Eigen::Index j) { return int((i * 7919 + j * 104729) % 100003); });
    array<int, 2> I = from_eigen(ei), TI(c, r);
    TI = transpose(I);
    CHECK((to_eigen(TI) - eigen_matrix<int>(ei.transpose())).cwiseAbs().maxCoeff() == 0);
    using MD = eigen_matrix<double>;
    MD ed = tt::random_matrix<double>(r, c), ee = tt::random_matrix<double>(c, r);
    array<double, 2> D = from_eigen(ed), E = from_eigen(ee), TD(c, r);
    TD = transpose(D) - E;
    CHECK(max_abs_diff(to_eigen(TD), MD(ed.transpose() - ee)) <= 1e-12);
    // Plain transposes: on CPUs the edge blocks (extents not multiples of the block) are read
    // as full blocks ending at the edge (rows whose stride is not whole lines: 333, 47, 529
    // and 1030 elements) and written whole where that block lies in the tile, else only their
    // own elements: tiles of 32 x 64 leave last tiles narrower than a block (13 rows of 333,
    // 15 of 47, 8 of 40; 1 column of 257, 6 of 1030), which the default tiles avoid.
    TD = transpose(D);
    CHECK(max_abs_diff(to_eigen(TD), MD(ed.transpose())) == 0.0);
    TD = transpose(D).tile<32, 64>();
    CHECK(max_abs_diff(to_eigen(TD), MD(ed.transpose())) == 0.0);
    M ef = tt::random_matrix<float>(r, c);
    array<float, 2> F = from_eigen(ef), TF(c, r);
    TF = transpose(F);
    CHECK(max_abs_diff(to_eigen(TF), M(ef.transpose())) == 0.0);
    TF = transpose(F).tile<32, 64>();
    CHECK(max_abs_diff(to_eigen(TF), M(ef.transpose())) == 0.0);
  }
}

// Outputs with fewer than a block (16) of rows or columns have no full block: on CPUs a plain
// transpose walks them with direct loops (a few lines at a time along the long side; a vector
// is a copy) in tiles as long as a default tile's elements allow. Every short side from 1 to
// 17, long sides that are not tile multiples, operands and destinations that are sections of
// larger arrays (rows apart in memory), 4- and 8-byte types and a conversion.
TEST_CASE("transpose: outputs with fewer than a block of rows or columns, vectors among them") {
  using MD = eigen_matrix<double>;
  using MI = eigen_matrix<int>;
  std::vector<long> longs = {1, 17, 300, 5003, tt::random_size(20, 2000)};
  // Every short side up to a CPU block and one more; under the GPU mapping (one staged kernel
  // for every width) 1-3, 7, 8 and 15-17: every width made this the emulation's slowest test
  // (74 s at -O0, 256 threads on 2 cores).
  const auto target = backends::backend<execution_space>::make_target();
  std::vector<long> shorts;
  for (long s = 1; s <= 17; ++s)
    if (!target.thread_per_logical || s <= 3 || s == 7 || s == 8 || s >= 15) shorts.push_back(s);
  for (const long s : shorts)
    for (const long l : longs)
      for (const bool wide : {true, false}) {
        const long r = wide ? l : s, c = wide ? s : l;  // operand r x c, output c x r
        CAPTURE(r);
        CAPTURE(c);
        M ea = tt::random_matrix<float>(r, c);
        array<float, 2> A = from_eigen(ea), T(c, r);
        T = transpose(A);
        CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
        MD ed = tt::random_matrix<double>(r, c);
        array<double, 2> D = from_eigen(ed), TD(c, r);
        TD = transpose(D);
        CHECK(max_abs_diff(to_eigen(TD), MD(ed.transpose())) == 0.0);
        TD = transpose(A);  // float operand, double output: converted element by element
        CHECK(max_abs_diff(to_eigen(TD), MD(ea.cast<double>().transpose())) == 0.0);
        const MI ei = MI::NullaryExpr(r, c, [](Eigen::Index i, Eigen::Index j) {
          return int((i * 7919 + j * 104729) % 100003) - 50000;
        });
        array<int, 2> I = from_eigen(ei), TI(c, r);
        TI = transpose(I);
        CHECK((to_eigen(TI) - MI(ei.transpose())).cwiseAbs().maxCoeff() == 0);
      }
  // Sections: the operand's rows and the destination's rows lie apart in memory; the border of
  // the destination's array stays as it was.
  for (const auto& shape : {std::pair<long, long>{3, 777},
                            {777, 3},
                            {1, 130},
                            {130, 1},
                            {9, 33},
                            {33, 9},
                            {4, 4},
                            {15, 5003}}) {
    const long r = shape.first, c = shape.second;
    CAPTURE(r);
    CAPTURE(c);
    M ebig = tt::random_matrix<float>(r + 3, c + 5);
    array<float, 2> Big = from_eigen(ebig), Dst(c + 4, r + 2);
    Dst = -7.f;
    assign(Dst.section(tessera::index<2>(1, 2), extent<2>(c, r)),
           transpose(Big.section(tessera::index<2>(2, 3), extent<2>(r, c))));
    M want = M::Constant(c + 4, r + 2, -7.f);
    want.block(1, 2, c, r) = ebig.block(2, 3, r, c).transpose();
    CHECK(max_abs_diff(to_eigen(Dst), want) == 0.0);
  }
  // CPU plans: tiles along the long side hold a default tile's elements (whole blocks), so a
  // 5000 x 1 output is one tile (79 of 64 rows before) and a 2 x 40000 one a few.
  const long b = target.transpose.block;
  if (!target.thread_per_logical && target.transpose.cached_tile_rows > 0 && b > 0 &&
      target.transpose.cached_row_bytes > 0) {
    const long rows = std::max(b, target.transpose.cached_tile_rows / b * b);
    const long cols = std::max(b, (target.transpose.cached_row_bytes / 4 + b - 1) / b * b);
    auto league = [&](long long_side, long short_side) {
      const long tile = std::max(b, rows * cols / short_side / b * b);
      return "league " + std::to_string((long_side + tile - 1) / tile) + " (";
    };
    array<float, 2> V(1, 5000), TV(5000, 1), W(40000, 2), TW(2, 40000);
    CHECK(tt::has(explain(TV, transpose(V)), league(5000, 1)));
    CHECK(tt::has(explain(TW, transpose(W)), league(40000, 2)));
    CHECK(tt::has(explain(TW, transpose(W)), "copying the operand's lines directly"));
    CHECK(plan(TW, transpose(W)).kernels.at(0).staged_narrow_copy);
    CHECK(plan(TV, transpose(V)).kernels.at(0).staged_narrow_copy);
    // Not a plain transpose (an element-wise step, another type) or not narrow: staged block
    // by block.
    array<double, 2> TWD(2, 40000);
    CHECK(tt::has(explain(TW, transpose(W) + 1.f), "walking each in"));
    CHECK(tt::has(explain(TWD, transpose(W)), "walking each in"));
    CHECK_FALSE(plan(TW, transpose(W) + 1.f).kernels.at(0).staged_narrow_copy);
    CHECK_FALSE(plan(TWD, transpose(W)).kernels.at(0).staged_narrow_copy);
    array<float, 2> Sq(40, 40), TSq(40, 40);
    CHECK_FALSE(plan(TSq, transpose(Sq)).kernels.at(0).staged_narrow_copy);
    // The kernel runs what the plan says: a line-copy plan for an expression that is not a
    // plain transpose is refused before anything runs.
    const auto k = plan(TW, transpose(W)).kernels.at(0);
    auto refused = [&]<class H>(H*) {  // a template, so that backends without it compile
      if constexpr (requires { H::check_narrow_copy(k, true); }) {
        CHECK_NOTHROW(H::check_narrow_copy(k, true));
        const std::string m = tt::message_of<plan_error>([&] { H::check_narrow_copy(k, false); });
        CHECK(tt::has(m, k.name));
        CHECK(tt::has(m, "not a plain transpose"));
        auto staged = k;
        staged.staged_narrow_copy = false;
        CHECK_NOTHROW(H::check_narrow_copy(staged, false));
        return true;
      }
      return false;
    };
    CHECK(refused(static_cast<backends::backend<execution_space>*>(nullptr)));
  } else {
    // Elsewhere (the GPU mapping stages every transpose in team scratch) no plan copies lines.
    array<float, 2> W(40000, 2), TW(2, 40000);
    CHECK_FALSE(plan(TW, transpose(W)).kernels.at(0).staged_narrow_copy);
  }
}

TEST_CASE("transpose: operand rows walked in groups where a tile's rows do not fit in L2") {
  // Outputs of 40000 rows: the operand's rows lie 160 KB (floats) or 320 KB (doubles) apart,
  // and a CPU tile's 32 of them span more than any core's L2 up to 5 MiB, so the host backends
  // walk them in groups of 16 (the plan says so); 50 and 37 columns end in partial groups and
  // partial blocks. Exact values, the plain and the fused kernel.
  const auto target = backends::backend<execution_space>::make_target();
  // Targets without an L2 (the GPU mapping: CUDA, HIP, the GPU emulation) never group: the
  // same kernel at a smaller size there.
  const long rows = target.l2_bytes > 0 ? 40000 : 3001;
  for (long cols : {50L, 37L}) {
    CAPTURE(cols);
    M ea = tt::random_matrix<float>(cols, rows), eb = tt::random_matrix<float>(rows, cols);
    array<float, 2> A = from_eigen(ea), B = from_eigen(eb), T(rows, cols);
    T = transpose(A);
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
    T = transpose(A) - B;
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose() - eb)) <= 1e-6);
    using MD = eigen_matrix<double>;
    MD ed = tt::random_matrix<double>(cols, rows);
    array<double, 2> D = from_eigen(ed), TD(rows, cols);
    TD = transpose(D);
    CHECK(max_abs_diff(to_eigen(TD), MD(ed.transpose())) == 0.0);
    const std::size_t l2 = target.l2_bytes;
    // The tile the plan chose (on CPUs its width is the cached-output tile's: 256 floats).
    const std::size_t tile_cols = std::size_t(plan(T, transpose(A)).kernels.at(0).tile.at(1));
    const bool grouped = l2 > 0 && target.transpose.block == 16 && tile_cols > 16 &&
                         tile_cols * rows * sizeof(float) > l2 && l2 / (rows * sizeof(float)) < 32;
    CHECK(tt::has(explain(T, transpose(A)), "16 operand rows at a time") == grouped);
    if (cols == 50 && !grouped)
      MESSAGE("transpose row groups: not planned on the " << backend_name() << " backend (" << rows
                                                          << " rows; L2 of its target: " << l2
                                                          << " bytes)");
  }
  // The same rows with an output past the streaming threshold (its last column of tiles
  // partial): on CPUs with write runs each full tile is assembled in scratch and leaves row by
  // row, since the tile's operand rows exceed L2 together.
  if (target.l2_bytes > 0 && target.streaming_store_min_bytes > 0) {
    const long cols = long(tt::streaming_bytes() / (std::size_t(rows) * sizeof(float))) + 37;
    M ea = tt::random_matrix<float>(cols, rows);
    array<float, 2> A = from_eigen(ea), T(rows, cols);
    T = transpose(A);
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
    const bool staged =
        target.transpose.stream_run_bytes > 0 &&
        std::size_t(target.transpose.tile[1]) * rows * sizeof(float) > target.l2_bytes;
    CHECK(tt::has(explain(T, transpose(A)), "each tile assembled in scratch") == staged);
  }
}

#if defined(KOKKOS_ENABLE_SERIAL) || defined(KOKKOS_ENABLE_OPENMP)
TEST_CASE("transpose staging: set_transpose_staging and tune_transpose choose how tiles stream") {
  const auto target = backends::backend<execution_space>::make_target();
  CHECK(transpose_staging_in_use() == transpose_staging::rows_exceed_l2);
  if (target.thread_per_logical || target.transpose.stream_run_bytes <= 0 ||
      target.streaming_store_min_bytes == 0) {
    // The GPU mapping (the emulation) has no streamed CPU tiles: nothing to time or choose.
    CHECK(tune_transpose() == transpose_staging::rows_exceed_l2);
    MESSAGE("transpose staging: no streamed CPU tiles on the " << backend_name() << " backend");
    return;
  }
  // A streamed output of 3000 rows: the operand's rows lie 12,000 bytes apart, so a tile's 32
  // of them fit in L2 on cores with 384 KB or more (the rule writes blocks from registers), and
  // its 3000 rows hold full staged tiles (rows: a quarter of L2 in 256-byte runs) and a partial
  // one. Every choice gives the exact transpose; explain says which one the plan makes.
  const long rows = 3000, cols = long(tt::streaming_bytes() / (rows * sizeof(float))) + 37;
  M ea = tt::random_matrix<float>(cols, rows);
  array<float, 2> A = from_eigen(ea), T(rows, cols);
  const std::size_t l2 = target.l2_bytes > 0 ? target.l2_bytes : std::size_t(256) << 10;
  const bool rule = std::size_t(target.transpose.tile[1]) * rows * sizeof(float) > l2;
  // wide_rows: tiles of one block row, their rows wide_row_bytes long (whole blocks), for
  // floats and doubles.
  const long b = target.transpose.block;
  auto wide_tile = [&](long elem) {
    return "tile " + std::to_string(b) + "x" +
           std::to_string(std::max(b, target.transpose.wide_row_bytes / elem / b * b));
  };
  std::set<std::string> names;
  for (const auto s : tessera::codegen::tile_stagings) {
    const std::string name = to_string(s);
    CAPTURE(name);
    CHECK(names.insert(name).second);  // a name says which choice it is
    set_transpose_staging(s);
    CHECK(transpose_staging_in_use() == s);
    T = transpose(A);
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
    const bool staged =
        s == transpose_staging::always || (s == transpose_staging::rows_exceed_l2 && rule);
    const std::string e = explain(T, transpose(A));
    CHECK(tt::has(e, "each tile assembled in scratch") == staged);
    CHECK(tt::has(e, wide_tile(4)) == (s == transpose_staging::wide_rows));
  }
  {
    // Doubles in wide rows (half as many elements a row), and a transpose with an element-wise
    // step (the blocks go through scratch and the epilogue), against Eigen.
    set_transpose_staging(transpose_staging::wide_rows);
    const long dcols = long(tt::streaming_bytes() / (rows * sizeof(double))) + 19;
    using MD = eigen_matrix<double>;
    const MD ed = tt::random_matrix<double>(dcols, rows);
    array<double, 2> D = from_eigen(ed), TD(rows, dcols);
    TD = transpose(D) * 2.0 + 1.0;
    CHECK(max_abs_diff(to_eigen(TD), MD((ed.transpose() * 2.0).array() + 1.0)) == 0.0);
    CHECK(tt::has(explain(TD, transpose(D)), wide_tile(8)));
  }
  const transpose_staging pick = tune_transpose();
  CHECK(transpose_staging_in_use() == pick);
  MESSAGE("tune_transpose on this machine: " << std::string(to_string(pick)));
  T = transpose(A);
  CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
  set_transpose_staging(transpose_staging::rows_exceed_l2);  // the default for the rest
}
#endif

#if defined(KOKKOS_ENABLE_SERIAL) || defined(KOKKOS_ENABLE_OPENMP)
TEST_CASE("memory threshold: set_memory_threshold and tune_memory_threshold move every CPU rule") {
  const std::size_t derived = backends::host::impl::derived_memory_resident_min_bytes();
  CHECK(memory_threshold_in_use() == derived);
  const auto target = backends::backend<execution_space>::make_target();
  if (target.thread_per_logical) {
    // The GPU mapping (the emulation) neither streams nor prefetches: nothing to time.
    CHECK(tune_memory_threshold() == derived);
    MESSAGE("memory threshold: no CPU memory rules on the " << backend_name() << " backend");
    return;
  }
  // 2A + 3B - C of 3000 x 7 doubles (168,000 bytes each), a transpose of a 301 x 97 float
  // operand into 116,788 bytes, and sums of the doubles and of 4-byte integers (which read
  // four streams from the threshold on): exact against Eigen with the threshold under and
  // over each, and the plans follow it.
  using MD = eigen_matrix<double>;
  const MD ea = tt::random_matrix<double>(3000, 7), eb = tt::random_matrix<double>(3000, 7),
           ec = tt::random_matrix<double>(3000, 7);
  const array<double, 2> A = from_eigen(ea), B = from_eigen(eb), Cc = from_eigen(ec);
  array<double, 2> D(3000, 7);
  const M ex = tt::random_matrix<float>(301, 97);
  const array<float, 2> X = from_eigen(ex);
  array<float, 2> Y(97, 301);
  std::vector<int> ints(30011);
  for (std::size_t k = 0; k < ints.size(); ++k) ints[k] = int(k * 2654435761u % 2001) - 1000;
  const array<int, 1> I(extent<1>(long(ints.size())), ints.data(), ints.data() + ints.size());
  const long long int_sum = std::accumulate(ints.begin(), ints.end(), 0LL);
  const bool streams = target.streaming_store_min_bytes > 0;
  for (const std::size_t t : {std::size_t(4096), std::size_t(1) << 40, std::size_t(0)}) {
    CAPTURE(t);
    set_memory_threshold(t);
    const std::size_t in_use = t > 0 ? t : derived;
    CHECK(memory_threshold_in_use() == in_use);
    const auto now = backends::backend<execution_space>::make_target();
    CHECK(now.row_prefetch_min_bytes == in_use);
    CHECK(now.streaming_store_min_bytes == (streams ? in_use : 0));
    D = 2.0 * A + 3.0 * B - Cc;
    CHECK(max_abs_diff(to_eigen(D), MD(2.0 * ea + 3.0 * eb - ec)) == 0.0);
    CHECK(tt::has(explain(D, 2.0 * A + 3.0 * B - Cc), "non-temporal") == (streams && t == 4096));
    Y = transpose(X);
    CHECK(max_abs_diff(to_eigen(Y), M(ex.transpose())) == 0.0);
    CHECK(std::abs(sum(A) - ea.sum()) <= 1e-12 * ea.cwiseAbs().sum());
    CHECK(sum(I) == int_sum);
  }
  // Tuned: the derived threshold, or a size from twice L2 up that is smaller; the kernels are
  // exact under it.
  const std::size_t tuned = tune_memory_threshold();
  CHECK(memory_threshold_in_use() == tuned);
  const std::size_t l2 = target.l2_bytes > 0 ? target.l2_bytes : std::size_t(1) << 20;
  CHECK((tuned == derived || (tuned >= 2 * l2 && tuned < derived)));
  MESSAGE("tune_memory_threshold on this machine: " << tuned << " bytes (derived: " << derived
                                                    << ")");
  D = 2.0 * A + 3.0 * B - Cc;
  CHECK(max_abs_diff(to_eigen(D), MD(2.0 * ea + 3.0 * eb - ec)) == 0.0);
  set_memory_threshold(0);  // the derived one for the rest
  CHECK(memory_threshold_in_use() == derived);
}

TEST_CASE("matmul blocking: a Tier 1 product takes the A prefetch set, with the same bits") {
  const auto target = backends::backend<execution_space>::make_target();
  if (target.thread_per_logical) {
    MESSAGE("matmul blocking: no packed CPU matmul on the " << backend_name() << " backend");
    return;
  }
  // 403 x 301 x 517 doubles: packed (A alone is 1.6 MB), several K blocks of 256.
  using MD = eigen_matrix<double>;
  const MD ea = tt::random_matrix<double>(403, 517), eb = tt::random_matrix<double>(517, 301);
  const array<double, 2> A = from_eigen(ea), B = from_eigen(eb);
  array<double, 2> C(403, 301);
  const matmul_blocking before = matmul_blocking_in_use<double>();
  matmul_blocking b = before;
  b.kc = 256;
  set_matmul_blocking<double>(b);
  C = matmul(A, B);
  const MD plain = to_eigen(C);
  CHECK(max_abs_diff(plain, MD(ea * eb)) <= 1e-13 * 517);
  CHECK_FALSE(tt::has(explain(C, matmul(A, B)), "a_prefetch"));
  b.a_prefetch = 32;
  set_matmul_blocking<double>(b);
  CHECK(matmul_blocking_in_use<double>().a_prefetch == 32);
  CHECK(tt::has(explain(C, matmul(A, B)), "kc=256 nc="));
  CHECK(tt::has(explain(C, matmul(A, B)), " a_prefetch=32"));
  C = matmul(A, B);
  CHECK(max_abs_diff(to_eigen(C), plain) == 0.0);
  b.a_prefetch = -4;
  CHECK_THROWS_AS(set_matmul_blocking<double>(b), shape_error);
  CHECK(matmul_blocking_in_use<double>().a_prefetch == 32);
  backends::host::set_blocking<double>(before, "derived from the cache sizes");  // as before
}

TEST_CASE("unaligned transpose blocks: every kernel, set by hand or by tune_transpose_unaligned") {
  using backends::host::transpose_block_size;
  CHECK(transpose_unaligned_in_use() ==
        transpose_unaligned_choice{transpose_unaligned::strips, transpose_unaligned::strips});
  const auto& kernels = backends::host::unaligned_block_stores;  // every kernel there is
  CHECK(kernels.size() == 5);
  // The block walk itself, with output row strides of every remainder modulo a line (and
  // whole lines), each output starting off a line too: every kernel writes the exact transpose
  // of every block and nothing else (the guard elements stay as they were; halves_prefetched
  // asks for lines past the output's end, which only a prefetch may; halves_prefetched_near
  // only for lines it writes).
  constexpr int B = transpose_block_size;
  for (const long count : {1L, 3L, 5L})
    for (const long ldo : {long(B) * count, B * count + 1, B * count + 4, B * count + 15,
                           B * count + 16, B * count + 37}) {
      const long ld = B + 3;  // operand rows 76 bytes apart
      std::vector<float> in(std::size_t(count * B * ld));
      for (auto& x : in) x = float(tt::random_size(-1000, 1000));
      for (const auto k : kernels)
        for (const long shift : {0L, 1L}) {
          CAPTURE(count);
          CAPTURE(ldo);
          CAPTURE(shift);
          std::vector<float> out(std::size_t(B * ldo + 2 + shift), -7.f);
          backends::host::transpose_blocks(in.data(), ld, out.data() + shift, ldo, count, false, k);
          long wrong = 0;
          for (long r = 0; r < B; ++r)
            for (long c = 0; c < ldo; ++c) {
              // out(r, c) = in(c, r) for the count x B columns the blocks cover.
              const float want = c < count * B ? in[std::size_t(c * ld + r)] : -7.f;
              wrong += out[std::size_t(shift + r * ldo + c)] != want;
            }
          CHECK(wrong == 0);
          CHECK(out[std::size_t(B * ldo + shift)] == -7.f);
        }
    }
  const std::size_t l2 = std::size_t(backends::host::impl::host_caches().l2);
  CHECK(std::string(backends::host::to_string(transpose_unaligned::halves_prefetched)) ==
        "halves, output lines prefetched");
  CHECK(std::string(backends::host::to_string(transpose_unaligned::strips)) ==
        "strips (32-byte pieces, 8 rows at a time)");
  CHECK(std::string(backends::host::to_string(transpose_unaligned::halves_prefetched_near)) ==
        "halves, output lines prefetched just before");
  {
    // Short names (a command line's argument): one word each, every kernel its own.
    std::set<std::string> short_names;
    for (const auto k : kernels) {
      const std::string name = backends::host::short_name(k);
      CAPTURE(name);
      CHECK(name.find(' ') == std::string::npos);
      CHECK(short_names.insert(name).second);
    }
    CHECK(std::string(backends::host::short_name(transpose_unaligned::halves_prefetched)) ==
          "halves-prefetched");
    CHECK(std::string(backends::host::short_name(transpose_unaligned::halves_prefetched_near)) ==
          "halves-prefetched-near");
  }
  // Tier 1 transposes whose output rows do not start on a line (seed 003's shape among them),
  // edges included, with each kernel set, for outputs in L2 and larger: the exact transpose
  // every way.
  std::vector<std::array<long, 2>> shapes = {
      {999, 666}, {long(l2 / (4 * 333)) + 7, 333}, {100, 96}, {96, 100}, {17, 33}, {16, 17}, {1, 1},
      {0, 5}};
  for (int i = 0; i < 4; ++i) shapes.push_back({tt::random_size(1, 300), tt::random_size(1, 300)});
  for (const auto& shape : shapes) {
    const long r = shape[0], c = shape[1];
    CAPTURE(r);
    CAPTURE(c);
    M ea = tt::random_matrix<float>(r, c);
    array<float, 2> A = from_eigen(ea), T(c, r);
    const auto ed = tt::random_matrix<double>(r, c);
    array<double, 2> Ad = from_eigen(ed), Td(c, r);
    for (const auto k : kernels) {
      set_transpose_unaligned(k);
      CHECK(transpose_unaligned_in_use() == transpose_unaligned_choice{k, k});
      T = transpose(A);
      CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
      Td = transpose(Ad);
      CHECK(max_abs_diff(to_eigen(Td), tessera::eigen_matrix<double>(ed.transpose())) == 0.0);
    }
  }
  // The rule that picks among the timed kernels: the one least behind in its worst place, near
  // ties decided by the product of the scores.
  using places = std::array<std::array<double, 3>, 2>;
  CHECK(impl::least_behind_everywhere(places{{{1, 2, 3}, {1, 2, 3}}}) == 0);  // fastest everywhere
  // Kernel 1: 0.8x the fastest in place 0, fastest in 1; kernel 0: fastest in 0, 0.5x in 1.
  CHECK(impl::least_behind_everywhere(places{{{1, 1.25, 2}, {2, 1, 1.6}}}) == 1);
  // Kernel 2's worst place (0.625x) beats kernel 1's (0.5x) and kernel 0's (0.5x).
  CHECK(impl::least_behind_everywhere(places{{{1, 2, 1.6}, {2, 1, 1.6}}}) == 2);
  CHECK(impl::least_behind_everywhere(places{{{2, 1, 2}, {1, 2, 1}}}) == 0);  // a tie: the first
  CHECK(impl::least_behind_everywhere(std::array<std::array<double, 1>, 1>{{{5}}}) == 0);
  // Near ties: kernel 0 is 0.885x the fastest in place 1 and fastest elsewhere; kernel 1 is
  // 0.893x in place 0 and 0.909x in place 2. Kernel 1's worst place is ahead by less than 3 %,
  // so the product of the scores decides (0.885 against 0.812): kernel 0; with no tolerance
  // the worst place alone decides: kernel 1.
  using three = std::array<std::array<double, 2>, 3>;
  const three near{{{1.0, 1.12}, {1.13, 1.0}, {1.0, 1.1}}};
  CHECK(impl::least_behind_everywhere(near) == 0);
  CHECK(impl::least_behind_everywhere(near, 0.0) == 1);
  CHECK(impl::least_behind_everywhere(near, 0.005) == 1);  // 0.885 / 0.893 is 0.991
  CHECK(impl::least_behind_everywhere(near, 0.01) == 0);
  // Kernel 0 (1, 0.769, 1; product 0.769) against kernel 1 (0.833, 1, 0.909; product 0.758):
  // kernel 0's worst place is more than 3 % behind kernel 1's, so kernel 1 despite the product;
  // with a 10 % tolerance they tie and the product picks kernel 0.
  const three far{{{1.0, 1.2}, {1.3, 1.0}, {1.0, 1.1}}};
  CHECK(impl::least_behind_everywhere(far) == 1);
  CHECK(impl::least_behind_everywhere(far, 0.1) == 0);
  // The output's place, from its size: under a third of the last-level cache, `cache`.
  using backends::host::output_place_of;
  CHECK(output_place_of(0, 3 << 20) == transpose_output_place::cache);
  CHECK(output_place_of((1 << 20) - 1, 3 << 20) == transpose_output_place::cache);
  CHECK(output_place_of(1 << 20, 3 << 20) == transpose_output_place::memory);
  CHECK(output_place_of(std::size_t(1) << 40, 3 << 20) == transpose_output_place::memory);
  CHECK(output_place_of(5, 0) == transpose_output_place::memory);
  const auto target = backends::backend<execution_space>::make_target();
  if (!target.thread_per_logical) {  // (a GPU mapping has no CPU blocks to choose)
    // A kernel for each place, set apart: an output past a third of the last-level cache (at
    // most 48 MiB: a larger cache leaves it in `cache`), its rows 12 floats past whole lines,
    // and a 999 x 666 one, each exact with every pair of kernels.
    const std::size_t llc = backends::host::impl::derived_memory_resident_min_bytes();
    const long side =
        long(std::sqrt(double(std::min(llc, std::size_t(144) << 20)) / 12.0)) / 16 * 16 + 25;
    CAPTURE(side);
    const bool large_in_memory =
        output_place_of(std::size_t(side) * std::size_t(side + 3) * sizeof(float), llc) ==
        transpose_output_place::memory;
    CHECK(large_in_memory == (llc <= (std::size_t(144) << 20)));
    M el = tt::random_matrix<float>(side + 3, side), es = tt::random_matrix<float>(999, 666);
    array<float, 2> L = from_eigen(el), LT(side, side + 3), S = from_eigen(es), ST(666, 999);
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const transpose_unaligned_choice c{kernels[i], kernels[(i + 1) % kernels.size()]};
      set_transpose_unaligned(c);
      CHECK(transpose_unaligned_in_use() == c);
      LT = transpose(L);
      CHECK(max_abs_diff(to_eigen(LT), M(el.transpose())) == 0.0);
      ST = transpose(S);
      CHECK(max_abs_diff(to_eigen(ST), M(es.transpose())) == 0.0);
    }
  }
  CHECK(describe(
            transpose_unaligned_choice{transpose_unaligned::quads, transpose_unaligned::halves}) ==
        "quads (16-byte pieces) (outputs in cache), halves (32-byte pieces) (larger outputs)");
  set_transpose_unaligned(transpose_unaligned::strips);
  const transpose_unaligned_choice pick = tune_transpose_unaligned();
  CHECK(transpose_unaligned_in_use() == pick);
  if (target.thread_per_logical)  // nothing timed
    CHECK(pick ==
          transpose_unaligned_choice{transpose_unaligned::strips, transpose_unaligned::strips});
  MESSAGE("tune_transpose_unaligned on this machine: " << describe(pick));
  M ea = tt::random_matrix<float>(999, 666);
  array<float, 2> A = from_eigen(ea), T(666, 999);
  T = transpose(A);
  CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
  set_transpose_unaligned(transpose_unaligned::strips);  // the default for the rest
}

TEST_CASE("streamed transposes whose output rows do not start on a line: skewed tiles") {
  // With the threshold set to a byte, every transpose whose output rows are not whole blocks is
  // planned streamed, as those larger than the last-level cache are: full tiles write each
  // output row shifted to its line boundaries (kernels::skewed_tile_rows), the last tile column
  // and the last rows as before. The exact transpose every way, floats, doubles and ints, into
  // arrays and into a section whose rows start anywhere (the border stays as it was).
  const codegen::target before = backends::backend<execution_space>::make_target();
  struct reset {
    ~reset() {
      backends::host::set_unaligned_rows_threshold(0);
      set_memory_threshold(0);
    }
  } guard;
  backends::host::set_unaligned_rows_threshold(1);
  set_memory_threshold(1);
  const codegen::target target = backends::backend<execution_space>::make_target();
  if (!before.thread_per_logical && backends::host::streaming_supported) {
    CHECK(target.transpose.unaligned_rows_min_bytes == 1);
    CHECK(before.transpose.unaligned_rows_min_bytes ==
          backends::host::impl::derived_memory_resident_min_bytes());
    array<float, 2> A(300, 301), T(301, 300);
    CHECK(tt::has(explain(T, transpose(A)), "non-temporal"));
  }
  std::vector<std::array<long, 2>> shapes = {{999, 666}, {129, 127}, {127, 129}, {33, 65},
                                             {65, 33},   {16, 17},   {17, 16},   {1, 1},
                                             {1, 40},    {40, 1},    {0, 5},     {300, 301}};
  for (int i = 0; i < 6; ++i) shapes.push_back({tt::random_size(1, 700), tt::random_size(1, 700)});
  for (const auto& shape : shapes) {
    const long r = shape[0], c = shape[1];
    CAPTURE(r);
    CAPTURE(c);
    const M ea = tt::random_matrix<float>(r, c);
    array<float, 2> A = from_eigen(ea), T(c, r);
    T = transpose(A);
    CHECK(max_abs_diff(to_eigen(T), M(ea.transpose())) == 0.0);
    const auto ed = tt::random_matrix<double>(r, c);
    array<double, 2> Ad = from_eigen(ed), Td(c, r);
    Td = transpose(Ad);
    CHECK(max_abs_diff(to_eigen(Td), tessera::eigen_matrix<double>(ed.transpose())) == 0.0);
    using MI = eigen_matrix<int>;
    const MI ei = ea.unaryExpr([](float x) { return int(x * 1000.f); });
    array<int, 2> Ai = from_eigen(ei), Ti(c, r);
    Ti = transpose(Ai);
    CHECK((ei.size() == 0 || (to_eigen(Ti) - MI(ei.transpose())).cwiseAbs().maxCoeff() == 0));
    // Into a section one row and three columns in: its rows start 12 bytes past wherever the
    // array's do.
    array<float, 2> Dst(c + 2, r + 5);
    Dst = -7.f;
    assign(Dst.section(tessera::index<2>(1, 3), extent<2>(c, r)), transpose(A));
    M want = M::Constant(c + 2, r + 5, -7.f);
    want.block(1, 3, c, r) = ea.transpose();
    CHECK(max_abs_diff(to_eigen(Dst), want) == 0.0);
  }
}

TEST_CASE("best_seconds_each: a warm-up, each choice in turn, then rounds from the next choice") {
  using backends::host::impl::best_seconds_each;
  for (const int first : {1, 3})
    for (const std::size_t count : {std::size_t(1), std::size_t(2), std::size_t(5)}) {
      CAPTURE(first);
      CAPTURE(count);
      const int rounds = 4;
      std::vector<std::size_t> used;         // the choice set before each timed group of runs
      std::vector<std::size_t> runs(count);  // runs under each choice
      std::size_t current = count;
      const std::vector<double> t = best_seconds_each(
          count,
          [&](std::size_t i) {
            used.push_back(i);
            current = i;
          },
          [&] { ++runs[current]; }, first, rounds);
      REQUIRE(t.size() == count);
      for (const double s : t) CHECK((s >= 0 && s < 1));
      // The warm-up under choice 0, `first` runs under each in order, then round r from r.
      std::vector<std::size_t> want{0};
      for (std::size_t i = 0; i < count; ++i) want.push_back(i);
      for (int r = 0; r < rounds; ++r)
        for (std::size_t j = 0; j < count; ++j) want.push_back((j + std::size_t(r)) % count);
      CHECK(used == want);
      for (std::size_t i = 0; i < count; ++i)
        CHECK(runs[i] == std::size_t(first + rounds) + (i == 0 ? 1 : 0));
      CHECK(current == want.back());
    }
  // The best of each choice's runs: a choice whose every run takes 2 ms against none.
  std::size_t current = 0;
  const std::vector<double> t = best_seconds_each(
      2, [&](std::size_t i) { current = i; },
      [&] {
        if (current == 1) {
          Kokkos::Timer wait;
          while (wait.seconds() < 0.002) {
          }
        }
      },
      1, 2);
  CHECK(t[1] >= 0.002);
  CHECK(t[0] < t[1]);
  // What use or run throws reaches the caller.
  CHECK_THROWS_AS(best_seconds_each(
                      2,
                      [](std::size_t i) {
                        if (i == 1) throw std::runtime_error("use");
                      },
                      [] {}, 1, 1),
                  std::runtime_error);
}
#endif

#if defined(KOKKOS_ENABLE_SERIAL) || defined(KOKKOS_ENABLE_OPENMP)
TEST_CASE("prefetch tuning: set_prefetch_tuning and tune_prefetch choose the streaming prefetch") {
  const auto target = backends::backend<execution_space>::make_target();
  CHECK(prefetch_tuning_in_use() == prefetch_tuning{});
  // Bad settings are refused before anything changes.
  CHECK_THROWS_AS(set_prefetch_tuning({{true, true, true, true}, -2}), shape_error);
  CHECK_THROWS_AS(set_prefetch_tuning({{false, false, false, false}, 100}), shape_error);
  CHECK(prefetch_tuning_in_use() == prefetch_tuning{});
  if (target.thread_per_logical || target.row_prefetch_min_bytes == 0) {
    // The GPU mapping (the emulation) streams no CPU lines: nothing to time or choose.
    CHECK(tune_prefetch() == prefetch_tuning{});
    MESSAGE("prefetch tuning: no CPU streaming kernels on the " << backend_name() << " backend");
    return;
  }
  // tile_mean of every height class, off one class at a time: the plan of that class (and only
  // that class) drops the line prefetch, and the values stay bit for bit the same.
  const long r = 16 * tt::random_size(2, 9), c = 16 * tt::random_size(20, 40) + 16;
  M ea = tt::random_matrix<float>(r, c);
  array<float, 2> A = from_eigen(ea);
  // f applied to tile_mean<R, R>(A) for R = 2, 4, 8, 16: one per height class, in order.
  auto per_class = [&](const auto& f) {
    return std::vector{f(tile_mean<2, 2>(A)), f(tile_mean<4, 4>(A)), f(tile_mean<8, 8>(A)),
                       f(tile_mean<16, 16>(A))};
  };
  auto means = [&] {
    return per_class([](const auto& e) { return M(to_eigen(array<float, 2>(e))); });
  };
  auto prefetching = [&] {
    return per_class([](const auto& e) { return tt::has(explain(e), "prefetching"); });
  };
  const std::vector<M> ref = means();
  const std::vector<bool> rule = prefetching();
  for (int k = 0; k < codegen::tile_rows_classes; ++k) {
    const long t = 2L << k;
    M e(r / t, c / t);
    for (long i = 0; i < r / t; ++i)
      for (long j = 0; j < c / t; ++j) e(i, j) = ea.block(t * i, t * j, t, t).mean();
    CHECK(max_abs_diff(ref[std::size_t(k)], e) <= 1e-6);
  }
  for (int off = 0; off < codegen::tile_rows_classes; ++off) {
    CAPTURE(off);
    prefetch_tuning p;
    p.tile_reduce[std::size_t(off)] = false;
    set_prefetch_tuning(p);
    CHECK(prefetch_tuning_in_use() == p);
    const std::vector<bool> now = prefetching();
    for (int k = 0; k < codegen::tile_rows_classes; ++k) CHECK(now[k] == (k != off && rule[k]));
    const std::vector<M> got = means();
    for (int k = 0; k < codegen::tile_rows_classes; ++k) CHECK(max_abs_diff(got[k], ref[k]) == 0.0);
  }
  // Narrower lines, one class at a time, 1-3 more halvings: that class's plan (only) takes a
  // line 2, 4 or 8 times narrower, or the narrowest the kernel has for it (one vector, one
  // tile row: R x R floats, 4R bytes); the values stay bit for bit the same.
  auto lines = [&] {
    return per_class([](const auto& e) {
      const std::string plan = explain(e);
      const auto at = plan.find("in lines of ");
      REQUIRE(at != std::string::npos);
      return std::stol(plan.substr(at + 12));
    });
  };
  set_prefetch_tuning({});
  CHECK_THROWS_AS(set_prefetch_tuning({{true, true, true, true}, -1, {0, 4, 0, 0}}), shape_error);
  CHECK_THROWS_AS(set_prefetch_tuning({{true, true, true, true}, -1, {-1, 0, 0, 0}}), shape_error);
  CHECK(prefetch_tuning_in_use() == prefetch_tuning{});
  const std::vector<long> whole = lines();
  for (int cls = 0; cls < codegen::tile_rows_classes; ++cls)
    for (int h = 1; h <= 3; ++h) {
      CAPTURE(cls);
      CAPTURE(h);
      prefetch_tuning p;
      p.tile_reduce_line_halvings[std::size_t(cls)] = h;
      set_prefetch_tuning(p);
      CHECK(prefetch_tuning_in_use() == p);
      CHECK(tt::has(describe(p), "line/" + std::to_string(1 << h)));
      const std::vector<long> now = lines();
      for (int k = 0; k < codegen::tile_rows_classes; ++k) {
        CAPTURE(k);
        long want = whole[std::size_t(k)];
        const long floor = std::max(long(target.tile_reduce.vector_bytes), 4L * (2L << k));
        for (int m = 0; m < (k == cls ? h : 0); ++m)
          if (want / 2 >= floor) want /= 2;
        CHECK(now[std::size_t(k)] == want);
      }
      // 2 x 2 tiles: the target's whole line (2 rows fit L1) halves h times down to a vector.
      if (cls == 0 && whole[0] >> h >= target.tile_reduce.vector_bytes)
        CHECK(now[0] == whole[0] >> h);
      const std::vector<M> got = means();
      for (int k = 0; k < codegen::tile_rows_classes; ++k)
        CHECK(max_abs_diff(got[std::size_t(k)], ref[std::size_t(k)]) == 0.0);
    }
  // A sum of twice the last-level cache comes from memory: 0 prefetches nothing, 4096 B
  // prefetches that far, -1 is the rule; the sum is the same every way.
  const long n = long(target.reduction.prefetch_min_bytes / sizeof(float)) + 37;
  array<float, 1> big(n);
  big = 0.5f;
  double sums[3];
  const int bytes[3] = {0, 4096, -1};
  for (int k = 0; k < 3; ++k) {
    CAPTURE(bytes[k]);
    set_prefetch_tuning({{true, true, true, true}, bytes[k]});
    const std::string e = explain(reduction::sum, big);
    CHECK(tt::has(e, "the input comes from memory"));
    if (bytes[k] >= 0) CHECK(tt::has(e, "prefetched 4096 B") == (bytes[k] == 4096));
    sums[k] = double(sum(big));
  }
  CHECK(sums[0] == double(float(0.5 * double(n))));  // exact, rounded once to float
  CHECK(sums[1] == sums[0]);
  CHECK(sums[2] == sums[0]);
  // Row loops over sections moving more than the last-level cache, each way: prefetching the
  // operands' leading rows (and streaming the output, which alone reaches the last-level
  // cache's size here: the streaming threshold on CPUs that stream), prefetching only, or a
  // plain row loop; stencils (an operand read over several rows) as stencil_row_loops says,
  // the others as row_loops; the values the same bit for bit, the rest of the destination
  // untouched, every way.
  {
    const long side = long(std::sqrt(double(target.row_prefetch_min_bytes / sizeof(float)))) + 8 +
                      tt::random_size(0, 40);
    const extent<2> full(side, side + 5), in(side - 2, side + 1);
    const M ex = tt::random_matrix<float>(full[0], full[1]),
            ez = tt::random_matrix<float>(full[0], full[1]);
    const array<float, 2> X = from_eigen(ex), Z = from_eigen(ez);
    using ix = tessera::index<2>;
    // A stencil: X over rows i .. i + 2. Rows read once: X and Z each at one row offset.
    auto stencil = [&] {
      return 0.5f * (X.section(ix(0, 1), in) + X.section(ix(2, 3), in)) - X.section(ix(1, 2), in);
    };
    auto once = [&] {
      return 2.f * X.section(ix(1, 0), in) - Z.section(ix(2, 4), in);
    };
    M want_stencil = M::Constant(full[0], full[1], -1.f), want_once = want_stencil;
    for (long i = 0; i < in[0]; ++i)
      for (long j = 0; j < in[1]; ++j) {
        want_stencil(i + 1, j + 1) = 0.5f * (ex(i, j + 1) + ex(i + 2, j + 3)) - ex(i + 1, j + 2);
        want_once(i + 1, j + 1) = 2.f * ex(i + 1, j) - ez(i + 2, j + 4);
      }
    const bool output_streams =
        target.streaming_store_min_bytes > 0 &&
        std::size_t(in.size()) * sizeof(float) >= target.streaming_store_min_bytes;
    // The plan follows `way`, and the values are exact.
    auto check = [&](const auto& rhs, const M& want, codegen::row_loop_memory way) {
      array<float, 2> Y(full);
      Y = -1.f;
      const std::string e = explain(Y.section(ix(1, 1), in), rhs());
      CHECK(tt::has(e, "prefetches the leading row of") ==
            (way != codegen::row_loop_memory::plain));
      CHECK(tt::has(e, "non-temporal") ==
            (output_streams && way == codegen::row_loop_memory::prefetch_and_stream));
      assign(Y.section(ix(1, 1), in), rhs());
      CHECK(max_abs_diff(M(to_eigen(Y)), want) == 0.0);
    };
    for (const auto rows : codegen::row_loop_memories)
      for (const auto stencils : codegen::row_loop_memories) {
        const std::string names =
            std::string(codegen::to_string(rows)) + ", stencils " + codegen::to_string(stencils);
        CAPTURE(names);
        prefetch_tuning p;
        p.row_loops = rows;
        p.stencil_row_loops = stencils;
        set_prefetch_tuning(p);
        CHECK(prefetch_tuning_in_use() == p);
        CHECK(tt::has(describe(p), "row loops " + names));
        check(stencil, want_stencil, stencils);
        check(once, want_once, rows);
      }
  }
  set_prefetch_tuning({});
  const prefetch_tuning pick = tune_prefetch();
  CHECK(prefetch_tuning_in_use() == pick);
  CHECK(pick.reduce_bytes >= -1);
  MESSAGE("tune_prefetch on this machine: " << describe(pick));
  CHECK(max_abs_diff(means()[1], ref[1]) == 0.0);
  set_prefetch_tuning({});  // the default for the rest
}
#endif

TEST_CASE("tile_reduce and tile_mean against Eigen block reductions") {
  for (int trial = 0; trial < 5; ++trial) {
    const long r = 4 * tt::random_size(1, 30), c = 8 * tt::random_size(1, 20);
    M ea = tt::random_matrix<float>(r, c);
    array<float, 2> A = from_eigen(ea);
    array<float, 2> mean22 = tile_mean<2, 2>(A), mean48 = tile_mean<4, 8>(A);
    array<float, 2> mx = tile_reduce<4, 4>(A, ops::max{});
    array<float, 2> fused = relu(tile_mean<2, 2>(A * A) - 0.1f);
    M r22(r / 2, c / 2), r48(r / 4, c / 8), rmx(r / 4, c / 4), rf(r / 2, c / 2);
    for (long i = 0; i < r / 2; ++i)
      for (long j = 0; j < c / 2; ++j) {
        r22(i, j) = ea.block(2 * i, 2 * j, 2, 2).mean();
        rf(i, j) = std::max(0.f, ea.block(2 * i, 2 * j, 2, 2).array().square().mean() - 0.1f);
      }
    for (long i = 0; i < r / 4; ++i)
      for (long j = 0; j < c / 8; ++j) r48(i, j) = ea.block(4 * i, 8 * j, 4, 8).mean();
    for (long i = 0; i < r / 4; ++i)
      for (long j = 0; j < c / 4; ++j) rmx(i, j) = ea.block(4 * i, 4 * j, 4, 4).maxCoeff();
    CHECK(max_abs_diff(to_eigen(mean22), r22) <= 1e-6);
    CHECK(max_abs_diff(to_eigen(mean48), r48) <= 1e-6);
    CHECK(max_abs_diff(to_eigen(mx), rmx) == 0.0);
    CHECK(max_abs_diff(to_eigen(fused), rf) <= 1e-6);
  }
  // Seed 000 as one expression: 8x8 of 0..63, 2x2 tiles.
  std::vector<float> raw(64);
  for (int i = 0; i < 64; ++i) raw[i] = float(i);
  array<float, 2> m(extent<2>(8, 8), raw.begin(), raw.end());
  array<float, 2> avg = tile_mean<2, 2>(m);
  CHECK(avg.to_vector() == std::vector<float>{4.5, 6.5, 8.5, 10.5, 20.5, 22.5, 24.5, 26.5, 36.5,
                                              38.5, 40.5, 42.5, 52.5, 54.5, 56.5, 58.5});
}

// Narrow tiles combine the input rows under a chunk of outputs first, then neighbours; outputs
// as large as the last-level cache leave through streaming stores. Shapes end in partial chunks
// and lines; a 1 x C and an R x 1 tile, an epilogue, and max (exact) as well as mean.
TEST_CASE("tile_reduce with narrow tiles: partial chunks, streaming-size outputs, epilogues") {
  const bool big = tt::backend_streams("tile_reduce streaming-size outputs");
  {
    // output 2901 x 2912 floats (33.8 MB, rows aligned) at a 32 MiB threshold
    const long r = 2 * (big ? tt::streaming_scaled(2901, 1) : 301), c = 2 * (big ? 2912 : 312);
    M ea = tt::random_matrix<float>(r, c);
    array<float, 2> A = from_eigen(ea), T(r / 2, c / 2), U(r / 2, c / 2), V(r / 2, c / 2);
    T = tile_mean<2, 2>(A);
    U = relu(tile_reduce<2, 2>(A, ops::max{}) - 0.5f);
    // The node alone streams its finished vectors; under an exact epilogue each value goes
    // through the epilogue first: the same bits.
    V = tile_mean<2, 2>(A) * 1.f;
    CHECK(to_eigen(T) == to_eigen(V));
    M rt(r / 2, c / 2), ru(r / 2, c / 2);
    for (long i = 0; i < r / 2; ++i)
      for (long j = 0; j < c / 2; ++j) {
        rt(i, j) = ea.block(2 * i, 2 * j, 2, 2).mean();
        ru(i, j) = std::max(ea.block(2 * i, 2 * j, 2, 2).maxCoeff() - 0.5f, 0.f);
      }
    CHECK(max_abs_diff(to_eigen(T), rt) <= 1e-6);
    CHECK(max_abs_diff(to_eigen(U), ru) == 0.0);
  }
  {
    using MD = eigen_matrix<double>;
    const long r = 21 * 172, c = 15 * 273;  // 1 x 5 (double), 3 x 1, 7 x 3 tiles
    MD ed = tt::random_matrix<double>(r, c);
    array<double, 2> D = from_eigen(ed);
    array<double, 2> a = tile_mean<1, 5>(D), b = tile_reduce<3, 1>(D, ops::min{}),
                     d = tile_mean<7, 3>(D) * 2.0;
    MD ra(r, c / 5), rb(r / 3, c), rd(r / 7, c / 3);
    for (long i = 0; i < r; ++i)
      for (long j = 0; j < c / 5; ++j) ra(i, j) = ed.block(i, 5 * j, 1, 5).mean();
    for (long i = 0; i < r / 3; ++i)
      for (long j = 0; j < c; ++j) rb(i, j) = ed.block(3 * i, j, 3, 1).minCoeff();
    for (long i = 0; i < r / 7; ++i)
      for (long j = 0; j < c / 3; ++j) rd(i, j) = 2.0 * ed.block(7 * i, 3 * j, 7, 3).mean();
    CHECK(max_abs_diff(to_eigen(a), ra) <= 1e-14);
    CHECK(max_abs_diff(to_eigen(b), rb) == 0.0);
    CHECK(max_abs_diff(to_eigen(d), rd) <= 1e-14);
  }
}

// Tiles whose row spans a cache line or more take the host backends' wide path (pairwise
// combine); odd widths exercise the uneven halving.
TEST_CASE("tile_reduce rows of every width: whole lines, narrower lines, then elements") {
  // Row widths around every line width a CPU kernel has (1 to 16 vectors of up to 16 floats):
  // the rest of a row after its whole lines goes through narrower lines, then element by
  // element; C = 3 combines its groups without shuffles.
  for (long c : {12L, 24L, 36L, 48L, 60L, 72L, 120L, 132L, 252L, 264L, 516L, 1020L, 1044L}) {
    CAPTURE(c);
    const long r = 12;
    M ea = tt::random_matrix<float>(r, c);
    array<float, 2> A = from_eigen(ea);
    array<float, 2> m22 = tile_mean<2, 2>(A), m44 = tile_mean<4, 4>(A), m33 = tile_mean<3, 3>(A);
    array<float, 2> mx = tile_reduce<2, 12>(A, ops::max{});
    // Eigen's reduction f of each R x C block of ea.
    const auto blocks = [&](long R, long C, auto f) {
      M out(r / R, c / C);
      for (long i = 0; i < r / R; ++i)
        for (long j = 0; j < c / C; ++j) out(i, j) = f(ea.block(R * i, C * j, R, C));
      return out;
    };
    const auto mean = [](const auto& b) {
      return b.mean();
    };
    CHECK(max_abs_diff(to_eigen(m22), blocks(2, 2, mean)) <= 1e-6);
    CHECK(max_abs_diff(to_eigen(m44), blocks(4, 4, mean)) <= 1e-6);
    CHECK(max_abs_diff(to_eigen(m33), blocks(3, 3, mean)) <= 1e-6);
    CHECK(max_abs_diff(to_eigen(mx), blocks(2, 12, [](const auto& b) { return b.maxCoeff(); })) ==
          0.0);
  }
}

TEST_CASE("tile_reduce with wide tiles: 16x16 mean, 2x24 min, double 3x8 mean, int 2x16 sum") {
  for (int trial = 0; trial < 4; ++trial) {
    const long r = 48 * tt::random_size(1, 4), c = 48 * tt::random_size(1, 6);
    CAPTURE(r);
    CAPTURE(c);
    M ea = tt::random_matrix<float>(r, c);
    array<float, 2> A = from_eigen(ea);
    array<float, 2> m16 = tile_mean<16, 16>(A), mn = tile_reduce<2, 24>(A, ops::min{});
    M r16(r / 16, c / 16), rmn(r / 2, c / 24);
    for (long i = 0; i < r / 16; ++i)
      for (long j = 0; j < c / 16; ++j) r16(i, j) = ea.block(16 * i, 16 * j, 16, 16).mean();
    for (long i = 0; i < r / 2; ++i)
      for (long j = 0; j < c / 24; ++j) rmn(i, j) = ea.block(2 * i, 24 * j, 2, 24).minCoeff();
    CHECK(max_abs_diff(to_eigen(m16), r16) <= 1e-6);
    CHECK(max_abs_diff(to_eigen(mn), rmn) == 0.0);

    using MD = eigen_matrix<double>;
    MD ed = tt::random_matrix<double>(r, c);
    array<double, 2> D = from_eigen(ed);
    array<double, 2> m38 = tile_mean<3, 8>(D);
    MD r38(r / 3, c / 8);
    for (long i = 0; i < r / 3; ++i)
      for (long j = 0; j < c / 8; ++j) r38(i, j) = ed.block(3 * i, 8 * j, 3, 8).mean();
    CHECK(max_abs_diff(to_eigen(m38), r38) <= 1e-14);

    const eigen_matrix<int> ei = eigen_matrix<int>::NullaryExpr(
        r, c, [](Eigen::Index i, Eigen::Index j) { return int((i * 31 + j * 17) % 101) - 50; });
    array<int, 2> I = from_eigen(ei);
    array<int, 2> s16 = tile_reduce<2, 16>(I, ops::add{});
    eigen_matrix<int> rs(r / 2, c / 16);
    for (long i = 0; i < r / 2; ++i)
      for (long j = 0; j < c / 16; ++j) rs(i, j) = ei.block(2 * i, 16 * j, 2, 16).sum();
    CHECK((to_eigen(s16) - rs).cwiseAbs().maxCoeff() == 0);
  }
}

// Where the expression is the tile_reduce node alone, into an array of its type, the CPU line
// kernel writes each line's outputs from its registers to the output row; under an epilogue
// (here an exact one, * 1) they go through the epilogue element by element. The same values,
// bit for bit, at every line width and rest; means of integers divide as integers do.
TEST_CASE("tile_reduce: the node alone and under an exact epilogue give the same bits") {
  for (long c : {16L, 48L, 96L, 272L, 528L, 1040L, 4112L}) {
    CAPTURE(c);
    const long r = 16 * tt::random_size(1, 3);
    M ea = tt::random_matrix<float>(r, c);
    array<float, 2> A = from_eigen(ea);
    const eigen_matrix<int> ei = eigen_matrix<int>::NullaryExpr(
        r, c,
        [](Eigen::Index i, Eigen::Index j) { return int((i * 7919 + j * 104729) % 2001) - 1000; });
    array<int, 2> I = from_eigen(ei);
    auto check = [&](const auto& node, auto one, const auto& want, double tol) {
      using T = typename std::remove_cvref_t<decltype(node)>::value_type;
      array<T, 2> fresh = node, into(node.get_extent()), epilogue(node.get_extent());
      into = node;
      epilogue = node * one;
      CHECK(to_eigen(fresh) == to_eigen(epilogue));
      CHECK(to_eigen(into) == to_eigen(epilogue));
      CHECK(max_abs_diff(to_eigen(fresh).template cast<double>(), want.template cast<double>()) <=
            tol);
    };
    const auto blocks = [&](const auto& e, long R, long C, auto f) {
      eigen_matrix<typename std::remove_cvref_t<decltype(e)>::Scalar> out(r / R, c / C);
      for (long i = 0; i < r / R; ++i)
        for (long j = 0; j < c / C; ++j) out(i, j) = f(e.block(R * i, C * j, R, C));
      return out;
    };
    const auto mean = [](const auto& b) {
      return b.mean();
    };
    const auto max = [](const auto& b) {
      return b.maxCoeff();
    };
    const auto int_mean = [](const auto& b) {
      return b.sum() / int(b.size());
    };
    check(tile_mean<2, 2>(A), 1.f, blocks(ea, 2, 2, mean), 1e-6);
    check(tile_mean<4, 4>(A), 1.f, blocks(ea, 4, 4, mean), 1e-6);
    check(tile_mean<8, 8>(A), 1.f, blocks(ea, 8, 8, mean), 1e-6);
    check(tile_mean<16, 16>(A), 1.f, blocks(ea, 16, 16, mean), 1e-6);
    check(tile_mean<2, 8>(A), 1.f, blocks(ea, 2, 8, mean), 1e-6);
    check(tile_reduce<4, 2>(A, ops::max{}), 1.f, blocks(ea, 4, 2, max), 0.0);
    check(tile_mean<4, 4>(I), 1, blocks(ei, 4, 4, int_mean), 0.0);
    check(tile_mean<2, 16>(I), 1, blocks(ei, 2, 16, int_mean), 0.0);
  }
}

TEST_CASE("aliasing: A = transpose(A), A = matmul(A, B), A = A + 1 are correct") {
  M ea = tt::random_matrix<float>(24, 24), eb = tt::random_matrix<float>(24, 24);
  array<float, 2> A = from_eigen(ea), B = from_eigen(eb);
  A = transpose(A);
  CHECK(max_abs_diff(to_eigen(A), M(ea.transpose())) == 0.0);
  A = from_eigen(ea);
  A = matmul(A, B);
  CHECK(max_abs_diff(to_eigen(A), M(ea * eb)) <= 1e-4);
  A = from_eigen(ea);
  A = A + 1.f;
  CHECK(max_abs_diff(to_eigen(A), M(ea.array() + 1.f)) == 0.0);
  A = from_eigen(ea);
  A = transpose(A) + A;
  CHECK(max_abs_diff(to_eigen(A), M(ea.transpose() + ea)) <= 1e-6);
  // Past the size whose copy back runs on the calling thread on host backends (2^14).
  M eg = tt::random_matrix<float>(150, 150);
  array<float, 2> G = from_eigen(eg);
  G = transpose(G);
  CHECK(max_abs_diff(to_eigen(G), M(eg.transpose())) == 0.0);
}

TEST_CASE("shape errors name the operation and extents, before anything runs") {
  array<float, 2> A(3, 4), B(4, 3), C(3, 3);
  CHECK_THROWS_WITH_AS(A + B, doctest::Contains("(3,4) and (4,3) differ"), shape_error);
  CHECK_THROWS_WITH_AS(matmul(A, A),
                       doctest::Contains("matmul: inner dimensions differ: A (3,4) x B (3,4)"),
                       shape_error);
  CHECK_THROWS_WITH_AS((tile_mean<2, 2>(A * 1.f)),
                       doctest::Contains("tile_mean<2,2>: extent (3,4)"), shape_error);
  array<float, 2> D(extent<2>(2, 2));
  auto v0 = D.to_vector();
  CHECK_THROWS_WITH_AS(D = matmul(A, B), doctest::Contains("destination extent (2,2)"),
                       shape_error);
  CHECK(D.to_vector() == v0);
  // Empty extents are a no-op.
  array<float, 2> E(0, 4), F(0, 4);
  E = F * 2.f;
  CHECK(E.size() == 0);
}

}  // namespace

namespace {
using namespace tessera;
using tessera::index;

TEST_CASE("reductions of expressions are fused and match Eigen") {
  for (long n : {1L, 7L, 100L, 1000L}) {
    CAPTURE(n);
    eigen_matrix<double> ea = tt::random_matrix<double>(n, 3), eb = tt::random_matrix<double>(n, 3);
    array<double, 2> A = from_eigen(ea), B = from_eigen(eb);
    CHECK(sum(A * B) == doctest::Approx((ea.array() * eb.array()).sum()).epsilon(1e-12));
    CHECK(max_value(abs(A - B)) == (ea - eb).cwiseAbs().maxCoeff());
    CHECK(mean(A + 1.0) == doctest::Approx(ea.mean() + 1.0).epsilon(1e-12));
    CHECK(reduce(A * 2.0, 0.0, plus<>{}) == doctest::Approx(2 * ea.sum()).epsilon(1e-12));
  }
  eigen_matrix<float> ma = tt::random_matrix<float>(24, 16), mb = tt::random_matrix<float>(16, 8);
  array<float, 2> A = from_eigen(ma), B = from_eigen(mb);
  CHECK(sum(matmul(A, B)) == doctest::Approx((ma * mb).sum()).epsilon(1e-5));
  CHECK(sum(tile_mean<4, 4>(A)) == doctest::Approx(ma.sum() / 16).epsilon(1e-5));
  CHECK(sum(transpose(A) * 2.f) == doctest::Approx(2 * ma.sum()).epsilon(1e-5));
}

}  // namespace

namespace {
using namespace tessera;

TEST_CASE("tile_mean of integers divides exactly like integer arithmetic, odd tiles") {
  std::vector<int> h(6 * 9);
  for (int i = 0; i < 54; ++i) h[i] = i * 7 - 100;
  array<int, 2> a(extent<2>(6, 9), h.begin(), h.end());
  array<int, 2> m = tile_mean<3, 3>(a);
  auto got = m.to_vector();
  for (int bi = 0; bi < 2; ++bi)
    for (int bj = 0; bj < 3; ++bj) {
      int s = 0;
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) s += h[(3 * bi + r) * 9 + 3 * bj + c];
      CHECK(got[bi * 3 + bj] == s / 9);
    }
  // Wide rows: a partial last chunk of columns (130 = 2 * 64 + 2).
  eigen_matrix<double> e = tt::random_matrix<double>(4, 130);
  array<double, 2> d = from_eigen(e);
  array<double, 2> dm = tile_mean<2, 2>(d);
  auto dv = to_eigen(dm);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 65; ++j)
      CHECK(dv(i, j) == doctest::Approx(e.block(2 * i, 2 * j, 2, 2).mean()).epsilon(1e-14));
}

}  // namespace
