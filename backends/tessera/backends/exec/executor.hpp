/// \file exec/executor.hpp
/// \brief Tier 1 execution, generic over the execution space: the plan of an expression from the
///        plan cache (lowered on first use), the temporaries the plan names, the device
///        evaluators, and each kernel handed to the backend's implementation of its family —
///        the family decided at compile time by the same fusion rule the plan used.
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/eval/evaluators.hpp>
#include <tessera/backends/kernels/operands.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/backends/temporary_pool.hpp>
#include <tessera/codegen/plan_cache.hpp>
#include <tessera/dsl/copy.hpp>
#include <tessera/dsl/expr/nodes.hpp>
#include <tessera/dsl/runtime.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace tessera::backends::exec {

using codegen::kernel_spec;
using eval::build_ctx;
using eval::temp_slot;

template <class T>
struct is_matmul : std::false_type {};
template <class A, class B>
struct is_matmul<matmul_node<A, B>> : std::true_type {};
template <class T>
struct is_tile_reduce : std::false_type {};
template <int R, int C, class Op, class A, bool M>
struct is_tile_reduce<tile_reduce_node<R, C, Op, A, M>> : std::true_type {};

/// True when E is transpose(plain array of element type T): the CPU kernel then moves blocks
/// from the operand straight to the output.
template <class E, class T>
struct is_plain_transpose : std::false_type {};
template <class A, class T>
struct is_plain_transpose<transpose_node<terminal<A>>, T>
    : std::is_same<std::remove_const_t<typename A::value_type>, T> {};

/// The target of the backend of Space, and the part of it plans depend on per process.
template <class Space>
codegen::target make_target() {
  return backend<Space>::make_target();
}
/// The part of a plan's cache key that comes from the execution space: which backend (plans
/// of Serial and OpenMP in one build differ) and its concurrency.
template <class Space>
std::uint64_t target_key(const Space& exec) {
  static constexpr std::uint64_t name_hash = [] {  // FNV-1a of the backend's name
    std::uint64_t h = 1469598103934665603ull;
    for (const char* c = backend<Space>::name; *c; ++c)
      h = (h ^ std::uint64_t(*c)) * 1099511628211ull;
    return h;
  }();
  return name_hash ^ (std::uint64_t(tessera::impl::concurrency_of(exec)) << 1);
}

/// Brings every array_view terminal of e to the device before kernels read it.
template <class E>
void sync_inputs(const E& e) {
  if constexpr (E::traits.kind == node_kind::terminal) {
    if constexpr (requires { e.a.sync_state(); })
      if (auto* s = e.a.sync_state()) s->to_device(false);
  } else {
    codegen::for_each_child(e, [](const auto& c) { sync_inputs(c); });
  }
}

/// A matmul operand as a raw matrix: the array itself (direct) or its temporary.
template <class A>
operands::matrix<typename A::value_type> matmul_operand(const A& a, int id, const build_ctx& b) {
  using T = typename A::value_type;
  operands::matrix<T> m;
  const auto x = a.get_extent();
  m.rows = x[0];
  m.cols = x[1];
  if constexpr (A::traits.kind == node_kind::terminal) {
    if (b.role(id) != codegen::node_role::materialized) {
      const auto r = a.a.ref();
      m.p = r.p;
      m.ld = r.s[0];
      return m;
    }
  }
  m.p = b.temps[id].template data<T>();
  m.ld = b.temps[id].cols;
  return m;
}

