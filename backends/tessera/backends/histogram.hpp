/// \file histogram.hpp
/// \brief Tier 1 histograms: `histogram(e, bins, {lo, hi})` counts the elements of any
///        readable or array expression in equal-width bins, each team (tile) into private bins
///        in team scratch, added to the result once per team (Kokkos ScatterView's idea with
///        the copies per team instead of per thread). Planned by codegen/passes/scan.hpp.
#pragma once

#include <tessera/backends/scan.hpp>
#include <tessera/dsl/runtime.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

namespace tessera {

/// The value range [lo, hi) of a histogram: `histogram(e, 64, {0.0, 1.0})`.
struct value_range {
  double lo = 0, hi = 1;
};

namespace backends::impl {

/// One team counts elements [t * chunk, (t + 1) * chunk) of the row-major order of e.
template <class Space, class X, class C, int N>
struct histogram_kernel {
  using member = typename Kokkos::TeamPolicy<Space>::member_type;
  X e;
  tessera::impl::strided_ref<C, 1> counts;
  extent<N> ext;
  index_type n, chunk, bins;
  double lo, hi, scale;
  int copies;
  int level;  // the scratch level holding the private bins
  bool plain;

  /// The bin of x, or -1 outside [lo, hi) (NaN included). ZeroLo: lo is 0, so (v - lo) is v
  /// (the same value, one subtraction fewer on the counting loop's critical path).
  template <bool ZeroLo = false>
  KOKKOS_FORCEINLINE_FUNCTION index_type bin_of(double v) const {
    if (!(v >= lo && v < hi)) return -1;
    const index_type b = index_type((ZeroLo ? v : v - lo) * scale);
    return b < bins ? b : bins - 1;
  }
  /// Elements binned per block on one thread: their bins are computed in one loop (which
  /// vectorizes: conversion, range test, scaling and clamping are branch-free), then counted
  /// in a second (the increments stay scalar). One loop doing both runs at the latency of
  /// the scalar conversions.
  static constexpr int block = 256;
  /// Whether bins fit the block loop's 32-bit bin numbers.
  KOKKOS_INLINE_FUNCTION bool blockable() const { return bins < (index_type(1) << 30); }
  /// The bins of elements [q0, q0 + m) into idx, `bins` for a value outside [lo, hi) or NaN
  /// (the same bins as bin_of: the scaling is selected before the conversion, so no value
  /// outside the range is converted).
  template <bool ZeroLo>
  KOKKOS_INLINE_FUNCTION void bin_block(std::int32_t* idx, index_type q0, int m) const {
    const double l = lo, h = hi, sc = scale;
    const std::int32_t top = std::int32_t(bins - 1), none = std::int32_t(bins);
    TESSERA_IVDEP
    for (int j = 0; j < m; ++j) {
      const double v = value(q0 + j);
      const bool in = v >= l && v < h;
      const double w = in ? (ZeroLo ? v : v - l) * sc : 0.0;
      const std::int32_t b = std::int32_t(w);
      idx[j] = in ? (b < top ? b : top) : none;
    }
  }
  /// One thread (plain adds) counts [i0, i1) straight into the result.
  template <bool ZeroLo>
  KOKKOS_INLINE_FUNCTION void count_direct(index_type i0, index_type i1) const {
    index_type q = i0;
    if (blockable()) {
      std::int32_t idx[block];
      const std::int32_t none = std::int32_t(bins);
      for (; q < i1; q += block) {
        const int m = int(i1 - q < block ? i1 - q : block);
        bin_block<ZeroLo>(idx, q, m);
        for (int j = 0; j < m; ++j)
          if (idx[j] != none) ++counts(idx[j]);
      }
      return;
    }
    for (; q < i1; ++q)
      if (const index_type b = bin_of<ZeroLo>(value(q)); b >= 0) ++counts(b);
  }
  /// One member counts [i0, i1) into priv: element q goes to copy (q - i0) % copies, so a run
  /// of one value updates `copies` counters in turn instead of waiting on one.
  template <bool ZeroLo>
  KOKKOS_INLINE_FUNCTION void count_run(std::uint32_t* priv, index_type i0, index_type i1) const {
    index_type q = i0;
    if (blockable() && (copies == 4 || copies == 1)) {
      std::int32_t idx[block];
      const std::int32_t none = std::int32_t(bins);
      for (; q < i1; q += block) {
        const int m = int(i1 - q < block ? i1 - q : block);
        bin_block<ZeroLo>(idx, q, m);
        int j = 0;
        if (copies == 4) {
          for (; j + 4 <= m; j += 4) {
            if (idx[j] != none) ++priv[idx[j]];
            if (idx[j + 1] != none) ++priv[bins + idx[j + 1]];
            if (idx[j + 2] != none) ++priv[2 * bins + idx[j + 2]];
            if (idx[j + 3] != none) ++priv[3 * bins + idx[j + 3]];
          }
        }
        for (; j < m; ++j)
          if (idx[j] != none) ++priv[idx[j]];
      }
      return;
    }
    if (copies == 4) {
      for (; q + 4 <= i1; q += 4) {
        const index_type b0 = bin_of<ZeroLo>(value(q)), b1 = bin_of<ZeroLo>(value(q + 1)),
                         b2 = bin_of<ZeroLo>(value(q + 2)), b3 = bin_of<ZeroLo>(value(q + 3));
        if (b0 >= 0) ++priv[b0];
        if (b1 >= 0) ++priv[bins + b1];
        if (b2 >= 0) ++priv[2 * bins + b2];
        if (b3 >= 0) ++priv[3 * bins + b3];
      }
    }
    for (; q < i1; ++q) {
      const index_type b = bin_of<ZeroLo>(value(q));
      if (b >= 0) ++priv[b];
    }
  }
  KOKKOS_FORCEINLINE_FUNCTION double value(index_type q) const {
    if constexpr (N == 1)
      return double(e(q));
    else
      return double(read_at(e, tessera::impl::unflatten(ext, q)));
  }
  KOKKOS_FORCEINLINE_FUNCTION void add(index_type b, C v) const {
    if (plain)
      counts(b) += v;
    else
      Kokkos::atomic_add(&counts(b), v);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    const index_type i0 = index_type(m.league_rank()) * chunk;
    const index_type i1 = i0 + chunk < n ? i0 + chunk : n;
    if (copies == 0 && plain && m.team_size() == 1) {
      // One thread: straight into the result, as a plain loop would.
      if (lo == 0)
        count_direct<true>(i0, i1);
      else
        count_direct<false>(i0, i1);
      return;
    }
    if (copies == 0) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, i0, i1), [&](index_type q) {
        const index_type b = bin_of(value(q));
        if (b >= 0) add(b, C(1));
      });
      return;
    }
    auto* priv = static_cast<std::uint32_t*>(
        m.team_scratch(level).get_shmem(std::size_t(bins) * std::size_t(copies) * 4));
    const index_type slots = bins * copies;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, slots), [&](index_type s) { priv[s] = 0; });
    m.team_barrier();
    if (m.team_size() == 1) {
      if (lo == 0)
        count_run<true>(priv, i0, i1);
      else
        count_run<false>(priv, i0, i1);
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, i0, i1), [&](index_type q) {
        const index_type b = bin_of(value(q));
        if (b >= 0) Kokkos::atomic_add(&priv[(q % copies) * bins + b], std::uint32_t(1));
      });
    }
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, bins), [&](index_type b) {
      std::uint32_t s = priv[b];
      for (int c = 1; c < copies; ++c) s += priv[c * bins + b];
      if (s != 0) add(b, C(s));
    });
  }
};

