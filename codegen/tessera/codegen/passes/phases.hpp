/// \file passes/phases.hpp
/// \brief Pass 2: the phase program (scratch buffers and who touches them, phase by phase) of
///        every fused kernel. Scratch placement and barrier insertion read it.
#pragma once

#include <tessera/codegen/expr_graph.hpp>
#include <tessera/codegen/passes/barriers.hpp>
#include <tessera/codegen/passes/fusion.hpp>

namespace tessera::codegen {

/// A kernel's scratch buffers (before placement) and phases.
struct kernel_body {
  struct scratch_buffer {
    std::string name, type;
    std::size_t bytes = 0;
    std::string role;
  };
  std::vector<scratch_buffer> scratch;
  std::vector<buffer_plan> private_buffers;
  phase_program program;
  std::vector<std::string> notes;
};

inline std::string tile_type(const graph_node& n, int r, int c) {
  return n.dtype + "[" + std::to_string(r) + "][" + std::to_string(c) + "]";
}

/// Output tile (rows x cols) of a staged-transpose kernel: the root's .tile<>(), else the first
/// staged transpose's, else the target's default. Each staged operand tile is cols x rows of
/// the operand, read row by row (rows contiguous elements at a time).
struct tile2 {
  int rows, cols;
};
inline tile2 staged_tile(const expr_graph& g, const kernel_spec& k, const target& t) {
  auto from = [](const graph_node& n) {
    return tile2{n.tile[0], n.tile[1] > 0 ? n.tile[1] : n.tile[0]};
  };
  if (g.nodes[k.root].tile[0] > 0) return from(g.nodes[k.root]);
  for (int n : k.staged)
    if (g.nodes[n].tile[0] > 0) return from(g.nodes[n]);
  return {t.transpose_tile[0], t.transpose_tile[1]};
}

/// True when a matmul node lowers to the CPU packed kernel (float/double, no .tile<> override).
inline bool uses_packed_matmul(const target& t, const graph_node& mm) {
  return t.packed_matmul && mm.tile[0] == 0 && (mm.dtype == "float" || mm.dtype == "double");
}

inline kernel_body describe_kernel(const expr_graph& g, const kernel_spec& k, const target& t) {
  kernel_body b;
  switch (k.kind) {
    case kernel_spec::elementwise:
      b.program.prologue.push_back({"evaluate and store", {}});
      b.notes.push_back("fused elementwise chain: each input read once, one store per element");
      break;
    case kernel_spec::staged_transpose: {
      const tile2 ts = staged_tile(g, k, t);
      const int pad = t.thread_per_logical ? 1 : 0;  // bank-conflict padding on GPUs
      phase_desc stage{"stage transposed tiles", {}}, store{"evaluate and store", {}};
      // GPUs stage the whole tile (cols x rows of the operand); host backends one B x B block
      // at a time, stored in output order.
      const int sr = t.staged_block > 0 ? t.staged_block : ts.cols;
      const int sc = t.staged_block > 0 ? t.staged_block : ts.rows + pad;
      int s = 0;
      for (int n : k.staged) {
        const std::string name = "staged_T" + std::to_string(s++);
        b.scratch.push_back(
            {name, tile_type(g.nodes[n], sr, sc), std::size_t(sr) * sc * g.nodes[n].elem_bytes,
             "staging of transpose(" + g.nodes[g.nodes[n].children[0]].label + ")"});
        stage.accesses.push_back({name, true, false});
        store.accesses.push_back({name, false, false});
      }
      b.program.prologue.push_back(stage);
      b.program.epilogue.push_back(store);
      if (t.staged_block > 0)
        b.notes.push_back("transpose staged through scratch in " + std::to_string(t.staged_block) +
                          "x" + std::to_string(t.staged_block) +
                          " blocks transposed in vector registers; output rows stored as whole "
                          "cache lines (streaming stores when the output exceeds the cache)");
      else
        b.notes.push_back("transpose staged through scratch: coalesced reads and writes");
      break;
    }
    case kernel_spec::matmul: {
      const graph_node& mm = g.nodes[k.core];
      if (uses_packed_matmul(t, mm)) {
        b.scratch.push_back({"a_pack", mm.dtype + " (mc x kc panel)", 0, "packed A block"});
        b.scratch.push_back({"b_pack", mm.dtype + " (kc x nc panel)", 0, "packed B panel"});
        b.program.loop.push_back(
            {"pack A block and B panel", {{"a_pack", true, false}, {"b_pack", true, false}}});
        b.program.loop.push_back({"register-blocked micro-kernels",
                                  {{"a_pack", false, false}, {"b_pack", false, false}}});
        b.program.epilogue.push_back({"epilogue on the output tile and store", {}});
        b.notes.push_back("CPU matmul: packed panels + register-blocked vectorized micro-kernel (" +
                          t.matmul_blocking +
                          "); one team member per block, so barriers are "
                          "program order");
      } else {
        const int ts = mm.tile[0] > 0 ? mm.tile[0] : t.matmul_tile;
        b.scratch.push_back(
            {"a_tile", tile_type(mm, ts, ts), std::size_t(ts) * ts * mm.elem_bytes, "A tile"});
        b.scratch.push_back(
            {"b_tile", tile_type(mm, ts, ts), std::size_t(ts) * ts * mm.elem_bytes, "B tile"});
        b.private_buffers.push_back(
            {"acc", mm.dtype, memory_space_kind::private_memory, mm.elem_bytes, 0, "accumulator"});
        b.program.loop.push_back(
            {"load A and B tiles", {{"a_tile", true, false}, {"b_tile", true, false}}});
        b.program.loop.push_back(
            {"multiply-accumulate", {{"a_tile", false, false}, {"b_tile", false, false}}});
        b.program.epilogue.push_back({"epilogue and store", {}});
      }
      if (k.root != k.core)
        b.notes.push_back(
            "epilogue fused: elementwise ops above the matmul run on its output tile");
      break;
    }
    case kernel_spec::tile_reduce: {
      const graph_node& tr = g.nodes[k.core];
      const std::int64_t in_cols =
          g.nodes[tr.children[0]].extent.size() > 1 ? g.nodes[tr.children[0]].extent[1] : 1;
      if (t.thread_per_logical) {
        b.scratch.push_back({"row_acc", tr.dtype + "[" + std::to_string(in_cols) + "]",
                             std::size_t(in_cols) * tr.elem_bytes,
                             "the R input rows combined element by element"});
        b.program.prologue.push_back({"first input row", {{"row_acc", true, true}}});
        b.program.loop.push_back(
            {"combine the next input row", {{"row_acc", true, true}, {"row_acc", false, true}}});
        b.program.epilogue.push_back(
            {"combine each tile's C entries, epilogue and store", {{"row_acc", false, false}}});
      } else {
        const int c = tr.reduce_tile[1];
        const int w = c >= 64 ? c : (64 / c) * c;
        b.private_buffers.push_back({"acc_chunk", tr.dtype + "[" + std::to_string(w) + "]",
                                     memory_space_kind::private_memory,
                                     std::size_t(w) * tr.elem_bytes, 0,
                                     "W input columns accumulated over the R rows, in registers"});
        b.program.loop.push_back({"accumulate R rows of a W-column chunk", {}});
        b.program.epilogue.push_back({"combine each tile's C entries, epilogue and store", {}});
      }
      b.notes.push_back("tile_reduce: one team per output row; input rows read once, contiguously");
      if (k.root != k.core)
        b.notes.push_back("epilogue fused: elementwise ops above the reduction");
      break;
    }
  }
  return b;
}

}  // namespace tessera::codegen
