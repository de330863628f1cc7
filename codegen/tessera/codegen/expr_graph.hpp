/// \file expr_graph.hpp
/// \brief The code generator's input: an expression tree flattened into plain values (node
///        kinds, extents, children, schedules, the memory of its arrays), and the target
///        description the passes read.
#pragma once

#include <tessera/dsl/expr/node_kind.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::codegen {

using tessera::is_elementwise;
using tessera::node_kind;

/// How a terminal's memory relates to the assignment's destination.
enum class overlap { none, same, partial };

struct graph_node {
  node_kind kind = node_kind::terminal;
  std::string label;                 ///< "A", "+", "exp", "matmul", "tile_mean<4,4>", ...
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
};

/// Nodes in pre-order (root = 0); children refer to indices.
struct expr_graph {
  std::vector<graph_node> nodes;
};

/// What the passes need to know about the backend (made by backends::backend<Space>).
struct target {
  std::string backend = "Serial";
  bool thread_per_logical = false;  ///< GPU mapping: one team member per logical thread
  std::size_t scratch_max[2] = {32768, 20u << 20};  ///< bytes per team, per level
  int max_team_size = 1;
  int concurrency = 1;
  /// Tier 0: true when tile_local storage is private to each logical thread (GPU registers,
  /// at most tile_local_max bytes per logical thread); false when one member runs the tile and
  /// keeps every logical thread's copy in team scratch (CPU; limited by the scratch levels).
  bool tile_local_per_thread = false;
  std::size_t tile_local_max = 16 * 1024;
  /// Staged transposes: default output tile (rows, cols); CPUs move B x B register blocks
  /// (staged_block = B); GPUs stage whole tiles with rows padded by staged_pad elements.
  int transpose_tile[2] = {32, 32};
  int staged_block = 0;
  int staged_pad = 1;
  std::size_t streaming_store_min_bytes = 0;  ///< CPU outputs at least this big stream (0: never)
  /// Matmul. CPUs: packed panels for float/double with the blocking below; GPUs: register-
  /// blocked tiles. `matmul_tile` is the tile of the generic tiled form (other types,
  /// .tile<>() schedules).
  bool packed_matmul = true;
  int gemm_mc = 0, gemm_kc = 0, gemm_nc = 0, gemm_mr = 0, gemm_nr = 0;
  int gemm_mr_double = 0, gemm_nr_double = 0;
  int gemm_mc_double = 0, gemm_kc_double = 0, gemm_nc_double = 0;
  std::string gemm_origin = "cache sizes";
  int matmul_tile = 16;
  int gpu_mm_bm = 64, gpu_mm_bn = 64, gpu_mm_bk = 16, gpu_mm_tm = 4, gpu_mm_tn = 4;
  /// tile_reduce on GPUs: team size (members per output row).
  int tile_reduce_team = 128;
  /// tile_reduce on CPUs: bytes of one line of input columns combined in vector registers
  /// (0: no SIMD; element-wise chunks of 64 bytes).
  int tile_reduce_line_bytes = 0;
  /// GPU emulation: the scratch level 0 bytes per team a real GPU offers (0: not emulating).
  /// Plans needing more level 0 than the host allows but no more than this note that a GPU
  /// would place them in level 0.
  std::size_t emulated_gpu_scratch_max0 = 0;
};

/// True when a matmul node lowers to the CPU packed kernel (float/double, no .tile<> override).
inline bool uses_packed_matmul(const target& t, const graph_node& mm) {
  return t.packed_matmul && mm.tile[0] == 0 && (mm.dtype == "float" || mm.dtype == "double");
}

}  // namespace tessera::codegen