/// Zeroes a counts vector.
template <class C>
struct zero_counts {
  tessera::impl::strided_ref<C, 1> counts;
  KOKKOS_INLINE_FUNCTION void operator()(index_type b) const { counts(b) = C(0); }
};

inline void check_histogram(const char* fn, index_type bins, const value_range& r) {
  if (bins < 1)
    throw shape_error(std::string(fn) + ": bins must be at least 1, got " + std::to_string(bins));
  if (!(std::isfinite(r.lo) && std::isfinite(r.hi) && r.lo < r.hi))
    throw usage_error(std::string(fn) + ": the range [" + std::to_string(r.lo) + ", " +
                      std::to_string(r.hi) + ") must be finite with lo < hi");
}

template <class Space, class T>
codegen::kernel_plan histogram_kernel_plan(const Space&, index_type n, index_type bins,
                                           const value_range& r) {
  codegen::histogram_desc d;
  d.dtype = tessera::impl::scalar_type_name<T>();
  d.elements = n;
  d.bins = bins;
  d.lo = r.lo;
  d.hi = r.hi;
  return codegen::plan_histogram(d, backend<Space>::make_target());
}

/// histogram_kernel_plan, this thread's last one for the same Space, T, size, bins, range and
/// concurrency (last_plan): a repeated histogram of one shape costs a comparison, not a
/// planning. The reference stays valid until this thread's next call with the same Space, T.
template <class Space, class T>
const codegen::kernel_plan& cached_histogram_kernel_plan(const Space& exec, index_type n,
                                                         index_type bins, const value_range& r) {
  struct tag;
  const std::array<std::int64_t, 5> key = {n, bins, std::bit_cast<std::int64_t>(r.lo),
                                           std::bit_cast<std::int64_t>(r.hi),
                                           tessera::impl::concurrency_of(exec)};
  return last_plan<tag, codegen::kernel_plan>(
      key, [&] { return histogram_kernel_plan<Space, T>(exec, n, bins, r); });
}

}  // namespace backends::impl

