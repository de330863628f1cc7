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
/// matmul inner dimensions, elementwise extents. The message names the function and the sizes.
class shape_error : public error {
 public:
  using error::error;
};

/// A launch needs more than the backend offers: tile_static bytes above the largest scratch
/// level, or a tile with more logical threads than one team can hold.
class resource_error : public error {
 public:
  using error::error;
};

/// Where a checked-mode finding happened: which tile_static buffer and element, in which tile
/// and phase (phase k is the code between barrier k and barrier k+1 of the kernel body).
struct access_site {
  std::string buffer;                 ///< buffer name, e.g. "tile_static#0 float[2][2]"
  std::vector<std::int64_t> element;  ///< element coordinates inside the buffer
  std::vector<std::int64_t> tile;     ///< tile coordinates (tiled_index::tile)
  int phase = 0;                      ///< barrier interval, counted from 0 per tile
};

/// Checked mode: two logical threads of one tile touched the same tile_static element in the
/// same phase and at least one of them wrote it (read/write or write/write conflict).
class race_error : public error {
 public:
  /// \param what [in] full message; \param site [in] buffer, element, tile, phase;
  /// \param first, second [in] local indices of the two logical threads ({} = every thread,
  ///        i.e. code outside for_each); \param kind [in] "read/write" or "write/write".
  race_error(const std::string& what, access_site site, std::vector<std::int64_t> first,
             std::vector<std::int64_t> second, std::string kind)
      : error(what),
        site(std::move(site)),
        first_thread(std::move(first)),
        second_thread(std::move(second)),
        kind(std::move(kind)) {}
  access_site site;
  std::vector<std::int64_t> first_thread;   ///< local index of the earlier access
  std::vector<std::int64_t> second_thread;  ///< local index of the conflicting access
  std::string kind;                         ///< "read/write" or "write/write"
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

/// Checked mode: an index outside a tile_static buffer's extent.
class bounds_error : public error {
 public:
  bounds_error(const std::string& what, access_site site) : error(what), site(std::move(site)) {}
  access_site site;
};

}  // namespace tessera
