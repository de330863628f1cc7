/// \file checked.hpp
/// \brief The checker of tile kernels (the planning pass is plan_recorder.hpp): a host context
///        that runs every logical thread on the host and checks every access — in two modes:
///        checked mode (every tile, effects kept, races reported) and the validation dry run
///        that every launch makes once per kernel type (one tile, writes discarded, misuse
///        reported).
///
/// Race rule (the one C++ AMP and OpenCL state): inside one barrier interval, two different
/// logical threads must not access the same element unless both only read it or both access
/// it atomically. An interval ends, for each kind of memory, at a barrier whose fence covers
/// that memory, or at a free-standing fence of that memory in tile-uniform code (a fence inside
/// for_each orders only its own thread's accesses). Code outside for_each counts as every
/// logical thread of the tile. Global memory (the arrays and array_views the kernel captures)
/// is also checked between tiles: no barrier orders two tiles, so an element one tile writes
/// must not be touched by another (atomics excepted). A read of a tile_static element that no
/// logical thread of this tile has written is reported too (tile_static memory starts
/// undefined); races are reported before uninitialized reads of the same phase.
///
/// Global accesses are seen through the kernel's own copies of Tessera buffers (the launch
/// copies the kernel while a capture observer is installed, host_context.hpp): each element a
/// logical thread touches gets a shadow cell for the duration of its for_each body; when the
/// body ends, a changed shadow is a write (copied to memory, except in the dry run), an atomic
/// operation on it an atomic access, anything else a read.
#pragma once

