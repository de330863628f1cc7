// Kernel plans as values: fusion (kernel counts), barrier placement and scratch bytes. Plans of
// the GPU-style lowering are produced on the host with a GPU target description.
#include "test_util.hpp"

#include <tessera/backends/gpu/kernels.hpp>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace {
using namespace tessera;
using codegen::memory_space_kind;
using tessera::index;

codegen::target gpu_target() {
  codegen::target t;
  t.backend = "Cuda (planned on the host)";
  t.thread_per_logical = true;
  t.scratch_max[0] = 48 * 1024;
  t.scratch_max[1] = 1u << 30;
  t.max_team_size = 1024;
  t.matmul.packed = false;
  t.matmul.blocked = {64, 64, 16, 4, 4, true};
  t.tile_local_per_thread = true;  // registers, as backends::gpu::make_target says
  return t;
}

TEST_CASE("the plan-cache fingerprint: the entries its node types need, changed by every input") {
  array<float, 1> a(100), b(100), c(100), d(100), a2(100), b2(100), c2(100), e(101), f(101);
  auto expr = [](const auto& x, const auto& y, const auto& z) {
    return 2.f * x + 3.f * y - z;
  };
  using E = decltype(expr(a, b, c));
  // Per node its extent and schedule; terminals 3 + 2 x rank more; 2 for the destination.
  static_assert(codegen::fingerprint_size<E> == 4 * 4 + 2 * 3 + 3 * 9 + 2);
  const auto dst = d.describe_memory();
  const auto key = codegen::fingerprint(expr(a, b, c), &dst);
  CHECK(key == codegen::fingerprint(expr(a, b, c), &dst));
  CHECK(key == codegen::fingerprint(expr(a2, b2, c2), &dst));  // other arrays, same roles
  CHECK(key != codegen::fingerprint(expr(a, a, c), &dst));     // two operands share memory
  CHECK(key != codegen::fingerprint(expr(e, f, f), &dst));     // another extent
  const auto into_a = a.describe_memory();
  CHECK(key != codegen::fingerprint(expr(a, b, c), &into_a));  // an operand is the output
  CHECK(key != codegen::fingerprint(expr(a, b, c), nullptr));  // a fresh output
  // Two views of one type: of two arrays, or overlapping sections of one.
  array<float, 1> whole(120), other(120);
  const auto at = [](auto& x, long i) {
    return x.section(index<1>(i), extent<1>(100));
  };
  const auto s1 = codegen::fingerprint(expr(at(whole, 0), at(other, 3), c), &dst);
  const auto s2 = codegen::fingerprint(expr(at(whole, 0), at(whole, 3), c), &dst);
  static_assert(std::is_same_v<decltype(expr(at(whole, 0), at(other, 3), c)),
                               decltype(expr(at(whole, 0), at(whole, 3), c))>);
  CHECK(s1 != s2);  // an overlapping section of an earlier operand
}

TEST_CASE("the plan cache's raw key: the fingerprint's inputs, so equal raw keys share a plan") {
  array<float, 1> a(100), b(100), c(100), d(100), a2(100), b2(100), c2(100);
  array<float, 1> whole(120), other(120);
  auto expr = [](const auto& x, const auto& y, const auto& z) {
    return 2.f * x + 3.f * y - z;
  };
  const auto at = [](auto& x, long i) {
    return x.section(index<1>(i), extent<1>(100));
  };
  using E = decltype(expr(at(whole, 0), at(other, 3), at(c, 0)));
  // Per node its extent and schedule; terminals 1 + rank more; 9 for the destination.
  static_assert(codegen::raw_key_size<E> == 4 * 4 + 2 * 3 + 3 * 6 + 9);
  using raw_key = std::array<std::int64_t, codegen::raw_key_size<E>>;
  using fingerprint = std::array<std::int64_t, codegen::fingerprint_size<E>>;
  // Every operand and destination role: other arrays, shared memory, sections of one buffer
  // (overlapping or not, at several offsets), the destination an operand or a fresh array.
  std::vector<array_view<float, 1>> ops{at(a, 0),     at(b, 0),     at(c, 0),
                                        at(a2, 0),    at(whole, 0), at(whole, 3),
                                        at(whole, 7), at(other, 3), at(whole, 20)};
  std::vector<impl::captured_buffer> dsts{d.describe_memory(), a.describe_memory(),
                                          at(whole, 5).describe_memory(),
                                          at(other, 3).describe_memory()};
  std::vector<std::pair<raw_key, fingerprint>> keys;
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (std::size_t j = 0; j < ops.size(); ++j)
      for (std::size_t k : {std::size_t(2), i, std::size_t(8)})
        for (int q = -1; q < int(dsts.size()); ++q) {
          const auto x = expr(ops[i], ops[j], ops[k]);
          const impl::captured_buffer* dst = q < 0 ? nullptr : &dsts[std::size_t(q)];
          raw_key r;
          codegen::raw_key_into(x, dst, r.data());
          keys.emplace_back(r, codegen::fingerprint(x, dst));
        }
  int equal_raw = 0;
  for (const auto& [r1, f1] : keys)
    for (const auto& [r2, f2] : keys)
      if (r1 == r2) {
        ++equal_raw;
        CHECK(f1 == f2);
      }
  CHECK(equal_raw > int(keys.size()));  // repeats among the combinations above
  // Other memory in the same roles: the same fingerprint, another raw key.
  const auto dst = d.describe_memory();
  raw_key r1, r2;
  codegen::raw_key_into(expr(at(a, 0), at(b, 0), at(c, 0)), &dst, r1.data());
  codegen::raw_key_into(expr(at(a2, 0), at(b2, 0), at(c2, 0)), &dst, r2.data());
  CHECK(r1 != r2);
  CHECK(codegen::fingerprint(expr(at(a, 0), at(b, 0), at(c, 0)), &dst) ==
        codegen::fingerprint(expr(at(a2, 0), at(b2, 0), at(c2, 0)), &dst));
}

