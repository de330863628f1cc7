/// \file backend_fwd.hpp
/// \brief Declares `backends::backend<Space>`, the kernels and target of the backend that runs
///        execution space Space. Generic launch code names it; the definitions live in one
///        folder per backend (serial/, openmp/, cuda/, hip/, gpu_emulation/), included by
///        backend.hpp; `backend_contract` states what each provides.
#pragma once

#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/target.hpp>
#include <tessera/dsl/array.hpp>
#include <tessera/dsl/host_context.hpp>
#include <tessera/dsl/tile_mapping.hpp>

#include <concepts>

namespace tessera::backends {

/// The backend of Kokkos execution space Space: a specialisation satisfying backend_contract
/// (below; host/backend.hpp and gpu/backend.hpp implement it for the CPU and GPU families).
/// The primary template is a compile-time error naming the execution space (in the compiler's
/// "required from" note): an execution space without a backend folder cannot run Tessera code.
template <class Space>
struct backend {
  static_assert(tessera::impl::no_backend_for<Space>,
                "tessera: this Kokkos execution space has no Tessera backend (backends exist "
                "for " TESSERA_BACKEND_NAMES
                ": backends/<name>/); add a folder that specialises "
                "tessera::backends::backend and tessera::impl::tile_mapping for it");
};

namespace impl {
/// The smallest evaluator of the Tier 1 evaluator interface (eval/evaluators.hpp), to check
/// that a backend declares every kernel family.
struct probe_evaluator {
  template <class C>
  TESSERA_INLINE float flat(const C&, index_type) const {
    return 0.f;
  }
  template <class C, int N>
  TESSERA_INLINE float at(const C&, const index<N>&) const {
    return 0.f;
  }
  template <class C>
  TESSERA_INLINE float at(const C&, index_type, index_type) const {
    return 0.f;
  }
  template <class F>
  TESSERA_INLINE void visit_staged(F&&) const {}
};
}  // namespace impl

/// What the backend of execution space Space provides: its name, its target description for
/// the code generator, the chunk sizes of whole-array reductions, and the Tier 1 kernel
/// families (each launching a plan of its family exactly as planned); and the tile mapping of
/// Space (dsl/tile_mapping.hpp). backend.hpp checks it for every backend it includes.
template <class Space>
concept backend_contract = requires(const Space& exec, const codegen::kernel_plan& plan,
                                    const impl::probe_evaluator& ev,
                                    const tessera::impl::strided_ref<float, 1>& out1,
                                    const tessera::impl::strided_ref<float, 2>& out2,
                                    const extent<1>& x1, const extent<2>& x2) {
  { backend<Space>::name } -> std::convertible_to<const char*>;
  { backend<Space>::make_target() } -> std::same_as<codegen::target>;
  { backend<Space>::reduce_chunk } -> std::convertible_to<index_type>;
  { backend<Space>::reproducible_chunk } -> std::convertible_to<index_type>;
  backend<Space>::template elementwise<1>(exec, plan, ev, out1, x1);
  backend<Space>::template staged_transpose<1>(exec, plan, ev, out2, x2, false);
}
&&requires(const typename tessera::impl::tile_mapping<Space>::member_type& team,
           tessera::impl::fence_kind f) {
  { tessera::impl::tile_mapping<Space>::thread_per_logical } -> std::convertible_to<bool>;
  { tessera::impl::tile_mapping<Space>::template local_slots<4> } -> std::convertible_to<int>;
  tessera::impl::tile_mapping<Space>::barrier(team, f);
  tessera::impl::tile_mapping<Space>::fence(team, f);
  tessera::impl::tile_mapping<Space>::thread_fence(f);
};

}  // namespace tessera::backends
