/// \file errors.hpp
/// \brief Exceptions thrown by Tessera. All are thrown on the host before any kernel runs;
///        checked mode throws while it simulates tiles on the host.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

/// Base class of every Tessera error.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Mismatched or unsupported shapes: an uneven tiled extent launched without pad()/truncate(),
/// matmul inner dimensions, elementwise extents, negative extents. The message names the
/// function and the sizes.
class shape_error : public error {
 public:
  using error::error;
};

/// A launch or allocation needs more than the backend offers: tile_static bytes above the
/// largest scratch level, a tile with more logical threads than one team can hold, tile_local
/// storage above the backend's limit, an allocation whose size overflows.
class resource_error : public error {
 public:
  using error::error;
};

/// A kernel uses the tile vocabulary where it cannot work: a barrier or a tile_static
/// allocation inside for_each (a divergent barrier), for_each inside for_each, a launch while
/// Kokkos is not initialized. Found before any kernel runs.
class usage_error : public error {
 public:
  using error::error;
};

/// A kernel's launcher found that the plan it was given is not the kernel it runs (team size,
/// barriers, scratch buffers or tile differ): an internal inconsistency between the code
/// generator and a backend, reported before the launch. The message names the kernel, the plan
/// and what differs.
class plan_error : public error {
 public:
  using error::error;
};

/// Where a checked-mode finding happened: which buffer and element, in which tile and phase
/// (phase k is the code between barrier k and barrier k+1 of the kernel body).
struct access_site {
  std::string buffer;                 ///< e.g. "tile_static 'v' float[2][2]", "array 'A' float"
  std::string memory;                 ///< "tile_static" or "global"
  std::vector<std::int64_t> element;  ///< element coordinates inside the buffer
  std::vector<std::int64_t> tile;     ///< tile coordinates (tiled_index::tile)
  int phase = 0;                      ///< barrier interval, counted from 0 per tile
};

/// Checked mode: two logical threads touched the same element with no barrier (or fence
/// covering that memory) between them, at least one of them writing it and not both
/// atomically — in one tile and phase (tile_static or global memory), or in two tiles of one
/// launch (global memory, which no barrier orders across tiles).
class race_error : public error {
 public:
  /// \param what [in] full message; \param site [in] buffer, element, tile, phase;
  /// \param first, second [in] local indices of the two logical threads ({} = every thread,
  ///        i.e. code outside for_each); \param kind [in] "read/write", "write/write",
  ///        "atomic/read" or "atomic/write"; \param first_tile [in] tile of the first access
  ///        (equal to site.tile unless the race is between tiles)
  race_error(const std::string& what, access_site site, std::vector<std::int64_t> first,
             std::vector<std::int64_t> second, std::string kind,
             std::vector<std::int64_t> first_tile = {})
      : error(what),
        site(std::move(site)),
        first_thread(std::move(first)),
        second_thread(std::move(second)),
        kind(std::move(kind)),
        first_tile(first_tile.empty() ? this->site.tile : std::move(first_tile)) {}
  access_site site;
  std::vector<std::int64_t> first_thread;   ///< local index of the earlier access
  std::vector<std::int64_t> second_thread;  ///< local index of the conflicting access
  std::string kind;                         ///< "read/write", "write/write", ...
  std::vector<std::int64_t> first_tile;     ///< tile of the earlier access
};

/// Checked mode: a tile_static element was read before any logical thread wrote it in this
/// tile (tile_static memory starts undefined, as in C++ AMP).
class uninitialized_read_error : public error {
 public:
  uninitialized_read_error(const std::string& what, access_site site,
                           std::vector<std::int64_t> thread)
      : error(what), site(std::move(site)), thread(std::move(thread)) {}
  access_site site;
  std::vector<std::int64_t> thread;  ///< local index of the reading logical thread
};

/// Checked mode: an index outside a tile_static buffer's or a global array's extent.
class bounds_error : public error {
 public:
  bounds_error(const std::string& what, access_site site) : error(what), site(std::move(site)) {}
  access_site site;
};

/// One checked-mode finding, as collected by `checked_collect` (see tile_launch.hpp).
struct finding {
  std::string kind;     ///< "race", "uninitialized read", "bounds"
  std::string message;  ///< the message the matching exception would carry
  access_site site;
  std::vector<std::int64_t> first_thread, second_thread;  ///< races: the two logical threads
};

}  // namespace tessera
