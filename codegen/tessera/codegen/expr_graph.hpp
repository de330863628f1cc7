/// \file expr_graph.hpp
/// \brief The code generator's input: an expression tree flattened into plain values (node
///        kinds, extents, children, schedules), and the target description the passes read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::codegen {

enum class node_kind { terminal, scalar, unary, binary, where, matmul, transpose, tile_reduce };

inline const char* to_string(node_kind k) {
  switch (k) {
    case node_kind::terminal:
      return "array";
    case node_kind::scalar:
      return "scalar";
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
  }
  return "?";
}

/// True for node kinds evaluated one element at a time, at the output's index.
inline bool is_elementwise(node_kind k) {
  return k == node_kind::terminal || k == node_kind::scalar || k == node_kind::unary ||
         k == node_kind::binary || k == node_kind::where;
}

struct graph_node {
  node_kind kind = node_kind::terminal;
  std::string label;                 ///< "A", "+", "exp", "matmul", "tile_mean<4,4>", ...
  std::vector<std::int64_t> extent;  ///< output extent (empty for scalars)
  std::vector<int> children;
  int tile[3] = {0, 0, 0};      ///< schedule from .tile<...>(); 0 = default
  int reduce_tile[2] = {0, 0};  ///< tile_reduce's R, C
  std::size_t elem_bytes = 4;
  std::string dtype = "float";
  const void* data = nullptr;  ///< terminal's storage (aliasing checks)
};

/// Nodes in pre-order (root = 0); children refer to indices.
struct expr_graph {
  std::vector<graph_node> nodes;
};

/// What the passes need to know about the backend (built from backend traits on the host).
struct target {
  std::string backend = "Serial";
  bool thread_per_logical = false;  ///< GPU-style mapping
  std::size_t scratch_max[2] = {32768, 20u << 20};
  int max_team_size = 1;
  int concurrency = 1;
  int transpose_tile[2] = {32, 32};  ///< default output tile (rows, cols) of staged transposes
  /// Host backends: staged transposes move B x B blocks through vector registers, so each
  /// staged buffer is one B x B block rather than the whole tile (0: whole tile, GPUs).
  int staged_block = 0;
  int matmul_tile = 16;         ///< tile of the tiled (GPU) matmul
  bool packed_matmul = true;    ///< CPU: packed panels + register-blocked micro-kernel
  std::string matmul_blocking;  ///< description of the CPU blocking (from the tuner)
  int gemm_mc = 0;              ///< rows of C per team of the CPU matmul (from the blocking)
};

}  // namespace tessera::codegen
