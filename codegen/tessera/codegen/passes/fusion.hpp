/// \file passes/fusion.hpp
/// \brief Pass 1: partitions an expression graph into kernels.
///
/// Elementwise nodes never start a kernel of their own — they are evaluated inside the kernel
/// that consumes them. The kernel of a root is decided by the fusion rule (fusion_rule.hpp) on
/// its frontier (the nodes reached from the root through elementwise nodes only, by their
/// traits): its core (a matmul or tile_reduce; elementwise nodes above it are the epilogue, a
/// tile_reduce's elementwise input subtree its prologue, read directly), or else the staged
/// nodes (transposes, staged through scratch inside one tiled elementwise kernel). Any other
/// frontier node is materialized into a temporary by a kernel of its own, scheduled before its
/// consumer (post-order); so are matmul operands that are not plain contiguous arrays.
///
/// Aliasing, by memory range: the output is written through a temporary when a kernel would
/// read what it already wrote — when an array overlapping the destination is read by a
/// non-elementwise node (any overlap), read elementwise at another index (a partial overlap),
/// or read at all by a packed CPU matmul (which accumulates in the output). Reading the
/// destination's own elements elementwise, at the index being written, needs no temporary.
#pragma once

#include <tessera/codegen/expr_graph.hpp>
#include <tessera/codegen/fusion_rule.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/expr/ops.hpp>

#include <string>
#include <vector>

namespace tessera::codegen {

enum class node_role { inline_elementwise, core, staged, materialized };

/// The fusion decision for one kernel.
struct kernel_spec {
  kernel_family family = kernel_family::elementwise;
  int root = 0;             ///< graph node whose value the kernel writes
  int core = -1;            ///< matmul / tile_reduce node fused into this kernel
  std::vector<int> staged;  ///< transposes staged through scratch
  std::vector<int> inputs;  ///< nodes read from global memory (terminals, temporaries)
  bool writes_temporary = false;
  /// A packed CPU matmul whose kernel computes `out + matmul(...)` into `out` itself: the
  /// matmul adds into the output's prior contents (BLAS beta = 1), no temporary.
  bool accumulates_output = false;
  /// Role of `root` inside this kernel (core/staged when the root is itself a matmul,
  /// tile_reduce or transpose); consumers of a temporary see it as materialized.
  node_role root_role = node_role::inline_elementwise;
};

struct fusion_result {
  std::vector<node_role> role;       ///< per graph node
  std::vector<kernel_spec> kernels;  ///< in execution order; the last writes the output
  bool output_aliases_input = false;
  std::string alias_reason;
};

/// The non-elementwise nodes reachable from `n` through elementwise nodes (n itself when it is
/// not elementwise), in pre-order.
inline void frontier(const expr_graph& g, int n, std::vector<int>& out) {
  if (!is_elementwise(g.nodes[n].traits)) {
    out.push_back(n);
    return;
  }
  for (int c : g.nodes[n].children) frontier(g, c, out);
}
/// The kernel frontier of `n`: as frontier(), but stopping at nodes that read their operand at
/// other indices (shift), whose own frontier goes to `below` (computed into temporaries: a
/// kernel core's value or a staged tile exists only at the index being computed).
inline void kernel_frontier(const expr_graph& g, int n, std::vector<int>& out,
                            std::vector<int>& below) {
  const node_traits& t = g.nodes[n].traits;
  if (!is_elementwise(t)) {
    out.push_back(n);
  } else if (t.reads_neighbours) {
    for (int c : g.nodes[n].children) frontier(g, c, below);
  } else {
    for (int c : g.nodes[n].children) kernel_frontier(g, c, out, below);
  }
}

/// True when matmul's operand `n` is read directly (a contiguous array of the matmul's type).
inline bool direct_matmul_operand(const expr_graph& g, int n) {
  return g.nodes[n].traits.kind == node_kind::terminal && g.nodes[n].contiguous;
}

namespace impl {
struct fuser {
  const expr_graph& g;
  fusion_result& r;

