/// \file view_state.hpp
/// \brief The lazy-copy state of array_views (C++ AMP's rules): where the host and device
///        copies of a viewed buffer are, which is current, and the copies between them. Shared
///        by every view of one buffer.
#pragma once

#include <tessera/dsl/array.hpp>

#include <atomic>
#include <cstddef>
#include <memory>

namespace tessera::impl {

/// The shared bookkeeping of every array_view over one buffer (sections, projections and
/// reinterpretations share it): where the host and device copies are and which is current.
/// Host-only; reference counted atomically, so views may be copied concurrently.
class view_state final : public view_sync {
 public:
  std::atomic<long> refs{1};
  char* host = nullptr;      ///< host copy (the caller's memory, or a mirror of an array)
  char* dev = nullptr;       ///< device copy (== host when the memory space is the host's)
  std::size_t bytes = 0;     ///< bytes of the whole buffer
  bool separate = false;     ///< host and device copies are different memory
  bool device_valid = true;  ///< the device copy holds the current data
  bool host_valid = true;    ///< the host copy holds the current data
  bool owns_host = false;    ///< host is a mirror allocated here (views over an array)
  Kokkos::View<char*, memory_space> dev_alloc;        ///< device copy of caller memory
  Kokkos::View<char*, Kokkos::HostSpace> host_alloc;  ///< host mirror of an array
  std::shared_ptr<const void> keep;                   ///< keeps a viewed array alive

  void to_device(bool write) override {
    if (separate && !device_valid) {
      copy_bytes(dev, host, false);
      device_valid = true;
    }
    if (write && separate) host_valid = false;
  }
  void to_host(bool write) override {
    if (separate && !host_valid) {
      if (!host) {
        host_alloc = Kokkos::View<char*, Kokkos::HostSpace>(
            Kokkos::view_alloc(Kokkos::WithoutInitializing, "tessera::array_view host copy"),
            bytes);
        host = host_alloc.data();
      }
      Kokkos::fence();
      copy_bytes(host, dev, true);
      host_valid = true;
    }
    if (write && separate) device_valid = false;
  }
  ~view_state() override {
    // The last view of caller memory writes the device copy back (C++ AMP).
    try {
      if (separate && !host_valid && !owns_host && host) {
        Kokkos::fence();
        copy_bytes(host, dev, true);
      }
    } catch (...) {
    }
  }

 private:
  void copy_bytes(char* dst, char* src, bool to_host_side) {
    if (bytes == 0) return;
    using host_bytes = Kokkos::View<char*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
    using dev_bytes = Kokkos::View<char*, memory_space, Kokkos::MemoryUnmanaged>;
    if (to_host_side)
      Kokkos::deep_copy(host_bytes(dst, bytes), dev_bytes(src, bytes));
    else
      Kokkos::deep_copy(dev_bytes(dst, bytes), host_bytes(src, bytes));
  }
};

}  // namespace tessera::impl