/// Runs kernel `ks` (planned as `kp`), rooted at node `e` (id `id`), into `out` (extent ext).
template <class Space, int S, class E, class OT, int N>
void run_kernel(const Space& exec, const E& e, int id, const kernel_spec& ks,
                const codegen::kernel_plan& kp, const build_ctx& b,
                const tessera::impl::strided_ref<OT, N>& out, const extent<N>& ext) {
  using B = backend<Space>;
  // The family of E's kernel, decided at compile time by the fusion rule on E's frontier —
  // the rule the fusion pass applied to E's graph (codegen/fusion_rule.hpp) — so only that
  // family's kernel is instantiated. A plan of another family is not E's plan.
  constexpr codegen::fused_kernel decided = codegen::fused_kernel_of<E>();
  if (kp.family != decided.family)
    throw error("tessera: internal error: kernel '" + kp.name + "' planned as " +
                codegen::to_string(kp.family) + ", but its expression lowers to " +
                codegen::to_string(decided.family));
  bool ran = false;
  if constexpr (decided.family == codegen::kernel_family::elementwise) {
    B::template elementwise<S>(exec, kp, eval::make_eval(e, id, b), out, ext);
    ran = true;
  } else if constexpr (decided.family == codegen::kernel_family::staged_transpose && N == 2) {
    B::template staged_transpose<S>(exec, kp, eval::make_eval(e, id, b), out, ext,
                                    is_plain_transpose<E, OT>::value);
    ran = true;
  } else if constexpr (decided.family == codegen::kernel_family::matmul && N == 2) {
    ran = eval::with_node(e, id, ks.core, [&](const auto& core, int cid) {
      using Core = std::remove_cvref_t<decltype(core)>;
      if constexpr (is_matmul<Core>::value) {
        const auto A = matmul_operand(core.a, eval::child_id<0, Core>(cid), b);
        const auto Bm = matmul_operand(core.b, eval::child_id<1, Core>(cid), b);
        B::template matmul<S>(exec, kp, A, Bm, eval::make_eval(e, id, b), out, ext);
      }
    });
  } else if constexpr (decided.family == codegen::kernel_family::tile_reduce && N == 2) {
    ran = eval::with_node(e, id, ks.core, [&](const auto& core, int cid) {
      using Core = std::remove_cvref_t<decltype(core)>;
      if constexpr (is_tile_reduce<Core>::value)
        B::template tile_reduce<S>(exec, kp, core,
                                   eval::make_eval(core.a, eval::child_id<0, Core>(cid), b),
                                   eval::make_eval(e, id, b), out, ext);
    });
  }
  if (!ran)
    throw error("tessera: internal error: kernel '" + kp.name + "' (" +
                codegen::to_string(kp.family) + ") found no " +
                (ks.core >= 0 ? "core node with id " + std::to_string(ks.core) : "kernel") +
                " in its expression");
}

/// Calls f(node, id) for the node with pre-order id `target` under `e`, instantiating f only
/// for node types a plan can compute into a temporary: matmul, transpose and tile_reduce nodes,
/// and any operand of a matmul.
template <bool ParentIsMatmul = false, class E, class F>
bool with_temporary_node(const E& e, int id, int target, F&& f) {
  if (id == target) {
    if constexpr (!is_elementwise(E::traits) || ParentIsMatmul) {
      f(e, id);
      return true;
    } else {
      return false;
    }
  }
  bool found = false;
  eval::for_each_child_id(e, id, [&](const auto& c, int cid) {
    using C = std::remove_cvref_t<decltype(c)>;
    if (!found && target >= cid && target < cid + codegen::node_count<C>())
      found = with_temporary_node<E::traits.kind == node_kind::matmul>(c, cid, target, f);
  });
  return found;
}

/// The temporaries and staged slots of one evaluation, sized by the expression type.
template <class E>
struct workspace {
  static constexpr int nodes = codegen::node_count<E>();
  std::array<temp_slot, nodes> temps{};
  int slot[nodes] = {};
  bool any = false;
  template <class T>
  tessera::impl::strided_ref<T, 2> allocate(int id, const extent<2>& x) {
    temp_slot& t = temps[std::size_t(id)];
    t.rows = x[0];
    t.cols = x[1];
    t.mem = backends::impl::temporary_pool<memory_space>::instance().take(std::size_t(x.size()) *
                                                                          sizeof(T));
    any = true;
    tessera::impl::strided_ref<T, 2> r;
    r.p = t.template data<T>();
    r.s[0] = x[1];
    r.s[1] = 1;
    return r;
  }
};

