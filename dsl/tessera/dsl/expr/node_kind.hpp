/// \file node_kind.hpp
/// \brief What every Tier 1 expression node declares once, as `static constexpr node_traits
///        traits`: its kind, how the code generator fuses it into kernels, the kernel family it
///        makes, and its precedence among the cores on one kernel's frontier. Together with
///        `children()` and `label()` this is all the code generator reads about a node type
///        (codegen/build_graph.hpp): the run-time fusion pass (codegen/passes/fusion.hpp) and the
///        compile-time dispatch of the executor (backends/execute.hpp) both decide with
///        codegen::fuse_frontier on these traits, so they cannot disagree.
#pragma once

namespace tessera {

/// The built-in node kinds; `custom` is any other node type (an elementwise node a user or a
/// test defines next to its evaluator).
enum class node_kind {
  terminal,
  scalar,
  generate,
  shift,
  unary,
  binary,
  where,
  matmul,
  transpose,
  tile_reduce,
  custom
};

/// How the code generator treats a node when it partitions an expression into kernels.
enum class fusion_role {
  elementwise,  ///< evaluated inside its consumer's kernel, at the index being computed
  core,         ///< the core of a kernel of its family; elementwise nodes above it are the
                ///< kernel's epilogue (matmul, tile_reduce)
  staged,       ///< staged through team scratch by a kernel of its family that has no core
                ///< (transpose); materialized by a kernel of its own otherwise
};

/// What a kernel computes; each backend implements every family (backends/<name>/).
enum class kernel_family {
  tile_kernel,       ///< a Tier 0 kernel (or Tier 2 program) written by the user
  elementwise,       ///< a fused elementwise chain
  staged_transpose,  ///< tiled elementwise kernel with transposes staged through scratch
  matmul,            ///< matmul core with its fused epilogue
  tile_reduce,       ///< tile_reduce / tile_mean core with prologue and epilogue
  copy,              ///< copies a temporary to the output (when the output aliases an input)
  reduction,         ///< a whole-array reduction (sum, mean, min_value, max_value, reduce)
  scan,              ///< a prefix scan along one dimension (inclusive_scan, exclusive_scan)
  histogram,         ///< counts of values in equal-width bins (histogram)
  sort,              ///< tile sorts and merge passes of a 1-D sort (sort, sorted)
};

/// A node type's declaration for the code generator (see the file comment).
struct node_traits {
  node_kind kind = node_kind::custom;
  fusion_role role = fusion_role::elementwise;
  kernel_family family = kernel_family::elementwise;  ///< of the kernel it is core or staged in
  int core_precedence = 0;  ///< among cores on one frontier the highest wins (first on a tie)
  /// An elementwise node that reads its operand at other indices than the one it computes
  /// (shift): a kernel's frontier stops at it, every non-elementwise node below it is computed
  /// into a temporary first, and an operand below it that overlaps the output is a hazard.
  bool reads_neighbours = false;
};

/// Traits of an elementwise node of kind k.
constexpr node_traits elementwise_node(node_kind k) {
  return {k, fusion_role::elementwise, kernel_family::elementwise, 0, false};
}
/// Traits of an elementwise node of kind k reading its operand at other indices (shift).
constexpr node_traits neighbour_node(node_kind k) {
  node_traits t = elementwise_node(k);
  t.reads_neighbours = true;
  return t;
}
/// True for nodes evaluated one element at a time inside their consumer's kernel.
constexpr bool is_elementwise(const node_traits& t) {
  return t.role == fusion_role::elementwise;
}

/// The kind's name as plans print it.
inline const char* to_string(node_kind k) {
  switch (k) {
    case node_kind::terminal:
      return "array";
    case node_kind::scalar:
      return "scalar";
    case node_kind::generate:
      return "generate";
    case node_kind::shift:
      return "shift";
    case node_kind::unary:
      return "unary";
    case node_kind::binary:
      return "binary";
    case node_kind::where:
      return "where";
    case node_kind::matmul:
      return "matmul";
    case node_kind::transpose:
      return "transpose";
    case node_kind::tile_reduce:
      return "tile_reduce";
    case node_kind::custom:
      return "custom";
  }
  return "?";
}

/// The family's name as plans print it.
inline const char* to_string(kernel_family f) {
  switch (f) {
    case kernel_family::tile_kernel:
      return "tile kernel";
    case kernel_family::elementwise:
      return "elementwise";
    case kernel_family::staged_transpose:
      return "tiled elementwise (transpose staged in scratch)";
    case kernel_family::matmul:
      return "matmul + epilogue";
    case kernel_family::tile_reduce:
      return "tile_reduce + epilogue";
    case kernel_family::copy:
      return "copy";
    case kernel_family::reduction:
      return "reduction";
    case kernel_family::scan:
      return "scan";
    case kernel_family::histogram:
      return "histogram";
    case kernel_family::sort:
      return "sort";
  }
  return "?";
}

}  // namespace tessera
