/// \file passes/scan.hpp
/// \brief The plans of the Tier 1 scans along a dimension (inclusive_scan, exclusive_scan) and
///        of histograms: their form, iteration space and where they run. The launches
///        (backends/scan.hpp, backends/histogram.hpp) read everything from these plans.
///
/// Scans. The extent is seen as `outer x L x inner` around the scanned dimension (L elements a
/// line, outer * inner lines). Two forms:
/// - line form: one iteration walks `scan_line_block` adjacent lines from start to end (CPUs:
///   a vector register's worth of adjacent lines when the scanned dimension is not the last,
///   one contiguous line otherwise, scanned in SIMD blocks; GPUs: one line per thread, adjacent
///   threads on adjacent lines). No carry crosses an iteration.
/// - segmented form, when the lines are too few to occupy the execution space: each line is
///   cut into chunks, one iteration per chunk, and each chunk's total is carried into the next
///   chunks of its line (a segmented scan: the carry restarts at every line). Host backends:
///   a Kokkos parallel_scan (one pass on Serial, two elsewhere). GPUs: three launches that
///   keep the operator's order (chunk totals, their inclusive scan along each line — the same
///   planner, recursively —, each chunk from its carry): Kokkos' GPU scans fold each thread's
///   strided elements, which is right only for commutative joins.
/// Small scans, and every scan on a one-thread host space, run on the calling thread.
///
/// Histograms. The row-major order is cut into chunks, one team (tile) each; a team counts into
/// private bins in team scratch (CPUs: several copies, consecutive elements to different
/// copies) and adds its nonzero bins to the result once; bins that do not fit go straight to
/// the result with atomic adds.
#pragma once

#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/passes/gemm_blocking.hpp>
#include <tessera/codegen/planner_linkage.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::codegen {

/// What a scan computes.
struct scan_desc {
  std::string name;   ///< "inclusive_scan", "exclusive_scan"
  std::string dtype;  ///< element type, e.g. "float"
  std::string acc;    ///< the accumulation, e.g. "double accumulator, rounded to float"
  std::size_t acc_bytes = 4;
  std::size_t carry_bytes = 8;  ///< a segmented carry: the accumulator and its flags
  std::string op;               ///< "sum", "max", "a user operator", ...
  std::vector<std::int64_t> extent;
  int dim = 0;  ///< the scanned dimension
  std::size_t elem_bytes = 4;
  bool reads_output = false;  ///< the output is (part of) the input: in place
};

/// The extent of `x` around dimension d: elements before it (outer), along it, after it.
struct line_shape {
  std::int64_t outer = 1, length = 0, inner = 1;
};
inline line_shape lines_of(const std::vector<std::int64_t>& x, int d) {
  line_shape s;
  for (int i = 0; i < d; ++i) s.outer *= x[std::size_t(i)];
  s.length = x[std::size_t(d)];
  for (std::size_t i = std::size_t(d) + 1; i < x.size(); ++i) s.inner *= x[i];
  return s;
}

