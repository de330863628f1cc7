/// \file checked.hpp
/// \brief Host contexts for tile kernels: the planning pass (records tile_static/tile_local
///        buffers and barriers without running any for_each body) and checked mode (runs every
///        logical thread on the host and finds races on tile_static memory).
///
/// Race rule (the one C++ AMP and OpenCL state for local memory): inside one phase — the code
/// between two barriers of a tile — two different logical threads must not access the same
/// tile_static element unless both only read it. Code outside for_each counts as every logical
/// thread of the tile. A read of an element that no logical thread of this tile has written is
/// reported too (tile_static memory starts undefined). Races are reported before uninitialized
/// reads found in the same phase, because the race is the root cause.
#pragma once

#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/host_context.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::backends::impl {

using tessera::impl::buffer_desc;
using tessera::impl::fence_kind;

/// Records what a kernel body allocates and where it waits, without running for_each bodies.
class planning_context final : public tessera::impl::host_context {
 public:
  struct barrier_record {
    int after_phase;
    fence_kind fence;
    std::string reason;
  };
  bool sizing() const override { return true; }
  void* allocate_static(const buffer_desc& d, int& id) override {
    id = static_cast<int>(statics.size());
    statics.push_back(d);
    return nullptr;
  }
  void declare_local(const buffer_desc& d) override { locals.push_back(d); }
  void access(int, index_type, bool) override {}
  void out_of_bounds(int, const index_type*, int) override {}
  void barrier(fence_kind f) override {
    barriers.push_back({phase, f, reason});
    reason.clear();
    ++phase;
  }
  void barrier_reason(const std::string& r) override { reason = r; }
  void set_thread(int) override {}

  std::vector<buffer_desc> statics;
  std::vector<buffer_desc> locals;
  std::vector<barrier_record> barriers;
  int phase = 0;
  std::string reason;
};

/// Runs tiles on the host, one logical thread at a time, checking every tile_static access.
class checked_context final : public tessera::impl::host_context {
 public:
  /// \param tile_dims [in] logical threads per tile dimension (rank entries)
  explicit checked_context(std::vector<index_type> tile_dims) : dims_(std::move(tile_dims)) {
    threads_ = 1;
    for (auto d : dims_) threads_ *= static_cast<int>(d);
  }

  /// Starts a tile: fresh (undefined) tile_static memory, phase 0.
  void begin_tile(std::vector<index_type> tile) {
    tile_ = std::move(tile);
    bufs_.clear();
    phase_ = 0;
    ++stamp_;
    thread_ = -1;
    pending_ = {};
  }
  /// Ends a tile: reports an uninitialized read found in the last phase.
  void end_tile() { flush_pending(); }

  bool sizing() const override { return false; }
  void* allocate_static(const buffer_desc& d, int& id) override {
    id = static_cast<int>(bufs_.size());
    bufs_.push_back(buffer{d, {}, {}});
    buffer& b = bufs_.back();
    const std::size_t n = d.bytes / d.elem_bytes;
    // Undefined contents: a byte pattern that reads as NaN for float/double.
    b.storage.assign(d.bytes / sizeof(std::uint64_t) + 1, ~std::uint64_t{0});
    b.state.assign(n, elem_state{});
    return b.storage.data();
  }
  void declare_local(const buffer_desc&) override {}
  void set_thread(int linear) override { thread_ = (threads_ == 1 && linear < 0) ? 0 : linear; }
  void barrier(fence_kind) override {
    flush_pending();
    ++phase_;
    ++stamp_;
  }
  void out_of_bounds(int id, const index_type* idx, int rank) override {
    const buffer& b = bufs_[id];
    std::vector<index_type> el(idx, idx + rank);
    std::string dims;
    for (int d = 0; d < b.desc.rank; ++d) {
      if (d) dims += ',';
      dims += std::to_string(b.desc.dims[d]);
    }
    throw bounds_error("parallel_for_each(checked): index " + coords(el) +
                           " is outside tile_static '" + b.desc.name + "' (" + b.desc.type +
                           ", extent (" + dims + ")), accessed by " + thread_name(thread_) +
                           " in tile " + coords(tile_) + ", phase " + std::to_string(phase_),
                       site(b, el));
  }
  void access(int id, index_type linear, bool write) override {
    buffer& b = bufs_[id];
    elem_state& e = b.state[static_cast<std::size_t>(linear)];
    if (e.stamp != stamp_) {
      e.stamp = stamp_;
      e.writer = e.reader = e.other_reader = none;
    }
    const int t = thread_;
    const bool uniform = (t == -1) && threads_ > 1;
    auto other = [&](int who) {
      return who != none && (who != t || uniform);
    };
    if (write) {
      if (uniform) race(b, linear, 0, 1, "write/write", true, true);
      if (other(e.writer)) race(b, linear, e.writer, t, "write/write", true, true);
      if (other(e.reader)) race(b, linear, e.reader, t, "read/write", false, true);
      if (e.other_reader != none) race(b, linear, e.other_reader, t, "read/write", false, true);
      e.writer = t;
      e.written = true;
    } else {
      if (other(e.writer)) race(b, linear, e.writer, t, "read/write", true, false);
      if (!e.written && !pending_.active) {
        pending_.active = true;
        pending_.buf = id;
        pending_.linear = linear;
        pending_.thread = t;
      }
      if (e.reader == none)
        e.reader = t;
      else if (e.reader != t && e.other_reader == none)
        e.other_reader = t;
    }
  }

