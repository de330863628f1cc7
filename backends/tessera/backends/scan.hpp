/// \file scan.hpp
/// \brief Tier 1 prefix scans along one dimension: `inclusive_scan(e, dim, op)` and
///        `exclusive_scan(e, dim, init, op)` of any readable (array, array_view) or array
///        expression, into a new array or into a destination (in place too); and their plans.
///
/// Each line along the scanned dimension is scanned independently, in order: element k of
/// the result is x_0 (op) x_1 (op) ... (op) x_k (inclusive) or init (op) x_0 (op) ... (op)
/// x_k-1 (exclusive), for every line. Element-wise producers are fused: `inclusive_scan(A *
/// B)` reads A and B once, inside the scan (non-elementwise parts such as matmul are computed
/// first). How the lines map onto the execution space: codegen/passes/scan.hpp.
#pragma once

#include <tessera/backends/exec/reader.hpp>
#include <tessera/backends/kernels/team_policy.hpp>
#include <tessera/backends/reduce/launch.hpp>
#include <tessera/backends/scan/kernels.hpp>
#include <tessera/codegen/passes/scan.hpp>
#include <tessera/dsl/copy.hpp>
#include <tessera/dsl/runtime.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace tessera {

/// Which scan plan(scan_kind, ...) and explain(scan_kind, ...) describe.
enum class scan_kind { inclusive, exclusive };

