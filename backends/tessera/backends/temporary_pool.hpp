/// \file temporary_pool.hpp
/// \brief Memory reused by the temporaries of Tessera's operations (a Tier 1 expression's
///        intermediate results, the temporary of an assignment whose output an operand reads,
///        a sort's merge buffer, a CPU matmul's workspace): a few freed buffers per memory
///        space are kept for the next operation instead of each operation allocating and
///        freeing its own Kokkos View. On Kokkos 3.4's Serial backend an allocation and its
///        release cost about 0.6 us (the allocation record, its label, the Kokkos Tools hooks,
///        malloc), more than a 16 x 16 operation itself.
#pragma once

#include <tessera/dsl/config.hpp>
#include <tessera/dsl/runtime.hpp>

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace tessera::backends::impl {

/// Buffers of up to this many bytes go back to the pool when their operation ends; larger
/// ones are freed (an allocation costs little beside the work of filling them, and memory the
/// program no longer uses is not kept).
inline constexpr std::size_t temporary_keep_bytes = std::size_t(1) << 20;
/// Free buffers kept per memory space (at most 4 MiB in all).
inline constexpr std::size_t temporary_keep_count = 4;
/// The smallest buffer allocated (bytes): a pool buffer serves every later, smaller request.
inline constexpr std::size_t temporary_min_bytes = 4096;

/// The free buffers of one memory space. Shared by every thread (a mutex around the list: a
/// few tens of nanoseconds, against the allocation it saves). Pools are used only while a
/// scope_guard has seen the runtime start (tessera::impl::runtime_seen_running), whose
/// finalize hook empties them (tessera::impl::at_runtime_end) before Kokkos finalizes its
/// memory spaces; elsewhere every buffer is allocated and freed as a plain View.
template <class MemorySpace>
class temporary_pool {
 public:
  using view = Kokkos::View<char*, MemorySpace>;

  /// The process's pool for MemorySpace (made on first use, never destroyed: its buffers are
  /// freed by the runtime's end, not by static destruction after it).
  static temporary_pool& instance() {
    static temporary_pool* const p = [] {
      auto* made = new temporary_pool();
      tessera::impl::at_runtime_end([made] { made->clear(); });
      return made;
    }();
    return *p;
  }

  /// A buffer of at least `bytes` bytes (uninitialized; aligned as Kokkos aligns Views): the
  /// smallest free one large enough, else a new one.
  view take(std::size_t bytes) {
    if (tessera::impl::runtime_seen_running.load(std::memory_order_relaxed)) {
      const std::lock_guard<std::mutex> lock(m_);
      std::size_t best = free_.size();
      for (std::size_t i = 0; i < free_.size(); ++i)
        if (free_[i].size() >= bytes &&
            (best == free_.size() || free_[i].size() < free_[best].size()))
          best = i;
      if (best < free_.size()) {
        view v = std::move(free_[best]);
        free_.erase(free_.begin() + std::ptrdiff_t(best));
        return v;
      }
    }
    return view(Kokkos::view_alloc(Kokkos::WithoutInitializing, "tessera::temporary"),
                bytes < temporary_min_bytes ? temporary_min_bytes : bytes);
  }

  /// Takes back a buffer from take() once nothing reads or writes it any more (the operation
  /// fenced its kernels): kept when small enough and the pool has room, else freed. Callers
  /// give back only after that fence: where an exception leaves before it (a kernel may still
  /// run), the View is freed by its destructor instead, so that no later operation writes
  /// memory a kernel may still read.
  void give_back(view&& v) {
    if (v.size() > temporary_keep_bytes ||
        !tessera::impl::runtime_seen_running.load(std::memory_order_relaxed))
      return;  // freed by v's destructor
    const std::lock_guard<std::mutex> lock(m_);
    if (free_.size() < temporary_keep_count) free_.push_back(std::move(v));
  }

  /// Frees every kept buffer (the runtime's end).
  void clear() {
    std::vector<view> gone;
    const std::lock_guard<std::mutex> lock(m_);
    gone.swap(free_);
  }

  /// Buffers kept now (tests).
  std::size_t kept() {
    const std::lock_guard<std::mutex> lock(m_);
    return free_.size();
  }

 private:
  temporary_pool() = default;
  std::mutex m_;
  std::vector<view> free_;
};

}  // namespace tessera::backends::impl