/// Counts the elements of `e` in `counts.extent[0]` equal-width bins over [r.lo, r.hi) into
/// `counts` (which is overwritten): element x falls in bin floor((x - lo) * (bins / (hi -
/// lo))), computed in double and clamped to bins - 1; elements outside [lo, hi), and NaNs,
/// are not counted (CUB's HistogramEven; NumPy's histogram also counts x == hi in the last
/// bin).
/// \param e [in] array, array_view, user readable or array expression of rank 1..3 with an
///        arithmetic element type (fused: `histogram(A - B, ...)` reads A and B once)
/// \param counts [in] array<C,1> or array_view<C,1>, C an integer type Kokkos has atomics for
///        (index_type by default in the returning form)
/// \param r [in] finite lo < hi
/// \throws shape_error when counts has no element (bins < 1) or on a negative extent;
///         usage_error on a range that is not finite or has lo >= hi, or when Kokkos is not
///         running — before anything runs (counts untouched)
/// Cost: one team per chunk of the elements (CPUs: one per thread, at least 2^16 elements or
/// 16 per private bin; GPUs: 4096), counting into private bins in team scratch (CPUs: four copies
/// while they fit half the L1 cache) added to counts once per team; bins past the scratch budget
/// (half the L2 cache on CPUs, 32 KiB on GPUs) are counted with atomic adds to counts directly.
template <launchable_space Space, backends::impl::scan_source E, class D>
requires impl::is_array_like<D>::value void histogram(const Space& exec, const E& e,
                                                      const D& counts, const value_range& r) {
  using C = typename D::value_type;
  using T = backends::impl::source_value_t<E>;
  static_assert(D::rank == 1, "tessera::histogram: counts must be one-dimensional");
  static_assert(std::is_integral_v<C> && !std::is_const_v<C> && !std::is_same_v<C, bool>,
                "tessera::histogram: counts must be a writable array of an integer type");
  static_assert(std::is_arithmetic_v<T>,
                "tessera::histogram: the values must have an arithmetic element type");
  constexpr const char* fn = "tessera::histogram";
  const index_type bins = counts.extent[0];
  backends::impl::check_histogram(fn, bins, r);
  const auto x = backends::impl::checked_extent(fn, e);
  tessera::impl::require_runtime(fn);
  if constexpr (requires { counts.sync_state(); })
    if (auto* st = counts.sync_state()) st->to_device(true);
  const auto out = counts.ref();
  Kokkos::parallel_for("tessera::histogram (zero)",
                       Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, bins),
                       backends::impl::zero_counts<C>{out});
  const index_type n = x.size();
  if (n == 0) {
    tessera::impl::fence(exec);
    return;
  }
  const codegen::kernel_plan& k =
      backends::impl::cached_histogram_kernel_plan<Space, T>(exec, n, bins, r);
  const auto launch = [&](const auto& src, const auto& ext) {
    using X = std::remove_cvref_t<decltype(src)>;
    constexpr int M = std::remove_cvref_t<decltype(ext)>::rank;
    using kernel = backends::impl::histogram_kernel<Space, X, C, M>;
    const kernel f{src,
                   out,
                   ext,
                   n,
                   k.reduce_chunk,
                   bins,
                   r.lo,
                   r.hi,
                   double(bins) / (r.hi - r.lo),
                   k.histogram_copies,
                   k.scratch_level,
                   k.histogram_plain_adds};
    Kokkos::TeamPolicy<Space> policy(exec, int(k.league_size), k.team_size);
    if (k.scratch_bytes[k.scratch_level] > 0)
      policy.set_scratch_size(k.scratch_level, Kokkos::PerTeam(k.scratch_bytes[k.scratch_level]));
    const backends::impl::profiling_region region(k.label);
    Kokkos::parallel_for(k.label, policy, f);
    tessera::impl::fence(exec);
  };
  backends::impl::with_source(exec, e, [&](const auto& src) {
    // An array or view whose elements are contiguous is counted in one flat run (no index
    // arithmetic per element); anything else element by element in row-major order.
    if constexpr (requires { src.r.s; } && E::rank > 1) {
      if (tessera::impl::row_major_contiguous(x, src.r.s)) {
        launch(backends::impl::contiguous_run<T>{src.r.p}, extent<1>(n));
        return;
      }
    }
    launch(src, x);
  });
}

