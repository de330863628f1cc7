/// \file lower.hpp
/// \brief The lowering driver: runs the passes in order on an expression graph — fusion, phases,
///        barriers, scratch placement, thread mapping — and returns the program plan together
///        with the fusion decisions the executor needs. Set the environment variable
///        TESSERA_LOG_PASSES=1 to print the plan after each pass (read once per process).
#pragma once

#include <tessera/codegen/passes/barriers.hpp>
#include <tessera/codegen/passes/fusion.hpp>
#include <tessera/codegen/passes/phases.hpp>
#include <tessera/codegen/passes/scratch.hpp>
#include <tessera/codegen/passes/stencil.hpp>
#include <tessera/codegen/passes/threads.hpp>
#include <tessera/codegen/planner_linkage.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tessera::codegen {

/// The plan of an expression and the decisions behind it.
struct lowered {
  fusion_result fusion;
  program_plan plan;
};

/// "relu(+(matmul(A, B), C))": the subtree of node n as text.
inline std::string describe_node(const expr_graph& g, int n) {
  const graph_node& nd = g.nodes[n];
  std::string s = nd.label;
  if (!nd.children.empty()) {
    s += "(";
    for (std::size_t i = 0; i < nd.children.size(); ++i) {
      if (i) s += ", ";
      s += describe_node(g, nd.children[i]);
    }
    s += ")";
  }
  return s;
}

/// True when the kernel rooted at `root` evaluates inline a node of rank >= 2 whose value
/// needs the index (generate(), fill(), shift()): a flat loop would divide it back out of the
/// element number, so the kernel walks rows instead.
inline bool needs_index(const expr_graph& g, const fusion_result& f, int root, int n) {
  if (n != root && f.role[n] == node_role::materialized) return false;
  const graph_node& nd = g.nodes[n];
  if ((nd.traits.kind == node_kind::generate || nd.traits.reads_neighbours) &&
      nd.extent.size() >= 2)
    return true;
  for (int c : nd.children)
    if (needs_index(g, f, root, c)) return true;
  return false;
}

/// How a kernel reads one input buffer: its reads' offsets (shifts above the terminal, summed
/// along the path from the kernel's root) and boundary policies.
struct input_reads {
  std::string name, dtype;
  int reads = 0;
  std::vector<std::int64_t> lo, hi;  ///< smallest and largest offset per dimension
  std::vector<std::string> boundaries;
  std::vector<std::string> sections;  ///< overlapping sections of the buffer read (names)
  /// The terminal the offsets count from (pre-order id; the first section of overlapping
  /// ones), -1 for a temporary; its element size.
  int node = -1;
  std::size_t elem_bytes = 0;
};
inline void collect_reads(const expr_graph& g, const fusion_result& f, int root, int n,
                          std::vector<std::int64_t> off, const std::string& bc,
                          std::vector<input_reads>& out) {
  const graph_node& nd = g.nodes[n];
  const bool materialized = n != root && f.role[n] == node_role::materialized;
  if (materialized || nd.traits.kind == node_kind::terminal) {
    std::string name = nd.traits.kind == node_kind::terminal ? nd.label : "tmp" + std::to_string(n);
    if (!materialized && nd.section_of >= 0) {
      // An overlapping section of an earlier terminal's buffer: one stencil operand with it,
      // read at the section's offset.
      name = g.nodes[std::size_t(nd.section_of)].label;
      off.resize(std::max(off.size(), nd.section_offset.size()), 0);
      for (std::size_t d = 0; d < nd.section_offset.size(); ++d) off[d] += nd.section_offset[d];
    }
    auto it =
        std::find_if(out.begin(), out.end(), [&](const input_reads& r) { return r.name == name; });
    if (it == out.end()) {
      const int node = materialized ? -1 : nd.section_of >= 0 ? nd.section_of : n;
      out.push_back({name, nd.dtype, 0, off, off, {}, {}, node, nd.elem_bytes});
      it = out.end() - 1;
    }
    ++it->reads;
    const std::size_t dims = std::max(off.size(), it->lo.size());
    off.resize(dims, 0);
    it->lo.resize(dims, 0);
    it->hi.resize(dims, 0);
    for (std::size_t d = 0; d < dims; ++d) {
      it->lo[d] = std::min(it->lo[d], off[d]);
      it->hi[d] = std::max(it->hi[d], off[d]);
    }
    if (!bc.empty() &&
        std::find(it->boundaries.begin(), it->boundaries.end(), bc) == it->boundaries.end())
      it->boundaries.push_back(bc);
    auto add_section = [&](const std::string& label) {
      if (std::find(it->sections.begin(), it->sections.end(), label) == it->sections.end())
        it->sections.push_back(label);
    };
    if (!materialized && nd.section_of >= 0) {
      add_section(name);  // the first section of the buffer
      add_section(nd.label);
    }
    return;
  }
  std::string b = bc;
  if (nd.traits.reads_neighbours) {
    off.resize(nd.offset.size(), 0);
    for (std::size_t d = 0; d < nd.offset.size(); ++d) off[d] += nd.offset[d];
    b = nd.boundary;
  }
  for (int c : nd.children) collect_reads(g, f, root, c, off, b, out);
}
/// The plan's line for an input buffer: "input", or for a stencil operand (read at several
/// offsets) "input; stencil operand: 5 reads, halo -1..+1 x -2..+2, boundary zero".
inline std::string input_role(const input_reads& r) {
  bool shifted = false;
  for (std::size_t d = 0; d < r.lo.size(); ++d) shifted = shifted || r.lo[d] != 0 || r.hi[d] != 0;
  if (!shifted) return r.reads > 1 ? "input, read " + std::to_string(r.reads) + " times" : "input";
  const bool sections = r.sections.size() > 1;  // offsets from the middle (halo_text)
  std::string s =
      "input; stencil operand: " + std::to_string(r.reads) + (r.reads == 1 ? " read" : " reads") +
      (sections ? " through " + std::to_string(r.sections.size()) + " overlapping sections (" +
                      r.sections.front() + ".." + r.sections.back() + ")"
                : std::string()) +
      ", halo " + halo_text(r.lo, r.hi, sections);
  if (!r.boundaries.empty()) {
    s += ", boundary ";
    for (std::size_t i = 0; i < r.boundaries.size(); ++i) s += (i ? "/" : "") + r.boundaries[i];
  }
  return s;
}

