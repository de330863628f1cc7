/// \file reduce/launch.hpp
/// \brief How a whole-array reduction launches: the chunk sizes from the backend, one Kokkos
///        parallel_reduce over chunks with a custom reducer (or, in reproducible mode, a
///        parallel_for into per-chunk partials combined on the host in a fixed order), small
///        reductions on Kokkos::Serial. No chunk or tile ever waits for another: the only
///        synchronisation is the end of the launch, which Kokkos provides.
#pragma once

#include <tessera/backends/last_plan.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/backends/reduce/fold.hpp>
#include <tessera/codegen/passes/reduction.hpp>
#include <tessera/codegen/plan_cache.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/runtime.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace tessera {

/// Tag selecting bitwise-reproducible reductions: `sum(e, tessera::reproducible)`.
struct reproducible_t {
  explicit constexpr reproducible_t() = default;
};
/// See reproducible_t.
inline constexpr reproducible_t reproducible{};

namespace backends::impl {

/// Elements folded by one functor call, from the backend: 2^16 on CPUs (256 KiB of floats:
/// large enough to amortise a chunk's start and end, small enough to balance 2^28 elements over
/// many threads, folded with SIMD lanes), 8 on GPUs (loads in flight; Kokkos reduces the
/// calls' results across threads in a tree). Fixed,
/// independent of the thread count, which is what makes reproducible mode reproducible.
template <class Space>
inline constexpr index_type chunk_elements = backend<Space>::reduce_chunk;
/// Chunk size of reproducible mode (on GPUs the per-element chunk would make one partial per
/// element, so longer chunks are folded by one thread each there).
template <class Space>
inline constexpr index_type reproducible_chunk_elements = backend<Space>::reproducible_chunk;

/// Kokkos custom reducer combining chunk folds with the rule's merge. Works with Kokkos 3.x
/// (which also joins through volatile references) and 4.x.
template <class Rule>
class fold_reducer {
 public:
  using reducer = fold_reducer;
  using value_type = partial_fold<typename Rule::acc_type>;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace>;

  KOKKOS_INLINE_FUNCTION fold_reducer(const Rule& rule, value_type& result)
      : rule_(rule), value_(&result) {}

  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const {
    if (!src.set) return;
    if (!dest.set) {
      dest = src;
      return;
    }
    rule_.merge(dest.a, src.a);
  }
#if !TESSERA_KOKKOS_VERSION_AT_LEAST(4, 0)
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dest,
                                   const volatile value_type& src) const {
    value_type d, s;
    copy_bytes(&d, &dest);
    copy_bytes(&s, &src);
    join(d, s);
    copy_bytes(&dest, &d);
  }
#endif
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    v.a = typename Rule::acc_type{};
    v.set = false;
  }
  KOKKOS_INLINE_FUNCTION value_type& reference() const {
    return *value_.data();
  }
  KOKKOS_INLINE_FUNCTION result_view_type view() const {
    return value_;
  }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const {
    return true;
  }

 private:
#if !TESSERA_KOKKOS_VERSION_AT_LEAST(4, 0)
  template <class D, class S>
  KOKKOS_INLINE_FUNCTION static void copy_bytes(D* dst, S* src) {
    static_assert(std::is_trivially_copyable_v<value_type>);
    auto* d = reinterpret_cast<volatile unsigned char*>(dst);
    auto* s = reinterpret_cast<const volatile unsigned char*>(src);
    for (std::size_t i = 0; i < sizeof(value_type); ++i) d[i] = s[i];
  }
#endif
  Rule rule_;
  result_view_type value_;
};

template <class E>
extent<E::rank> checked_extent(const char* fn, const E& e) {
  const extent<E::rank> x = e.get_extent();
  for (int d = 0; d < E::rank; ++d)
    if (x[d] < 0) throw shape_error(std::string(fn) + ": negative extent " + to_string(x));
  return x;
}
template <class E>
extent<E::rank> checked_nonempty_extent(const char* fn, const E& e) {
  const extent<E::rank> x = checked_extent(fn, e);
  if (x.size() == 0)
    throw shape_error(std::string(fn) + ": empty extent " + to_string(x) +
                      "; the result is undefined without elements");
  return x;
}

