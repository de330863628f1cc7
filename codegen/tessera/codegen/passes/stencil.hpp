/// \file passes/stencil.hpp
/// \brief Stencil operands of elementwise kernels under the GPU mapping: the shifts of one
///        array (same buffer, strides and boundary policy), or its overlapping sections, read
///        one box of it, the output tile grown by their halo, that a team loads into scratch
///        once (coalesced, boundary policy applied) before a barrier; each shift or section
///        then reads its neighbours from the box instead of global memory. CPU plans keep their
///        rows kernel (the caches hold the neighbouring rows).
#pragma once

#include <tessera/codegen/expr_graph.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/passes/fusion.hpp>
#include <tessera/codegen/passes/gemm_blocking.hpp>
#include <tessera/codegen/target.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::codegen {

/// The output tile of a staged stencil kernel of rank N: 32 consecutive elements of the last
/// dimension (a warp's coalesced row), 256 logical threads in all; no larger than the extent.
inline std::vector<std::int64_t> stencil_tile(const std::vector<std::int64_t>& extent) {
  static const std::int64_t tiles[3][3] = {{256, 0, 0}, {8, 32, 0}, {2, 4, 32}};
  const std::size_t n = extent.size();
  std::vector<std::int64_t> t(n);
  for (std::size_t d = 0; d < n; ++d)
    t[d] = std::max<std::int64_t>(1, std::min(tiles[n - 1][d], extent[d]));
  return t;
}