  void plan_kernel(int root, bool temp) {
    kernel_spec k;
    k.root = root;
    k.writes_temporary = temp;
    std::vector<int> front, below_shift;
    kernel_frontier(g, root, front, below_shift);
    std::vector<node_traits> traits;
    for (int n : front) traits.push_back(g.nodes[n].traits);
    const fused_kernel decision = fuse_frontier(traits.data(), int(traits.size()));
    k.family = decision.family;
    k.core = decision.core >= 0 ? front[std::size_t(decision.core)] : -1;
    std::vector<int> to_materialize = below_shift;
    for (int n : front) {
      if (n == k.core) continue;
      if (staged_in(decision, g.nodes[n].traits)) {
        k.staged.push_back(n);
        r.role[n] = node_role::staged;
        frontier(g, g.nodes[n].children[0], to_materialize);  // the operand's own cores
        continue;
      }
      to_materialize.push_back(n);
    }
    if (k.core >= 0) {
      r.role[k.core] = node_role::core;
      for (int c : g.nodes[k.core].children) {
        if (g.nodes[k.core].traits.kind == node_kind::matmul) {
          if (!direct_matmul_operand(g, c)) to_materialize.push_back(c);
        } else {
          frontier(g, c, to_materialize);  // tile_reduce prologue: read directly
        }
      }
    }
    for (int n : to_materialize) plan_kernel(n, true);
    collect_inputs(k, root, root);
    k.root_role = r.role[root];
    if (temp) r.role[root] = node_role::materialized;
    r.kernels.push_back(k);
  }
  void collect_inputs(kernel_spec& k, int root, int n) {
    if ((n != root && r.role[n] == node_role::materialized) ||
        g.nodes[n].traits.kind == node_kind::terminal) {
      k.inputs.push_back(n);
      return;
    }
    for (int c : g.nodes[n].children) collect_inputs(k, root, c);
  }
  /// Does a kernel read output-overlapping memory unsafely below node n?
  /// Only the last kernel writes the output; nodes it reads through temporaries were computed
  /// before anything was written, so the scan stops at them.
  void scan_alias(int n, bool under_special, bool packed_matmul_kernel, bool under_shift = false) {
    if (n != 0 && r.role[n] == node_role::materialized) return;
    const graph_node& nd = g.nodes[n];
    if (nd.traits.kind == node_kind::terminal && nd.with_output != overlap::none) {
      const char* why = nullptr;
      if (under_shift)
        why = "a shift reads neighbours of the elements the output overwrites";
      else if (under_special)
        why = "a matmul, transpose or tile_reduce reads memory the output overlaps";
      else if (nd.with_output == overlap::partial)
        why = "an operand partly overlaps the output (read at other indices than written)";
      else if (packed_matmul_kernel)
        why = "the CPU matmul accumulates in its output, which its epilogue also reads";
      if (why && !r.output_aliases_input) {
        r.output_aliases_input = true;
        r.alias_reason = std::string(why) + " (" + nd.label + ")";
      }
    }
    const bool special = under_special || !is_elementwise(nd.traits);
    const bool shifted = under_shift || nd.traits.reads_neighbours;
    for (int c : nd.children) scan_alias(c, special, packed_matmul_kernel, shifted);
  }
};
}  // namespace impl

/// \param g [in] the expression (terminals classified against the destination's memory)
/// \param t [in] the target (a packed CPU matmul accumulates in its output)
/// True when the output's kernel computes `C + matmul(A, B)` (either order) with C the output
/// itself, read at the index written, of the matmul's element type, and the matmul is the
/// kernel's packed core: the matmul can add into C in place (BLAS beta = 1).
inline bool accumulates_into_output(const expr_graph& g, const kernel_spec& k, bool packed) {
  if (!packed || k.root != 0 || k.writes_temporary) return false;
  const graph_node& root = g.nodes[0];
  if (root.traits.kind != node_kind::binary || root.label != ops::add::symbol ||
      root.children.size() != 2)
    return false;
  const int a = root.children[0], b = root.children[1];
  const int other = a == k.core ? b : b == k.core ? a : -1;
  if (other < 0) return false;
  const graph_node& c = g.nodes[other];
  return c.traits.kind == node_kind::terminal && c.with_output == overlap::same &&
         c.dtype == g.nodes[k.core].dtype && g.out_dtype == g.nodes[k.core].dtype;
}

inline fusion_result fuse(const expr_graph& g, const target& t) {
  fusion_result r;
  r.role.assign(g.nodes.size(), node_role::inline_elementwise);
  impl::fuser f{g, r};
  f.plan_kernel(0, false);
  kernel_spec& last = r.kernels.back();
  const bool packed =
      last.family == kernel_family::matmul && uses_packed_matmul(t, g.nodes[last.core]);
  last.accumulates_output = accumulates_into_output(g, last, packed);
  // An output the matmul accumulates into is not read by the epilogue: no hazard from it.
  f.scan_alias(0, false, packed && !last.accumulates_output);
  // Another hazard (C += matmul(C, B)): the kernel writes a temporary, computed whole.
  if (r.output_aliases_input) last.accumulates_output = false;
  return r;
}

}  // namespace tessera::codegen
