/// \file passes/fusion.hpp
/// \brief Pass 1: partitions an expression graph into kernels.
///
/// Rules: elementwise nodes never start a kernel of their own — they are evaluated inside the
/// kernel that consumes them. Walking down from the root through elementwise nodes only:
///  * the first matmul reached becomes the kernel's core; the elementwise nodes above it are its
///    epilogue (applied to each output element of the matmul's tile);
///  * else the first tile_reduce reached becomes the core (epilogue above, and its elementwise
///    input subtree is its prologue, read directly);
///  * else every transpose reached is staged through scratch inside one tiled elementwise kernel.
/// Any other matmul, transpose or tile_reduce is materialized into a temporary by a kernel of its
/// own, scheduled before its consumer (post-order). An output that one of the non-elementwise
/// nodes reads is written through a temporary (aliasing: `A = transpose(A)`).
#pragma once

#include <tessera/codegen/expr_graph.hpp>
#include <tessera/codegen/kernel_plan.hpp>

#include <functional>
#include <string>
#include <vector>

namespace tessera::codegen {

enum class node_role { inline_elementwise, core, staged, materialized };

/// The fusion decision for one kernel.
struct kernel_spec {
  enum kind_t { elementwise, staged_transpose, matmul, tile_reduce } kind = elementwise;
  int root = 0;             ///< graph node whose value the kernel writes
  int core = -1;            ///< matmul / tile_reduce node fused into this kernel
  std::vector<int> staged;  ///< transposes staged through scratch
  std::vector<int> inputs;  ///< nodes read from global memory (terminals, temporaries)
  bool writes_temporary = false;
  /// Role of `root` inside this kernel (core/staged when the root is itself a matmul,
  /// tile_reduce or transpose); consumers of a temporary see it as materialized.
  node_role root_role = node_role::inline_elementwise;
};

struct fusion_result {
  std::vector<node_role> role;       ///< per graph node
  std::vector<kernel_spec> kernels;  ///< in execution order; the last writes the output
  bool output_aliases_input = false;
};

inline const char* kind_name(kernel_spec::kind_t k) {
  switch (k) {
    case kernel_spec::elementwise:
      return "elementwise";
    case kernel_spec::staged_transpose:
      return "tiled elementwise (transpose staged in scratch)";
    case kernel_spec::matmul:
      return "matmul + epilogue";
    case kernel_spec::tile_reduce:
      return "tile_reduce + epilogue";
  }
  return "?";
}

/// \param dst [in] storage of the assignment's destination (nullptr: a fresh array)
inline fusion_result fuse(const expr_graph& g, const void* dst) {
  fusion_result r;
  r.role.assign(g.nodes.size(), node_role::inline_elementwise);
  // Kernel rooted at `root`: find its core/staged nodes, materialize the rest first.
  std::function<void(int, bool)> plan_kernel = [&](int root, bool temp) {
    kernel_spec k;
    k.root = root;
    k.writes_temporary = temp;
    std::vector<int> frontier;  // non-elementwise nodes reachable through elementwise nodes
    std::function<void(int)> walk = [&](int n) {
      if (!is_elementwise(g.nodes[n].kind)) {
        frontier.push_back(n);
        return;
      }
      for (int c : g.nodes[n].children) walk(c);
    };
    walk(root);
    for (int n : frontier)
      if (k.core < 0 && g.nodes[n].kind == node_kind::matmul) k.core = n;
    if (k.core < 0)
      for (int n : frontier)
        if (k.core < 0 && g.nodes[n].kind == node_kind::tile_reduce) k.core = n;
    std::vector<int> to_materialize;
    for (int n : frontier) {
      if (n == k.core) continue;
      if (k.core < 0 && g.nodes[n].kind == node_kind::transpose) {
        k.staged.push_back(n);
        r.role[n] = node_role::staged;
        // The staged operand's own non-elementwise nodes are materialized.
        std::vector<int> sub;
        std::function<void(int)> walk2 = [&](int m) {
          if (!is_elementwise(g.nodes[m].kind)) {
            sub.push_back(m);
            return;
          }
          for (int c : g.nodes[m].children) walk2(c);
        };
        walk2(g.nodes[n].children[0]);
        for (int m : sub) to_materialize.push_back(m);
        continue;
      }
      to_materialize.push_back(n);
    }
    if (k.core >= 0) {
      r.role[k.core] = node_role::core;
      // The core's operands: matmul operands that are not plain arrays are materialized;
      // a tile_reduce's elementwise input is read directly (prologue fusion).
      for (int c : g.nodes[k.core].children) {
        if (g.nodes[k.core].kind == node_kind::matmul) {
          if (g.nodes[c].kind != node_kind::terminal) to_materialize.push_back(c);
        } else {
          std::function<void(int)> walk3 = [&](int m) {
            if (!is_elementwise(g.nodes[m].kind)) {
              to_materialize.push_back(m);
              return;
            }
            for (int cc : g.nodes[m].children) walk3(cc);
          };
          walk3(c);
        }
      }
      k.kind = g.nodes[k.core].kind == node_kind::matmul ? kernel_spec::matmul
                                                         : kernel_spec::tile_reduce;
    } else if (!k.staged.empty()) {
      k.kind = kernel_spec::staged_transpose;
    }
    for (int n : to_materialize) plan_kernel(n, true);
    // Global inputs of this kernel: terminals and materialized nodes it reads.
    std::function<void(int)> inputs = [&](int n) {
      if (n != root && r.role[n] == node_role::materialized) {
        k.inputs.push_back(n);
        return;
      }
      if (g.nodes[n].kind == node_kind::terminal) {
        k.inputs.push_back(n);
        return;
      }
      for (int c : g.nodes[n].children) inputs(c);
    };
    inputs(root);
    k.root_role = r.role[root];
    if (temp) r.role[root] = node_role::materialized;
    r.kernels.push_back(k);
  };
  plan_kernel(0, false);
  // Aliasing: the output may be read at the same index by elementwise code only.
  if (dst) {
    std::function<void(int, bool)> scan = [&](int n, bool under_special) {
      const auto& nd = g.nodes[n];
      if (nd.kind == node_kind::terminal && nd.data == dst && under_special)
        r.output_aliases_input = true;
      const bool special = under_special || !is_elementwise(nd.kind);
      for (int c : nd.children) scan(c, special);
    };
    scan(0, false);
    // A CPU matmul accumulates its K blocks in the output itself, so an epilogue that reads
    // the output array would see partial sums: write through a temporary then too.
    if (r.kernels.back().kind == kernel_spec::matmul)
      for (const auto& nd : g.nodes)
        if (nd.kind == node_kind::terminal && nd.data == dst) r.output_aliases_input = true;
  }
  return r;
}

}  // namespace tessera::codegen