TEST_CASE(
    "plan cache: one expression type assigned in turn to other memory, in place and to "
    "overlapping sections, each time the right values") {
  // The cache's last plan is taken by the raw key (same memory, extents and strides) before
  // any fingerprint; a sequence that changes one role at a time must never reuse a plan of
  // another role (an in-place or overlapping assignment needs its temporary).
  std::mt19937 gen(26);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  constexpr long n = 37;
  std::vector<float> buf(3 * n), spare(n);
  for (auto& x : buf) x = u(gen);
  for (auto& x : spare) x = u(gen);
  array_view<float, 1> whole(extent<1>(3 * n), buf), fresh(extent<1>(n), spare);
  const auto at = [&](long i) {
    return whole.section(index<1>(i), extent<1>(n));
  };
  std::uniform_int_distribution<long> off(0, 2 * n);
  for (int step = 0; step < 60; ++step) {
    const long ix = off(gen), iy = off(gen), id = step % 4 == 0 ? -1 : off(gen);
    CAPTURE(step);
    CAPTURE(ix);
    CAPTURE(iy);
    CAPTURE(id);
    auto x = at(ix), y = at(iy);
    auto dview = id < 0 ? fresh : at(id);
    std::vector<float> want(n);
    for (long i = 0; i < n; ++i) want[i] = 2.f * x[i] + 3.f * y[i] - x[i];
    // Three times in a row (the raw-key path from the second on), then the next roles.
    const std::vector<float> before(buf), before_spare(spare);
    for (int rep = 0; rep < 3; ++rep) {
      assign(dview, 2.f * x + 3.f * y - x);
      dview.synchronize();
      // |2x + 3y - x| <= 6: a few roundings of float apart at most (a fused multiply-add or not).
      for (long i = 0; i < n; ++i) CHECK(std::abs(dview[i] - want[i]) <= 1e-5f);
      // The inputs back for the next repetition (the output may overlap them).
      std::copy(before.begin(), before.end(), buf.begin());
      std::copy(before_spare.begin(), before_spare.end(), spare.begin());
      whole.refresh();
      fresh.refresh();
    }
  }
}

TEST_CASE("elementwise chains are one kernel without scratch or barriers") {
  array<float, 2> A(64, 32), B(64, 32), Cc(64, 32);
  const auto p = plan(2.f * A + 3.f * B - Cc);
  REQUIRE(p.kernels.size() == 1);
  // 2048 elements: on host backends a kernel this small runs on the calling thread.
  CHECK(p.kernels[0].policy == (p.kernels[0].inline_run
                                    ? "none: run on the calling thread (no Kokkos launch)"
                                    : "RangePolicy"));
  CHECK(p.kernels[0].league_size == 64 * 32);
  CHECK(p.kernels[0].barriers.empty());
  CHECK(p.kernels[0].scratch_bytes[0] == 0);
}

TEST_CASE(
    "relu(matmul(A,B) * alpha + beta * C) is one kernel, GPU plan: two level-0 tiles, two barriers "
    "per "
    "k-step") {
  array<float, 2> A(64, 48), B(48, 32), Cc(64, 32);
  auto e = relu(matmul(A, B) * 2.f + 0.5f * Cc);
  CHECK(plan(e).kernels.size() == 1);
  const auto low = codegen::lower(codegen::build_graph(e), gpu_target());
  REQUIRE(low.plan.kernels.size() == 1);
  const auto& k = low.plan.kernels[0];
  // Register-blocked: 64x64 outputs per team, 4x4 per logical thread (16x16 = 256 members),
  // two double-buffered k-tiles of A (rows padded by 4) and B in scratch level 0.
  CHECK(k.team_size == 256);
  CHECK(k.league_size == 1 * 1);
  CHECK(k.gpu_mm.bm == 64);
  CHECK(k.scratch_bytes[0] == 2 * 16 * 68 * 4 + 2 * 16 * 64 * 4);
  CHECK(k.buffers[0].space == memory_space_kind::scratch_level0);
  CHECK(k.buffers[1].offset == 16 * 68 * 4);
  // One barrier after the first loads, then one per k-step (each step reads one buffer pair
  // while loading the other).
  REQUIRE(k.barriers.size() == 3);
  CHECK_FALSE(k.barriers[0].in_loop);
  CHECK(k.barriers[1].in_loop);
  CHECK(k.barriers[2].in_loop);
  CHECK(k.barriers[0].hazard.find("read-after-write") != std::string::npos);
  CHECK(k.barriers[1].hazard.find("read-after-write") != std::string::npos);
  // A .tile<32,32>() schedule changes the tile and the scratch bytes.
  const auto low32 =
      codegen::lower(codegen::build_graph(matmul(A, B).tile<32, 32>()), gpu_target());
  CHECK(low32.plan.kernels[0].scratch_bytes[0] == 2 * 32 * 32 * 4);
}

TEST_CASE("transpose(A) + B is one kernel staging A's tile through scratch, one barrier") {
  array<float, 2> A(40, 70), B(70, 40);
  const auto low = codegen::lower(codegen::build_graph(transpose(A) + B), gpu_target());
  REQUIRE(low.plan.kernels.size() == 1);
  const auto& k = low.plan.kernels[0];
  CHECK(k.buffers[0].name == "staged_T0");
  CHECK(k.buffers[0].bytes == 32 * 33 * 4);  // one padding column against bank conflicts
  REQUIRE(k.barriers.size() == 1);
  CHECK(k.barriers[0].hazard.find("read-after-write on staged_T0") != std::string::npos);
  CHECK_FALSE(k.barriers[0].in_loop);
  CHECK(k.tiles == std::vector<std::int64_t>{3, 2});
}

