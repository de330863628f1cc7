/// \file passes/scratch.hpp
/// \brief Pass 4: scratch placement — offsets and level per kernel: buffers in declaration
///        order, each aligned as tile_static buffers are on the device (impl::scratch_offset:
///        max(64, alignof(element)) bytes); level 0 when the team's total fits the backend's
///        level-0 limit, else level 1; a resource_error above level 1's limit.
#pragma once

#include <tessera/codegen/passes/phases.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/tile_mapping.hpp>

namespace tessera::codegen {

/// \param who [in] names the kernel in the error (e.g. "parallel_for_each: tile <16,16>")
/// \throws resource_error when the total exceeds scratch level 1 of the target
inline void place_scratch(kernel_plan& k, const kernel_body& b, const target& t,
                          const std::string& who) {
  std::size_t end = 0;
  const std::size_t first = k.buffers.size();
  for (const auto& s : b.scratch) {
    const std::size_t off = tessera::impl::scratch_offset(end, s.align);
    k.buffers.push_back({s.name, s.type, memory_space_kind::scratch_level0, s.bytes, off, s.role});
    end = off + s.bytes;
  }
  bool has_local = false;
  for (const auto& s : b.scratch) has_local |= s.role.rfind("tile_local", 0) == 0;
  // Kokkos is asked for scratch_align_slack more bytes (the kernel aligns its base).
  const std::size_t requested = end ? end + scratch_align_slack : 0;
  if (requested > t.scratch_max[1])
    throw resource_error(who + " needs " + std::to_string(end) +
                         " bytes of tile_static memory per tile (Kokkos team scratch" +
                         (has_local ? ", including every logical thread's tile_local copies" : "") +
                         "); the " + t.backend + " backend allows at most " +
                         std::to_string(t.scratch_max[0]) + " (scratch level 0) or " +
                         std::to_string(t.scratch_max[1]) + " (level 1), less " +
                         std::to_string(scratch_align_slack) + " for alignment; use smaller tiles");
  const int level = requested > t.scratch_max[0] ? 1 : 0;
  if (level == 1)
    for (std::size_t i = first; i < k.buffers.size(); ++i)
      k.buffers[i].space = memory_space_kind::scratch_level1;
  if (level == 1 && requested <= t.emulated_gpu_scratch_max0)
    k.notes.push_back("GPU emulation: " + std::to_string(requested) +
                      " B of scratch per team exceed the host's level 0 (" +
                      std::to_string(t.scratch_max[0]) + " B); a GPU offering " +
                      std::to_string(t.emulated_gpu_scratch_max0) + " B places them in level 0");
  k.scratch_level = level;
  k.scratch_bytes[0] = k.scratch_bytes[1] = 0;
  k.scratch_bytes[level] = end;
  for (const auto& p : b.private_buffers) k.buffers.push_back(p);
  for (const auto& p : b.global_buffers) k.buffers.push_back(p);
}

}  // namespace tessera::codegen