/// Calls f(operand): for an array or array_view without a host hook (checked mode's dry run
/// installs one), its raw_operand, made current on the device first as Tier 1 does; else e.
template <class E, class F>
decltype(auto) with_fold_operand(const E& e, F&& f) {
  if constexpr (requires {
                  e.ref();
                  e.has_hook();
                }) {
    if (!e.has_hook()) {
      if constexpr (requires { e.sync_state(); })
        if (auto* s = e.sync_state()) s->to_device(false);
      using T = std::remove_const_t<typename E::value_type>;
      const auto ref = e.ref();
      raw_operand<T, E::rank> op;
      op.r.p = ref.p;
      for (int d = 0; d < E::rank; ++d) op.r.s[d] = ref.s[d];
      return f(op);
    }
  }
  return f(e);
}

/// Plans the reduction of n > 0 elements of type T with Rule for `exec`'s target.
template <class Space, class T, class Rule>
codegen::kernel_plan plan_reduction_of(const char* name, index_type n, bool reproducible) {
  codegen::reduction_desc d;
  d.name = name;
  d.dtype = tessera::impl::scalar_type_name<T>();
  d.elem_bytes = std::int64_t(sizeof(T));
  d.elements = n;
  d.accumulation = Rule::describe;
  d.lanes = Rule::lanes;
  d.reproducible = reproducible;
  d.streams = folds_streams<Space, T, Rule>;
  return codegen::plan_reduction(d, backend<Space>::make_target());
}

/// The plan of reducing n > 0 elements of type T with Rule on `exec` (codegen's
/// plan_reduction on the backend's target), this thread's last one for the same Space, T,
/// Rule, name, size, mode and concurrency (last_plan): a repeated reduction of one size costs a
/// comparison, not a planning. The reference stays valid until this thread's next call with
/// the same Space, T and Rule. `name` is a string literal (compared by address).
template <class Space, class T, class Rule>
const codegen::kernel_plan& reduction_plan(const Space& exec, const char* name, index_type n,
                                           bool reproducible) {
  struct tag;
  const std::array<std::int64_t, 4> key = {std::int64_t(reinterpret_cast<std::uintptr_t>(name)), n,
                                           reproducible ? 1 : 0,
                                           tessera::impl::concurrency_of(exec)};
  return last_plan<tag, codegen::kernel_plan>(
      key, [&] { return plan_reduction_of<Space, T, Rule>(name, n, reproducible); });
}

/// The plan's prefetch distance in elements of the folded operand (0: none).
template <class Folder>
index_type prefetch_elements(const codegen::kernel_plan& k) {
  return index_type(k.reduce_prefetch_bytes) / index_type(sizeof(typename Folder::value_type));
}

/// Throws: plan `k` folds chunks of another size than `chunk`, the one the fold of Space is
/// compiled for.
template <class Space>
[[noreturn]] TESSERA_HOST_NOINLINE void throw_reduction_chunk(const codegen::kernel_plan& k,
                                                              index_type chunk) {
  throw plan_error("tessera: the reduction kernel of the " + std::string(backend<Space>::name) +
                   " backend folds chunks of " + std::to_string(chunk) + " elements; plan '" +
                   k.name + "' says " + std::to_string(k.reduce_chunk));
}

/// The plan's chunk must be the one the fold of Space is compiled for.
template <class Space>
void check_reduction_plan(const codegen::kernel_plan& k, index_type chunk) {
  if (k.reduce_chunk != chunk) [[unlikely]]
    throw_reduction_chunk<Space>(k, chunk);
}