TEST_CASE("non-fusable nodes are materialized first, kernel order is post-order") {
  array<float, 2> A(16, 16), B(16, 16);
  const auto p = plan(matmul(A, B) + matmul(B, A));
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].buffers.back().name.rfind("tmp", 0) == 0);
  const auto p2 = plan(tile_mean<2, 2>(transpose(A)) + 1.f);
  CHECK(p2.kernels.size() == 2);
  const auto p3 = plan(matmul(A + B, A));
  CHECK(p3.kernels.size() == 2);
}

TEST_CASE("barrier insertion pass: only where scratch is read after write or written after read") {
  using codegen::phase_program;
  phase_program p;
  p.prologue = {{"write s", {{"s", true, false}}},
                {"write t", {{"t", true, false}}},
                {"read s", {{"s", false, false}}},
                {"read s again", {{"s", false, false}}},
                {"own update of u", {{"u", true, true}, {"u", false, true}}}};
  auto b = codegen::insert_barriers(p);
  REQUIRE(b.size() == 1);
  CHECK(b[0].after_phase == 1);
  // Write-after-read across loop iterations only.
  phase_program q;
  q.loop = {
      {"read s", {{"s", false, false}}}, {"unrelated", {}}, {"write s", {{"s", true, false}}}};
  b = codegen::insert_barriers(q);
  REQUIRE(b.size() == 2);
  CHECK(b[0].after_phase == 1);  // write-after-read inside the iteration
  CHECK(b[1].after_phase == 2);  // read-after-write across iterations
  CHECK(b[1].hazard.find("across iterations") != std::string::npos);
}

TEST_CASE("CPU staged transpose streaming its output: a team walks a column of tiles") {
  codegen::target t;  // a CPU target that streams outputs of 4 KiB or more
  t.thread_per_logical = false;
  t.transpose.block = 16;
  t.transpose.pad = 0;
  t.transpose.tile[0] = 16;
  t.transpose.tile[1] = 16;
  t.streaming_store_min_bytes = 4096;
  t.concurrency = 2;
  array<float, 2> A(40, 1000);  // output 1000 x 40: 63 x 3 tiles
  auto k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.streaming_stores);
  // 3 columns of tiles; 8 teams (4 per thread) wanted: 63 tiles per team halve to 32 (6
  // teams), then 16 (3 x 4 = 12 teams, the last group of each column 15 tiles).
  CHECK(k.tiles_per_team == 16);
  CHECK(k.league_size == 12);
  CHECK(k.mapping.find("16 consecutive tiles down a column") != std::string::npos);
  t.streaming_store_min_bytes = 1 << 30;  // not streamed: one tile per team
  k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.tiles_per_team == 1);
  CHECK(k.league_size == 63 * 3);
}

// A CPU target of one member per team, one thread, 16 x 16 register blocks, unpadded: where the
// streaming thresholds of staged transposes are checked.
codegen::target one_thread_transpose_target() {
  codegen::target t;
  t.thread_per_logical = false;
  t.transpose.block = 16;
  t.transpose.pad = 0;
  t.concurrency = 1;
  return t;
}

TEST_CASE("CPU staged transpose: the output streams once it and its operand pass the threshold") {
  codegen::target t = one_thread_transpose_target();
  // 1000 x 40 floats in, 40 x 1000 out: 160,000 bytes each, 320,000 together; a float operand
  // plus doubles (a double output) 480,000; the operand added is read too, but not counted.
  array<float, 2> A(40, 1000), B(1000, 40);
  array<double, 2> Bd(1000, 40);
  auto streams = [&](const auto& e, std::size_t threshold) {
    t.streaming_store_min_bytes = threshold;
    return codegen::lower(codegen::build_graph(e), t).plan.kernels.at(0).streaming_stores;
  };
  CHECK(streams(transpose(A), 160000));
  CHECK(streams(transpose(A), 320000));
  CHECK_FALSE(streams(transpose(A), 320001));
  CHECK(streams(transpose(A) + B, 320000));
  CHECK_FALSE(streams(transpose(A) + B, 320001));
  CHECK(streams(transpose(A) + Bd, 480000));
  CHECK_FALSE(streams(transpose(A) + Bd, 480001));
}

TEST_CASE("CPU staged transpose: rows that are not whole blocks follow their own threshold") {
  codegen::target t = one_thread_transpose_target();
  t.streaming_store_min_bytes = 4096;
  // Out 40 x 1000 floats (rows of 62.5 blocks; 320,000 bytes with the operand) and 40 x 1008
  // (whole blocks; 322,560 bytes): with unaligned_rows_min_bytes set, the first counts against
  // it, the second against streaming_store_min_bytes as before; unset, both count against
  // streaming_store_min_bytes.
  array<float, 2> A(1000, 40), W(1008, 40);
  auto streams = [&](const auto& e, std::size_t unaligned) {
    t.transpose.unaligned_rows_min_bytes = unaligned;
    return codegen::lower(codegen::build_graph(e), t).plan.kernels.at(0).streaming_stores;
  };
  CHECK(streams(transpose(A), 0));
  CHECK(streams(transpose(A), 320000));
  CHECK_FALSE(streams(transpose(A), 320001));
  CHECK(streams(transpose(W), 0));
  CHECK(streams(transpose(W), std::size_t(1) << 40));
  t.streaming_store_min_bytes = 322561;
  CHECK_FALSE(streams(transpose(W), 4096));
}