#ifdef TESSERA_PLANNER_DECLARATIONS_ONLY
kernel_plan plan_scan(const scan_desc& d, const target& t);
#else
TESSERA_PLANNER_LINKAGE kernel_plan plan_scan(const scan_desc& d, const target& t) {
  kernel_plan k;
  k.family = kernel_family::scan;
  k.backend = t.backend;
  k.label = "tessera::" + d.name;
  std::string dims;
  for (std::size_t i = 0; i < d.extent.size(); ++i) {
    if (i) dims += 'x';
    dims += std::to_string(d.extent[i]);
  }
  k.name = d.name + " (" + d.op + ") of " + d.dtype + " " + dims + " along dimension " +
           std::to_string(d.dim);
  const line_shape s = lines_of(d.extent, d.dim);
  const std::int64_t n = s.outer * s.length * s.inner;
  const std::int64_t lines = s.outer * s.inner;
  // Lines along the last dimension are contiguous runs (along another one they are not, even
  // where the extents after it are 1: a section keeps its parent's strides).
  const bool last_dim = d.dim + 1 == int(d.extent.size());
  const std::int64_t chunk = std::max<std::int64_t>(1, t.scan.chunk);
  // Line form: a block of adjacent lines per iteration.
  int block = 1;
  if (!t.thread_per_logical && s.inner > 1 && t.scan.line_block_bytes > 0)
    block = int(std::clamp<std::int64_t>(
        std::int64_t(t.scan.line_block_bytes) / std::int64_t(d.acc_bytes), 1, s.inner));
  const std::int64_t line_iterations = s.outer * ceil_div(s.inner, block);
  const bool line_form = line_iterations >= t.concurrency || s.length <= chunk;
  k.inline_run = !t.thread_per_logical && t.scan.inline_elements > 0 &&
                 (n <= t.scan.inline_elements || t.concurrency == 1);
  if (line_form || k.inline_run) {
    k.scan_line_block = block;
    k.league_size = line_iterations;
    k.policy = k.inline_run ? "none: scanned on the calling thread (no Kokkos launch)"
                            : "RangePolicy (parallel_for)";
    k.mapping = "one iteration per " +
                (block > 1 ? std::to_string(block) + " adjacent lines" : std::string("line")) +
                " of " + std::to_string(s.length) + " elements, walked start to end" +
                (last_dim && !t.thread_per_logical
                     ? " in SIMD blocks (a log-step scan inside a register, then the carry)"
                     : "");
  } else if (!t.thread_per_logical && t.scan.round_team > 1 && t.scan.round_chunk_bytes > 0) {
    // Rounds in one team.
    // A power of two of elements near round_chunk_bytes, at least 2^10, and small enough for
    // four rounds (short scans otherwise leave members idle).
    std::int64_t rc = 1024;
    while (rc * 2 * std::int64_t(d.elem_bytes) <= std::int64_t(t.scan.round_chunk_bytes) &&
           rc * 2 * 4 * t.scan.round_team <= n)
      rc *= 2;
    k.scan_line_block = 0;
    k.scan_rounds = true;
    k.reduce_chunk = rc;
    k.league_size = 1;
    k.team_size = t.scan.round_team;
    const std::int64_t chunks = lines * ceil_div(s.length, rc);
    k.policy = "TeamPolicy (one team; rounds of " + std::to_string(k.team_size) + " chunks)";
    k.mapping = "member p scans chunk r * " + std::to_string(k.team_size) + " + p of round r; " +
                std::to_string(chunks) + " chunks of " + std::to_string(rc) + " elements (" +
                std::to_string(rc * std::int64_t(d.elem_bytes) / 1024) + " KiB, a quarter of L2 " +
                "at most) in " + std::to_string(lines) + " line" + (lines == 1 ? "" : "s") +
                " of " + std::to_string(s.length);
    k.phases = 2;
    k.scratch_bytes[0] = std::size_t(k.team_size) * d.carry_bytes;
    k.buffers.push_back({"round totals", d.acc + " + flags [" + std::to_string(k.team_size) + "]",
                         memory_space_kind::scratch_level0, k.scratch_bytes[0], 0,
                         "each member's chunk total, combined in chunk order"});
    k.barriers.push_back({0, "tile_static memory",
                          "the round's chunk totals complete before the carries combine them",
                          true});
    k.barriers.push_back({1, "tile_static memory",
                          "every member read the totals before the next round writes them", true});
  } else {
    k.scan_line_block = 0;
    k.reduce_chunk = chunk;
    k.league_size = lines * ceil_div(s.length, chunk);
    k.scan_carry_passes = t.scan.carry_passes;
    k.policy = k.scan_carry_passes
                   ? "RangePolicy (parallel_for x2 around a scan of the chunk totals)"
                   : "RangePolicy (parallel_scan, segmented: the carry restarts at each line)";
    k.mapping = "one iteration per chunk of " + std::to_string(chunk) + " elements of a line; " +
                std::to_string(lines) + " line" + (lines == 1 ? "" : "s") + " of " +
                std::to_string(s.length);
    k.phases = k.scan_carry_passes ? 3 : 2;
  }
  // Contiguous lines (the last dimension) of outputs larger than the caches stream out,
  // unless the scan reads them (in place).
  k.streaming_stores = !t.thread_per_logical && last_dim && !d.reads_output &&
                       t.streaming_store_min_bytes > 0 &&
                       std::size_t(n) * d.elem_bytes >= t.streaming_store_min_bytes;
  k.buffers.push_back({"in", d.dtype, memory_space_kind::global, 0, 0, "input"});
  k.buffers.push_back({"out", d.dtype, memory_space_kind::global, 0, 0,
                       k.streaming_stores ? "output, streaming stores" : "output"});
  k.notes.push_back("accumulation: " + d.acc);
  if (k.scan_rounds)
    k.notes.push_back(
        "phases: a chunk's total brings it into its member's cache, a barrier, then the chunk "
        "is scanned from its carry and re-read from that cache: the input comes from memory "
        "once");
  else if (k.scan_line_block == 0 && k.scan_carry_passes)
    k.notes.push_back(
        "phases: each chunk's total into a buffer of " + std::to_string(k.league_size) + " " +
        d.acc + " values, an inclusive scan of them along each line (planned as a scan of " +
        std::to_string(lines) + " x " + std::to_string(k.league_size / lines) +
        "), then each chunk scanned from its carry; every combination in the operator's order");
  else if (k.scan_line_block == 0)
    k.notes.push_back(
        "phases: each chunk's total (Kokkos' first pass; skipped on Serial), the carries "
        "scanned across chunks, then each chunk scanned from its carry");
  else
    k.notes.push_back("one phase: no iteration waits for another");
  return k;
}
#endif