/// CPU row loops (elementwise kernels that are not one flat loop) whose inputs and output
/// together move at least the target's row_prefetch_min_bytes: each input buffer's leading read
/// (the largest offset per dimension: the row furthest down, which memory has not yet sent)
/// is prefetched row_prefetch_bytes ahead of the columns being computed, once per output cache
/// line, and the loop runs at the target's memory_rows_vector_bytes. Only buffers read
/// straight from an array (temporaries are written by the kernel before), at most
/// max_row_prefetches of them, no node defined outside the library, rows of at least
/// row_prefetch_bytes. All of a kernel's buffers or none: prefetching some streams and not
/// others measured slower than none (2A + 3B - C over sections of 8000^2 doubles on a Zen 5
/// core: none 35.9 GB/s, one or two of the three 33.6-34.4, all three 37.4); and only the
/// leading read of each: every section of PRK's stencil prefetched read 14 GB/s against 20
/// without any prefetch.
///
/// Such a loop whose output alone reaches the target's streaming_store_min_bytes, and which
/// does not read its own output, also writes each row's whole output lines with streaming
/// (non-temporal) stores, four lines at a time from a buffer in L1: no read for ownership of
/// lines that are about to be overwritten, and (a likely cause, not measured) output lines
/// that no longer evict from L2 the input rows the next output rows read again. PRK's stencil
/// as sections (8000^2 doubles, one Zen 4 core): 15.4-15.6 GB/s with plain stores, 20.0-20.3
/// streamed (x86-64-v3 build: 14.7-15.2 and 18.3-18.7); in a standalone copy of the loop,
/// streamed without the prefetch, 12.3-13.0 against 13.1-13.6 prefetched with plain stores.
/// Loops that read no buffer (generated values only) neither prefetch nor stream: streamed,
/// 8000^2 doubles from an index functor wrote 25.6-26.2 GB/s, as without (25.6).
///
/// The target's row_loops, or stencil_row_loops for loops reading some operand over several
/// rows (what tessera::tune_prefetch measured for each), may keep the prefetch and drop the
/// streams, or drop both. On a Zen 5 guest PRK's stencil (8000^2 doubles, native build) read
/// 17.6-18.2 GB/s prefetched and streamed, 27.7-28.0 prefetched only, 24.3-24.8 as plain
/// loops (at 512 bits; 16.1-16.7 at 256 without the prefetch), while 2A + 3B - C over sections
/// of three arrays read 31.9-32.7 prefetched only against 36.1-39.1 streamed and 38.7-40.2
/// plain.
inline void plan_row_prefetch(kernel_plan& k, const expr_graph& g, const kernel_spec& ks,
                              const std::vector<input_reads>& reads, const target& t) {
  if (ks.family != kernel_family::elementwise || k.flat_index || t.thread_per_logical ||
      t.row_prefetch_bytes <= 0 || t.row_prefetch_min_bytes == 0)
    return;
  // A stencil: some operand read over several rows (offsets apart in an outer dimension).
  bool stencil = false;
  for (const auto& r : reads)
    for (std::size_t d = 0; d + 1 < r.lo.size() && d + 1 < r.hi.size(); ++d)
      if (r.hi[d] > r.lo[d]) stencil = true;
  const row_loop_memory way = stencil ? t.stencil_row_loops : t.row_loops;
  if (way == row_loop_memory::plain) return;
  const graph_node& root = g.nodes[ks.root];
  if (root.extent.empty()) return;
  std::size_t n = 1;
  for (auto e : root.extent) n *= std::size_t(e);
  const std::size_t out_elem = ks.writes_temporary ? root.elem_bytes : g.out_elem_bytes;
  const std::size_t out_bytes = n * out_elem;
  std::size_t bytes = out_bytes;
  for (const auto& r : reads) bytes += n * r.elem_bytes;
  if (bytes < t.row_prefetch_min_bytes || reads.size() > max_row_prefetches) return;
  // Rows shorter than the prefetch distance keep the plain loop: the prefetching row is a
  // call of its own, which a row of a few elements would pay for nothing.
  const std::size_t row_bytes = std::size_t(root.extent.back()) * root.elem_bytes;
  if (row_bytes < std::size_t(t.row_prefetch_bytes)) return;
  // Nodes defined outside the library have evaluators without visit_prefetch.
  for (const auto& nd : g.nodes)
    if (nd.traits.kind == node_kind::custom) return;
  std::vector<row_prefetch> p;
  std::string names;
  for (const auto& r : reads) {
    if (r.node < 0) return;
    p.push_back({r.node, r.hi});
    names += (names.empty() ? "" : ", ") + r.name;
  }
  if (p.empty()) return;
  k.row_prefetches = std::move(p);
  k.row_prefetch_bytes = t.row_prefetch_bytes;
  k.mapping += "; each output line prefetches the leading row of " + names + " " +
               std::to_string(t.row_prefetch_bytes) + " B ahead (the operands come from memory)";
  if (t.memory_rows_vector_bytes > 0)
    k.mapping += ", " + std::to_string(t.memory_rows_vector_bytes * 8) + "-bit vectors";
  k.streaming_stores = way == row_loop_memory::prefetch_and_stream &&
                       t.streaming_store_min_bytes > 0 && (out_elem == 4 || out_elem == 8) &&
                       out_bytes >= t.streaming_store_min_bytes && !reads_own_output(g, ks);
  if (k.streaming_stores)
    k.mapping +=
        "; each row's whole output lines written with non-temporal stores, four at a time "
        "from a buffer in the first-level data cache (the output is larger than the cache and "
        "not read by the kernel)";
}

