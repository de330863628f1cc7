/// \file fusion_rule.hpp
/// \brief The fusion rule, once: given the frontier of a kernel's root — the nodes reached from
///        it through elementwise nodes only, in pre-order — which node is the kernel's core and
///        which kernel family it is. The fusion pass applies it to expression graphs at run time
///        (passes/fusion.hpp); the executor applies it to expression types at compile time
///        (build_graph.hpp: fused_kernel_of<E>) to instantiate only that family's kernel.
///
/// Rule: the core with the highest `core_precedence` (the first on a tie) is the core, and its
/// family the kernel's; without a core, the first staged node gives the family (every staged
/// node of the frontier is then staged in the kernel); otherwise the kernel is elementwise. Every
/// other frontier node is computed into a temporary by a kernel of its own.
/// Example: relu(matmul(A, B) + transpose(C)) has frontier {matmul, transpose}: a matmul kernel
/// (transpose(C) materialized first); transpose(A) + B has {transpose}: a staged transpose.
#pragma once

#include <tessera/dsl/expr/node_kind.hpp>

namespace tessera::codegen {

/// The fusion decision for one kernel, from its frontier.
struct fused_kernel {
  int core = -1;  ///< index of the core in the frontier (-1: none)
  kernel_family family = kernel_family::elementwise;
};

/// \param f [in] traits of the frontier nodes, in pre-order; \param n [in] their number
constexpr fused_kernel fuse_frontier(const node_traits* f, int n) {
  fused_kernel r;
  for (int i = 0; i < n; ++i)
    if (f[i].role == fusion_role::core &&
        (r.core < 0 || f[i].core_precedence > f[r.core].core_precedence))
      r.core = i;
  if (r.core >= 0) {
    r.family = f[r.core].family;
    return r;
  }
  for (int i = 0; i < n; ++i)
    if (f[i].role == fusion_role::staged) {
      r.family = f[i].family;
      return r;
    }
  return r;
}

/// True when frontier node `t` is staged inside a kernel decided as `k` (no core, staged role).
constexpr bool staged_in(const fused_kernel& k, const node_traits& t) {
  return k.core < 0 && t.role == fusion_role::staged;
}

}  // namespace tessera::codegen