/// Folds every element of e (size n > 0) with rule as plan `k` says: through parallel_reduce
/// on exec, or on the calling thread after a fence of exec, in one run, when the plan folds
/// inline (one chunk, or one thread, on a host backend); the result is a host value.
template <class Space, class E, class Rule>
typename Rule::acc_type fold_all_direct(const Space& exec, const codegen::kernel_plan& k,
                                        const E& e, const extent<E::rank>& x, const Rule& rule) {
  using folder = chunk_folder<Space, E, Rule>;
  constexpr index_type chunk = chunk_elements<Space>;
  check_reduction_plan<Space>(k, chunk);
  const index_type n = x.size();
  tessera::impl::require_runtime(k.label.c_str());
  const profiling_region region(k.label);
  if constexpr (host_readable_space<Space>) {
    if (k.inline_run) {
      tessera::impl::fence(exec);  // earlier kernels on exec may still write the operand
      const folder f{e, rule, x, prefetch_elements<folder>(k), k.reduce_from_memory};
      return k.reduce_streams > 1 ? f.fold_streams(0, n, k.reduce_streams) : f.fold(0, n);
    }
  }
  partial_fold<typename Rule::acc_type> result{};
  Kokkos::parallel_reduce(
      k.label, Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, k.league_size),
      fold_chunks<folder, (chunk < 2 * Rule::lanes ? chunk : 0)>{
          folder{e, rule, x, prefetch_elements<folder>(k), k.reduce_from_memory}, n, chunk},
      fold_reducer<Rule>(rule, result));
  tessera::impl::fence(exec);
  return result.a;
}

/// Folds every element of e (size n > 0) with rule into per-chunk partials, then combines the
/// partials on the host by a fixed pairwise tree: (p0+p1)+(p2+p3), ... Bitwise reproducible.
template <class Space, class E, class Rule>
typename Rule::acc_type fold_all_direct(const Space& exec, reproducible_t,
                                        const codegen::kernel_plan& k, const E& e,
                                        const extent<E::rank>& x, const Rule& rule) {
  using folder = chunk_folder<Space, E, Rule>;
  using acc = typename Rule::acc_type;
  constexpr index_type chunk = reproducible_chunk_elements<Space>;
  check_reduction_plan<Space>(k, chunk);
  const index_type n = x.size();
  const index_type chunks = k.league_size;
  tessera::impl::require_runtime(k.label.c_str());
  using view = Kokkos::View<acc*, typename Space::memory_space>;
  auto p = [&] {  // the region: the kernel and the partials' copy to the host
    const profiling_region region(k.label);
    view partials(Kokkos::view_alloc(Kokkos::WithoutInitializing, k.label + " partials"), chunks);
    // With streams (never with interleaved chunks: the plan), each iteration folds that many
    // consecutive chunks (fold_chunks_to).
    const int streams = k.reduce_streams > 1 ? k.reduce_streams : 1;
    Kokkos::parallel_for(k.label,
                         Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(
                             exec, 0, (chunks + streams - 1) / streams),
                         fold_chunks_to<folder, view>{
                             folder{e, rule, x, prefetch_elements<folder>(k), k.reduce_from_memory},
                             partials, n, chunk, k.reduce_interleaved ? chunks : 0, streams});
    tessera::impl::fence(exec);
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), partials);
  }();
  for (index_type w = 1; w < chunks; w *= 2)
    for (index_type i = 0; i + w < chunks; i += 2 * w) rule.merge(p(i), p(i + w));
  return p(0);
}

/// fold_all_direct on e, or on its raw_operand (with_fold_operand), as planned.
template <class Space, class E, class Rule>
typename Rule::acc_type fold_all(const Space& exec, const char* name, const E& e,
                                 const extent<E::rank>& x, const Rule& rule) {
  const auto& k = reduction_plan<Space, readable_value_t<E>, Rule>(exec, name, x.size(), false);
  return with_fold_operand(e,
                           [&](const auto& op) { return fold_all_direct(exec, k, op, x, rule); });
}
template <class Space, class E, class Rule>
typename Rule::acc_type fold_all(const Space& exec, reproducible_t, const char* name, const E& e,
                                 const extent<E::rank>& x, const Rule& rule) {
  const auto& k = reduction_plan<Space, readable_value_t<E>, Rule>(exec, name, x.size(), true);
  return with_fold_operand(
      e, [&](const auto& op) { return fold_all_direct(exec, reproducible, k, op, x, rule); });
}

}  // namespace backends::impl
}  // namespace tessera
