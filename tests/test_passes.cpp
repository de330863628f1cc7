// The lowering passes one at a time, on expression graphs built by hand (no expression types,
// no backend): fusion, scratch placement, thread mapping, and the whole driver against golden
// plan text. What they must produce is stated here exactly; a change to a pass shows up as a
// diff of these values.
#include "test_util.hpp"

namespace {
using namespace tessera;
using codegen::expr_graph;
using codegen::graph_node;
using codegen::kernel_family;
using codegen::memory_space_kind;

using F2 = terminal<array<float, 2>>;
constexpr node_traits array_t = elementwise_node(node_kind::terminal);
constexpr node_traits binary_t = elementwise_node(node_kind::binary);
constexpr node_traits unary_t = elementwise_node(node_kind::unary);
constexpr node_traits matmul_t = matmul_node<F2, F2>::traits;
constexpr node_traits transpose_t = transpose_node<F2>::traits;
constexpr node_traits tile_reduce_t = tile_reduce_node<2, 2, ops::add, F2, true>::traits;

/// Appends a float node; returns its id (pre-order: add parents before their children).
int add(expr_graph& g, node_traits t, std::string label, std::vector<std::int64_t> extent,
        std::vector<int> children = {}) {
  graph_node n;
  n.traits = t;
  n.label = std::move(label);
  n.extent = std::move(extent);
  n.children = std::move(children);
  g.nodes.push_back(n);
  return int(g.nodes.size()) - 1;
}

/// A CPU-style target with fixed numbers (no backend queried).
codegen::target cpu_target() {
  codegen::target t;
  t.backend = "test CPU";
  t.thread_per_logical = false;
  t.scratch_max[0] = 32768;
  t.scratch_max[1] = 1 << 20;
  t.concurrency = 2;
  t.transpose.tile[0] = 64;
  t.transpose.tile[1] = 32;
  t.transpose.block = 16;
  t.transpose.pad = 0;
  t.streaming_store_min_bytes = 1 << 20;
  t.matmul.packed = false;
  t.matmul.generic_tile = 8;
  t.tile_reduce.line_bytes = 64;
  t.l1d_bytes = 32768;
  t.l2_bytes = 1 << 20;
  return t;
}

TEST_CASE("fusion pass: cores, staged operands and temporaries of a hand-built graph") {
  // relu(matmul(A, B) + transpose(C)): the matmul is the core, the transpose (not staged in a
  // kernel with a core) is materialized first, the relu and + are the epilogue.
  expr_graph g;
  g.nodes.reserve(8);
  add(g, unary_t, "relu", {4, 6}, {1});
  add(g, binary_t, "+", {4, 6}, {2, 5});
  add(g, matmul_t, "matmul", {4, 6}, {3, 4});
  add(g, array_t, "A", {4, 3});
  add(g, array_t, "B", {3, 6});
  add(g, transpose_t, "transpose", {4, 6}, {6});
  add(g, array_t, "C", {6, 4});
  const auto r = codegen::fuse(g, cpu_target());
  REQUIRE(r.kernels.size() == 2);
  CHECK(r.kernels[0].family == kernel_family::staged_transpose);
  CHECK(r.kernels[0].root == 5);
  CHECK(r.kernels[0].writes_temporary);
  CHECK(r.kernels[0].staged == std::vector<int>{5});
  CHECK(r.kernels[1].family == kernel_family::matmul);
  CHECK(r.kernels[1].core == 2);
  CHECK(r.kernels[1].inputs == std::vector<int>{3, 4, 5});
  CHECK(r.role[5] == codegen::node_role::materialized);
  CHECK_FALSE(r.output_aliases_input);
  // tile_mean(A) + transpose(B): the tile_reduce outranks the transpose; A is its prologue.
  expr_graph h;
  add(h, binary_t, "+", {2, 3}, {1, 3});
  add(h, tile_reduce_t, "tile_mean<2,2>", {2, 3}, {2});
  add(h, array_t, "A", {4, 6});
  add(h, transpose_t, "transpose", {2, 3}, {4});
  add(h, array_t, "B", {3, 2});
  const auto q = codegen::fuse(h, cpu_target());
  REQUIRE(q.kernels.size() == 2);
  CHECK(q.kernels[1].family == kernel_family::tile_reduce);
  CHECK(q.kernels[1].core == 1);
  // The rule itself: the highest precedence among cores wins, the first on a tie.
  const node_traits f[] = {transpose_t, tile_reduce_t, matmul_t, matmul_t};
  CHECK(codegen::fuse_frontier(f, 4).core == 2);
  CHECK(codegen::fuse_frontier(f, 2).core == 1);
  CHECK(codegen::fuse_frontier(f, 1).family == kernel_family::staged_transpose);
  CHECK(codegen::fuse_frontier(f, 0).family == kernel_family::elementwise);
}

TEST_CASE("scratch placement pass: declaration order, 64-byte alignment, level 1, the limit") {
  codegen::kernel_body b;
  b.scratch.push_back({"x", "char[100]", 100, 1, "tile_static"});
  b.scratch.push_back({"y", "double[8]", 64, 8, "tile_static"});
  b.scratch.push_back({"z", "float[1000]", 4000, 4, "tile_static"});
  auto t = cpu_target();
  codegen::kernel_plan k;
  codegen::place_scratch(k, b, t, "k");
  REQUIRE(k.buffers.size() == 3);
  CHECK(k.buffers[0].offset == 0);
  CHECK(k.buffers[1].offset == 128);
  CHECK(k.buffers[2].offset == 192);
  CHECK(k.scratch_level == 0);
  CHECK(k.scratch_bytes[0] == 4192);
  t.scratch_max[0] = 4096;  // 4192 + 64 spare bytes no longer fit level 0
  codegen::kernel_plan k1;
  codegen::place_scratch(k1, b, t, "k");
  CHECK(k1.scratch_level == 1);
  CHECK(k1.scratch_bytes[1] == 4192);
  CHECK(k1.buffers[2].space == memory_space_kind::scratch_level1);
  t.scratch_max[1] = 4200;
  codegen::kernel_plan k2;
  CHECK_THROWS_AS(codegen::place_scratch(k2, b, t, "k"), resource_error);
}

TEST_CASE("mapping pass: streaming stores from the output size, league sizes") {
  expr_graph g;
  add(g, binary_t, "+", {1024, 1024}, {1, 2});
  add(g, array_t, "A", {1024, 1024});
  add(g, array_t, "B", {1024, 1024});
  auto t = cpu_target();
  const auto big = codegen::lower(g, t).plan.kernels.at(0);
  CHECK(big.streaming_stores);  // 4 MiB of output >= 1 MiB
  CHECK(big.league_size == 1024 * 1024 / 4096);
  g.nodes[0].extent = g.nodes[1].extent = g.nodes[2].extent = {16, 16};
  const auto small = codegen::lower(g, t).plan.kernels.at(0);
  CHECK_FALSE(small.streaming_stores);
  CHECK(small.league_size == 256);
}

TEST_CASE("lowering driver: golden plan of transpose(A) + B on a fixed CPU target") {
  expr_graph g;
  add(g, binary_t, "+", {70, 40}, {1, 3});
  add(g, transpose_t, "transpose", {70, 40}, {2});
  add(g, array_t, "A", {40, 70});
  add(g, array_t, "B", {70, 40});
  const std::string text = codegen::to_string(codegen::lower(g, cpu_target()).plan);
  const std::string golden =
      "1 kernel\n"
      "kernel tiled elementwise (transpose staged in scratch): +(transpose(A), B)  [TeamPolicy "
      "on test CPU]\n"
      "  label: tessera::tiled elementwise (transpose staged in scratch) +(transpose(A), B) tile "
      "64x32\n"
      "  league 4 (2x2 tiles of 64x32), team 1, vector 1, logical threads/tile 2048\n"
      "  mapping: one team member per tile, walking each in 16x16 blocks\n"
      "  scratch per team: level 0 1024 B, level 1 0 B (requested from Kokkos with 64 B for "
      "64-byte "
      "alignment)\n"
      "  buffers:\n"
      "    staged_T0 : float[16][16] -> scratch level 0 (1024 B at offset 0)  [staging of "
      "transpose(A)]\n"
      "    A : float -> global  [input]\n"
      "    B : float -> global  [input]\n"
      "    out : float -> global  [output]\n"
      "  phases: 2, barriers: 1\n"
      "    barrier after phase 0 (fence: tile_static memory) -- read-after-write on staged_T0 "
      "(one member per team: program order)\n"
      "  note: transpose staged through scratch in 16x16 blocks transposed in vector registers; "
      "output rows stored as whole cache lines\n";
  CHECK(text == golden);
}

TEST_CASE("mapping pass: a staged transpose walks its operand rows in groups that fit L2") {
  // transpose(A), A 50 x R: the output's R rows make A's rows R elements apart; a 64 x 32 tile
  // reads 32 of them per block column.
  auto plan_of = [](std::int64_t r, std::size_t l2) {
    expr_graph g;
    add(g, transpose_t, "transpose", {r, 50}, {1});
    add(g, array_t, "A", {50, r});
    auto t = cpu_target();
    t.l2_bytes = l2;
    return codegen::lower(g, t).plan.kernels.at(0);
  };
  // 8192 floats per row: 32 rows span 1 MiB; 16 fit in 512 KiB.
  const auto zen3 = plan_of(8192, 512 << 10);
  CHECK(zen3.staged_row_group == 16);
  CHECK(tt::has(zen3.mapping,
                "walking each in 16x16 blocks, 16 operand rows at a time (rows of "
                "32768 B: more do not fit in L2 together)"));
  // The same rows with 1 MiB of L2, or shorter rows: the whole tile width at once.
  CHECK(plan_of(8192, 1 << 20).staged_row_group == 0);
  CHECK(plan_of(4096, 512 << 10).staged_row_group == 0);
  CHECK_FALSE(tt::has(plan_of(4096, 512 << 10).mapping, "operand rows at a time"));
  // Rows longer than L2 alone: one block of rows at a time, never fewer.
  CHECK(plan_of(1 << 18, 512 << 10).staged_row_group == 16);
  // No L2 in the target (GPUs): no grouping.
  CHECK(plan_of(8192, 0).staged_row_group == 0);
}

/// The tile_reduce line of R x R float tiles with out_cols output columns (square output) on
/// cpu_target() given the line, vector, cache and prefetch parameters (codegen::tile_reduce_line).
codegen::reduce_line line_of(
    int R, std::int64_t out_cols, int line, int vec, std::size_t l2, std::size_t l1d = 32768,
    int in_flight = 0, int row_ahead = 0, unsigned halvings = 0, std::size_t memory_min = 0,
    codegen::row_loop_memory row_loops = codegen::row_loop_memory::prefetch_and_stream) {
  auto t = cpu_target();
  t.row_prefetch_min_bytes = memory_min;
  t.row_loops = row_loops;
  t.tile_reduce.line_bytes = line;
  t.tile_reduce.vector_bytes = vec;
  t.tile_reduce.row_ahead_bytes = row_ahead;
  t.tile_reduce.line_halvings = halvings;
  t.l1d_bytes = l1d;
  t.l2_bytes = l2;
  t.row_prefetch_bytes = in_flight;
  graph_node n;
  n.traits = tile_reduce_t;
  n.reduce_tile[0] = R;
  n.reduce_tile[1] = R;
  n.extent = {out_cols, out_cols};
  n.elem_bytes = 4;
  return codegen::tile_reduce_line(t, n);
}

TEST_CASE("tile_reduce line: narrowed to one cache line where the rows crowd L2") {
  // AVX2 (256-byte lines of 8 vectors), 16x16 tiles of 8192 float columns: 16 rows 32 KiB
  // apart span all of a 512 KiB L2 -> 64-byte lines; half of a 1 MiB L2 -> 256 bytes.
  CHECK(line_of(16, 512, 256, 32, 512 << 10).bytes == 64);
  CHECK(line_of(16, 512, 256, 32, 1 << 20).bytes == 256);
  // 4x4 tiles: 4 rows span 128 KiB, a quarter of 512 KiB -> unchanged.
  CHECK(line_of(4, 2048, 256, 32, 512 << 10).bytes == 256);
  // AVX-512 lines (1 KiB of 16 vectors): the kernel has lines down to a quarter, 256 bytes.
  CHECK(line_of(16, 512, 1024, 64, 512 << 10).bytes == 256);
  // Without crowding, the L1 rule alone: 16 rows x 1 KiB > a third of 32 KiB -> 512 bytes;
  // a third of 48 KiB holds them -> 1 KiB.
  CHECK(line_of(16, 512, 1024, 64, 1 << 20).bytes == 512);
  CHECK(line_of(16, 512, 1024, 64, 1 << 20, 48 << 10).bytes == 1024);
  // Prefetching two lines ahead stays while the rows' lines fit an eighth of L2.
  CHECK(line_of(16, 512, 256, 32, 512 << 10).prefetch_lines == 2);
  CHECK(line_of(16, 512, 256, 32, 16 << 10).prefetch_lines == 0);
  // With 4 KiB to keep in flight: 256-byte lines of 2, 4 and 16 rows prefetch 8, 4 and 2
  // lines ahead; 1 KiB lines of 4 rows 2 (never fewer); 64-byte lines of 16 rows (crowded) 4.
  CHECK(line_of(2, 4096, 256, 32, 1 << 20, 48 << 10, 4096).prefetch_lines == 8);
  CHECK(line_of(4, 2048, 256, 32, 1 << 20, 48 << 10, 4096).prefetch_lines == 4);
  CHECK(line_of(16, 512, 256, 32, 1 << 20, 48 << 10, 4096).prefetch_lines == 2);
  CHECK(line_of(4, 2048, 1024, 64, 1 << 20, 48 << 10, 4096).prefetch_lines == 2);
  CHECK(line_of(16, 512, 256, 32, 512 << 10, 48 << 10, 4096).prefetch_lines == 4);
  // And at least 2 KiB ahead in each row: 512-byte lines of 16 rows 4 lines ahead, 256-byte
  // lines of 4 rows 8; 1 KiB lines of 2 rows 2 (4 KiB over the rows already); not where the
  // rows crowd L2 (64-byte lines of 16 rows stay 4 ahead).
  const int Z4 = 32 << 10, Z5 = 48 << 10;
  CHECK(line_of(16, 512, 1024, 64, 1 << 20, Z4, 4096, 2048).prefetch_lines == 4);
  CHECK(line_of(4, 2048, 256, 32, 1 << 20, Z5, 4096, 2048).prefetch_lines == 8);
  CHECK(line_of(2, 4096, 1024, 64, 1 << 20, Z5, 4096, 2048).prefetch_lines == 2);
  CHECK(line_of(16, 512, 256, 32, 512 << 10, Z5, 4096, 2048).bytes == 64);
  CHECK(line_of(16, 512, 256, 32, 512 << 10, Z5, 4096, 2048).prefetch_lines == 4);
}

TEST_CASE("tile_reduce line: inputs the last-level cache holds are not prefetched") {
  // A 32 MiB last-level cache (target::row_prefetch_min_bytes): R x R float tiles of n^2
  // inputs, AVX-512 lines, 4 KiB in flight, 2 KiB per row. 256^2, 2048^2 (16 MiB) and just
  // under 32 MiB: no prefetch; 4096^2 (64 MiB) and 8192^2 (256 MiB): as without the threshold.
  const std::size_t llc = 32u << 20;
  auto ahead = [&](int R, std::int64_t n, std::size_t memory_min) {
    return line_of(R, n / R, 1024, 64, 1 << 20, 32 << 10, 4096, 2048, 0, memory_min).prefetch_lines;
  };
  for (int R : {2, 4, 16}) {
    CAPTURE(R);
    CHECK(ahead(R, 256, llc) == 0);
    CHECK(ahead(R, 2048, llc) == 0);
    CHECK(ahead(R, 2896, llc) == 0);  // 2896^2 floats: 31.99 MiB
    CHECK(ahead(R, 2048, 0) > 0);     // no threshold (a target without one): the rule alone
    CHECK(ahead(R, 8192, llc) == ahead(R, 8192, 0));
    CHECK(ahead(R, 8192, llc) > 0);
    CHECK(ahead(R, 4096, llc) > 0);  // 64 MiB
  }
}

TEST_CASE("tile_reduce line: the element-wise row loops' way leaves the lines as they were") {
  // target::row_loops (prefetching and streaming, prefetching only, plain) is the row loops'
  // choice alone: tile_reduce's lines keep their width and their prefetch distance, derived
  // from row_prefetch_bytes, every way.
  const std::size_t llc = 32u << 20;
  for (int R : {2, 4, 8, 16})
    for (std::int64_t n : {2048, 8192})
      for (std::size_t l2 : {std::size_t(512) << 10, std::size_t(1) << 20}) {
        CAPTURE(R);
        CAPTURE(n);
        CAPTURE(l2);
        auto line = [&](codegen::row_loop_memory m) {
          return line_of(R, n / R, 1024, 64, l2, 48 << 10, 4096, 2048, 0, llc, m);
        };
        const auto rule = line(codegen::row_loop_memory::prefetch_and_stream);
        for (const auto m : codegen::row_loop_memories) {
          const std::string way = codegen::to_string(m);
          CAPTURE(way);
          CHECK(line(m).bytes == rule.bytes);
          CHECK(line(m).prefetch_lines == rule.prefetch_lines);
        }
        if (n == 8192) CHECK(rule.prefetch_lines > 0);  // 256 MiB: from memory
      }
}

TEST_CASE("tile_reduce line: halved per height class as many times as the target says") {
  // 8192 input columns, 1 KiB AVX-512 lines, 4 KiB in flight over the rows, 2 KiB per row.
  auto line_of = [](int R, int line, std::size_t l2, std::size_t l1d, unsigned halvings) {
    return ::line_of(R, 8192 / R, line, 64, l2, l1d, 4096, 2048, halvings);
  };
  // h more halvings for tiles of R rows (two bits per height class).
  auto more = [](int R, unsigned h) {
    return h << (2 * codegen::tile_rows_class(R));
  };
  // 2x2 tiles: 1 KiB -> 512-byte lines, prefetched 4 lines (2 KiB) ahead in each row.
  CHECK(line_of(2, 1024, 1 << 20, 48 << 10, more(2, 1)).bytes == 512);
  CHECK(line_of(2, 1024, 1 << 20, 48 << 10, more(2, 1)).prefetch_lines == 4);
  // Only the classes named: 2x2 keeps its line when 16x16 is halved.
  CHECK(line_of(2, 1024, 1 << 20, 48 << 10, more(16, 3)).bytes == 1024);
  CHECK(line_of(2, 1024, 1 << 20, 48 << 10, more(16, 3) | more(4, 2)).bytes == 1024);
  // 16x16 on a 32 KiB L1d: the L1 rule's 512 bytes, halved to 256, 128 and 64, each
  // prefetched 2 KiB ahead in every row (8, 16 and 32 lines).
  CHECK(line_of(16, 1024, 1 << 20, 32 << 10, 0).bytes == 512);
  for (unsigned h = 1; h <= 3; ++h) {
    CAPTURE(h);
    const auto l = line_of(16, 1024, 1 << 20, 32 << 10, more(16, h));
    CHECK(l.bytes == 512 >> h);
    CHECK(l.prefetch_lines == 2048 / l.bytes);
  }
  // Rows crowding a 512 KiB L2 take the rule's narrowest line (a quarter of the target's),
  // and the halvings go on from there, never below one vector (64 bytes).
  CHECK(line_of(16, 1024, 512 << 10, 32 << 10, 0).bytes == 256);
  CHECK(line_of(16, 1024, 512 << 10, 32 << 10, more(16, 1)).bytes == 128);
  CHECK(line_of(16, 1024, 512 << 10, 32 << 10, more(16, 3)).bytes == 64);
  CHECK(line_of(2, 64, 1 << 20, 48 << 10, more(2, 3)).bytes == 64);
  // Never below a tile row: 32 x 32 float tiles (128-byte rows) take the rule's 256 bytes on a
  // 32 KiB L1d, and three more halvings stop at 128.
  CHECK(line_of(32, 1024, 1 << 20, 32 << 10, 0).bytes == 256);
  CHECK(line_of(32, 1024, 1 << 20, 32 << 10, more(32, 3)).bytes == 128);
}

}  // namespace