// A CPU target's staged-transpose options as the host backends set them: 16 x 16 register
// blocks, unpadded, 128 x 32 tiles, 256-byte write runs for streamed outputs.
codegen::target cpu_transpose_target() {
  codegen::target t;
  t.thread_per_logical = false;
  t.transpose.block = 16;
  t.transpose.pad = 0;
  t.transpose.tile[0] = 128;
  t.transpose.tile[1] = 32;
  t.transpose.stream_run_bytes = 256;
  return t;
}

TEST_CASE(
    "CPU staged transpose streaming its output: tiles of whole write runs, assembled in scratch") {
  // a CPU target: 256-byte write runs, 512 KiB of L2, streams from 4 KiB
  codegen::target t = cpu_transpose_target();
  t.l2_bytes = 512 << 10;
  t.streaming_store_min_bytes = 4096;
  t.concurrency = 2;
  auto out_tile = [](const codegen::kernel_plan& k) -> const codegen::buffer_plan* {
    for (const auto& b : k.buffers)
      if (b.name == codegen::kernel_plan::staged_output_tile) return &b;
    return nullptr;
  };
  // Floats: rows of 64 elements (256 bytes), 512 of them (a quarter of L2: 128 KiB). The
  // output's 8192 rows make the operand's rows 32 KiB apart: the default tile's 32 of them span
  // 1 MiB, more than L2.
  array<float, 2> A(1000, 8192);
  auto k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.streaming_stores);
  CHECK(k.tile == std::vector<std::int64_t>{512, 64});
  CHECK(k.tiles == std::vector<std::int64_t>{16, 16});
  const codegen::buffer_plan* b = out_tile(k);
  REQUIRE(b != nullptr);
  CHECK(b->type == "float[512][64]");
  CHECK(b->bytes == 512 * 64 * 4);
  CHECK(b->space != memory_space_kind::global);
  CHECK(k.mapping.find("each tile assembled in scratch, then written row by row (runs of 64 "
                       "elements)") != std::string::npos);
  // Doubles (a fused expression storing double): 32-element rows, again 512 of them.
  array<double, 2> D(1000, 8192), E(8192, 1000);
  k = codegen::lower(codegen::build_graph(transpose(D) + E), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{512, 32});
  REQUIRE(out_tile(k) != nullptr);
  CHECK(out_tile(k)->type == "double[512][32]");
  // Where L2 is unknown: 128 KiB tiles.
  t.l2_bytes = 0;
  k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{512, 64});
  t.l2_bytes = 512 << 10;
  // A schedule's tile of whole blocks is kept and assembled in scratch; one that is not whole
  // blocks, or larger than L2, is written block by block.
  k = codegen::lower(codegen::build_graph(transpose(A).tile<32, 64>()), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{32, 64});
  REQUIRE(out_tile(k) != nullptr);
  CHECK(out_tile(k)->bytes == 32 * 64 * 4);
  k = codegen::lower(codegen::build_graph(transpose(A).tile<24, 24>()), t).plan.kernels.at(0);
  CHECK(out_tile(k) == nullptr);
  CHECK(k.mapping.find("output lines written with non-temporal stores") != std::string::npos);
  // Operand rows that fit in L2 together (1 MiB of L2, or shorter rows: 3000 floats, 32 rows
  // span 375 KiB): the default tile, written from registers, no buffer; a schedule's tile too.
  t.l2_bytes = 1 << 20;
  k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.streaming_stores);
  CHECK(k.tile == std::vector<std::int64_t>{128, 32});
  CHECK(out_tile(k) == nullptr);
  CHECK(k.mapping.find("output lines written with non-temporal stores") != std::string::npos);
  k = codegen::lower(codegen::build_graph(transpose(A).tile<32, 16>()), t).plan.kernels.at(0);
  CHECK(out_tile(k) == nullptr);
  t.l2_bytes = 512 << 10;
  array<float, 2> W(1000, 3000);
  k = codegen::lower(codegen::build_graph(transpose(W)), t).plan.kernels.at(0);
  CHECK(k.streaming_stores);
  CHECK(k.tile == std::vector<std::int64_t>{128, 32});
  CHECK(out_tile(k) == nullptr);
  // Outputs below the threshold with their operand (3840 bytes together), or a target without
  // write runs: the default tile, no buffer.
  array<float, 2> S(30, 16);
  k = codegen::lower(codegen::build_graph(transpose(S)), t).plan.kernels.at(0);
  CHECK_FALSE(k.streaming_stores);
  CHECK(k.tile == std::vector<std::int64_t>{128, 32});
  CHECK(out_tile(k) == nullptr);
  t.transpose.stream_run_bytes = 0;
  k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{128, 32});
  CHECK(out_tile(k) == nullptr);
}

