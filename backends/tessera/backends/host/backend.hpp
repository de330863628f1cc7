/// \file host/backend.hpp
/// \brief The CPU kernel family as the backend of an execution space: what the `serial` and
///        `openmp` folders specialise `backends::backend<Space>` and `impl::tile_mapping<Space>`
///        with (each adds only its name).
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/host/kernels.hpp>
#include <tessera/backends/host/memory_policy.hpp>
#include <tessera/backends/host/scan.hpp>
#include <tessera/backends/host/target.hpp>
#include <tessera/backends/host/tile_mapping.hpp>
#include <tessera/dsl/copy.hpp>

#include <algorithm>

namespace tessera::backends::host {

/// Reductions of at most this many chunks fold on the calling thread, without a Kokkos launch:
/// one chunk cannot be split between threads, waking a threaded space's pool costs about what
/// one core takes to fold a chunk of 2^16 floats from cache (OpenMP, measured with chunks of
/// 2^14: 2^16 floats took 1.0 us on one thread, 1.3 on two), and even Kokkos 3.4's Serial
/// launch of a one-iteration parallel_reduce costs 40-50 ns (2^12 floats from L1: 107 ns a
/// sum through it, 93 inline; Eigen 93; Zen 4). The chunks are the same, so are the bits.
/// On one thread (Serial, or a pool of one) every reduction folds inline, in one run: the
/// chunks there only add their starts and ends (2^18-2^20 floats from L2/L3 on a Zen 4 core:
/// one run 0.996-1.002x Eigen's sum, chunks of 2^16 folded in turn 0.97-0.98x).
inline constexpr index_type inline_fold_chunks = 1;

/// How far ahead (bytes) a fold from memory prefetches its input (make_target below).
inline constexpr int reduce_prefetch_bytes = 4096;

/// backends::backend<Space> on the CPU kernel family (see backend_fwd.hpp).
template <class Space>
struct backend : kernels<Space> {
  /// Reductions: one functor call folds 2^16 consecutive elements with SIMD lanes (a chunk's
  /// start and end cost about 20 ns, 4 % of a chunk of 2^14 floats from L2 on a Zen 4 core);
  /// reproducible mode keeps chunks of 2^14, its fixed grid.
  static constexpr index_type reduce_chunk = index_type(1) << 16;
  static constexpr index_type reproducible_chunk = index_type(1) << 14;
  static codegen::target make_target() {
    codegen::target t = host::make_target<Space>();
    t.reduction.chunk = reduce_chunk;
    t.reduction.reproducible_chunk = reproducible_chunk;
    t.reduction.inline_fold_chunks = inline_fold_chunks;
    // Folds of more than the caches hold prefetch each input line 4 KiB ahead into L2 (not
    // L1) in builds with 512-bit vectors: 2^28 floats on a Zen 4 core, 1.10-1.13x Eigen
    // against 1.00-1.02x without (tessera-peers, runs interleaved; a standalone copy: 32.5-33.7
    // GB/s against 30.6-32.4, into L1 28-29). With 256-bit vectors (an x86-64-v3 build, same
    // core and runs) the prefetch made it slower, 0.87-0.91x the best peer against 0.99-1.00x:
    // none there.
    // From twice the last-level cache only: data of about its size still partly hits in it,
    // and the prefetch cost a sum of 2^22 doubles (32 MiB, a Zen 5 core's L3) 12 % (64 against
    // 73 GB/s; Eigen 79); 2^23 doubles 56 against 57.5 (standalone, three rounds each).
    t.reduction.memory_min_bytes = t.row_prefetch_min_bytes;
    t.reduction.prefetch_min_bytes = 2 * t.row_prefetch_min_bytes;
    // One thread reads a fold from memory as four streams, block by block in turn: more lines
    // in flight than the hardware prefetchers keep for one stream. On a Zen 5 core (2^28
    // floats, -march=native, a plain loop of 64-byte loads, alternated, best of 20) one stream
    // read 29-31 GB/s, four 35-36, Eigen's sum 28-30; 2^24-2^26 four-byte ints on a Zen 4 core
    // 19-21 GB/s in one stream, 24-28 in four (backend::int32_sum).
    t.reduction.memory_streams = 4;
    // tessera::tune_prefetch may have measured otherwise on the running machine.
    const int tuned = reduce_prefetch_setting().load();
    t.reduction.prefetch_bytes = t.row_prefetch_min_bytes == 0 ? 0
                                 : tuned >= 0                  ? tuned
                                 : simd::bytes >= 64           ? reduce_prefetch_bytes
                                                               : 0;
    // Scans: chunks of 2^14 elements balance one long line over the threads; adjacent lines
    // walk a vector register's width together; up to 2^14 elements (and every scan on one
    // thread) run inline, where Kokkos would add a launch and, off Serial, a second pass.
    t.scan.chunk = index_type(1) << 14;
    t.scan.line_block_bytes = t.tile_reduce.vector_bytes > 0 ? t.tile_reduce.vector_bytes : 16;
    t.scan.inline_elements = index_type(1) << 14;
    // Element-wise kernels of up to 2^14 elements run on the calling thread: about where two
    // threads would repay a Kokkos 4.6 OpenMP launch (d = 2a + 3b - c of 10^4 floats: 1.05 us
    // on one thread without a launch, 1.40 us launched on two, 1.56 us launched on one; Zen 5).
    t.elementwise_inline_elements = index_type(1) << 14;
    t.copy_run_elements = tessera::impl::copy_run_elements;
    // Several threads: the segmented form in rounds in one team of every thread (as many as
    // Kokkos allows in a team), chunks a quarter of the L2.
    t.scan.round_team = std::min(t.concurrency, backends::impl::host_team_limit<Space>());
    t.scan.round_chunk_bytes = t.l2_bytes / 4;
    // Histograms: one chunk per thread (at least 2^16 elements); private bins up to half the
    // L2 cache; four copies while they fit half the L1 cache (a run of one value then updates
    // four counters in turn, not one).
    t.histogram.chunk = index_type(1) << 16;
    t.histogram.private_bins_bytes = t.l2_bytes / 2;
    t.histogram.copies = 4;
    t.histogram.copies_bytes = t.l1d_bytes / 2;
    // Sorts: one tile per thread (at least 2^12 elements), radix sorted from 512 elements up
    // (below, std::stable_sort's insertion sorts win over 256-entry digit counts); merge-path
    // blocks of 2^14 outputs (a block's two binary searches cost about 2 % of its merge).
    t.sort.tile = 0;
    t.sort.min_tile = index_type(1) << 12;
    t.sort.merge_block = index_type(1) << 14;
    t.sort.radix_min_elements = 512;
    return t;
  }
#if defined(TESSERA_HOST_SHUFFLE)
  /// Scans: contiguous runs in vector registers (host/scan.hpp).
  template <bool Exclusive, class T, class A, class Op>
  requires vector_scan<T, A, Op>
  static void scan_run(const T* in, T* out, index_type n, A& acc, const Op& op, bool stream) {
    host::scan_run<Exclusive>(in, out, n, acc, op, stream);
  }
#endif
};

}  // namespace tessera::backends::host