#include <tessera/backends/plan_recorder.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/host_context.hpp>

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::backends::impl {

/// Options of the checker.
struct checker_options {
  bool dry_run = false;  ///< one tile, writes to global memory discarded, misuse only
  bool collect = false;  ///< collect findings instead of throwing the first
  std::size_t max_findings = 100;
  std::vector<finding>* out = nullptr;
  const char* fn = "parallel_for_each(checked)";
};

/// Runs tiles on the host, one logical thread at a time, checking every access.
class checked_context final : public tessera::impl::host_context,
                              public tessera::impl::capture_observer {
 public:
  /// \param tile_dims [in] logical threads per tile dimension (rank entries)
  checked_context(std::vector<index_type> tile_dims, checker_options opt)
      : dims_(std::move(tile_dims)), opt_(opt) {
    threads_ = 1;
    for (auto d : dims_) threads_ *= static_cast<int>(d);
  }
  checked_context(const checked_context&) = delete;
  checked_context& operator=(const checked_context&) = delete;

  // --- capture: the kernel copy's Tessera buffers -------------------------------------------
  tessera::impl::global_hook* on_capture(const tessera::impl::captured_buffer& b) override {
    for (auto& g : globals_)
      if (g->same(b)) return g.get();
    globals_.push_back(std::make_unique<global_buffer>(*this, b, int(globals_.size())));
    return globals_.back().get();
  }

  /// Starts a tile: fresh (undefined) tile_static memory, phase 0.
  void begin_tile(std::vector<index_type> tile, index_type tile_id) {
    tile_ = std::move(tile);
    tile_id_ = tile_id;
    bufs_.clear();
    locals_.clear();
    phase_ = 0;
    ++ts_epoch_;
    ++gl_epoch_;
    thread_ = -1;
    in_phase_ = false;
    pending_ = {};
  }
  /// Ends a tile: reports an uninitialized read found in the last phase.
  void end_tile() { flush_pending(); }
  /// Ends the launch: copies host mirrors of device data back.
  void finish() {
    if (!opt_.dry_run)
      for (auto& g : globals_) g->write_back();
  }

  bool sizing() const override { return false; }
  void* allocate_static(const buffer_desc& d, int& id) override {
    if (in_phase_)
      usage("tile_static allocation '" + buffer_name(d, "tile_static", int(bufs_.size())) + "' (" +
            d.type_name() +
            ") inside for_each: tile_static memory is shared by the whole tile, so declare it "
            "in the kernel body, before the for_each that uses it");
    id = static_cast<int>(bufs_.size());
    bufs_.push_back(std::make_unique<buffer>());
    buffer& b = *bufs_.back();
    b.desc = d;
    b.name = buffer_name(d, "tile_static", id);
    const std::size_t n = d.bytes / d.elem_bytes;
    // Undefined contents: a byte pattern that reads as NaN for float/double.
    b.storage.assign(d.bytes / sizeof(std::uint64_t) + 1, ~std::uint64_t{0});
    b.state.assign(n, elem_state{});
    return b.storage.data();
  }
  void* allocate_local(const buffer_desc& d, int& id) override {
    if (in_phase_)
      usage("tile_local declaration '" + buffer_name(d, "tile_local", int(locals_.size())) +
            "' inside for_each: declare it in the kernel body, before the for_each that uses it");
    id = static_cast<int>(locals_.size());
    locals_.emplace_back(d.bytes * std::size_t(threads_) / sizeof(std::uint64_t) + 1);
    local_names_.resize(locals_.size());
    // Appended, not "'" + name: GCC 12 at -O3 reports a false -Wrestrict inside
    // operator+(const char*, std::string&&).
    std::string name(1, '\'');
    name += buffer_name(d, "tile_local", id);
    name += "' (";
    name += d.type_name();
    name += ")";
    local_names_.back() = std::move(name);
    return locals_.back().data();
  }
  void local_access(int id, int slot) override {
    if (slot == thread_ || (threads_ == 1 && slot == 0)) return;
    usage(thread_name(thread_) + " in tile " + coords(tile_) + ", phase " + std::to_string(phase_) +
          " used tile_local " + local_names_[std::size_t(id)] + " of " + thread_name(slot) +
          ": tile_local is private to its logical thread (a register on GPUs, where this "
          "reads the caller's own copy); share values through tile_static memory and a barrier");
  }
  void set_thread(int linear) override {
    commit_shadows();
    thread_ = (threads_ == 1 && linear < 0) ? 0 : linear;
  }
  void phase_scope(bool begin) override {
    if (begin && in_phase_)
      usage(
          "for_each inside for_each: a phase runs every logical thread once; nest loops "
          "inside one for_each body instead");
    in_phase_ = begin;
  }
  void collective(const char* what) override {
    if (in_phase_)
      usage(std::string(what) + " inside for_each, called by " + thread_name(thread_) +
            ": a tile collective is reached by every logical thread of the tile together (on "
            "a GPU a collective some threads skip deadlocks); call it from the kernel body, "
            "between two for_each phases");
  }
  void barrier(fence_kind f) override {
    if (in_phase_)
      usage(std::string("tile barrier (") + tessera::impl::to_string(f) +
            " fence) inside for_each, called by " + thread_name(thread_) +
            ": a barrier inside for_each is a divergent barrier (C++ AMP rejects it; on a GPU "
            "it deadlocks); end the for_each, call g.barrier.wait() between two for_each "
            "phases");
    flush_pending();
    ++phase_;
    advance(f);
  }
  void fence(fence_kind f) override {
    if (in_phase_) return;  // orders this thread's own accesses: no synchronization
    flush_pending();
    advance(f);
  }
  void out_of_bounds(int id, const index_type* idx, int rank) override {
    const buffer& b = *bufs_[id];
    std::vector<index_type> el(idx, idx + rank);
    std::string dims;
    for (int d = 0; d < b.desc.rank; ++d) {
      if (d) dims += ',';
      dims += std::to_string(b.desc.dims[d]);
    }
    report_bounds(opt_.fn + std::string(": index ") + coords(el) + " is outside tile_static '" +
                      b.name + "' (" + b.desc.type_name() + ", extent (" + dims +
                      ")), accessed by " + thread_name(thread_) + " in tile " + coords(tile_) +
                      ", phase " + std::to_string(phase_),
                  site(b.name, "tile_static", el));
    throw stop_tile{};
  }
  void access(int id, index_type linear, access_kind k) override {
    if (opt_.dry_run) return;
    buffer& b = *bufs_[id];
    elem_state& e = b.state[static_cast<std::size_t>(linear)];
    if (e.stamp != ts_epoch_) {
      e.stamp = ts_epoch_;
      e.clear();
    }
    auto describe = [&](index_type lin) {
      return site(b.name, "tile_static", unflatten(b.desc, lin));
    };
    check_access(e, k, linear, "tile_static '" + b.name + "' (" + b.desc.type_name() + ")",
                 describe);
    if (k == access_kind::read && !e.written && !pending_.active) {
      pending_.active = true;
      pending_.buf = id;
      pending_.linear = linear;
      pending_.thread = thread_;
    }
    if (k == access_kind::write) e.written = true;
  }
  void atomic_global(void* p) override { mark_atomic(p); }

  /// Thrown to abandon the rest of a tile after a finding in collect mode.
  struct stop_tile {};

 private:
  static constexpr int none = -2;
  /// Who touched an element in the current interval.
  struct elem_state {
    std::uint64_t stamp = 0;
    int writer = none, reader = none, other_reader = none, atomic = none;
    bool other_atomic = false;
    bool written = false;  // tile_static: written in this tile (any interval)
    void clear() {
      writer = reader = other_reader = atomic = none;
      other_atomic = false;
    }
  };
  /// One access of a global element by a tile in this launch.
  struct tile_access {
    index_type tile = -1;  ///< -1: none
    int thread = none;
    std::vector<index_type> coords;
  };
  /// Which tiles touched a global element in this launch: the first plain writer, and the
  /// first two distinct tiles that read it or updated it atomically.
  struct tile_state {
    tile_access w, r[2], a[2];
  };
  struct buffer {
    buffer_desc desc;
    std::string name;
    std::vector<std::uint64_t> storage;
    std::vector<elem_state> state;
  };

  /// A global buffer of the kernel: bounds checks, shadow cells, race state.
  class global_buffer final : public tessera::impl::global_hook {
   public:
    global_buffer(checked_context& ctx, const tessera::impl::captured_buffer& b, int id)
        : ctx_(ctx), b_(b), id_(id) {
      name_ = (b.label.empty() ? std::string("array") : b.label) + " #" + std::to_string(id);
      type_ = b.type_name();
      const std::size_t span = b.span_bytes();
      if (b.host_accessible) {
        host_ = static_cast<char*>(b.data);
      } else if (b.sync && !ctx.opt_.dry_run) {
        b.sync->to_host(!b.read_only);  // checked mode runs the kernel on the host copy
        host_ = static_cast<char*>(b.host_data ? b.host_data(b.self) : nullptr);
      }
      if (!host_ && span > 0) {
        mirror_.resize(span);
        if (ctx.opt_.dry_run) {
          for (std::size_t o = 0; o + b.elem_bytes <= span; o += b.elem_bytes)
            if (b.fill_one) b.fill_one(mirror_.data() + o);
        } else {
          Kokkos::fence();
          Kokkos::deep_copy(
              Kokkos::View<char*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(mirror_.data(), span),
              Kokkos::View<char*, memory_space, Kokkos::MemoryUnmanaged>(static_cast<char*>(b.data),
                                                                         span));
        }
        host_ = mirror_.data();
        mirrored_ = !ctx.opt_.dry_run;
      }
    }
    bool same(const tessera::impl::captured_buffer& b) const {
      if (b.data != b_.data || b.rank != b_.rank || b.elem_bytes != b_.elem_bytes) return false;
      for (int d = 0; d < b.rank; ++d)
        if (b.extent[d] != b_.extent[d] || b.stride[d] != b_.stride[d]) return false;
      return true;
    }
    void* element(const index_type* idx, int rank) override {
      index_type off = 0, linear = 0;
      for (int d = 0; d < rank; ++d) {
        if (idx[d] < 0 || idx[d] >= b_.extent[d]) {
          ctx_.global_out_of_bounds(*this, idx, rank);
          throw stop_tile{};
        }
        off += idx[d] * b_.stride[d];
        linear = linear * b_.extent[d] + idx[d];
      }
      return ctx_.shadow_of(*this, off, linear);
    }
    void write_back() {
      if (!mirrored_ || !written_ || b_.read_only) return;
      if (b_.sync) return;  // host copy of an array_view: marked current by to_host(write)
      Kokkos::deep_copy(Kokkos::View<char*, memory_space, Kokkos::MemoryUnmanaged>(
                            static_cast<char*>(b_.data), mirror_.size()),
                        Kokkos::View<char*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                            mirror_.data(), mirror_.size()));
    }
    std::vector<index_type> coords_of(index_type linear) const {
      std::vector<index_type> el(std::size_t(b_.rank));
      for (int d = b_.rank - 1; d >= 0; --d) {
        el[std::size_t(d)] = linear % b_.extent[d];
        linear /= b_.extent[d];
      }
      return el;
    }

    checked_context& ctx_;
    tessera::impl::captured_buffer b_;
    int id_;
    std::string name_, type_;
    char* host_ = nullptr;
    std::vector<char> mirror_;
    bool mirrored_ = false, written_ = false;
    std::unordered_map<index_type, elem_state> interval_;  // per element, this tile
    std::unordered_map<index_type, tile_state> tiles_;     // per element, this launch
  };

  /// A logical thread's view of one global element while its body runs (elements up to 64
  /// bytes; references to it stay valid until the body ends).
  struct shadow {
    global_buffer* buf;
    index_type off, linear;
    alignas(64) char value[64];
    char original[64];
    bool atomic = false;
  };

  void* shadow_of(global_buffer& g, index_type off, index_type linear) {
    const std::uint64_t key = (std::uint64_t(g.id_) << 48) ^ std::uint64_t(off);
    auto it = shadow_index_.find(key);
    if (it != shadow_index_.end()) return it->second->value;
    if (g.b_.elem_bytes > sizeof(shadow::value))
      usage("checked mode supports global elements of at most 64 bytes (" + g.name_ + ")");
    shadow& s = shadows_.emplace_back();
    s.buf = &g;
    s.off = off;
    s.linear = linear;
    std::memcpy(s.value, g.host_ + std::size_t(off) * g.b_.elem_bytes, g.b_.elem_bytes);
    std::memcpy(s.original, s.value, g.b_.elem_bytes);
    shadow_index_.emplace(key, &s);
    shadow_ptr_.emplace(static_cast<const void*>(s.value), &s);
    return s.value;
  }
  /// The running body ended (or the thread changed): classify and record its global accesses.
  void commit_shadows() {
    if (shadows_.empty()) return;
    for (auto& s : shadows_) {
      const std::size_t n = s.buf->b_.elem_bytes;
      const bool changed = std::memcmp(s.value, s.original, n) != 0;
      const access_kind k =
          s.atomic ? access_kind::atomic : (changed ? access_kind::write : access_kind::read);
      if (changed && !opt_.dry_run) {
        std::memcpy(s.buf->host_ + std::size_t(s.off) * n, s.value, n);
        s.buf->written_ = true;
      }
      if (!opt_.dry_run) record_global(*s.buf, s.linear, k);
    }
    shadows_.clear();
    shadow_index_.clear();
    shadow_ptr_.clear();
  }
  bool mark_atomic(const void* p) {
    auto it = shadow_ptr_.find(p);
    if (it == shadow_ptr_.end()) return false;
    it->second->atomic = true;
    return true;
  }
  void record_global(global_buffer& g, index_type linear, access_kind k) {
    auto describe = [&](index_type lin) {
      return site(g.name_, "global", g.coords_of(lin));
    };
    elem_state& e = g.interval_[linear];
    const std::uint64_t stamp = (std::uint64_t(tile_id_ + 1) << 32) ^ gl_epoch_;
    if (e.stamp != stamp) {
      e.stamp = stamp;
      e.clear();
    }
    const std::string what = "global '" + g.name_ + "' (" + g.type_ + ")";
    check_access(e, k, linear, what, describe);
    // Between tiles of this launch.
    tile_state& t = g.tiles_[linear];
    auto cross = [&](const tile_access& o, const char* kind) {
      const auto el = g.coords_of(linear);
      access_site st = describe(linear);
      std::string msg = std::string(opt_.fn) + ": " + kind + " race between tiles on " + what +
                        " element " + coords(el) + ": " + thread_name(o.thread) + " of tile " +
                        coords(o.coords) + " and " + thread_name(thread_) + " of tile " +
                        coords(tile_) + " (phase " + std::to_string(phase_) +
                        ") touch it in one launch; no barrier orders two tiles (use an atomic "
                        "or a second launch)";
      report_race(msg, st, thread_index(o.thread), thread_index(thread_), kind, o.coords);
    };
    auto other_of = [&](const tile_access(&two)[2]) -> const tile_access* {
      for (const auto& x : two)
        if (x.tile >= 0 && x.tile != tile_id_) return &x;
      return nullptr;
    };
    auto note = [&](tile_access(&two)[2]) {
      for (auto& x : two) {
        if (x.tile == tile_id_) return;
        if (x.tile < 0) {
          x = {tile_id_, thread_, tile_};
          return;
        }
      }
    };
    auto check = [&](const tile_access* o, const char* kind) {
      if (o && o->tile >= 0 && o->tile != tile_id_) cross(*o, kind);
    };
    switch (k) {
      case access_kind::write:
        check(&t.w, "write/write");
        check(other_of(t.r), "read/write");
        check(other_of(t.a), "atomic/write");
        if (t.w.tile < 0) t.w = {tile_id_, thread_, tile_};
        break;
      case access_kind::read:
        check(&t.w, "read/write");
        check(other_of(t.a), "atomic/read");
        note(t.r);
        break;
      case access_kind::atomic:
        check(&t.w, "atomic/write");
        check(other_of(t.r), "atomic/read");
        note(t.a);
        break;
    }
  }
  /// The race rule inside one interval of one tile, for any memory.
  template <class Describe>
  void check_access(elem_state& e, access_kind k, index_type linear, const std::string& what,
                    Describe&& describe) {
    const int t = thread_;
    const bool uniform = (t == -1) && threads_ > 1;
    auto other = [&](int who) {
      return who != none && (who != t || uniform);
    };
    auto race = [&](int first, const char* kind, bool first_writes, bool second_writes) {
      const access_site st = describe(linear);
      std::string msg = std::string(opt_.fn) + ": " + kind + " race on " + what + " element " +
                        coords(st.element) + " in tile " + coords(tile_) + ", phase " +
                        std::to_string(phase_) + ": " + thread_name(first) +
                        (first_writes ? " wrote" : " read") + " it and " + thread_name(t) +
                        (second_writes ? " wrote" : " read") +
                        " it with no barrier between them (nor a fence of this memory)";
      report_race(msg, st, thread_index(first), thread_index(t), kind, {});
    };
    switch (k) {
      case access_kind::write:
        if (uniform) race(0, "write/write", true, true);
        if (other(e.writer)) race(e.writer, "write/write", true, true);
        if (other(e.reader)) race(e.reader, "read/write", false, true);
        if (e.other_reader != none && e.other_reader != t)
          race(e.other_reader, "read/write", false, true);
        if (other(e.atomic) || e.other_atomic) race(e.atomic, "atomic/write", true, true);
        e.writer = t;
        break;
      case access_kind::read:
        if (other(e.writer)) race(e.writer, "read/write", true, false);
        if (other(e.atomic) || e.other_atomic) race(e.atomic, "atomic/read", true, false);
        if (e.reader == none)
          e.reader = t;
        else if (e.reader != t && e.other_reader == none)
          e.other_reader = t;
        break;
      case access_kind::atomic:
        if (other(e.writer)) race(e.writer, "atomic/write", true, true);
        if (other(e.reader)) race(e.reader, "atomic/read", false, true);
        if (e.atomic == none)
          e.atomic = t;
        else if (e.atomic != t)
          e.other_atomic = true;
        break;
    }
  }
  void advance(fence_kind f) {
    commit_shadows();
    if (tessera::impl::fences_tile_static(f)) ++ts_epoch_;
    if (tessera::impl::fences_global(f)) ++gl_epoch_;
  }

  void global_out_of_bounds(const global_buffer& g, const index_type* idx, int rank) {
    std::vector<index_type> el(idx, idx + rank), ext(g.b_.extent, g.b_.extent + rank);
    report_bounds(std::string(opt_.fn) + ": index " + coords(el) + " is outside global " + g.name_ +
                      " of extent " + coords(ext) + ", accessed by " + thread_name(thread_) +
                      " in tile " + coords(tile_) + ", phase " + std::to_string(phase_),
                  site(g.name_, "global", el));
  }

  [[noreturn]] void usage(const std::string& what) {
    throw usage_error(std::string(opt_.fn) + ": " + what);
  }
  void report_race(const std::string& msg, const access_site& st, std::vector<index_type> first,
                   std::vector<index_type> second, const char* kind,
                   std::vector<index_type> first_tile) {
    if (opt_.dry_run) return;
    if (opt_.collect) {
      add_finding({"race", msg, st, first, second});
      return;
    }
    throw race_error(msg, st, std::move(first), std::move(second), kind, std::move(first_tile));
  }
  void report_bounds(const std::string& msg, const access_site& st) {
    if (opt_.collect) {
      add_finding({"bounds", msg, st, thread_index(thread_), {}});
      return;
    }
    throw bounds_error(msg, st);
  }
  void add_finding(finding f) {
    if (opt_.out && opt_.out->size() < opt_.max_findings) opt_.out->push_back(std::move(f));
  }

  std::vector<index_type> unflatten(const buffer_desc& d, index_type linear) const {
    std::vector<index_type> el(static_cast<std::size_t>(d.rank));
    for (int k = d.rank - 1; k >= 0; --k) {
      el[std::size_t(k)] = linear % d.dims[k];
      linear /= d.dims[k];
    }
    return el;
  }
  std::vector<index_type> thread_index(int t) const {
    if (t < 0) return {};
    std::vector<index_type> l(dims_.size());
    for (int d = static_cast<int>(dims_.size()) - 1; d >= 0; --d) {
      l[std::size_t(d)] = t % dims_[std::size_t(d)];
      t /= static_cast<int>(dims_[std::size_t(d)]);
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
  access_site site(std::string buffer, const char* memory, std::vector<index_type> el) const {
    return access_site{std::move(buffer), memory, std::move(el), tile_, phase_};
  }
  void flush_pending() {
    commit_shadows();
    if (!pending_.active) return;
    const buffer& b = *bufs_[pending_.buf];
    const auto el = unflatten(b.desc, pending_.linear);
    pending_.active = false;
    if (opt_.dry_run) return;
    std::string msg = std::string(opt_.fn) + ": " + thread_name(pending_.thread) +
                      " read tile_static '" + b.name + "' (" + b.desc.type_name() + ") element " +
                      coords(el) + " in tile " + coords(tile_) + ", phase " +
                      std::to_string(phase_) +
                      ", but no logical thread of this tile had written it";
    const access_site st = site(b.name, "tile_static", el);
    if (opt_.collect) {
      add_finding({"uninitialized read", msg, st, thread_index(pending_.thread), {}});
      return;
    }
    throw uninitialized_read_error(msg, st, thread_index(pending_.thread));
  }

  struct pending_read {
    bool active = false;
    int buf = 0;
    index_type linear = 0;
    int thread = 0;
  };

  std::vector<index_type> dims_;
  checker_options opt_;
  int threads_ = 1;
  std::vector<index_type> tile_;
  index_type tile_id_ = 0;
  std::vector<std::unique_ptr<buffer>> bufs_;
  std::vector<std::vector<std::uint64_t>> locals_;
  std::vector<std::string> local_names_;  ///< per tile_local: "'name' (type)" for messages
  std::vector<std::unique_ptr<global_buffer>> globals_;
  std::deque<shadow> shadows_;
  std::unordered_map<std::uint64_t, shadow*> shadow_index_;
  std::unordered_map<const void*, shadow*> shadow_ptr_;
  int phase_ = 0;
  std::uint64_t ts_epoch_ = 0, gl_epoch_ = 0;
  int thread_ = -1;
  bool in_phase_ = false;
  pending_read pending_;
};

}  // namespace tessera::backends::impl
