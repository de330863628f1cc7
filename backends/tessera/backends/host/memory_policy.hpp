/// \file host/memory_policy.hpp
/// \brief The host backends' operating-system memory policy for arrays, installed as the dsl's
///        host_memory_policy(): large host arrays ask for transparent huge pages before their
///        first touch.
#pragma once

#include <tessera/dsl/array.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera::backends::host {

/// Host allocations of at least this many bytes ask for transparent huge pages.
inline constexpr std::size_t huge_page_min_bytes = std::size_t{4} << 20;

/// Asks the OS to back the not-yet-touched host memory [p, p + bytes) with transparent huge
/// pages where it can (Linux: madvise(MADV_HUGEPAGE) on the 2 MiB-aligned part; elsewhere, for
/// smaller allocations, or with TESSERA_HUGE_PAGES=0 in the environment, nothing). Why: a tile
/// of a transpose or tile_reduce walks dozens of rows 32 KiB apart, one 4 KiB page each, and
/// with 4 KiB pages the TLB misses cost a quarter of the bandwidth of an 8192^2 float
/// transpose (measured on a 2-core AMD EPYC: 22 GB/s with 4 KiB pages, 30 GB/s with 2 MiB).
/// Debian's default THP mode is `madvise`: only memory that asks gets huge pages.
inline void advise_huge_pages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  static const bool enabled = [] {
    const char* e = std::getenv("TESSERA_HUGE_PAGES");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  if (!enabled || bytes < huge_page_min_bytes || p == nullptr) return;
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const std::uintptr_t b = (reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1);
  const std::uintptr_t e = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge - 1);
  if (e > b) (void)madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

/// Installs advise_huge_pages as the host memory policy when a host backend is compiled in.
inline const bool huge_page_policy_installed =
    (tessera::impl::host_memory_policy() = &advise_huge_pages, true);

}  // namespace tessera::backends::host