namespace backends::impl {

/// A readable or an array expression (what the scans and histograms read).
template <class E>
concept scan_source = readable<E> || requires {
  typename E::tessera_expression_tag;
};

template <class E>
struct source_value {
  using type = typename E::value_type;
};
template <class E>
requires readable<E>
struct source_value<E> {
  using type = readable_value_t<E>;
};
template <class E>
using source_value_t = std::remove_const_t<typename source_value<E>::type>;

/// Calls f(x) with what a kernel reads of e: an array or array_view as its raw_operand, an
/// expression through an expression_reader (its non-elementwise parts materialized first).
template <class Space, class E, class F>
decltype(auto) with_source(const Space& exec, const E& e, F&& f) {
  if constexpr (requires { typename E::tessera_expression_tag; }) {
    exec::reader_scope<Space, E> scope(exec, e);
    return f(scope.reader);
  } else {
    return with_fold_operand(e, f);
  }
}

/// The start of a Tier 1 plan of source e on the default execution space: e's extent (checked)
/// and, for a non-empty expression, the kernels computing its non-elementwise parts first.
/// \throws shape_error on a negative extent; usage_error when Kokkos is not running
template <class E>
std::pair<codegen::program_plan, extent<E::rank>> source_plan(const char* fn, const E& e) {
  tessera::impl::require_runtime(fn);
  const extent<E::rank> x = checked_extent(fn, e);
  codegen::program_plan p;
  if constexpr (requires { typename E::tessera_expression_tag; })
    if (x.size() > 0) exec::materialization_plans(tessera::impl::default_instance(), e, p);
  return {std::move(p), x};
}

/// The dimension `dim` names in an extent of rank N (negative: counted from the last, as
/// NumPy's axis). \throws shape_error naming fn, dim and the extent
template <int N>
int scan_dimension(const char* fn, int dim, const extent<N>& x) {
  if (dim < -N || dim >= N)
    throw shape_error(std::string(fn) + ": dimension " + std::to_string(dim) +
                      " is not a dimension of extent " + to_string(x) + " (rank " +
                      std::to_string(N) + "; use 0.." + std::to_string(N - 1) +
                      ", or -1 for the last)");
  return dim < 0 ? dim + N : dim;
}

template <class Op>
std::string operator_name() {
  switch (ops::reduction_of<Op>) {
    case ops::reduction_kind::sum:
      return "sum";
    case ops::reduction_kind::product:
      return "product";
    case ops::reduction_kind::min:
      return "min";
    case ops::reduction_kind::max:
      return "max";
    default:
      return "a user operator";
  }
}

template <class Space, class T, class A, class Op, int N>
codegen::kernel_plan scan_kernel_plan(const Space&, bool exclusive, const extent<N>& x, int d,
                                      bool reads_output) {
  codegen::scan_desc s;
  s.name = exclusive ? "exclusive_scan" : "inclusive_scan";
  s.dtype = tessera::impl::scalar_type_name<T>();
  s.acc = std::is_same_v<A, T>
              ? "in the element type, " + s.dtype
              : std::string("double accumulator, each prefix rounded once to ") + s.dtype;
  s.acc_bytes = sizeof(A);
  s.carry_bytes = sizeof(scan_carry<A>);
  s.op = operator_name<Op>();
  for (int q = 0; q < N; ++q) s.extent.push_back(x[q]);
  s.dim = d;
  s.elem_bytes = sizeof(T);
  s.reads_output = reads_output;
  return codegen::plan_scan(s, backend<Space>::make_target());
}

/// scan_kernel_plan, this thread's last one for the same Space, T, A, Op and rank, mode,
/// extent, dimension, reads_output and concurrency (last_plan): a repeated scan of one shape
/// costs a comparison, not a planning (0.65 us of a 16-element scan's 0.7 on a Zen 4 core).
/// The reference stays valid until this thread's next call with the same Space, T, A, Op, N.
template <class Space, class T, class A, class Op, int N>
const codegen::kernel_plan& cached_scan_kernel_plan(const Space& exec, bool exclusive,
                                                    const extent<N>& x, int d, bool reads_output) {
  struct tag;
  std::array<std::int64_t, N + 4> key = {exclusive ? 1 : 0, d, reads_output ? 1 : 0,
                                         tessera::impl::concurrency_of(exec)};
  for (int q = 0; q < N; ++q) key[std::size_t(4 + q)] = x[q];
  return last_plan<tag, codegen::kernel_plan>(
      key, [&] { return scan_kernel_plan<Space, T, A, Op>(exec, exclusive, x, d, reads_output); });
}

/// True when dst's memory is read by e (in place): its lines are in cache, so no streaming.
template <class E, class D>
bool scan_reads_output(const E& e, const D& dst) {
  const auto mem = dst.describe_memory();
  if constexpr (requires { typename E::tessera_expression_tag; }) {
    const codegen::expr_graph g = codegen::build_graph(e, &mem);
    for (const auto& n : g.nodes)
      if (n.with_output != codegen::overlap::none) return true;
    return false;
  } else if constexpr (requires { e.describe_memory(); }) {
    return codegen::classify(e.describe_memory(), &mem) != codegen::overlap::none;
  } else {
    return true;  // unknown: assume so
  }
}

/// True when writing dst while reading e (element by element, each read before the same
/// element is written) could read a written element: dst overlaps e's memory other than as
/// the very elements read at the index written, or an expression reads neighbours (shift).
template <class E, class D>
bool scan_needs_temporary(const E& e, const D& dst) {
  const auto mem = dst.describe_memory();
  if constexpr (requires { typename E::tessera_expression_tag; }) {
    const codegen::expr_graph g = codegen::build_graph(e, &mem);
    bool neighbours = false, overlap = false, partial = false;
    for (const auto& n : g.nodes) {
      neighbours = neighbours || n.traits.reads_neighbours;
      overlap = overlap || n.with_output != codegen::overlap::none;
      partial = partial || n.with_output == codegen::overlap::partial;
    }
    return partial || (overlap && neighbours);
  } else if constexpr (requires { e.describe_memory(); }) {
    return codegen::classify(e.describe_memory(), &mem) == codegen::overlap::partial;
  } else {
    return false;  // a user readable: its memory is unknown
  }
}

/// Runs the scan planned as k of source x (a raw_operand, readable or expression_reader) into
/// out.
template <class Space, class T, class A, class X, class Op, int N>
void run_scan(const Space& exec, const codegen::kernel_plan& k, const X& x,
              const tessera::impl::strided_ref<T, N>& out, const extent<N>& ext, int d,
              const Op& op, const A& init, bool has_init, bool exclusive) {
  using core = scan_core<Space, X, T, A, Op, N>;
  const codegen::line_shape s = codegen::lines_of(
      [&] {
        std::vector<std::int64_t> v;
        for (int q = 0; q < N; ++q) v.push_back(ext[q]);
        return v;
      }(),
      d);
  const core c{x,  out,  ext,      d,         s.length,          s.inner,
               op, init, has_init, exclusive, k.streaming_stores};
  tessera::impl::require_runtime(k.label.c_str());
  const profiling_region region(k.label);
  if (k.scan_line_block > 0) {
    if (k.scan_line_block > max_scan_line_block)
      throw plan_error("tessera: scan plan '" + k.name + "' walks " +
                       std::to_string(k.scan_line_block) + " lines per iteration; the kernel " +
                       "walks at most " + std::to_string(max_scan_line_block));
    const index_type per_outer = (s.inner + k.scan_line_block - 1) / k.scan_line_block;
    const scan_lines<core> f{c, k.scan_line_block, per_outer};
    if constexpr (host_readable_space<Space>) {
      if (k.inline_run) {
        tessera::impl::fence(exec);  // earlier kernels on exec may still write the operand
        for (index_type i = 0; i < k.league_size; ++i) f(i);
        return;
      }
    }
    Kokkos::parallel_for(
        k.label, Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, k.league_size),
        f);
  } else if (k.scan_carry_passes) {
    const index_type chunk = k.reduce_chunk, per_line = (s.length + chunk - 1) / chunk;
    const index_type lines = s.outer * s.inner;
    using MS = typename Space::memory_space;
    const Kokkos::View<A**, Kokkos::LayoutRight, MS> totals(
        Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, k.label + " chunk totals"), lines,
        per_line);
    tessera::impl::strided_ref<A, 2> t{totals.data(), {per_line, 1}};
    const Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>> chunks(exec, 0, k.league_size);
    Kokkos::parallel_for(k.label + " (chunk totals)", chunks,
                         scan_chunk_totals<core>{c, chunk, per_line, t});
    // The totals' inclusive scan along each line, in place: planned like any scan (the
    // segmented form again when the lines are long), so the recursion ends in the line form.
    const extent<2> tx(lines, per_line);
    raw_operand<A, 2> tin;
    tin.r.p = t.p;
    tin.r.s[0] = per_line;
    tin.r.s[1] = 1;
    // Planned directly, not through this thread's last plan, which `k` may be.
    const codegen::kernel_plan k2 = scan_kernel_plan<Space, A, A, Op>(exec, false, tx, 1, true);
    run_scan<Space>(exec, k2, tin, t, tx, 1, op, A{}, false, false);
    tessera::impl::strided_ref<const A, 2> prefix{t.p, {per_line, 1}};
    Kokkos::parallel_for(k.label, chunks,
                         scan_chunks_from_carries<core>{c, chunk, per_line, prefix});
  } else if (k.scan_rounds) {
    const index_type chunk = k.reduce_chunk, per_line = (s.length + chunk - 1) / chunk;
    using policy = Kokkos::TeamPolicy<Space>;
    const int P = teams_run_serially(exec) ? 1 : k.team_size;
    const scan_rounds<core, typename policy::member_type> f{scan_segments<core>{c, chunk, per_line},
                                                            s.outer * s.inner * per_line};
    Kokkos::parallel_for(
        k.label,
        policy(exec, 1, P)
            .set_scratch_size(0, Kokkos::PerTeam(k.scratch_bytes[0] + alignof(scan_carry<A>))),
        f);
  } else {
    const index_type chunk = k.reduce_chunk;
    const scan_segments<core> f{c, chunk, (s.length + chunk - 1) / chunk};
    Kokkos::parallel_scan(
        k.label, Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, k.league_size),
        f);
  }
  tessera::impl::fence(exec);
}