/// What a histogram counts.
struct histogram_desc {
  std::string dtype;
  std::int64_t elements = 0;
  std::int64_t bins = 1;
  double lo = 0, hi = 1;
};

#ifdef TESSERA_PLANNER_DECLARATIONS_ONLY
kernel_plan plan_histogram(const histogram_desc& d, const target& t);
#else
TESSERA_PLANNER_LINKAGE kernel_plan plan_histogram(const histogram_desc& d, const target& t) {
  kernel_plan k;
  k.family = kernel_family::histogram;
  k.backend = t.backend;
  k.label = "tessera::histogram";
  k.name = "histogram of " + std::to_string(d.elements) + " " + d.dtype + " elements into " +
           std::to_string(d.bins) + " bins over [" + std::to_string(d.lo) + ", " +
           std::to_string(d.hi) + ")";
  const std::size_t per_copy = std::size_t(d.bins) * 4;
  int copies = std::max(1, t.histogram.copies);
  while (copies > 1 && per_copy * std::size_t(copies) > t.histogram.copies_bytes) copies /= 2;
  // Private bins in scratch level 0 while they fit it; on CPUs (where level 1 is the same
  // memory, allocated per team) in level 1 up to the budget: atomics straight into the result
  // from several threads cost far more than a team's zeroing and adding of its bins.
  const std::size_t want = per_copy * std::size_t(copies);
  const std::size_t budget = std::min(
      t.histogram.private_bins_bytes,
      t.thread_per_logical ? t.scratch_max[0] : std::max(t.scratch_max[0], t.scratch_max[1]));
  const bool private_bins = want <= budget;
  k.scratch_level = private_bins && want > t.scratch_max[0] ? 1 : 0;
  // A chunk counts at least 16 elements per private bin, so adding the bins to the result
  // costs at most a sixteenth of the counting.
  std::int64_t chunk = std::max<std::int64_t>(1, t.histogram.chunk);
  if (private_bins) chunk = std::max(chunk, 16 * d.bins * copies);
  // CPUs: one chunk per thread. Each team zeroes its private bins and adds them to the result
  // once, so more teams than threads only repeat that (65536 bins in chunks of 2^20 of 2^24
  // floats spent a quarter of the time there on one Zen 4 core).
  if (!t.thread_per_logical)
    chunk = std::max(chunk, ceil_div(d.elements, std::max(1, t.concurrency)));
  k.reduce_chunk = chunk;
  k.league_size = ceil_div(d.elements, chunk);
  k.team_size = t.thread_per_logical ? std::min(t.max_team_size, 256) : 1;
  k.histogram_copies = private_bins ? copies : 0;
  k.histogram_plain_adds = !t.thread_per_logical && t.concurrency == 1;
  k.policy = "TeamPolicy";
  k.mapping = "one team per chunk of " + std::to_string(chunk) + " consecutive elements" +
              (t.thread_per_logical ? ", one element per member per step" : "");
  if (private_bins) {
    k.scratch_bytes[k.scratch_level] = want;
    k.buffers.push_back({"private bins",
                         "uint32[" + std::to_string(copies) + "][" + std::to_string(d.bins) + "]",
                         k.scratch_level == 0 ? memory_space_kind::scratch_level0
                                              : memory_space_kind::scratch_level1,
                         want, 0, "per-team counts, added to the result once per team"});
    k.phases = 3;
    k.barriers.push_back({0, "tile_static memory", "private bins zeroed before counting"});
    k.barriers.push_back({1, "tile_static memory", "counts complete before they are added"});
  }
  k.buffers.push_back({"in", d.dtype, memory_space_kind::global, 0, 0, "input"});
  k.buffers.push_back({"counts", "int64[" + std::to_string(d.bins) + "]", memory_space_kind::global,
                       std::size_t(d.bins) * 8, 0, "output"});
  k.notes.push_back(
      private_bins ? std::string("private bins: each team's nonzero bins added to the "
                                 "result once") +
                         (k.histogram_plain_adds ? " (one thread: plain adds)" : " (atomic adds)")
                   : std::string("bins do not fit team scratch: every count is ") +
                         (k.histogram_plain_adds ? "a plain add to the result (one thread)"
                                                 : "an atomic add to the result"));
  return k;
}
#endif

}  // namespace tessera::codegen
