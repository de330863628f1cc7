/// \file expr_graph.hpp
/// \brief The code generator's input: an expression tree flattened into plain values (node
///        traits, extents, children, schedules, the memory of its arrays); the target
///        description the passes read is in target.hpp.
#pragma once

#include <tessera/codegen/target.hpp>
#include <tessera/dsl/expr/node_kind.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::codegen {

using tessera::fusion_role;
using tessera::is_elementwise;
using tessera::node_kind;
using tessera::node_traits;

/// How a terminal's memory relates to the assignment's destination.
enum class overlap { none, same, partial };

struct graph_node {
  node_traits traits{};  ///< the node type's declaration (kind, fusion role, kernel family)
  std::string label;     ///< "A", "+", "exp", "matmul", "tile_mean<4,4>", ...
  std::vector<std::int64_t> extent;  ///< output extent (empty for scalars)
  std::vector<int> children;
  int tile[3] = {0, 0, 0};      ///< schedule from .tile<...>(); 0 = default
  int reduce_tile[2] = {0, 0};  ///< tile_reduce's R, C
  std::size_t elem_bytes = 4;
  std::string dtype = "float";
  bool floating = true;  ///< element type is floating point
  /// Terminals: their memory against the destination's (`same`: the very elements, read at
  /// the index being written; `partial`: any other overlap).
  overlap with_output = overlap::none;
  /// Terminals: every row contiguous with the next (the buffer is one contiguous block).
  bool contiguous = true;
  /// Terminals: the stride of each dimension in elements (two terminals with one label and
  /// equal strides read the same elements at every index).
  std::vector<std::int64_t> strides;
  /// Terminals: an overlapping section of the buffer of terminal `section_of` (same strides
  /// and extent, its elements `section_offset` away in index space): both are one stencil
  /// operand in plans. -1: none (or this terminal is the first such section).
  int section_of = -1;
  std::vector<std::int64_t> section_offset;
  /// Shifts: the offset per dimension and the boundary policy's name.
  std::vector<std::int64_t> offset;
  std::string boundary;
};

/// Nodes in pre-order (root = 0); children refer to indices.
struct expr_graph {
  std::vector<graph_node> nodes;
  /// Element type of the destination the last kernel stores to (the assignment's array; the
  /// root's type for a fresh array).
  std::string out_dtype = "float";
  std::size_t out_elem_bytes = 4;
  /// The destination's elements are one contiguous row-major run (false for a section of a
  /// wider array: the last kernel then stores row by row at the destination's strides).
  bool out_contiguous = true;
};

/// The element type kernel-root `root` is stored as: its own type when it goes to a temporary,
/// the destination's when it is the expression's root.
inline const std::string& stored_dtype(const expr_graph& g, int root, bool to_temporary) {
  return to_temporary ? g.nodes[root].dtype : g.out_dtype;
}

/// True when a matmul node lowers to the CPU packed kernel (float/double, no .tile<> override).
inline bool uses_packed_matmul(const target& t, const graph_node& mm) {
  return t.matmul.packed && mm.tile[0] == 0 && (mm.dtype == "float" || mm.dtype == "double");
}

}  // namespace tessera::codegen