/// The scans' common part: checks (before anything runs), aliasing, launch.
template <class Space, class E, class D, class U, class Op>
void scan_into(const Space& exec, const char* fn, const E& e, const D& dst, int dim, const U& init,
               bool has_init, bool exclusive, const Op& op) {
  constexpr int N = D::rank;
  using T = typename D::value_type;
  using S = source_value_t<E>;
  using A = scan_acc_t<T, Op>;
  static_assert(E::rank == N, "tessera scan: the source and the destination have different ranks");
  static_assert(!std::is_const_v<T>, "tessera scan: the destination is read-only");
  static_assert(std::is_trivially_copyable_v<A>,
                "tessera scan: the element type must be "
                "trivially copyable");
  static_assert(std::is_invocable_v<const Op&, const A&, const A&>,
                "tessera scan: op must be callable as op(T, T)");
  static_assert(std::is_convertible_v<S, A>,
                "tessera scan: the source's elements must convert to the destination's type");
  const extent<N> x = checked_extent(fn, e);
  const int d = scan_dimension(fn, dim, x);
  if (!(dst.extent == x))
    throw shape_error(std::string(fn) + ": the destination's extent " + to_string(dst.extent) +
                      " differs from the source's " + to_string(x));
  tessera::impl::require_runtime(fn);
  if (x.size() == 0) return;
  if (scan_needs_temporary(e, dst)) {
    array<T, N> tmp(x);
    scan_into(exec, fn, e, tmp, d, init, has_init, exclusive, op);
    copy(tmp, dst);
    return;
  }
  if constexpr (requires { dst.sync_state(); })
    if (auto* st = dst.sync_state()) st->to_device(true);
  const codegen::kernel_plan& k =
      cached_scan_kernel_plan<Space, T, A, Op>(exec, exclusive, x, d, scan_reads_output(e, dst));
  with_source(exec, e, [&](const auto& src) {
    run_scan<Space>(exec, k, src, dst.ref(), x, d, op, A(init), has_init, exclusive);
  });
}

}  // namespace backends::impl

