/// \file plan_recorder.hpp
/// \brief The planning pass of a tile kernel: a host context that records what the body
///        allocates (tile_static, tile_local) and where it waits (barriers, with the hazard a
///        Tier 2 program gives for each), without running any for_each body. Every Tier 0 launch
///        runs it once on the host; the code generator turns the record into the kernel plan
///        (codegen/passes/tile_kernel.hpp).
#pragma once

#include <tessera/codegen/passes/tile_kernel.hpp>
#include <tessera/dsl/host_context.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::backends::impl {

using tessera::impl::access_kind;
using tessera::impl::buffer_desc;
using tessera::impl::fence_kind;

inline std::string buffer_name(const buffer_desc& d, const char* prefix, int seq) {
  return d.name ? std::string(d.name) : std::string(prefix) + "#" + std::to_string(seq);
}

/// Records what a kernel body allocates and where it waits, without running for_each bodies.
/// Reused across launches (clear()), so the per-launch planning pass allocates nothing.
class planning_context final : public tessera::impl::host_context {
 public:
  struct barrier_record {
    int after_phase;
    fence_kind fence;
    const char* hazard;  ///< nullptr: a barrier the kernel's author wrote
    const char* buffer;
    const char* before;
  };
  void clear() {
    statics.clear();
    locals.clear();
    order.clear();
    barriers.clear();
    phase = 0;
    next = {};
  }
  bool sizing() const override { return true; }
  /// Zero-filled host storage: tile-uniform code may read tile_static values (a loop bound one
  /// logical thread stored before a barrier); in the planning pass they read as zeros, since no
  /// for_each body runs. Blocks are kept for the next launch.
  void* allocate_static(const buffer_desc& d, int& id) override {
    id = static_cast<int>(statics.size());
    statics.push_back(d);
    order.push_back(false);
    if (arena_.size() <= std::size_t(id)) arena_.emplace_back();
    auto& block = arena_[std::size_t(id)];
    const std::size_t lines = d.bytes / sizeof(scratch_line) + 1;
    if (block.size() < lines) block.resize(lines);
    std::memset(static_cast<void*>(block.data()), 0, d.bytes);
    return block.data();
  }
  void* allocate_local(const buffer_desc& d, int& id) override {
    id = static_cast<int>(locals.size());
    locals.push_back(d);
    order.push_back(true);
    return nullptr;
  }
  void access(int, index_type, access_kind) override {}
  void out_of_bounds(int, const index_type*, int) override {}
  void barrier(fence_kind f) override {
    barriers.push_back({phase, f, next.hazard, next.buffer, next.before});
    next = {};
    ++phase;
  }
  void fence(fence_kind) override {}
  void barrier_reason(const char* hazard, const char* buffer, const char* before) override {
    next = {0, fence_kind::all_memory, hazard, buffer, before};
  }
  void phase_scope(bool) override {}
  void set_thread(int) override {}

  /// What the body declared, as the code generator's tile_body.
  codegen::tile_body body() const {
    codegen::tile_body b;
    std::size_t s = 0, l = 0;
    for (const bool local : order) {
      const buffer_desc& d = local ? locals[l] : statics[s];
      b.buffers.push_back({buffer_name(d, local ? "tile_local" : "tile_static", int(local ? l : s)),
                           d.type_name(), d.bytes, d.align, local});
      ++(local ? l : s);
    }
    for (const auto& r : barriers)
      b.barriers.push_back(
          {r.after_phase, tessera::impl::to_string(r.fence),
           r.hazard ? std::string(r.hazard) + " on " + r.buffer + " before " + r.before : "",
           false});
    b.phases = phase + 1;
    return b;
  }
  /// A compact signature of what was recorded (plan-cache key part).
  void signature(std::vector<std::int64_t>& key) const {
    std::size_t s = 0, l = 0;
    for (const bool local : order) {
      const buffer_desc& d = local ? locals[l++] : statics[s++];
      key.push_back(local ? -std::int64_t(d.bytes) - 1 : std::int64_t(d.bytes));
      key.push_back(std::int64_t(d.align));
    }
    key.push_back(-1);
    for (const auto& b : barriers) {
      key.push_back(std::int64_t(b.fence));
      key.push_back(std::int64_t(reinterpret_cast<std::uintptr_t>(b.hazard)));
      key.push_back(std::int64_t(reinterpret_cast<std::uintptr_t>(b.buffer)));
      key.push_back(std::int64_t(reinterpret_cast<std::uintptr_t>(b.before)));
    }
  }

  std::vector<buffer_desc> statics;
  std::vector<buffer_desc> locals;
  std::vector<bool> order;  ///< allocation order: false = tile_static, true = tile_local
  std::vector<barrier_record> barriers;
  int phase = 0;
  barrier_record next{};  ///< the reason given for the next barrier, if any

 private:
  /// 64-byte aligned storage, as team scratch is (std::max_align_t here crashes nvcc 13's
  /// front end in its destructor call).
  struct alignas(64) scratch_line {
    unsigned char bytes[64];
  };
  std::vector<std::vector<scratch_line>> arena_;  ///< tile_static storage, one block each
};

}  // namespace tessera::backends::impl