inline bool log_passes() {
  static const bool on = std::getenv("TESSERA_LOG_PASSES") != nullptr;
  return on;
}

/// Lowers expression graph `g` for target `t`. The last kernel writes the output (through a
/// temporary when fusion reports aliasing).
/// \throws resource_error when a kernel's scratch exceeds the target's limit
#ifdef TESSERA_PLANNER_DECLARATIONS_ONLY
lowered lower(const expr_graph& g, const target& t);
#else
TESSERA_PLANNER_LINKAGE lowered lower(const expr_graph& g, const target& t) {
  const bool log = log_passes();
  lowered out;
  // 1. fusion
  out.fusion = fuse(g, t);
  if (log)
    std::fprintf(stderr, "[tessera] after fusion: %zu kernel(s)\n", out.fusion.kernels.size());
  for (const auto& ks : out.fusion.kernels) {
    kernel_plan k;
    k.name = std::string(to_string(ks.family)) + ": " + describe_node(g, ks.root);
    k.backend = t.backend;
    // 2. phases
    const kernel_body body = describe_kernel(g, ks, t);
    k.phases = phase_count(body.program);
    // 3. barriers
    k.barriers = insert_barriers(body.program);
    if (!t.thread_per_logical)
      for (auto& b : k.barriers) b.hazard += " (one member per team: program order)";
    if (log) std::fprintf(stderr, "[tessera] after phases + barriers:\n%s", to_string(k).c_str());
    // 4. scratch placement
    place_scratch(k, body, t, "tessera code generator: kernel " + k.name);
    // 5. thread mapping (elementwise kernels: a flat loop unless an operand or the
    // destination is a section, or a generated or shifted node needs the index)
    bool sections = false;
    for (int in : ks.inputs)
      if (g.nodes[in].traits.kind == node_kind::terminal && !g.nodes[in].contiguous)
        sections = true;
    const bool section_out = !ks.writes_temporary && !g.out_contiguous;
    k.flat_index = !sections && !section_out && !needs_index(g, out.fusion, ks.root, ks.root);
    map_threads(k, g, ks, t);
    k.label = "tessera::" + std::string(to_string(ks.family)) + " " + describe_node(g, ks.root);
    if (!k.tile.empty()) k.label += " tile " + list_dims(k.tile);
    if (!k.flat_index && ks.family == kernel_family::elementwise)
      k.mapping += sections      ? " (an operand is a section)"
                   : section_out ? " (the destination is a section)"
                                 : " (a generated or shifted operand needs the index)";
    // One line per input buffer however many times the kernel reads it (shifts of one array
    // are one stencil operand, with its halo and boundary).
    std::vector<input_reads> reads;
    collect_reads(g, out.fusion, ks.root, ks.root, {}, "", reads);
    for (const auto& r : reads)
      k.buffers.push_back({r.name, r.dtype, memory_space_kind::global, 0, 0, input_role(r)});
    k.buffers.push_back({ks.writes_temporary ? "tmp" + std::to_string(ks.root) : "out",
                         stored_dtype(g, ks.root, ks.writes_temporary), memory_space_kind::global,
                         0, 0, "output"});
    plan_row_prefetch(k, g, ks, reads, t);
    // 6. stencil operands staged in scratch (elementwise kernels under the GPU mapping)
    plan_stencil_staging(k, g, out.fusion, ks, t);
    k.notes.insert(k.notes.begin(), body.notes.begin(), body.notes.end());
    if (!ks.writes_temporary && out.fusion.output_aliases_input)
      k.notes.push_back("computed into a temporary, then copied to the output: " +
                        out.fusion.alias_reason);
    if (log) std::fprintf(stderr, "[tessera] after scratch + mapping:\n%s", to_string(k).c_str());
    out.plan.kernels.push_back(std::move(k));
  }
  if (out.fusion.output_aliases_input) {
    // The last kernel wrote a temporary; one more launch copies it to the output.
    const graph_node& root = g.nodes[0];
    std::int64_t n = 1;
    for (auto e : root.extent) n *= e;
    kernel_plan c;
    c.name = "copy: tmp -> out";
    c.family = kernel_family::copy;
    c.backend = t.backend;
    c.policy = "RangePolicy";
    c.league_size = n;
    c.mapping = "one iteration per element";
    // CPUs: one iteration per run of up to t.copy_run_elements consecutive elements of a row
    // (tessera::impl::copy_runs, the compiler's vector copy of each); GPUs: one per element.
    const std::int64_t cols = root.extent.empty() ? 1 : root.extent.back();
    if (const std::int64_t run = t.copy_run_elements; run > 1 && n > 0 && cols > 0) {
      const std::int64_t runs_per_row = (cols + run - 1) / run;
      c.league_size = n / cols * runs_per_row;
      c.mapping = runs_per_row == 1 ? "one iteration per row, its elements copied in order"
                                    : "one iteration per run of up to " + std::to_string(run) +
                                          " consecutive elements of a row, copied in order";
    }
    c.label = "tessera::copy (output aliases an input)";
    c.buffers.push_back({"tmp", g.out_dtype, memory_space_kind::global, 0, 0, "input"});
    c.buffers.push_back({"out", g.out_dtype, memory_space_kind::global, 0, 0, "output"});
    c.notes.push_back(out.fusion.alias_reason);
    run_inline_if_small(c, t, n, t.elementwise_inline_elements, "written");
    out.plan.kernels.push_back(std::move(c));
  }
  return out;
}
#endif

}  // namespace tessera::codegen
