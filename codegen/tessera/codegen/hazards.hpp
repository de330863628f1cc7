/// \file hazards.hpp
/// \brief The one rule for barrier placement, shared by the static pass (passes/barriers.hpp)
///        and Tier 2 tile programs (dsl/tile_program.hpp), which apply it while a tile runs.
///
/// Scratch buffers are bits of a 32-bit set. Since the last barrier, the tile has read the
/// buffers in `read` and written those in `written`; a phase that reads `r` and writes `w` needs
/// a barrier first on read-after-write (r & written), write-after-read (w & read) or
/// write-after-write (w & written). Owner-consistent accesses are simply left out of r and w.
#pragma once

#include <tessera/dsl/config.hpp>

#include <cstdint>

namespace tessera::codegen {

enum class hazard : int { none = 0, read_after_write, write_after_read, write_after_write };

inline const char* to_string(hazard h) {
  switch (h) {
    case hazard::none:
      return "none";
    case hazard::read_after_write:
      return "read-after-write";
    case hazard::write_after_read:
      return "write-after-read";
    case hazard::write_after_write:
      return "write-after-write";
  }
  return "?";
}

struct hazard_tracker {
  std::uint32_t written = 0, read = 0;
  /// The hazard a phase reading `r` and writing `w` has with what ran since the last barrier.
  TESSERA_INLINE hazard check(std::uint32_t r, std::uint32_t w) const {
    if (r & written) return hazard::read_after_write;
    if (w & read) return hazard::write_after_read;
    if (w & written) return hazard::write_after_write;
    return hazard::none;
  }
  /// Which buffers caused `check`'s hazard (bit set).
  TESSERA_INLINE std::uint32_t culprits(std::uint32_t r, std::uint32_t w) const {
    if (r & written) return r & written;
    if (w & read) return w & read;
    return w & written;
  }
  TESSERA_INLINE void apply(std::uint32_t r, std::uint32_t w) {
    read |= r;
    written |= w;
  }
  TESSERA_INLINE void clear() { read = written = 0; }
};

}  // namespace tessera::codegen