/// Runs every planned kernel of `e`; the last one writes `out` (extent ext), through a
/// temporary when the plan says the output aliases an input.
template <class Space, class E, class T, int N>
void execute(const Space& exec, const codegen::lowered& low, const E& e,
             const tessera::impl::strided_ref<T, N>& out, const extent<N>& ext) {
  constexpr int S = eval::staged_slots<E>;
  workspace<E> ws;
  // The temporary of an aliased output (from the temporary pool, as ws's).
  Kokkos::View<char*, memory_space> alias_tmp;
  sync_inputs(e);
  for (std::size_t k = 0; k < low.fusion.kernels.size(); ++k) {
    const kernel_spec& ks = low.fusion.kernels[k];
    const codegen::kernel_plan& kp = low.plan.kernels[k];
    int s = 0;
    for (int n : ks.staged) ws.slot[n] = s++;
    const build_ctx b{low.fusion.role.data(),
                      ks.root,
                      ks.root_role,
                      ws.temps.data(),
                      ws.slot,
                      kp.stencil_stages.empty() ? nullptr : &kp.stencil_stages,
                      kp.row_prefetches.empty() ? nullptr : &kp.row_prefetches};
    if (ks.writes_temporary) {
      const bool found = with_temporary_node(e, 0, ks.root, [&](const auto& node, int nid) {
        using Node = std::remove_cvref_t<decltype(node)>;
        if constexpr (Node::rank == 2) {
          const auto x = node.get_extent();
          const auto r = ws.template allocate<typename Node::value_type>(nid, x);
          run_kernel<Space, S>(exec, node, nid, ks, kp, b, r, x);
        }
      });
      if (!found)
        throw error("tessera: internal error: kernel '" + kp.name +
                    "' writes a temporary of a node that cannot have one");
    } else if (low.fusion.output_aliases_input) {
      alias_tmp = backends::impl::temporary_pool<memory_space>::instance().take(
          std::size_t(ext.size()) * sizeof(T));
      tessera::impl::strided_ref<T, N> r;
      r.p = reinterpret_cast<T*>(alias_tmp.data());
      tessera::impl::contiguous_strides(ext, r.s);
      run_kernel<Space, S>(exec, e, 0, ks, kp, b, r, ext);
      // The copy back: the plan's iterations, each a run of a row (CPUs) or an element.
      const codegen::kernel_plan& copy = low.plan.kernels.back();
      tessera::impl::copy_runs<T, T, N> f{r, out, ext};
      f.split(copy.league_size);
      bool copied = false;
      if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                               typename Space::memory_space>::accessible) {
        if (copy.inline_run) {         // small, on a host backend: on the calling thread
          tessera::impl::fence(exec);  // the kernel above may still write the temporary
          for (index_type q = 0; q < copy.league_size; ++q) f(q);
          copied = true;
        }
      }
      if (!copied) {
        backends::impl::launch(
            copy.label,
            Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, copy.league_size),
            f);
        ws.any = true;  // the copy reads the temporary until the fence below
      }
    } else {
      run_kernel<Space, S>(exec, e, 0, ks, kp, b, out, ext);
    }
  }
  // Temporaries go back to the temporary pool: let the kernels that use them finish first. Only
  // here, after that fence: an exception on the way (a kernel may still run) frees them
  // instead, as Views.
  if (ws.any) tessera::impl::fence(exec);
  if (ws.any || alias_tmp.data() != nullptr) {
    auto& pool = backends::impl::temporary_pool<memory_space>::instance();
    for (temp_slot& t : ws.temps)
      if (t.mem.data() != nullptr) pool.give_back(std::move(t.mem));
    if (alias_tmp.data() != nullptr) pool.give_back(std::move(alias_tmp));
  }
}

/// The plan of `e` assigned to memory `dst` (nullptr: a fresh array).
template <class Space, class E>
const codegen::lowered& plan_of(const Space& exec, const E& e,
                                const tessera::impl::captured_buffer* dst) {
  return codegen::plan_cache<E>::get(e, dst, target_key(exec), [] { return make_target<Space>(); });
}

/// The common part of every assignment: checks, plan lookup, execution into `dst` (an array or
/// a writable array_view).
template <class Space, class Dst, class E>
void assign_buffer(const Space& exec, const Dst& dst, const E& e) {
  constexpr int N = Dst::rank;
  static_assert(E::rank == N,
                "tessera::assign: an expression of another rank than the destination");
  static_assert(!std::is_const_v<typename Dst::value_type>,
                "tessera::assign: the destination is read-only (array_view<const T>)");
  if (!(dst.extent == e.get_extent()))
    throw shape_error("tessera::operator=: destination extent " + to_string(dst.extent) +
                      " differs from the expression's " + to_string(e.get_extent()));
  tessera::impl::require_runtime("tessera::operator=");
  if (dst.extent.size() == 0) return;
  if constexpr (requires { dst.sync_state(); })
    if (auto* s = dst.sync_state()) s->to_device(true);  // current (it may be read), then ours
  const auto mem = dst.describe_memory();
  const codegen::lowered& low = plan_of(exec, e, &mem);
  backends::impl::profiling_region region(low.plan.kernels[low.fusion.kernels.size() - 1].label);
  execute(exec, low, e, dst.ref(), dst.extent);
}

}  // namespace tessera::backends::exec
