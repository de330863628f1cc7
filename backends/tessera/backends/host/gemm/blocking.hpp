/// \file host/gemm/blocking.hpp
/// \brief Cache blocking of the CPU gemm: the host's cache sizes (sysfs, sysconf), the blocking
///        derived from them, and the launch parameters of a product (codegen::plan_gemm).
#pragma once

#include <tessera/backends/host/gemm/micro_kernel.hpp>
#include <tessera/codegen/passes/gemm_blocking.hpp>
#include <tessera/dsl/errors.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace tessera::backends::host {

/// Cache blocking of gemm: the loop bounds of the Goto scheme (see the file comment).
/// mc, kc, nc are element counts: rows of A per packed block (rounded up to a multiple of MR by
/// gemm), depth of one packed block, columns of B per packed panel (rounded up to a multiple
/// of NR). mr, nr record the micro-tile of the element type the blocking was made for; they are
/// informational (printed by describe) and gemm ignores them, 0 = not recorded.
using codegen::gemm_blocking;

/// Text form for plan printers, e.g. "mc=96 kc=256 nc=2048 mr=6 nr=16 a_prefetch=32" (mr/nr
/// only when set, a_prefetch only when > 0).
inline std::string describe(const gemm_blocking& b) {
  std::string s =
      "mc=" + std::to_string(b.mc) + " kc=" + std::to_string(b.kc) + " nc=" + std::to_string(b.nc);
  if (b.mr > 0 && b.nr > 0) s += " mr=" + std::to_string(b.mr) + " nr=" + std::to_string(b.nr);
  if (b.a_prefetch > 0) s += " a_prefetch=" + std::to_string(b.a_prefetch);
  return s;
}

namespace impl {

/// Bytes of the level-`level` data or unified cache of CPU 0 as the Linux kernel reports it
/// (/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}, the source of lscpu), 0
/// where it reports none (other systems, or no such level).
inline long sysfs_cache_bytes(int level) {
#if defined(__linux__)
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    auto read = [&dir](const char* name, char* buf, int size) {
      std::FILE* f = std::fopen((dir + name).c_str(), "r");
      if (f == nullptr) return false;
      const bool ok = std::fgets(buf, size, f) != nullptr;
      std::fclose(f);
      return ok;
    };
    char lv[16], type[32], size[32];
    if (!read("level", lv, sizeof lv)) break;  // no further cache of CPU 0
    if (std::atoi(lv) != level || !read("type", type, sizeof type) ||
        std::strncmp(type, "Instruction", 11) == 0 || !read("size", size, sizeof size))
      continue;
    char* unit = nullptr;
    long bytes = std::strtol(size, &unit, 10);  // "32K", "1024K", "32768K", "32M"
    if (*unit == 'K') bytes *= 1024L;
    if (*unit == 'M') bytes *= 1024L * 1024;
    if (*unit == 'G') bytes *= 1024L * 1024 * 1024;
    return bytes;
  }
#endif
  (void)level;
  return 0;
}

/// Per-core data cache sizes in bytes (L1d, L2) and the last-level cache (L3) that a core
/// shares with its neighbours: from the kernel's sysfs where there is one, else from sysconf
/// where the C library reports them, else typical values of current x86-64 / AArch64 server
/// cores (l3_reported false). sysfs comes first: glibc 2.36's sysconf reports 320 MiB of L3 in
/// the KVM guest of a 2-core Zen 4 whose sysfs (and lscpu) say 32 MiB. Read once per process.
struct cache_sizes {
  long l1, l2, l3;
  bool l3_reported;
};
inline cache_sizes host_caches() {
  static const cache_sizes caches = [] {
    cache_sizes c{32 * 1024, 1024 * 1024, 8 * 1024 * 1024, false};
    long l1 = sysfs_cache_bytes(1), l2 = sysfs_cache_bytes(2), l3 = sysfs_cache_bytes(3);
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && \
    defined(_SC_LEVEL3_CACHE_SIZE)
    if (l1 <= 0) l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    if (l2 <= 0) l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l3 <= 0) l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (l1 >= 8 * 1024) c.l1 = l1;
    if (l2 >= 64 * 1024) c.l2 = l2;
    if (l3 >= 1024 * 1024) {
      c.l3 = l3;
      c.l3_reported = true;
    }
    return c;
  }();
  return caches;
}

/// Bytes of data from which a CPU kernel takes its operands to come from memory and its output
/// to go there, as derived from the cache sizes: the last-level cache this machine reports
/// (host_caches; 32 MiB on the 2-core Zen 4 the README measures), or 32 MiB where it reports
/// none. A guest may report a cache it shares with other guests or never gets: an Intel Xeon
/// guest reporting 480 MiB of L3 wrote 2048^2-float transposes at 25 GB/s with streaming stores
/// and 5.7-15.5 GB/s without (tessera::tune_memory_threshold measures it instead).
inline std::size_t derived_memory_resident_min_bytes() {
  const cache_sizes c = host_caches();
  return c.l3_reported ? std::size_t(c.l3) : std::size_t{32} << 20;
}

/// The threshold tessera::set_memory_threshold or tessera::tune_memory_threshold set, in bytes
/// (0: none set, derived_memory_resident_min_bytes applies). Thread-safe.
inline std::atomic<std::size_t>& memory_threshold_setting() {
  static std::atomic<std::size_t> setting{0};
  return setting;
}