TEST_CASE(
    "CPU staged transpose kept in cache: tiles of cached_tile_rows rows of cached_row_bytes") {
  // a CPU target: outputs from 1 MiB streamed, smaller ones stay in cache
  codegen::target t = cpu_transpose_target();
  t.transpose.cached_tile_rows = 64;
  t.transpose.cached_row_bytes = 1024;
  t.l2_bytes = 1 << 20;
  t.streaming_store_min_bytes = 1 << 20;
  t.concurrency = 2;
  // Floats: 1 KiB rows of 256 elements; doubles (a fused expression storing double): 128.
  array<float, 2> A(300, 200);
  auto k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK_FALSE(k.streaming_stores);
  CHECK(k.tile == std::vector<std::int64_t>{64, 256});
  CHECK(k.tiles == std::vector<std::int64_t>{4, 2});
  array<double, 2> D(300, 200), E(200, 300);
  k = codegen::lower(codegen::build_graph(transpose(D) + E), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{64, 128});
  // Rows rounded up to whole blocks, at least one block each way.
  t.transpose.cached_row_bytes = 1000;
  t.transpose.cached_tile_rows = 8;
  k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{16, 256});
  t.transpose.cached_row_bytes = 1024;
  t.transpose.cached_tile_rows = 64;
  // A last tile narrower than a block is avoided where a side up to half as large leaves none:
  // output 257 x 259 (64 rows leave 1, 48 leave 17; 256 columns leave 3, 240 leave 19).
  array<float, 2> S(259, 257);
  k = codegen::lower(codegen::build_graph(transpose(S)), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{48, 240});
  CHECK(k.tiles == std::vector<std::int64_t>{6, 2});
  CHECK(codegen::edge_fitted_tile(1030, 256, 16) == 240);  // 6 left by 256, 70 by 240
  CHECK(codegen::edge_fitted_tile(300, 256, 16) == 256);   // 44 left: kept
  CHECK(codegen::edge_fitted_tile(512, 256, 16) == 256);   // whole tiles
  CHECK(codegen::edge_fitted_tile(100, 256, 16) == 256);   // one tile
  CHECK(codegen::edge_fitted_tile(200, 64, 16) == 64);     // 8 left by 64, 48 and 32: kept
  CHECK(codegen::edge_fitted_tile(17, 16, 16) == 16);      // nothing smaller than a block
  // A schedule's tile is kept; a streamed output keeps the target's tile.
  k = codegen::lower(codegen::build_graph(transpose(A).tile<32, 48>()), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{32, 48});
  array<float, 2> L(1000, 1000);
  k = codegen::lower(codegen::build_graph(transpose(L)), t).plan.kernels.at(0);
  CHECK(k.streaming_stores);
  CHECK(k.tile == std::vector<std::int64_t>{128, 32});
  // The GPU mapping (one thread per logical thread) and targets without the setting: `tile`.
  t.transpose.cached_row_bytes = 0;
  k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{128, 32});
  t.transpose.cached_row_bytes = 1024;
  t.thread_per_logical = true;
  t.transpose.tile[0] = t.transpose.tile[1] = 32;
  k = codegen::lower(codegen::build_graph(transpose(A)), t).plan.kernels.at(0);
  CHECK(k.tile == std::vector<std::int64_t>{32, 32});
}

TEST_CASE("CPU targets take their memory-size thresholds from this machine's last-level cache") {
  const auto t = backends::backend<execution_space>::make_target();
  if (t.thread_per_logical) {
    MESSAGE("the " << backend_name() << " backend's target has no CPU memory thresholds");
    return;
  }
  // The L3 this machine reports, read here independently of the library: Linux's sysfs (what
  // lscpu shows), else the C library's sysconf, else none (32 MiB).
  long l3 = 0;
  for (int i = 0; i < 16 && l3 == 0; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
    int lv = 0;
    std::string ty, sz;
    if (!(level >> lv)) break;
    if (lv != 3 || !(type >> ty) || ty == "Instruction" || !(size >> sz)) continue;
    l3 = std::stol(sz) * (sz.back() == 'K' ? 1024L : sz.back() == 'M' ? 1024L * 1024 : 1L);
  }
#if defined(_SC_LEVEL3_CACHE_SIZE)
  if (l3 <= 0) l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  const std::size_t want = l3 >= 1024 * 1024 ? std::size_t(l3) : std::size_t{32} << 20;
  MESSAGE("last-level cache: " << l3 << " B reported; memory threshold " << want << " B");
  CHECK(t.row_prefetch_min_bytes == want);
  CHECK(t.reduction.memory_min_bytes == want);
  CHECK(t.reduction.prefetch_min_bytes == 2 * want);  // data of about L3's size partly hits
  CHECK(t.reduction.memory_streams == 4);
  CHECK((t.streaming_store_min_bytes == want || t.streaming_store_min_bytes == 0));
  // An output of that size streams; one element less stays in cache.
  const long n = long(want / sizeof(float));
  array<float, 1> A(n), B(n);
  const auto k = plan(2.f * A + B).kernels.at(0);
  CHECK(k.streaming_stores == (t.streaming_store_min_bytes > 0));
  array<float, 1> A1(n - 1), B1(n - 1);
  CHECK_FALSE(plan(2.f * A1 + B1).kernels.at(0).streaming_stores);
}

TEST_CASE("explain prints memory spaces and barriers") {
  array<float, 2> A(64, 64), B(64, 64);
  const std::string s = explain(relu(matmul(A, B)));
  CHECK(s.find("1 kernel") == 0);
  CHECK(s.find("A : float -> global") != std::string::npos);
  CHECK(s.find("out : float -> global") != std::string::npos);
  CHECK(s.find("barrier") != std::string::npos);
  const std::string t = explain(tile_mean<4, 4>(A));
  const auto low = codegen::lower(codegen::build_graph(tile_mean<4, 4>(A)), gpu_target());
  CHECK(codegen::to_string(low.plan).find("row_acc : float[64] -> scratch level 0") !=
        std::string::npos);
  REQUIRE(low.plan.kernels[0].barriers.size() == 1);
  CHECK(low.plan.kernels[0].barriers[0].hazard.find("read-after-write on row_acc") !=
        std::string::npos);
  // The default backend's own plan: a scratch row per output row under the GPU mapping (CUDA,
  // HIP, the GPU emulation), vector-register chunks on CPUs.
  if (backends::backend<execution_space>::make_target().thread_per_logical)
    CHECK(t.find("row_acc : float[64] -> scratch level 0") != std::string::npos);
  else
    CHECK(t.find("acc_chunk") != std::string::npos);
}