 private:
  static constexpr int none = -2;
  struct elem_state {
    std::uint64_t stamp = 0;
    int writer = none, reader = none, other_reader = none;
    bool written = false;
  };
  struct buffer {
    buffer_desc desc;
    std::vector<std::uint64_t> storage;
    std::vector<elem_state> state;
  };
  struct pending_read {
    bool active = false;
    int buf = 0;
    index_type linear = 0;
    int thread = 0;
  };

  std::vector<index_type> unflatten(const buffer& b, index_type linear) const {
    std::vector<index_type> el(static_cast<std::size_t>(b.desc.rank));
    for (int d = b.desc.rank - 1; d >= 0; --d) {
      el[d] = linear % b.desc.dims[d];
      linear /= b.desc.dims[d];
    }
    return el;
  }
  std::vector<index_type> thread_index(int t) const {
    if (t < 0) return {};
    std::vector<index_type> l(dims_.size());
    for (int d = static_cast<int>(dims_.size()) - 1; d >= 0; --d) {
      l[d] = t % dims_[d];
      t /= static_cast<int>(dims_[d]);
    }
    return l;
  }
  static std::string coords(const std::vector<index_type>& v) {
    std::string s = "(";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(v[i]);
    }
    return s + ")";
  }
  std::string thread_name(int t) const {
    if (t < 0) return "every logical thread (code outside for_each)";
    return "logical thread " + coords(thread_index(t));
  }
  access_site site(const buffer& b, std::vector<index_type> el) const {
    return access_site{b.desc.name, std::move(el), tile_, phase_};
  }
  [[noreturn]] void race(const buffer& b, index_type linear, int first, int second,
                         const char* kind, bool first_writes, bool second_writes) {
    const auto el = unflatten(b, linear);
    std::string msg = "parallel_for_each(checked): " + std::string(kind) +
                      " race on tile_static '" + b.desc.name + "' (" + b.desc.type + ") element " +
                      coords(el) + " in tile " + coords(tile_) + ", phase " +
                      std::to_string(phase_) + ": " + thread_name(first) +
                      (first_writes ? " wrote" : " read") + " it and " + thread_name(second) +
                      (second_writes ? " wrote" : " read") + " it with no barrier between them";
    throw race_error(msg, site(b, el), thread_index(first), thread_index(second), kind);
  }
  void flush_pending() {
    if (!pending_.active) return;
    const buffer& b = bufs_[pending_.buf];
    const auto el = unflatten(b, pending_.linear);
    pending_.active = false;
    throw uninitialized_read_error("parallel_for_each(checked): " + thread_name(pending_.thread) +
                                       " read tile_static '" + b.desc.name + "' (" + b.desc.type +
                                       ") element " + coords(el) + " in tile " + coords(tile_) +
                                       ", phase " + std::to_string(phase_) +
                                       ", but no logical thread of this tile had written it",
                                   site(b, el), thread_index(pending_.thread));
  }

  std::vector<index_type> dims_;
  int threads_ = 1;
  std::vector<index_type> tile_;
  std::vector<buffer> bufs_;
  int phase_ = 0;
  std::uint64_t stamp_ = 0;
  int thread_ = -1;
  pending_read pending_;
};

}  // namespace tessera::backends::impl