/// Inclusive prefix scan of `e` along dimension `dim`, into `dst`: for every line along dim,
/// element k of dst is x_0 (op) x_1 (op) ... (op) x_k (std::inclusive_scan on each line).
///
/// \param exec [in] the execution space instance
/// \param e [in] array, array_view, user readable or array expression of rank N (1..3),
///        element type convertible to dst's T; expressions are read inside the scan (fused)
/// \param dst [in] array<T,N> or array_view<T,N> of e's extent; may be e itself (in place: each
///        element is read before it is written) — any other overlap goes through a temporary
/// \param dim the scanned dimension, 0..N-1, or negative from the last (-1, the default)
/// \param op associative operator callable in kernels as op(T, T) (tessera::plus<> by default;
///        multiplies<>, minimum<>, maximum<>, a user's functor); commutativity is not needed
/// Accumulation: in T, except sums of float, which accumulate in double and round each
/// prefix once (error at most about n 2^-53 of the line's sum of magnitudes, against
/// n 2^-24 for a float loop). The combination is grouped differently on CPUs (vector blocks)
/// and GPUs (Kokkos' scan tree): integer, min and max results are exact everywhere; floating
/// sums and products may differ in the last bits of the accumulator.
/// \throws shape_error when dim is not a dimension of e, when dst's extent differs, or on a
///         negative extent; usage_error when Kokkos is not running — before anything runs
///         (dst untouched)
/// Cost: one pass (read n, write n) on Serial and on one thread; two reads on threaded
/// spaces when the lines are too few to spread (Kokkos parallel_scan). See plan(scan_kind, ...).
/// Source: C++17 std::inclusive_scan; seed scans (OpenCL/C++ AMP work-group prefix sums) as
/// tile collectives: inclusive_scan_over_tile.
template <launchable_space Space, backends::impl::scan_source E, class D,
          class Op = tessera::plus<>>
requires impl::is_array_like<D>::value void inclusive_scan(const Space& exec, const E& e,
                                                           const D& dst, int dim = -1,
                                                           const Op& op = {}) {
  using A = backends::impl::scan_acc_t<typename D::value_type, Op>;
  backends::impl::scan_into(exec, "tessera::inclusive_scan", e, dst, dim, A{}, false, false, op);
}
/// inclusive_scan with an initial value: element k is init (op) x_0 (op) ... (op) x_k.
template <launchable_space Space, backends::impl::scan_source E, class D, class U, class Op>
requires impl::is_array_like<D>::value void inclusive_scan(const Space& exec, const E& e,
                                                           const D& dst, int dim, const Op& op,
                                                           const U& init) {
  backends::impl::scan_into(exec, "tessera::inclusive_scan", e, dst, dim, init, true, false, op);
}

/// Exclusive prefix scan along dim into dst: element k of each line is init (op) x_0 (op) ...
/// (op) x_k-1, element 0 is init (std::exclusive_scan on each line). Parameters, accuracy,
/// errors and cost as inclusive_scan; init converts to T (0 for the sum by default).
template <launchable_space Space, backends::impl::scan_source E, class D, class U, class Op>
requires impl::is_array_like<D>::value void exclusive_scan(const Space& exec, const E& e,
                                                           const D& dst, int dim, const U& init,
                                                           const Op& op) {
  backends::impl::scan_into(exec, "tessera::exclusive_scan", e, dst, dim, init, true, true, op);
}
template <launchable_space Space, backends::impl::scan_source E, class D>
requires impl::is_array_like<D>::value void exclusive_scan(const Space& exec, const E& e,
                                                           const D& dst, int dim = -1) {
  exclusive_scan(exec, e, dst, dim, typename D::value_type{}, tessera::plus<>{});
}