// The launcher reads the plan the code generator made and checks it is the kernel it runs.
// (The register-blocked GPU matmul's launcher used to require two barriers while the planner
// gives three — one entering the loop, two per loop iteration of two k-steps — so every default
// float matmul on CUDA, HIP and the GPU emulation threw before launching.)
TEST_CASE("GPU launchers accept the GPU target's plans and name the kernel on a mismatch") {
  array<float, 2> A(130, 70), B(70, 90), Cc(130, 90);
  const auto k = codegen::lower(codegen::build_graph(relu(matmul(A, B) * 2.f + Cc)), gpu_target())
                     .plan.kernels.at(0);
  using blocked = backends::gpu::blocked_matmul_kernel<1, float, float, int, int, 64, 64, 16, 4, 4>;
  CHECK_NOTHROW(backends::impl::check_plan(k, blocked::shape()));
  auto two = k;
  two.barriers.pop_back();
  const std::string m =
      tt::message_of<plan_error>([&] { backends::impl::check_plan(two, blocked::shape()); });
  CHECK(tt::has(m, "GPU register-blocked matmul"));
  CHECK(tt::has(m, "barriers: 2"));
  CHECK(tt::has(m, k.name));
  auto team = k;
  team.team_size = 128;
  CHECK_THROWS_WITH_AS(backends::impl::check_plan(team, blocked::shape()),
                       doctest::Contains("team size 128 planned, 256 run"), plan_error);
  auto small = k;
  small.buffers[1].bytes /= 2;
  CHECK_THROWS_WITH_AS(backends::impl::check_plan(small, blocked::shape()),
                       doctest::Contains("scratch buffer a_tile1"), plan_error);
  // A double matmul plans twice the bytes; the float kernel's shape does not fit it the other way.
  array<double, 2> Ad(130, 70), Bd(70, 90);
  const auto kd =
      codegen::lower(codegen::build_graph(matmul(Ad, Bd)), gpu_target()).plan.kernels.at(0);
  using blocked_d =
      backends::gpu::blocked_matmul_kernel<1, double, double, int, int, 64, 64, 16, 4, 4>;
  CHECK_NOTHROW(backends::impl::check_plan(kd, blocked_d::shape()));
  CHECK_THROWS_AS(backends::impl::check_plan(k, blocked_d::shape()), plan_error);
}

// Whole-array reductions keep the last plan per thread (Space, element type, rule, mode): a
// repeated reduction of one size reuses it, another size or a new target generation plans
// again, and a plan whose chunk is not the compiled fold's is refused by name.
TEST_CASE("reduction plans: cached per size and target generation, a wrong chunk refused") {
  using S = execution_space;
  using rule = backends::impl::sum_rule_t<float>;
  const auto& exec = tessera::impl::default_instance();
  const auto& a = backends::impl::reduction_plan<S, float, rule>(exec, "sum", 1000, false);
  const std::string name = a.name;
  CHECK(tt::has(name, "1000 float elements"));
  const auto& b = backends::impl::reduction_plan<S, float, rule>(exec, "sum", 1000, false);
  CHECK(&a == &b);
  CHECK(b.name == name);
  const auto& c = backends::impl::reduction_plan<S, float, rule>(exec, "sum", 1001, false);
  CHECK(tt::has(c.name, "1001 float elements"));
  ++codegen::target_generation();
  const auto& d = backends::impl::reduction_plan<S, float, rule>(exec, "sum", 1001, false);
  CHECK(tt::has(d.name, "1001 float elements"));
  const auto& e = backends::impl::reduction_plan<S, float, rule>(exec, "sum", 1001, true);
  CHECK(tt::has(e.name, "(reproducible)"));
  constexpr index_type chunk = backends::impl::reproducible_chunk_elements<S>;
  CHECK(e.reduce_chunk == chunk);
  CHECK_NOTHROW(backends::impl::check_reduction_plan<S>(e, chunk));
  auto wrong = e;
  wrong.reduce_chunk = chunk + 1;
  const std::string m =
      tt::message_of<plan_error>([&] { backends::impl::check_reduction_plan<S>(wrong, chunk); });
  CHECK(tt::has(m, "folds chunks of " + std::to_string(chunk) + " elements"));
  CHECK(tt::has(m, e.name));
  CHECK(tt::has(m, "says " + std::to_string(chunk + 1)));
  // The reductions themselves still run on the replanned plans.
  array<float, 1> x(1001);
  x = 1.f;
  CHECK(sum(x) == 1001.f);
  CHECK(sum(x, reproducible) == 1001.f);
}

