/// \file passes/tile_kernel.hpp
/// \brief The plan of a Tier 0 tile kernel (or Tier 2 program), from what the planning pass
///        recorded while running the body on the host: its tile_static and tile_local buffers
///        and its barriers. Goes through the same scratch placement as expression kernels and
///        the target's mapping.
#pragma once

#include <tessera/codegen/passes/scratch.hpp>
#include <tessera/codegen/planner_linkage.hpp>

namespace tessera::codegen {

/// What a tile kernel's body declares, in order (recorded by the planning pass).
struct tile_body {
  struct buffer {
    std::string name, type;
    std::size_t bytes = 0;  ///< per tile (tile_static) or per logical thread (tile_local)
    std::size_t align = 1;
    bool local = false;  ///< tile_local (else tile_static)
  };
  std::vector<buffer> buffers;  ///< in allocation order
  std::vector<barrier_plan> barriers;
  int phases = 1;
};

/// \param name [in] e.g. "parallel_for_each<16,16>"; \param tile [in] tile sizes;
/// \param tiles [in] tiles per dimension
/// \throws resource_error scratch above level 1; tile_local storage above the target's limit
#ifdef TESSERA_PLANNER_DECLARATIONS_ONLY
kernel_plan plan_tile_kernel(const std::string& name, const std::vector<std::int64_t>& tile,
                             const std::vector<std::int64_t>& tiles, const tile_body& body,
                             const target& t);
#else
TESSERA_PLANNER_LINKAGE kernel_plan plan_tile_kernel(const std::string& name,
                                                     const std::vector<std::int64_t>& tile,
                                                     const std::vector<std::int64_t>& tiles,
                                                     const tile_body& body, const target& t) {
  kernel_plan p;
  p.name = name;
  p.label = "tessera::" + name;
  p.family = kernel_family::tile_kernel;
  p.backend = t.backend;
  p.tile = tile;
  p.tiles = tiles;
  p.league_size = 1;
  for (auto c : tiles) p.league_size *= c;
  p.logical_threads = 1;
  for (auto c : tile) p.logical_threads *= int(c);
  p.team_size = t.thread_per_logical ? p.logical_threads : 1;
  p.vector_length = 1;
  p.mapping = t.thread_per_logical
                  ? "one team member per logical thread (TeamThreadRange over the tile)"
                  : "one team member per tile; each phase a loop nest over the tile in program "
                    "order, its innermost loop vectorized";
  // tile_static buffers go to team scratch in allocation order; so do tile_local arrays on
  // targets where one member runs the tile (L copies each), interleaved as the kernel
  // allocates them; on GPUs tile_local is private (a register per logical thread).
  kernel_body kb;
  std::size_t local_bytes = 0;
  for (const auto& b : body.buffers) {
    if (!b.local) {
      kb.scratch.push_back({b.name, b.type, b.bytes, b.align, "tile_static"});
    } else if (t.tile_local_per_thread) {
      kb.private_buffers.push_back(
          {b.name, b.type, memory_space_kind::private_memory, b.bytes, 0, "tile_local"});
      local_bytes += b.bytes;
    } else {
      kb.scratch.push_back({b.name, b.type + "[" + std::to_string(p.logical_threads) + "]",
                            b.bytes * std::size_t(p.logical_threads), b.align,
                            "tile_local: one per logical thread"});
      local_bytes += b.bytes;
    }
  }
  const std::string tile_text = "<" + list_dims(tile) + ">";
  if (local_bytes > t.tile_local_max)
    throw resource_error(name + ": tile " + tile_text + " declares " + std::to_string(local_bytes) +
                         " bytes of tile_local storage per logical thread; at most " +
                         std::to_string(t.tile_local_max) + " on every backend (the " + t.backend +
                         " backend included: tile_local "
                         "is registers on GPUs" +
                         (t.tile_local_per_thread
                              ? ")"
                              : ", and here " + std::to_string(local_bytes * p.logical_threads) +
                                    " B of team scratch per tile)") +
                         "; keep large per-thread data in tile_static or global memory");
  place_scratch(p, kb, t, name + ": tile " + tile_text);
  p.tile_local_bytes = local_bytes;
  p.barriers = body.barriers;
  if (!t.thread_per_logical)
    for (auto& b : p.barriers) {
      if (!b.hazard.empty()) b.hazard += ' ';
      b.hazard.append("(one member per team: program order)");
    }
  p.phases = body.phases;
  p.notes.push_back("global memory: the arrays and views the kernel captures");
  return p;
}
#endif

}  // namespace tessera::codegen
