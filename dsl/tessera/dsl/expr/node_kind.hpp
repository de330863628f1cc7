/// \file node_kind.hpp
/// \brief The kinds of Tier 1 expression nodes. Each node type declares its kind (`kind`), its
///        children (`children()`, a tuple of references) and its label (`label()`); the code
///        generator builds its graph from these declarations alone (codegen/build_graph.hpp).
#pragma once

namespace tessera {

enum class node_kind { terminal, scalar, unary, binary, where, matmul, transpose, tile_reduce };

/// The kind's name as plans print it.
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
constexpr bool is_elementwise(node_kind k) {
  return k == node_kind::terminal || k == node_kind::scalar || k == node_kind::unary ||
         k == node_kind::binary || k == node_kind::where;
}

}  // namespace tessera