// Scans, histograms and sorts keep this thread's last plan per operation and template
// arguments (last_plan): the same shape takes it again, another shape, dimension, mode, range
// or target generation plans again, and the operations give the right values on either.
TEST_CASE("scan, histogram and sort plans: the last one per shape, replanned on any change") {
  using S = execution_space;
  using A = backends::impl::scan_acc_t<float, tessera::plus<>>;
  const auto& exec = tessera::impl::default_instance();
  const auto scan_plan = [&](bool exclusive, extent<2> x, int d) -> const codegen::kernel_plan& {
    return backends::impl::cached_scan_kernel_plan<S, float, A, tessera::plus<>>(exec, exclusive, x,
                                                                                 d, false);
  };
  const auto& a = scan_plan(false, extent<2>(30, 40), 1);
  const std::string name = a.name;
  CHECK(&scan_plan(false, extent<2>(30, 40), 1) == &a);
  CHECK(scan_plan(false, extent<2>(30, 40), 1).name == name);
  // Every key entry replans: the plan equals the one planned directly.
  const auto direct = [&](bool exclusive, extent<2> x, int d) {
    return codegen::to_string(backends::impl::scan_kernel_plan<S, float, A, tessera::plus<>>(
        exec, exclusive, x, d, false));
  };
  // (Plain variables, not structured bindings: CAPTURE's lambda cannot name those with Clang 14.)
  for (const auto& c :
       std::vector<std::tuple<bool, extent<2>, int>>{{false, extent<2>(30, 41), 1},
                                                     {false, extent<2>(31, 40), 1},
                                                     {false, extent<2>(30, 40), 0},
                                                     {true, extent<2>(30, 40), 1},
                                                     {false, extent<2>(30, 40), 1}}) {
    const bool exclusive = std::get<0>(c);
    const extent<2> x = std::get<1>(c);
    const int d = std::get<2>(c);
    CAPTURE(to_string(x));
    CAPTURE(d);
    CHECK(codegen::to_string(scan_plan(exclusive, x, d)) == direct(exclusive, x, d));
  }
  const std::uint64_t before = codegen::target_generation().load();
  ++codegen::target_generation();
  CHECK(codegen::to_string(scan_plan(false, extent<2>(30, 40), 1)) ==
        direct(false, extent<2>(30, 40), 1));
  CHECK(codegen::target_generation().load() == before + 1);

  const auto hist_plan = [&](index_type n, index_type bins, value_range r) {
    return codegen::to_string(
        backends::impl::cached_histogram_kernel_plan<S, float>(exec, n, bins, r));
  };
  const auto hist_direct = [&](index_type n, index_type bins, value_range r) {
    return codegen::to_string(backends::impl::histogram_kernel_plan<S, float>(exec, n, bins, r));
  };
  for (const auto& c :
       std::vector<std::tuple<index_type, index_type, value_range>>{{1000, 16, {0, 1}},
                                                                    {1000, 16, {0, 1}},
                                                                    {1001, 16, {0, 1}},
                                                                    {1001, 17, {0, 1}},
                                                                    {1001, 17, {0, 2}},
                                                                    {1001, 17, {-1, 2}}}) {
    const index_type n = std::get<0>(c), bins = std::get<1>(c);
    const value_range r = std::get<2>(c);
    CAPTURE(n);
    CAPTURE(bins);
    CHECK(hist_plan(n, bins, r) == hist_direct(n, bins, r));
  }
  const auto joined = [](const std::vector<codegen::kernel_plan>& ks) {
    std::string s;
    for (const auto& k : ks) s += codegen::to_string(k);
    return s;
  };
  const auto sort_plans = [&](index_type n, bool in_place) {
    return joined(
        backends::impl::cached_sort_kernel_plans<S, int, tessera::less<>>(exec, n, in_place));
  };
  const auto sort_direct = [&](index_type n, bool in_place) {
    return joined(backends::impl::sort_kernel_plans<S, int, tessera::less<>>(exec, n, in_place));
  };
  for (const auto& c : std::vector<std::pair<index_type, bool>>{
           {5000, true}, {5000, true}, {70000, true}, {70000, false}, {5000, true}}) {
    const index_type n = c.first;
    CAPTURE(n);
    CHECK(sort_plans(n, c.second) == sort_direct(n, c.second));
  }

  // The operations on repeated and changing shapes (cached plans, replans), against std.
  for (int round = 0; round < 3; ++round)
    for (const index_type n : {index_type(1000), index_type(1001), index_type(1000)}) {
      CAPTURE(n);
      std::vector<int> v(static_cast<std::size_t>(n));
      for (auto& e : v) e = int(tt::random_size(-50, 49));
      array<int, 1> a(extent<1>(n), v.data()), scanned(n);
      inclusive_scan(a, scanned);
      std::vector<int> want(v.size());
      std::inclusive_scan(v.begin(), v.end(), want.begin());
      CHECK(scanned.to_vector() == want);
      const auto h = histogram(a, 10, value_range{-50, 50});
      std::vector<index_type> hwant(10, 0);
      for (int e : v) ++hwant[std::size_t((e + 50) / 10)];
      CHECK(h.to_vector() == hwant);
      sort(a);
      std::stable_sort(v.begin(), v.end());
      CHECK(a.to_vector() == v);
    }
}

// Tile programs insert their barriers as they run; a Tier 1 plan of one (the generic tiled
// matmul) states them per loop iteration. executed_barriers turns the plan into the count the
// program must run: a read-after-write barrier every iteration, the loop-carried
// write-after-read one between iterations.
TEST_CASE("executed barriers of a looped plan: per iteration and between iterations") {
  array<int, 2> Ai(29, 17), Bi(17, 21);
  for (const auto& t : {gpu_target(), backends::backend<execution_space>::make_target()}) {
    CAPTURE(t.backend);
    const auto k =
        codegen::lower(codegen::build_graph(matmul(Ai, Bi).tile<8, 8>()), t).plan.kernels.at(0);
    REQUIRE(k.barriers.size() == 2);
    CHECK(k.barriers[0].in_loop);
    CHECK_FALSE(k.barriers[0].loop_carried);
    CHECK(k.barriers[1].loop_carried);
    CHECK(codegen::executed_barriers(k.barriers, 0) == 0);
    CHECK(codegen::executed_barriers(k.barriers, 1) == 1);
    CHECK(codegen::executed_barriers(k.barriers, 3) == 5);
  }
}

// Under the GPU mapping (CUDA, HIP, the GPU emulation) the default backend plans the float
// matmul as the register-blocked kernel, as the GPU target above does; on CPUs the packed one.
TEST_CASE("the default backend's float matmul plan") {
  array<float, 2> A(100, 80), B(80, 60);
  const auto p = plan(matmul(A, B));
  REQUIRE(p.kernels.size() == 1);
  const auto t = backends::backend<execution_space>::make_target();
  if (t.thread_per_logical && t.max_team_size >= 256) {
    CHECK(p.kernels[0].gpu_mm.bm == 64);
    CHECK(p.kernels[0].team_size == 256);
    CHECK(p.kernels[0].barriers.size() == 3);
  } else if (t.thread_per_logical) {
    MESSAGE("teams of at most " << t.max_team_size << " on " << backend_name()
                                << ": the generic tiled matmul");
    CHECK(p.kernels[0].team_size <= t.max_team_size);
  } else {
    CHECK(p.kernels[0].packed_matmul);
  }
}

}  // namespace

