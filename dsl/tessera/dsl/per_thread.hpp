/// \file per_thread.hpp
/// \brief What a logical thread of a per-thread tiled kernel (C++ AMP's form:
///        `parallel_for_each(e.tile<16, 16>(), TESSERA_KERNEL(const tiled_index<16, 16>& t)
///        { ... t.barrier.wait(); ... })`) carries besides its coordinates: where its tile's
///        tile_static storage is, how much of it its declarations have taken, and how its
///        barrier waits — a team barrier under the GPU mapping, a switch to the next logical
///        thread's fiber on CPUs, the checker's phase boundary in checked mode.
///        `tiled_index::barrier` (C++ AMP's `t.barrier`) is the handle the kernel sees.
#pragma once

#include <tessera/dsl/host_context.hpp>
#include <tessera/dsl/tile_mapping.hpp>

#include <cstddef>

namespace tessera {

namespace impl {

/// Where a tile_static declaration of a per-thread kernel is: its name (nullptr when unnamed),
/// source line and file, and its size — the declaration's identity, so that running it again
/// (in a loop, or in a helper called twice) names the same storage, as a C++ AMP tile_static
/// variable does.
struct tile_static_site {
  const char* name = nullptr;
  const char* file = nullptr;
  unsigned line = 0;
  std::size_t bytes = 0;
  std::size_t offset = 0;  ///< in the tile's storage
};
TESSERA_INLINE bool same_text(const char* a, const char* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

/// One logical thread's state in a per-thread kernel (lives in the launch's functor or in the
/// host engine's fiber table; tiled_index::barrier points at it).
struct per_thread_state {
  /// Distinct tile_static declarations a per-thread kernel may make.
  static constexpr int max_sites = 16;
  char* scratch = nullptr;     ///< the tile's tile_static storage (team scratch, host arena)
  std::size_t offset = 0;      ///< bytes this logical thread's declarations have taken so far
  std::size_t planned = 0;     ///< bytes the launch provides
  const void* team = nullptr;  ///< the Kokkos team member (GPU mapping), else nullptr
  /// Host: how a barrier waits (team barrier of the emulation's member, fiber switch, checker).
  /// Unused in GPU device passes, where a barrier is the device team's barrier.
  void (*wait)(per_thread_state*, fence_kind) = nullptr;
  /// Host: storage of declaration `site` (its index in `sites`) from the host engine (checked
  /// mode, dry run: storage and buffer id from the host context); nullptr in fast mode.
  void* (*declare)(per_thread_state*, const buffer_desc&, int site, int& id) = nullptr;
  host_context* ctx = nullptr;  ///< checked mode and dry run, else nullptr
  void* engine = nullptr;       ///< the host engine running this logical thread
  int thread = 0;               ///< row-major local rank
  int declared = 0;             ///< distinct tile_static declarations made so far
  tile_static_site sites[max_sites];

  /// The index of the declaration at (name, file, line) of `bytes` bytes, placed after the
  /// earlier ones (alignment `align`) the first time it is met; -1 beyond max_sites.
  TESSERA_INLINE int site_of(const char* name, const char* file, unsigned line, std::size_t bytes,
                             std::size_t align) {
    for (int k = 0; k < declared; ++k) {
      const tile_static_site& x = sites[k];
      if (x.line == line && x.bytes == bytes && same_text(x.name, name) && same_text(x.file, file))
        return k;
    }
    if (declared == max_sites) return -1;
    tile_static_site& x = sites[declared];
    x.name = name;
    x.file = file;
    x.line = line;
    x.bytes = bytes;
    x.offset = scratch_offset(offset, align);
    offset = x.offset + bytes;
    return declared++;
  }
};

/// A misuse the launch's checks could not see before running: stop loudly (never hang).
TESSERA_INLINE void per_thread_misuse(const char* what) {
  Kokkos::abort(what);
}

}  // namespace impl

/// C++ AMP's `tile_barrier` as a per-thread kernel sees it (`t.barrier`): every logical thread
/// of the tile waits at `wait()` until all have reached it, and memory accesses are ordered by
/// the fence the variant names. Call it from control flow every logical thread of the tile
/// follows (as C++ AMP requires): on CPUs and in checked mode a barrier some logical threads
/// skip is reported; on GPUs it is undefined behaviour, as in CUDA and C++ AMP. In a phase
/// kernel's for_each body `t.barrier` is not a barrier (use `g.barrier` between phases):
/// waiting there is a usage error.
class per_thread_barrier {
 public:
  /// Barrier with a fence on global and tile_static memory.
  TESSERA_INLINE void wait() const { sync(impl::fence_kind::all_memory); }
  /// Same as wait().
  TESSERA_INLINE void wait_with_all_memory_fence() const { sync(impl::fence_kind::all_memory); }
  /// Barrier with a fence on global memory only.
  TESSERA_INLINE void wait_with_global_memory_fence() const {
    sync(impl::fence_kind::global_memory);
  }
  /// Barrier with a fence on tile_static memory only.
  TESSERA_INLINE void wait_with_tile_static_memory_fence() const {
    sync(impl::fence_kind::tile_static_memory);
  }
  /// A fence without waiting: orders this logical thread's own accesses to the named memory.
  TESSERA_INLINE void fence(impl::fence_kind f) const {
#ifndef TESSERA_DEVICE_PASS
    if (s_ && s_->ctx) {
      s_->ctx->fence(f);
      return;
    }
#endif
    if (impl::fences_global(f)) Kokkos::memory_fence();
  }
  /// The state of the logical thread (nullptr outside a per-thread kernel).
  TESSERA_INLINE impl::per_thread_state* state() const {
    return s_;
  }
  /// Binds the handle to a logical thread's state (done by the launch).
  TESSERA_INLINE void bind(impl::per_thread_state* s) {
    s_ = s;
  }

 private:
  template <class Member>
  TESSERA_FORCEINLINE static void device_barrier(const void* team, impl::fence_kind f) {
    if (impl::fences_global(f)) Kokkos::memory_fence();
    static_cast<const Member*>(team)->team_barrier();
  }
  TESSERA_INLINE void sync(impl::fence_kind f) const {
    if (s_ == nullptr) {
#ifndef TESSERA_DEVICE_PASS
      // A phase kernel's for_each body: the checker reports the divergent barrier.
      if (impl::host_context* c = impl::current_host_context()) {
        c->barrier(f);
        return;
      }
#endif
      impl::per_thread_misuse(
          "tessera: t.barrier.wait() inside a phase kernel's for_each (use g.barrier.wait() "
          "between two for_each phases)");
      return;
    }
#ifdef TESSERA_DEVICE_PASS
    device_barrier<typename Kokkos::TeamPolicy<>::member_type>(s_->team, f);
#else
    s_->wait(s_, f);
#endif
  }
  impl::per_thread_state* s_ = nullptr;
};

}  // namespace tessera
