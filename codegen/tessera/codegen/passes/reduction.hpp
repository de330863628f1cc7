/// \file passes/reduction.hpp
/// \brief The plan of a whole-array reduction (sum, mean, min_value, max_value, reduce): the
///        row-major element order cut into the target's fixed chunks, one iteration per chunk
///        folding it into SIMD lanes with the accumulation rule, chunk results combined by a
///        Kokkos reduction — or, reproducible, written to per-chunk partials combined on the
///        host in a fixed pairwise order. Few chunks on a host backend fold on the calling
///        thread, without a launch. The launch (backends/reduce/launch.hpp) reads chunk, league and
///        backend from this plan.
#pragma once

#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/passes/gemm_blocking.hpp>
#include <tessera/codegen/planner_linkage.hpp>

#include <cstdint>
#include <string>

namespace tessera::codegen {

/// What is reduced, and how its elements accumulate.
struct reduction_desc {
  std::string name;             ///< "sum", "mean", "min_value", "max_value", "reduce"
  std::string dtype;            ///< element type, e.g. "float"
  std::int64_t elem_bytes = 0;  ///< bytes per element (0: unknown, never prefetched)
  std::int64_t elements = 0;    ///< n > 0
  std::string accumulation;     ///< the accumulation rule (reduce/rules.hpp)
  int lanes = 1;                ///< accumulator lanes per chunk
  bool reproducible = false;
  /// The fold can read several streams from memory at once (backends' reduce/fold.hpp
  /// folds_streams: sums whose lanes add their elements, where the backend has the kernel).
  bool streams = false;
};

#ifdef TESSERA_PLANNER_DECLARATIONS_ONLY
kernel_plan plan_reduction(const reduction_desc& d, const target& t);
#else
TESSERA_PLANNER_LINKAGE kernel_plan plan_reduction(const reduction_desc& d, const target& t) {
  kernel_plan k;
  k.family = kernel_family::reduction;
  const std::string mode = d.reproducible ? "(reproducible)" : "";
  k.name = "reduction: " + d.name + mode + " of " + std::to_string(d.elements) + " " + d.dtype +
           " elements";
  k.label = "tessera::" + d.name + mode;
  k.reduce_chunk = d.reproducible ? t.reduction.reproducible_chunk : t.reduction.chunk;
  k.league_size = ceil_div(d.elements, k.reduce_chunk);
  k.backend = t.backend;
  // Folded without a launch on a host backend: one chunk, or any number on one thread, where
  // the elements are then folded in one run (chunks there would only add their starts and ends).
  k.inline_run = !d.reproducible && !t.thread_per_logical && t.reduction.inline_fold_chunks > 0 &&
                 (k.league_size <= t.reduction.inline_fold_chunks || t.concurrency == 1);
  const bool one_run = k.inline_run && k.league_size > 1;
  k.policy = d.reproducible ? "RangePolicy (parallel_for into per-chunk partials)"
             : k.inline_run ? "none: folded on the calling thread (no Kokkos launch)"
                            : "RangePolicy (parallel_reduce)";
  k.reduce_interleaved = d.reproducible && t.reduction.interleaved_reproducible;
  k.mapping =
      k.reduce_interleaved ? "one iteration per chunk c of " + std::to_string(k.league_size) +
                                 ": elements c, c + " + std::to_string(k.league_size) +
                                 ", ... (row-major; adjacent iterations read adjacent elements), " +
                                 "folded in order"
      : one_run ? "all " + std::to_string(d.elements) +
                      " elements (row-major) folded in one run into " + std::to_string(d.lanes) +
                      " lanes (one thread: no chunks, whose starts and ends cost 2-3 % "
                      "of a fold from L2 or L3)"
                : "one iteration per chunk of " + std::to_string(k.reduce_chunk) +
                      " consecutive elements (row-major), folded into " + std::to_string(d.lanes) +
                      " lanes";
  // Inputs larger than the caches come from memory: blocks read in address order, and where
  // the target says so each line prefetched ahead into L2, beyond what the hardware
  // prefetchers keep in flight for one core (the additions are the same).
  if (t.reduction.memory_min_bytes > 0 && d.elem_bytes > 0 &&
      std::uint64_t(d.elements) * std::uint64_t(d.elem_bytes) >= t.reduction.memory_min_bytes) {
    k.reduce_from_memory = true;
    k.mapping += "; the input comes from memory: blocks read in address order";
    // One thread on a CPU reads folds that take streams (d.streams) as several: the run cut
    // into parts, or, reproducible, that many consecutive chunks an iteration.
    const bool host_one_thread = !t.thread_per_logical && t.reduction.inline_fold_chunks > 0 &&
                                 t.concurrency == 1 && !k.reduce_interleaved;
    if ((one_run || (d.reproducible && host_one_thread && k.league_size > 1)) && d.streams &&
        t.reduction.memory_streams > 1) {
      k.reduce_streams = t.reduction.memory_streams;
      const std::string s = std::to_string(k.reduce_streams);
      k.mapping += " as " + s + " interleaved streams (" +
                   (one_run ? "the run cut into as many parts, each folded on its own, their "
                              "results merged in order"
                            : s + " consecutive chunks an iteration, each to its own partial") +
                   "; an operand without gaps reads them together, without a prefetch)";
    }
    if (t.reduction.prefetch_bytes > 0 &&
        std::uint64_t(d.elements) * std::uint64_t(d.elem_bytes) >= t.reduction.prefetch_min_bytes) {
      k.reduce_prefetch_bytes = t.reduction.prefetch_bytes;
      k.mapping += ", each line prefetched " + std::to_string(k.reduce_prefetch_bytes) +
                   " B ahead into L2" +
                   (k.reduce_streams > 1 ? " where the parts are read one after another" : "");
    }
  }
  k.buffers.push_back({"in", d.dtype, memory_space_kind::global, 0, 0, "input"});
  if (d.reproducible)
    k.buffers.push_back({"partials", "one accumulator per chunk", memory_space_kind::global, 0, 0,
                         "per-chunk results, combined on the host in a fixed pairwise order"});
  k.notes.push_back("accumulation: " + d.accumulation);
  k.notes.push_back(d.reproducible
                        ? "bitwise reproducible: fixed chunks, partials combined pairwise in "
                          "chunk order, whatever the thread count"
                    : one_run ? "one run on one thread, chunks on several: the grouping of the "
                                "additions follows the thread count (reproducible fixes the bits)"
                              : "chunk results combined by the Kokkos reduction (their grouping "
                                "follows the thread count)");
  k.notes.push_back(k.inline_run ? "no launch: a fence of the execution space, then the fold on "
                                   "the calling thread"
                                 : "no chunk waits for another: the launch's end is the only "
                                   "synchronisation");
  return k;
}
#endif

}  // namespace tessera::codegen
