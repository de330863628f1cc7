/// \file host_context.hpp
/// \brief The hook through which a tile_group runs on the host instead of on a Kokkos team:
///        the planning ("sizing") pass and checked mode. Host-only; never used in device code.
#pragma once

#include <tessera/dsl/config.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace tessera::impl {

/// The kind of fence a tile barrier carries (C++ AMP's four wait variants).
enum class fence_kind { all_memory, global_memory, tile_static_memory };

inline const char* to_string(fence_kind f) {
  switch (f) {
    case fence_kind::all_memory:
      return "all memory";
    case fence_kind::global_memory:
      return "global memory";
    case fence_kind::tile_static_memory:
      return "tile_static memory";
  }
  return "?";
}

/// Shape of a tile_static / tile_local buffer as seen by the host passes.
struct buffer_desc {
  std::string name;  ///< user-given or "tile_static#k" / "tile_local#k"
  std::string type;  ///< e.g. "float[16][16]"
  int rank = 0;      ///< 0 for a scalar
  index_type dims[3] = {1, 1, 1};
  std::size_t elem_bytes = 0;
  std::size_t bytes = 0;  ///< per tile (tile_static) or per logical thread (tile_local)
  std::size_t align = 0;
};

/// Implemented by the planner (sizing pass) and by checked mode.
class host_context {
 public:
  virtual ~host_context() = default;
  /// True in the planning pass: for_each bodies are skipped, only allocations and barriers
  /// are recorded.
  virtual bool sizing() const = 0;
  /// A tile_static allocation; returns host storage (checked) or nullptr (sizing) and the
  /// buffer id used by access().
  virtual void* allocate_static(const buffer_desc& d, int& id) = 0;
  /// A tile_local declaration (recorded for the plan).
  virtual void declare_local(const buffer_desc& d) = 0;
  /// Called for every tile_static element access in checked mode.
  virtual void access(int id, index_type linear, bool write) = 0;
  /// An index outside buffer `id`'s extent: throws bounds_error.
  virtual void out_of_bounds(int id, const index_type* idx, int rank) = 0;
  virtual void barrier(fence_kind f) = 0;
  /// Why the next barrier is there (Tier 2 programs say which hazard it resolves).
  virtual void barrier_reason(const std::string&) {}
  /// The logical thread now running (row-major local rank), or -1 for code outside for_each.
  virtual void set_thread(int linear) = 0;
};

template <class E>
std::string scalar_type_name() {
  if constexpr (std::is_same_v<E, float>)
    return "float";
  else if constexpr (std::is_same_v<E, double>)
    return "double";
  else if constexpr (std::is_same_v<E, int>)
    return "int";
  else if constexpr (std::is_same_v<E, unsigned>)
    return "unsigned";
  else if constexpr (std::is_same_v<E, long>)
    return "long";
  else if constexpr (std::is_same_v<E, long long>)
    return "long long";
  else if constexpr (std::is_same_v<E, unsigned long>)
    return "unsigned long";
  else if constexpr (std::is_same_v<E, char>)
    return "char";
  else if constexpr (std::is_same_v<E, bool>)
    return "bool";
  else
    return "T(" + std::to_string(sizeof(E)) + " bytes)";
}

template <class U>
buffer_desc describe_buffer(const char* name, const char* prefix, int seq) {
  using E = std::remove_all_extents_t<U>;
  buffer_desc d;
  d.name = name ? std::string(name) : std::string(prefix) + "#" + std::to_string(seq);
  d.rank = static_cast<int>(std::rank_v<U>);
  d.type = scalar_type_name<E>();
  if constexpr (std::rank_v<U> >= 1) d.dims[0] = std::extent_v<U, 0>;
  if constexpr (std::rank_v<U> >= 2) d.dims[1] = std::extent_v<U, 1>;
  if constexpr (std::rank_v<U> >= 3) d.dims[2] = std::extent_v<U, 2>;
  for (int k = 0; k < d.rank; ++k) {
    d.type += '[';
    d.type += std::to_string(d.dims[k]);
    d.type += ']';
  }
  d.elem_bytes = sizeof(E);
  d.bytes = sizeof(U);
  d.align = alignof(E);
  return d;
}

}  // namespace tessera::impl