/// The bytes set_unaligned_rows_threshold set (0: none set, derived_memory_resident_min_bytes
/// applies): from how many bytes of output and operand a transpose whose output rows are not
/// whole blocks is streamed (codegen::transpose_options::unaligned_rows_min_bytes). Thread-safe.
inline std::atomic<std::size_t>& unaligned_rows_threshold_setting() {
  static std::atomic<std::size_t> setting{0};
  return setting;
}

/// Bytes of data from which a CPU kernel takes its operands to come from memory and its output
/// to go there, not to stay in cache: the threshold set (memory_threshold_setting), else the
/// derived one (derived_memory_resident_min_bytes). Outputs this large leave through streaming
/// stores and the inputs of row loops and reductions this large are prefetched
/// (host/target.hpp): they would not stay in the last-level cache for the next kernel anyway.
inline std::size_t memory_resident_min_bytes() {
  const std::size_t set = memory_threshold_setting().load();
  return set > 0 ? set : derived_memory_resident_min_bytes();
}

inline void check_blocking(const char* fn, const gemm_blocking& b) {
  if (b.mc <= 0 || b.kc <= 0 || b.nc <= 0)
    throw shape_error(std::string(fn) + ": blocking " + describe(b) + " must be positive");
  if (b.a_prefetch < 0)
    throw shape_error(std::string(fn) + ": a_prefetch=" + std::to_string(b.a_prefetch) +
                      " must be >= 0 (k steps ahead; 0: no prefetch)");
}

}  // namespace impl

/// Register tile (rows, columns of C per micro-kernel call) of gemm for element type T on this
/// target, e.g. 6 x 16 for float with AVX2, 12 x 32 with AVX-512.
template <class T>
inline constexpr int gemm_mr = impl::micro_tile<T>::MR;
template <class T>
inline constexpr int gemm_nr = impl::micro_tile<T>::NR;

/// Blocking derived from the cache sizes of the host (host_caches, with fallbacks of 32 KiB L1d,
/// 1 MiB L2, 8 MiB L3): kc so that a packed kc x NR micro-panel of B is 4/3 of L1d, mc so that
/// the packed mc x kc block of A fills half of L2 (at most 192 rows, 16 micro-panels of the
/// AVX-512 tile, which also keeps enough row blocks for the threads), nc so that the kc x nc
/// panel of B uses a quarter of L3 (at most 4096 columns). All values are element counts; mc is
/// a multiple of MR, nc of NR, kc of 16.
/// Why 192 rows for every tile: AVX2's tiles of 6 and 4 rows had been held to 16 micro-panels
/// (96 and 64 rows), and at x86-64-v3 floats ran 0.95x OpenBLAS's Haswell sgemm with 96 rows
/// against 0.98-1.00x with 192 (Intel Xeon guest, 1024^2, kc 512, alternated), doubles 0.97x
/// with 96 against 0.99x (kc 256, A prefetched).
/// Why kc is deeper than L1d: the micro-kernel reads A and B as two sequential streams that L2
/// serves at a fraction of its bandwidth (about 15 bytes per cycle), while every call also
/// loads and stores its MR x NR tile of C, which on large products comes from memory; a deeper
/// kc spreads that over more FMAs. Measured on a 2-core AVX-512 EPYC (48 KiB L1d), kc 512
/// instead of 256 (the B micro-panel in two thirds of L1d): +2-5 % at 1024^2-4096^2 on one
/// thread, +4-9 % on two.
/// Example: AVX-512, 48 KiB L1d, 1 MiB L2 per core, float (MR x NR = 12 x 32): mc=192 kc=512
/// nc=4096.
/// \tparam T float or double
template <class T>
gemm_blocking default_blocking() {
  using S = impl::micro_tile<T>;
  const impl::cache_sizes c = impl::host_caches();
  const long e = long(sizeof(T));
  long kc = c.l1 * 4 / 3 / (S::NR * e);
  kc = std::clamp(kc / 16 * 16, 64L, 512L);
  long mc = c.l2 / 2 / (kc * e);
  static_assert(S::MR <= 192, "default_blocking: a micro-tile of at most 192 rows");
  mc = std::clamp(mc / S::MR * S::MR, long(S::MR), 192L / S::MR * S::MR);
  long nc = c.l3 / 4 / (kc * e);
  nc = std::clamp(nc / S::NR * S::NR, long(S::NR), 4096L / S::NR * S::NR);
  return {int(mc), int(kc), int(nc), S::MR, S::NR};
}

/// The launch parameters of gemm for C(M x N) = A(M x K) B(K x N) with blocking `blk` on
/// `threads` threads (codegen::plan_gemm: what the plan of a Tier 1 matmul shows).
template <class T>
codegen::gemm_params plan(index_type M, index_type N, index_type K, const gemm_blocking& blk,
                          int threads) {
  using S = impl::micro_tile<T>;
  using team_policy = Kokkos::TeamPolicy<Kokkos::DefaultHostExecutionSpace>;
  codegen::gemm_params p =
      codegen::plan_gemm(M, N, K, blk.mc, blk.kc, blk.nc, S::MR, S::NR, threads,
                         std::size_t(team_policy::scratch_size_max(1)), sizeof(T));
  p.a_prefetch = blk.a_prefetch;
  return p;
}

}  // namespace tessera::backends::host
