/// \file hazards.hpp
/// \brief The one rule for barrier placement, shared by Tier 2 tile programs (tile_program.hpp),
///        which apply it while a tile runs, and the code generator's static barrier pass
///        (codegen/passes/barriers.hpp).
///
/// Scratch buffers are bits of a 32-bit set. Since the last barrier, the tile has read the
/// buffers in `read` and written those in `written`; a phase that reads `r` and writes `w` needs
/// a barrier first on read-after-write (r & written), write-after-read (w & read) or
/// write-after-write (w & written). Owner-consistent accesses are simply left out of r and w.
#pragma once

#include <tessera/dsl/config.hpp>

#include <cstdint>

namespace tessera::impl {

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
  /// Buffers read / written since the last barrier by any logical thread (`read`, `written`),
  /// and the subset accessed other than owner-consistently (`shared_read`, `shared_written`).
  std::uint32_t written = 0, read = 0, shared_written = 0, shared_read = 0;
  /// The hazard of a phase that reads `r` and writes `w` as shared accesses, and reads `orr` and
  /// writes `ow` owner-consistently (each element by its owning logical thread only). Shared
  /// accesses conflict with every earlier access; owner-consistent ones only with shared ones.
  TESSERA_INLINE hazard check(std::uint32_t r, std::uint32_t w, std::uint32_t orr = 0,
                              std::uint32_t ow = 0) const {
    if ((r & written) || (orr & shared_written)) return hazard::read_after_write;
    if ((w & read) || (ow & shared_read)) return hazard::write_after_read;
    if ((w & written) || (ow & shared_written)) return hazard::write_after_write;
    return hazard::none;
  }
  /// Which buffers cause `check`'s hazard (bit set).
  TESSERA_INLINE std::uint32_t culprits(std::uint32_t r, std::uint32_t w, std::uint32_t orr = 0,
                                        std::uint32_t ow = 0) const {
    const std::uint32_t raw = (r & written) | (orr & shared_written);
    if (raw) return raw;
    const std::uint32_t war = (w & read) | (ow & shared_read);
    if (war) return war;
    return (w & written) | (ow & shared_written);
  }
  TESSERA_INLINE void apply(std::uint32_t r, std::uint32_t w, std::uint32_t orr = 0,
                            std::uint32_t ow = 0) {
    read |= r | orr;
    written |= w | ow;
    shared_read |= r;
    shared_written |= w;
  }
  TESSERA_INLINE void clear() { read = written = shared_read = shared_written = 0; }
};

}  // namespace tessera::impl
