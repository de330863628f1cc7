/// \file lower.hpp
/// \brief The lowering driver: runs the passes in order on an expression graph and returns the
///        program plan (plus the fusion decisions the executor needs). Set the environment
///        variable TESSERA_LOG_PASSES=1 to print the plan after each pass.
#pragma once

#include <tessera/codegen/passes/barriers.hpp>
#include <tessera/codegen/passes/fusion.hpp>
#include <tessera/codegen/passes/mapping.hpp>
#include <tessera/codegen/passes/phases.hpp>
#include <tessera/codegen/passes/scratch.hpp>

#include <cstdio>
#include <cstdlib>

namespace tessera::codegen {

struct lowered {
  fusion_result fusion;
  program_plan plan;
};

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

/// \param g [in] the expression, \param t [in] target, \param dst [in] output storage or nullptr
inline lowered lower(const expr_graph& g, const target& t, const void* dst) {
  const bool log = std::getenv("TESSERA_LOG_PASSES") != nullptr;
  lowered out;
  // 1. fusion
  out.fusion = fuse(g, dst);
  if (log)
    std::fprintf(stderr, "[tessera] after fusion: %zu kernel(s)\n", out.fusion.kernels.size());
  for (const auto& ks : out.fusion.kernels) {
    kernel_plan k;
    k.name = std::string(kind_name(ks.kind)) + ": " + describe_node(g, ks.root);
    k.backend = t.backend;
    // 2. phases
    const kernel_body body = describe_kernel(g, ks, t);
    k.phases = phase_count(body.program);
    // 3. barriers
    k.barriers = insert_barriers(body.program);
    if (!t.thread_per_logical)
      for (auto& b : k.barriers) b.hazard += " (one member per team: program order)";
    // 4. scratch placement
    place_scratch(k, body, t);
    // 5. thread mapping
    map_threads(k, g, ks, t);
    for (int in : ks.inputs)
      k.buffers.push_back(
          {g.nodes[in].kind == node_kind::terminal ? g.nodes[in].label : "tmp" + std::to_string(in),
           g.nodes[in].dtype, memory_space_kind::global, 0, 0, "input"});
    k.buffers.push_back({ks.writes_temporary ? "tmp" + std::to_string(ks.root) : "out",
                         g.nodes[ks.root].dtype, memory_space_kind::global, 0, 0, "output"});
    k.notes = body.notes;
    if (!ks.writes_temporary && out.fusion.output_aliases_input)
      k.notes.push_back(
          "the output is also an input of a non-elementwise node: computed into a "
          "temporary, then copied");
    if (log) std::fprintf(stderr, "[tessera] after passes:\n%s", to_string(k).c_str());
    out.plan.kernels.push_back(std::move(k));
  }
  return out;
}

}  // namespace tessera::codegen
