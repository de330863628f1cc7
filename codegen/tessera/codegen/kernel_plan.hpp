/// \file kernel_plan.hpp
/// \brief `kernel_plan`: a plain, printable description of one Kokkos launch — league, team
///        and vector sizes, scratch bytes per level, every buffer's memory space, every barrier.
///        Produced by the planning passes, read by the launch code and by explain().
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::codegen {

/// Where a buffer lives during the kernel (C++ AMP / OpenCL terms, Kokkos levels).
enum class memory_space_kind {
  global,          ///< device memory (array, array_view, Kokkos::View): OpenCL __global
  scratch_level0,  ///< team scratch level 0 (GPU shared memory / LDS): tile_static, __local
  scratch_level1,  ///< team scratch level 1 (slower, larger): tile_static that does not fit L0
  private_memory,  ///< per logical thread (registers on GPUs, member stack on CPUs): __private
};

inline const char* to_string(memory_space_kind m) {
  switch (m) {
    case memory_space_kind::global:
      return "global";
    case memory_space_kind::scratch_level0:
      return "scratch L0";
    case memory_space_kind::scratch_level1:
      return "scratch L1";
    case memory_space_kind::private_memory:
      return "private";
  }
  return "?";
}

/// One buffer a kernel touches.
struct buffer_plan {
  std::string name;  ///< e.g. "A", "tile_static#0"
  std::string type;  ///< e.g. "float[16][16]", "float (1024x1024)"
  memory_space_kind space = memory_space_kind::global;
  std::size_t bytes = 0;   ///< per team for scratch, per logical thread for private,
                           ///< whole buffer for global (0 when unknown)
  std::size_t offset = 0;  ///< byte offset inside the team's scratch allocation
  std::string role;        ///< "input", "output", "staging", "accumulator", ...
};

/// One barrier between two phases of a kernel.
struct barrier_plan {
  int after_phase = 0;   ///< the barrier ends phase `after_phase` (phases count from 0)
  std::string fence;     ///< "all memory", "global memory", "tile_static memory"
  std::string hazard;    ///< why it is needed, e.g. "read-after-write on a_tile"
  bool in_loop = false;  ///< repeated once per iteration of a tile-uniform loop
};

/// One kernel launch (a Kokkos TeamPolicy, or a range/reduction policy for simple kernels).
struct kernel_plan {
  std::string name;                       ///< e.g. "parallel_for_each<16,16>"
  std::string policy = "TeamPolicy";      ///< Kokkos policy used
  std::string backend;                    ///< Kokkos execution space name
  std::vector<std::int64_t> tile;         ///< tile sizes (logical threads per dimension)
  std::vector<std::int64_t> tiles;        ///< tiles per dimension
  std::int64_t league_size = 0;           ///< teams (= tiles)
  int team_size = 1;                      ///< Kokkos team members per team
  int vector_length = 1;                  ///< Kokkos vector lanes per member
  int logical_threads = 1;                ///< logical threads per tile
  std::string mapping;                    ///< how logical threads map onto members/lanes
  std::size_t scratch_bytes[2] = {0, 0};  ///< per team, per scratch level
  int phases = 1;                         ///< barrier-separated phases per tile (per pass)
  std::vector<buffer_plan> buffers;
  std::vector<barrier_plan> barriers;
  std::vector<std::string> notes;  ///< fusion decisions, temporaries, ...
};

/// Human-readable text of a plan (what explain() prints).
inline std::string to_string(const kernel_plan& k) {
  std::ostringstream os;
  auto list = [&](const std::vector<std::int64_t>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) s += 'x';
      s += std::to_string(v[i]);
    }
    return s;
  };
  os << "kernel " << k.name << "  [" << k.policy << " on " << k.backend << "]\n";
  os << "  league " << k.league_size;
  if (!k.tiles.empty()) os << " (" << list(k.tiles) << " tiles of " << list(k.tile) << ")";
  os << ", team " << k.team_size << ", vector " << k.vector_length << ", logical threads/tile "
     << k.logical_threads << "\n";
  if (!k.mapping.empty()) os << "  mapping: " << k.mapping << "\n";
  os << "  scratch per team: L0 " << k.scratch_bytes[0] << " B, L1 " << k.scratch_bytes[1]
     << " B\n";
  os << "  buffers:\n";
  for (const auto& b : k.buffers) {
    os << "    " << b.name << " : " << b.type << " -> " << to_string(b.space);
    if (b.space == memory_space_kind::scratch_level0 ||
        b.space == memory_space_kind::scratch_level1)
      os << " (" << b.bytes << " B at offset " << b.offset << ")";
    else if (b.space == memory_space_kind::private_memory)
      os << " (" << b.bytes << " B per logical thread)";
    if (!b.role.empty()) os << "  [" << b.role << "]";
    os << "\n";
  }
  os << "  phases: " << k.phases << ", barriers: " << k.barriers.size() << "\n";
  for (const auto& b : k.barriers) {
    os << "    barrier after phase " << b.after_phase << " (fence: " << b.fence << ")";
    if (b.in_loop) os << " [per loop iteration]";
    if (!b.hazard.empty()) os << " -- " << b.hazard;
    os << "\n";
  }
  for (const auto& n : k.notes) os << "  note: " << n << "\n";
  return os.str();
}

/// A whole program: the kernels an expression or launch lowers to, in order.
struct program_plan {
  std::vector<kernel_plan> kernels;
};

inline std::string to_string(const program_plan& p) {
  std::string s =
      std::to_string(p.kernels.size()) + (p.kernels.size() == 1 ? " kernel\n" : " kernels\n");
  for (const auto& k : p.kernels) s += to_string(k);
  return s;
}

}  // namespace tessera::codegen
