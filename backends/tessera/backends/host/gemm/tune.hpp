/// \file host/gemm/tune.hpp
/// \brief The CPU gemm's blocking in use: the default from the cache sizes, or one set by the
///        caller or chosen by the explicit autotuner (timing candidates around the default);
///        plans made before a change are rebuilt (codegen::target_generation).
#pragma once

#include <tessera/backends/host/gemm/driver.hpp>
#include <tessera/backends/host/timing.hpp>
#include <tessera/codegen/plan_cache.hpp>

#include <mutex>
#include <string>
#include <vector>

namespace tessera::backends::host {

namespace impl {

/// The autotuner behind tune(). Candidates: default_blocking, kc x 1/2, 3/2, 2,
/// mc x 1/2, 2, and (2 mc, kc / 2), (mc / 2, 2 kc), clipped to the tuning problem (512^3) and
/// deduplicated; then the default and kc / 2 with A prefetched 16 and 32 k steps ahead
/// (micro_kernel_k_loop's PrefetchA: it helps where A's stream outruns the L1 prefetchers),
/// timed by best_seconds_each (host/timing.hpp). Round 1 times each candidate twice, then five
/// rounds time each once in turn (so that drifting machine load hits all alike), each keeping
/// its best; round 2 times the default and the fastest again, interleaved, three times each. A
/// candidate replaces the default only when its best time is at least 3% better, so that timing
/// noise alone does not move the choice. (With best of 3 per candidate in turn, an Intel Xeon
/// guest kept the default for doubles at x86-64-v3 in one call of several, 0.81x OpenBLAS at
/// 1024^2 where the others' kc / 2 with A prefetched ran 0.95x.)
template <class T>
gemm_blocking autotune() {
  using S = micro_tile<T>;
  constexpr index_type n = 512;
  const gemm_blocking d = default_blocking<T>();
  std::vector<T> a(n * n), b(n * n), c(n * n);
  for (index_type i = 0; i < n * n; ++i) {
    a[i] = T((i * 7 + 3) % 17) / T(17) - T(0.5);
    b[i] = T((i * 5 + 1) % 13) / T(13) - T(0.5);
  }
  std::vector<gemm_blocking> cands;
  auto add = [&](long mc, long kc, int a_prefetch = 0) {
    mc = std::clamp(mc / S::MR * S::MR, long(S::MR), long(n) / S::MR * S::MR);
    kc = std::clamp(kc / 16 * 16, 32L, long(n));
    const gemm_blocking g{int(mc), int(kc), d.nc, S::MR, S::NR, a_prefetch};
    for (const auto& x : cands)
      if (x.mc == g.mc && x.kc == g.kc && x.a_prefetch == g.a_prefetch) return;
    cands.push_back(g);
  };
  add(d.mc, d.kc);  // cands[0]: the default (clipped)
  for (double fk : {0.5, 1.5, 2.0}) add(d.mc, long(d.kc * fk));
  for (double fm : {0.5, 2.0}) add(long(d.mc * fm), d.kc);
  add(long(d.mc * 2), long(d.kc / 2));
  add(long(d.mc / 2), long(d.kc * 2));
  for (int ahead : {16, 32}) {
    add(d.mc, d.kc, ahead);
    add(d.mc, long(d.kc / 2), ahead);
  }
  auto id = [](index_type, index_type, T v) {
    return v;
  };
  const gemm_blocking* timed = &cands[0];
  auto run = [&] {
    gemm(n, n, n, a.data(), n, b.data(), n, c.data(), n, id, *timed);
  };
  // The first run (best_seconds_each's warm-up) fills caches, scratch arenas and threads.
  std::vector<double> t = best_seconds_each(
      cands.size(), [&](std::size_t i) { timed = &cands[i]; }, run, 2, 5);
  const std::size_t win = std::size_t(std::min_element(t.begin(), t.end()) - t.begin());
  if (win == 0) return d;
  const std::size_t pair[2] = {0, win};
  const std::vector<double> again = best_seconds_each(
      2, [&](std::size_t i) { timed = &cands[pair[i]]; }, run, 1, 2);
  return std::min(t[win], again[1]) < 0.97 * std::min(t[0], again[0]) ? cands[win] : d;
}

}  // namespace impl

/// The blocking Tier 1 matmuls of element type T use: default_blocking<T>() (derived from the
/// cache sizes, deterministic) until set_blocking or tune replaces it. Thread-safe.
template <class T>
gemm_blocking current_blocking();

namespace impl {
template <class T>
struct blocking_registry {
  std::mutex mutex;
  gemm_blocking value = default_blocking<T>();
  const char* origin = "derived from the cache sizes";
  static blocking_registry& get() {
    static blocking_registry r;
    return r;
  }
};
}  // namespace impl

template <class T>
gemm_blocking current_blocking() {
  auto& r = impl::blocking_registry<T>::get();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.value;
}
/// Where current_blocking<T>() came from: "derived from the cache sizes", "tuned",
/// "set by the caller".
template <class T>
const char* blocking_origin() {
  auto& r = impl::blocking_registry<T>::get();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.origin;
}
/// Makes `b` the blocking of later Tier 1 matmuls of element type T (plans made before are
/// not reused). \throws shape_error mc, kc or nc <= 0, or a_prefetch < 0
template <class T>
void set_blocking(const gemm_blocking& b, const char* origin = "set by the caller") {
  impl::check_blocking("tessera::set_matmul_blocking", b);
  auto& r = impl::blocking_registry<T>::get();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.value = b;
    r.origin = origin;
  }
  ++codegen::target_generation();
}

/// Times a few candidates around default_blocking<T>() (mc and kc scaled by 1/2 .. 2, A
/// prefetched or not; impl::autotune) on a
/// 512 x 512 x 512 problem on the default host execution space (all its threads) and makes the
/// fastest current (see impl::autotune: the default wins unless a candidate is 3% faster).
/// Explicit: nothing calls it implicitly; explain() never times anything. At most 92 products
/// of that size (12 candidates: 85 runs, then 7; ~0.25 s at 100 GFLOP/s).
/// @pre Kokkos is initialized; not inside a parallel region.
/// \return the chosen blocking
template <class T>
gemm_blocking tune() {
  const gemm_blocking b = impl::autotune<T>();
  set_blocking<T>(b, "tuned");
  return b;
}

}  // namespace tessera::backends::host
