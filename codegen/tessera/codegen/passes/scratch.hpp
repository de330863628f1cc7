/// \file passes/scratch.hpp
/// \brief Pass 4: scratch placement — offsets (64-byte aligned) and level per kernel: level 0
///        when the team's total fits the backend's level-0 limit, else level 1.
#pragma once

#include <tessera/codegen/passes/phases.hpp>
#include <tessera/dsl/errors.hpp>

namespace tessera::codegen {

inline void place_scratch(kernel_plan& k, const kernel_body& b, const target& t) {
  std::size_t off = 0;
  for (const auto& s : b.scratch) {
    off = (off + 63) / 64 * 64;
    k.buffers.push_back({s.name, s.type, memory_space_kind::scratch_level0, s.bytes, off, s.role});
    off += s.bytes;
  }
  const int level = off > t.scratch_max[0] ? 1 : 0;
  if (off > t.scratch_max[1])
    throw resource_error("tessera code generator: kernel " + k.name + " needs " +
                         std::to_string(off) + " bytes of scratch per team; the " + t.backend +
                         " backend allows " + std::to_string(t.scratch_max[1]) +
                         "; choose a smaller .tile<...>()");
  for (auto& buf : k.buffers)
    if (buf.space == memory_space_kind::scratch_level0 && level == 1)
      buf.space = memory_space_kind::scratch_level1;
  k.scratch_bytes[level] = off;
  for (const auto& p : b.private_buffers) k.buffers.push_back(p);
}

}  // namespace tessera::codegen