TEST_CASE("plan cache: overlapping sections in arrays of other widths get plans of their own") {
  // Under the GPU mapping the memory a stage of overlapping sections spans is counted in the
  // array's strides: the same section extents and offsets in an array of another width must
  // not reuse the first plan (a reused span skipped the end of the box: wrong values).
  const auto t = gpu_target();
  using ix = tessera::index<2>;
  const extent<2> in(2, 17);
  for (long width : {20L, 25L, 20L, 40L}) {
    CAPTURE(width);
    array<double, 2> A(4, width), B(4, width);
    const auto e =
        2.0 * A.section(ix(1, 1), in) - A.section(ix(0, 0), in) + A.section(ix(2, 3), in);
    const auto dst = B.section(ix(1, 0), in).describe_memory();
    using E = std::remove_cvref_t<decltype(e)>;
    const auto& low = codegen::plan_cache<E>::get(e, &dst, 7, [&] { return t; });
    REQUIRE(low.plan.kernels.size() == 1);
    const auto& st = low.plan.kernels[0].stencil_stages;
    REQUIRE(st.size() == 1);
    // The first section's span and each member's, from the first one's first element.
    const std::int64_t last = 1 * width + 16;
    CHECK(st[0].span_lo == std::min<std::int64_t>({0, -width - 1, width + 2}));
    CHECK(st[0].span_hi == last + std::max<std::int64_t>({0, -width - 1, width + 2}));
    // A fingerprint differs exactly where the strides do.
    array<double, 2> A2(4, width + 1);
    const auto e2 =
        2.0 * A2.section(ix(1, 1), in) - A2.section(ix(0, 0), in) + A2.section(ix(2, 3), in);
    CHECK(codegen::fingerprint(e, &dst) != codegen::fingerprint(e2, &dst));
  }
}

// The plan of a whole-array reduction on a CPU target: data of at least memory_min_bytes comes
// from memory, and from prefetch_min_bytes on its lines are prefetched; one thread reads a fold
// that takes streams (reduction_desc::streams) as memory_streams parts, and the parts read
// together take no prefetch (the distance stays for parts read one after another); reproducible
// sums read that many consecutive chunks an iteration. Folds without streams (compensated
// double sums), several threads and GPU targets: none.
TEST_CASE("plan_reduction: streams only for folds that take them, in one run, without a prefetch") {
  codegen::target t;
  t.concurrency = 1;
  t.reduction.chunk = 1 << 16;
  t.reduction.reproducible_chunk = 1 << 14;
  t.reduction.inline_fold_chunks = 4;
  t.reduction.memory_min_bytes = std::size_t{1} << 20;
  t.reduction.prefetch_min_bytes = std::size_t{2} << 20;
  t.reduction.prefetch_bytes = 4096;
  t.reduction.memory_streams = 4;
  codegen::reduction_desc d;
  d.name = "sum";
  d.dtype = "float";
  d.elem_bytes = 4;
  d.accumulation = "blocks of 16, then double lanes";
  d.lanes = 16;
  const std::int64_t sizes[] = {1 << 17, (1 << 18) - 1, 1 << 18, (1 << 19) + 7, 1 << 20};
  for (const std::int64_t n : sizes)
    for (const bool streams : {false, true}) {
      CAPTURE(n);
      CAPTURE(streams);
      d.elements = n;
      d.streams = streams;
      const bool from_memory = n * 4 >= (1 << 20), prefetch = n * 4 >= (2 << 20);
      const codegen::kernel_plan k = codegen::plan_reduction(d, t);
      CHECK(k.inline_run);
      CHECK(k.reduce_from_memory == from_memory);
      CHECK(k.reduce_streams == (from_memory && streams ? 4 : 0));
      CHECK(k.reduce_prefetch_bytes == (prefetch ? 4096 : 0));
      CHECK(tt::has(k.mapping, "4 interleaved streams") == (from_memory && streams));
      CHECK(tt::has(k.mapping, "prefetched 4096 B ahead") == prefetch);
      CHECK(tt::has(k.mapping, "where the parts are read one after another") ==
            (prefetch && streams));
    }
  d.elements = 1 << 20;
  d.streams = true;
  t.reduction.memory_streams = 0;  // a target without streams
  CHECK(codegen::plan_reduction(d, t).reduce_streams == 0);
  t.reduction.memory_streams = 4;
  t.concurrency = 2;  // chunks on several threads, each one stream
  CHECK_FALSE(codegen::plan_reduction(d, t).inline_run);
  CHECK(codegen::plan_reduction(d, t).reduce_streams == 0);
  CHECK(codegen::plan_reduction(d, t).reduce_prefetch_bytes == 4096);
  t.concurrency = 1;
  d.reproducible = true;  // fixed chunks: four consecutive ones an iteration, each its partial
  CHECK(codegen::plan_reduction(d, t).reduce_streams == 4);
  CHECK(tt::has(codegen::plan_reduction(d, t).mapping, "4 consecutive chunks an iteration"));
  CHECK(codegen::plan_reduction(d, t).reduce_from_memory);
  d.streams = false;
  CHECK(codegen::plan_reduction(d, t).reduce_streams == 0);
  d.streams = true;
  t.concurrency = 2;
  CHECK(codegen::plan_reduction(d, t).reduce_streams == 0);
  t.concurrency = 1;
  t.reduction.interleaved_reproducible = true;  // a GPU's interleaved chunks
  CHECK(codegen::plan_reduction(d, t).reduce_streams == 0);
  t.reduction.interleaved_reproducible = false;
  d.elements = (1 << 18) - 1;  // in cache
  CHECK(codegen::plan_reduction(d, t).reduce_streams == 0);
}