/// The scans into a new array (element type: e's).
template <launchable_space Space, backends::impl::scan_source E, class Op = tessera::plus<>>
requires(!impl::is_array_like<Op>::value) auto inclusive_scan(const Space& exec, const E& e,
                                                              int dim = -1, const Op& op = {}) {
  array<backends::impl::source_value_t<E>, E::rank> out(e.get_extent());
  inclusive_scan(exec, e, out, dim, op);
  return out;
}
template <launchable_space Space, backends::impl::scan_source E, class U, class Op>
auto exclusive_scan(const Space& exec, const E& e, int dim, const U& init, const Op& op) {
  array<backends::impl::source_value_t<E>, E::rank> out(e.get_extent());
  exclusive_scan(exec, e, out, dim, init, op);
  return out;
}
template <launchable_space Space, backends::impl::scan_source E>
auto exclusive_scan(const Space& exec, const E& e, int dim = -1) {
  using T = backends::impl::source_value_t<E>;
  return exclusive_scan(exec, e, dim, T{}, tessera::plus<>{});
}

/// The scans on the default execution space.
template <backends::impl::scan_source E, class D, class Op = tessera::plus<>>
requires impl::is_array_like<D>::value void inclusive_scan(const E& e, const D& dst, int dim = -1,
                                                           const Op& op = {}) {
  inclusive_scan(tessera::impl::default_instance(), e, dst, dim, op);
}
template <backends::impl::scan_source E, class D, class U, class Op>
requires impl::is_array_like<D>::value void inclusive_scan(const E& e, const D& dst, int dim,
                                                           const Op& op, const U& init) {
  inclusive_scan(tessera::impl::default_instance(), e, dst, dim, op, init);
}
template <backends::impl::scan_source E, class D, class U, class Op>
requires impl::is_array_like<D>::value void exclusive_scan(const E& e, const D& dst, int dim,
                                                           const U& init, const Op& op) {
  exclusive_scan(tessera::impl::default_instance(), e, dst, dim, init, op);
}
template <backends::impl::scan_source E, class D>
requires impl::is_array_like<D>::value void exclusive_scan(const E& e, const D& dst, int dim = -1) {
  exclusive_scan(tessera::impl::default_instance(), e, dst, dim);
}
template <backends::impl::scan_source E, class Op = tessera::plus<>>
requires(!impl::is_array_like<Op>::value) auto inclusive_scan(const E& e, int dim = -1,
                                                              const Op& op = {}) {
  return inclusive_scan(tessera::impl::default_instance(), e, dim, op);
}
template <backends::impl::scan_source E, class U, class Op>
auto exclusive_scan(const E& e, int dim, const U& init, const Op& op) {
  return exclusive_scan(tessera::impl::default_instance(), e, dim, init, op);
}
template <backends::impl::scan_source E>
auto exclusive_scan(const E& e, int dim = -1) {
  return exclusive_scan(tessera::impl::default_instance(), e, dim);
}

/// The plan of a scan of e along dim on the default execution space, as the scan runs it:
/// the kernels computing e's non-elementwise parts first (expressions), then the scan with its
/// form (line or segmented), iterations, accumulation and phases. Nothing runs.
/// \throws as the scan would
template <backends::impl::scan_source E, class Op = tessera::plus<>>
codegen::program_plan plan(scan_kind kind, const E& e, int dim = -1, const Op& = {}) {
  using T = backends::impl::source_value_t<E>;
  using A = backends::impl::scan_acc_t<T, Op>;
  const char* fn = kind == scan_kind::inclusive ? "tessera::plan(inclusive_scan)"
                                                : "tessera::plan(exclusive_scan)";
  auto [p, x] = backends::impl::source_plan(fn, e);
  const int d = backends::impl::scan_dimension(fn, dim, x);
  if (x.size() == 0) return p;
  p.kernels.push_back(backends::impl::scan_kernel_plan<execution_space, T, A, Op>(
      tessera::impl::default_instance(), kind == scan_kind::exclusive, x, d, false));
  return p;
}
/// The same plan as text.
template <backends::impl::scan_source E, class... Args>
std::string explain(scan_kind kind, const E& e, const Args&... args) {
  return codegen::to_string(plan(kind, e, args...));
}

}  // namespace tessera