/// Finds the stencil operands of elementwise kernel `ks` (shifts whose operand is an array,
/// and overlapping sections of one buffer, not below a shift: the index they receive is then
/// the kernel's own) and, where an array is read through two or more of them and the boxes
/// fit the target's scratch, plans the staged form: a team per output tile, phase 0 loads
/// every box, a barrier, phase 1 evaluates the tile. Returns without change on CPU targets
/// and where nothing is worth staging.
inline void plan_stencil_staging(kernel_plan& k, const expr_graph& g, const fusion_result& f,
                                 const kernel_spec& ks, const target& t) {
  if (!t.thread_per_logical || ks.family != kernel_family::elementwise) return;
  const graph_node& root = g.nodes[std::size_t(ks.root)];
  const std::size_t N = root.extent.size();
  if (N < 1 || N > 3) return;
  std::int64_t n = 1;
  for (auto e : root.extent) n *= e;
  if (n == 0) return;
  std::vector<stencil_stage> stages;
  std::vector<int> origins;  // per stage: sections: the buffer's first section (graph id)
  // The array a stage reads: the operand of its first shift, or its first section.
  auto operand = [&](const stencil_stage& s) -> const graph_node& {
    const graph_node& m = g.nodes[std::size_t(s.shifts[0])];
    return s.sections ? m : g.nodes[std::size_t(m.children[0])];
  };
  auto inside = [&](int id) {
    return id == ks.root || f.role[std::size_t(id)] != node_role::materialized;
  };
  auto walk = [&](const auto& self, int id, bool under_shift) -> void {
    if (!inside(id)) return;  // a temporary: read as a buffer
    const graph_node& nd = g.nodes[std::size_t(id)];
    if (nd.traits.kind == node_kind::shift && !nd.children.empty()) {
      const int c = nd.children[0];
      const graph_node& a = g.nodes[std::size_t(c)];
      if (!under_shift && inside(c) && a.traits.kind == node_kind::terminal &&
          a.strides.size() == N && nd.offset.size() == N) {
        auto it = std::find_if(stages.begin(), stages.end(), [&](const stencil_stage& s) {
          const graph_node& first = operand(s);
          return !s.sections && s.operand == a.label && first.strides == a.strides &&
                 s.boundary == nd.boundary;
        });
        if (it == stages.end()) {
          stencil_stage st;
          st.operand = a.label;
          st.lo = st.hi = nd.offset;
          st.boundary = nd.boundary;
          stages.push_back(std::move(st));
          origins.push_back(-1);
          it = stages.end() - 1;
        }
        it->shifts.push_back(id);
        for (std::size_t d = 0; d < N; ++d) {
          it->lo[d] = std::min(it->lo[d], nd.offset[d]);
          it->hi[d] = std::max(it->hi[d], nd.offset[d]);
        }
        return;
      }
      self(self, c, true);
      return;
    }
    if (nd.traits.kind == node_kind::terminal) {
      // Overlapping sections of one buffer (the graph found them: same extent and strides,
      // offsets along the strides) read with the kernel's own index: one stage per buffer,
      // offsets from its first section.
      if (under_shift || nd.strides.size() != N || nd.extent != root.extent) return;
      const int origin = nd.section_of >= 0 ? nd.section_of : id;
      std::vector<std::int64_t> off(N, 0);
      if (nd.section_of >= 0) {
        if (nd.section_offset.size() != N) return;
        off = nd.section_offset;
      }
      std::size_t k = 0;
      while (k < stages.size() && !(stages[k].sections && origins[k] == origin)) ++k;
      if (k == stages.size()) {
        stencil_stage st;
        st.operand = g.nodes[std::size_t(origin)].label;
        st.lo = st.hi = off;
        st.boundary = "none (sections)";
        st.sections = true;
        stages.push_back(std::move(st));
        origins.push_back(origin);
      }
      stencil_stage& st = stages[k];
      st.shifts.push_back(id);
      st.offsets.insert(st.offsets.end(), off.begin(), off.end());
      for (std::size_t d = 0; d < N; ++d) {
        st.lo[d] = std::min(st.lo[d], off[d]);
        st.hi[d] = std::max(st.hi[d], off[d]);
      }
      return;
    }
    for (int c : nd.children) self(self, c, under_shift);
  };
  walk(walk, ks.root, false);
  stages.erase(std::remove_if(stages.begin(), stages.end(),
                              [](const stencil_stage& s) { return s.shifts.size() < 2; }),
               stages.end());
  if (stages.empty()) return;
  for (auto& s : stages) {
    if (!s.sections) continue;
    // The memory the sections span, from the first section's first element: each member's
    // span [o . strides, o . strides + last] and the first section's own (each overlaps it).
    const graph_node& a = operand(s);
    std::int64_t last = 0;
    for (std::size_t d = 0; d < N; ++d) last += (a.extent[d] - 1) * a.strides[d];
    s.span_lo = 0;
    s.span_hi = last;
    for (std::size_t m = 0; m < s.shifts.size(); ++m) {
      std::int64_t first = 0;
      for (std::size_t d = 0; d < N; ++d) first += s.offsets[m * N + d] * a.strides[d];
      s.span_lo = std::min(s.span_lo, first);
      s.span_hi = std::max(s.span_hi, first + last);
    }
  }

  const std::vector<std::int64_t> tile = stencil_tile(root.extent);
  std::int64_t members = 1;
  for (auto x : tile) members *= x;
  std::size_t total = 0;
  for (auto& s : stages) {
    const graph_node& a = operand(s);
    std::int64_t elems = 1;
    s.box.resize(N);
    for (std::size_t d = 0; d < N; ++d) {
      s.box[d] = tile[d] + s.hi[d] - s.lo[d];
      elems *= s.box[d];
    }
    s.offset = total;
    s.bytes = std::size_t(elems) * a.elem_bytes;
    total += (s.bytes + 63) / 64 * 64;
  }
  std::size_t limit = t.scratch_max[0];
  if (t.emulated_gpu_scratch_max0 > 0) limit = std::min(limit, t.emulated_gpu_scratch_max0);
  if (total > limit) {
    k.notes.push_back(
        "stencil operands read from global memory: their tile + halo boxes would "
        "need " +
        std::to_string(total) + " B of team scratch, more than the " + std::to_string(limit) +
        " B a team has");
    return;
  }
  k.policy = "TeamPolicy";
  k.tile = tile;
  k.tiles.resize(N);
  k.league_size = 1;
  for (std::size_t d = 0; d < N; ++d) {
    k.tiles[d] = ceil_div(root.extent[d], tile[d]);
    k.league_size *= k.tiles[d];
  }
  k.logical_threads = int(members);
  k.team_size = int(std::min<std::int64_t>(members, t.max_team_size));
  k.flat_index = false;
  k.streaming_stores = false;
  k.scratch_level = 0;
  k.scratch_bytes[0] = total;
  k.phases = 2;
  std::string names;
  for (const auto& s : stages) names += (names.empty() ? "" : ", ") + s.operand;
  k.barriers = {{0, "tile_static memory",
                 "read-after-write on the staged halo box" +
                     std::string(stages.size() > 1 ? "es" : "") + " of " + names,
                 false, false}};
  k.mapping = "a team per output tile " + list_dims(tile) +
              ": phase 0 stages each stencil operand's tile + halo box in scratch (members "
              "stride over it: row-contiguous, coalesced), phase 1 evaluates the tile, every "
              "shift or section reading the box";
  for (const auto& s : stages) {
    const graph_node& a = operand(s);
    const std::string halo = halo_text(s.lo, s.hi, s.sections);
    const std::string readers =
        s.sections ? std::to_string(s.shifts.size()) + " overlapping sections read it, halo " +
                         halo + ", inside the array (no boundary)"
                   : std::to_string(s.shifts.size()) + " shifts read it, halo " + halo +
                         ", boundary " + s.boundary;
    k.buffers.push_back({s.operand + " (tile + halo)", a.dtype + "[" + list_dims(s.box) + "]",
                         memory_space_kind::scratch_level0, s.bytes, s.offset,
                         "staging: " + readers + ", loaded once per tile"});
  }
  k.stencil_stages = std::move(stages);
}

}  // namespace tessera::codegen