/// The histogram into a new array<index_type, 1> of `bins` counts. \throws as above
template <launchable_space Space, backends::impl::scan_source E>
array<index_type, 1> histogram(const Space& exec, const E& e, index_type bins,
                               const value_range& r) {
  backends::impl::check_histogram("tessera::histogram", bins, r);
  array<index_type, 1> counts(bins);
  histogram(exec, e, counts, r);
  return counts;
}
template <backends::impl::scan_source E, class D>
requires impl::is_array_like<D>::value void histogram(const E& e, const D& counts,
                                                      const value_range& r) {
  histogram(tessera::impl::default_instance(), e, counts, r);
}
template <backends::impl::scan_source E>
array<index_type, 1> histogram(const E& e, index_type bins, const value_range& r) {
  return histogram(tessera::impl::default_instance(), e, bins, r);
}

/// The plan of histogram(e, bins, r) on the default execution space: teams, chunk, private
/// bins and their phases. Nothing runs. \throws as histogram
template <backends::impl::scan_source E>
codegen::program_plan plan_histogram(const E& e, index_type bins, const value_range& r) {
  constexpr const char* fn = "tessera::plan_histogram";
  backends::impl::check_histogram(fn, bins, r);
  auto [p, x] = backends::impl::source_plan(fn, e);
  if (x.size() == 0) return p;
  p.kernels.push_back(
      backends::impl::histogram_kernel_plan<execution_space, backends::impl::source_value_t<E>>(
          tessera::impl::default_instance(), x.size(), bins, r));
  return p;
}
/// The same plan as text.
template <backends::impl::scan_source E>
std::string explain_histogram(const E& e, index_type bins, const value_range& r) {
  return codegen::to_string(plan_histogram(e, bins, r));
}

}  // namespace tessera
