/// \file scan/kernels.hpp
/// \brief The kernels of the Tier 1 scans (device code): a line of the extent scanned from a
///        carry, the line form (a block of adjacent lines per iteration, no carries between
///        iterations) and the segmented form (chunks of lines, carries by Kokkos
///        parallel_scan). Planned by codegen/passes/scan.hpp.
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/reduce/fold.hpp>
#include <tessera/dsl/array.hpp>
#include <tessera/dsl/expr/ops.hpp>

#include <type_traits>

namespace tessera::backends::impl {

/// The accumulator of a scan of T with Op: double for sums of float (each prefix is then the
/// exact prefix rounded once, up to n * 2^-53 of the sum of magnitudes), T otherwise.
template <class T, class Op>
using scan_acc_t = std::conditional_t<
    std::is_same_v<T, float> && ops::reduction_of<Op> == ops::reduction_kind::sum, double, T>;

/// True when Space's backend scans contiguous runs of T with vectors (the CPU backends).
template <class Space, class T, class A, class Op>
concept has_scan_run = requires(const T* in, T* out, index_type n, A& acc, const Op& op) {
  backend<Space>::template scan_run<false>(in, out, n, acc, op, false);
  backend<Space>::template scan_run<true>(in, out, n, acc, op, false);
};

/// A segmented scan's carry: the combination of a line's elements so far (`has`: at least
/// one), and whether it starts a line (then nothing before it in the scan order reaches it).
template <class A>
struct scan_carry {
  A v;
  int flags;  // 1: has a value, 2: starts a line
};

/// Adjacent lines one iteration of the line form walks at most.
inline constexpr int max_scan_line_block = 64;

/// Element (o, k, r) of an extent seen as outer x L x inner around dimension d.
template <int N>
KOKKOS_INLINE_FUNCTION index<N> line_index(const extent<N>& x, int d, index_type o, index_type k,
                                           index_type r) {
  index<N> i;
  for (int q = N - 1; q >= 0; --q) {  // innermost first: r's digits, then k, then o's
    if (q > d) {
      i[q] = r % x[q];
      r /= x[q];
    } else if (q == d) {
      i[q] = k;
    } else {
      i[q] = o % x[q];
      o /= x[q];
    }
  }
  return i;
}

template <class E, int N>
KOKKOS_FORCEINLINE_FUNCTION auto read_at(const E& e, const index<N>& i) {
  if constexpr (N == 1)
    return e(i[0]);
  else if constexpr (N == 2)
    return e(i[0], i[1]);
  else
    return e(i[0], i[1], i[2]);
}

/// What every scan kernel shares: input e (a readable or raw_operand), output out, the line
/// shape, the operator and the initial value (exclusive scans, or inclusive with an init).
template <class Space, class E, class T, class A, class Op, int N>
struct scan_core {
  static constexpr int rank = N;
  using out_type = T;
  using acc_type = A;
  E e;
  tessera::impl::strided_ref<T, N> out;
  extent<N> ext;
  int dim;
  index_type length, inner;
  Op op;
  A init;
  bool has_init, exclusive;
  bool stream;  ///< contiguous runs stored with streaming stores (plan.streaming_stores)

  /// Scans elements [k0, k1) of line (o, r) from carry (acc, has).
  KOKKOS_INLINE_FUNCTION void run(index_type o, index_type r, index_type k0, index_type k1, A& acc,
                                  bool& has) const {
    if (k0 >= k1) return;
    if constexpr (!std::is_same_v<Space, void> && has_scan_run<Space, T, A, Op> &&
                  std::is_same_v<std::remove_const_t<typename fold_value<E>::type>, T>) {
      // The last dimension: a contiguous run in every operand (a line along another dimension
      // whose trailing extents are 1 is not: a section's elements keep their parent's strides).
      if (dim == N - 1) {
        index<N> i = line_index(ext, dim, o, k0, 0);
        T* po = &out.at(i);
        if (!has) {  // an inclusive scan's first element is its own prefix
          acc = A(read_at(e, i));
          *po = T(acc);
          has = true;
          ++k0;
          ++po;
          ++i[dim];
        }
        const index_type n = k1 - k0;
        if constexpr (is_raw_operand<E>) {
          if (exclusive)
            backend<Space>::template scan_run<true>(&e.r.at(i), po, n, acc, op, stream);
          else
            backend<Space>::template scan_run<false>(&e.r.at(i), po, n, acc, op, stream);
        } else {  // an expression: evaluated into a block, then scanned
          constexpr int B = 64;
          T buf[B];
          for (index_type j = 0; j < n; j += B) {
            const int m = n - j < B ? int(n - j) : B;
            index<N> q = i;
            for (int l = 0; l < m; ++l) {
              q[dim] = i[dim] + j + l;
              buf[l] = T(read_at(e, q));
            }
            if (exclusive)
              backend<Space>::template scan_run<true>(buf, po + j, index_type(m), acc, op, false);
            else
              backend<Space>::template scan_run<false>(buf, po + j, index_type(m), acc, op, false);
          }
        }
        return;
      }
    }
    for (index_type k = k0; k < k1; ++k) {
      const index<N> i = line_index(ext, dim, o, k, r);
      const A x = A(read_at(e, i));
      if (exclusive) {
        out.at(i) = T(acc);
        acc = op(acc, x);
      } else {
        acc = has ? A(op(acc, x)) : x;
        has = true;
        out.at(i) = T(acc);
      }
    }
  }
  /// The combination of elements [k0, k1) of line (o, r) (k0 < k1). A commutative operator
  /// (sum, product, min, max) over a contiguous run folds in 8 lanes, element j into lane j % 8,
  /// the lanes then combined in order: independent chains the compiler vectorizes (a dependent
  /// chain of double additions held the rounds form's totals, the only extra pass, to the
  /// speed of the scan itself). Sums stay in A (double for float), so every prefix keeps its
  /// n 2^-53 bound.
  KOKKOS_INLINE_FUNCTION A total(index_type o, index_type r, index_type k0, index_type k1) const {
    if constexpr (is_raw_operand<E> && ops::reduction_of<Op> != ops::reduction_kind::other) {
      constexpr int L = 8;
      if (dim == N - 1 && k1 - k0 >= 2 * L) {
        const auto* p = &e.r.at(line_index(ext, dim, o, k0, 0));
        const index_type n = k1 - k0;
        A lane[L];
        for (int l = 0; l < L; ++l) lane[l] = A(p[l]);
        index_type j = L;
        for (; j + L <= n; j += L)
          for (int l = 0; l < L; ++l) lane[l] = op(lane[l], A(p[j + l]));
        for (int l = 0; j < n; ++j, ++l) lane[l] = op(lane[l], A(p[j]));
        A t = lane[0];
        for (int l = 1; l < L; ++l) t = op(t, lane[l]);
        return t;
      }
    }
    A t = A(read_at(e, line_index(ext, dim, o, k0, r)));
    for (index_type k = k0 + 1; k < k1; ++k)
      t = op(t, A(read_at(e, line_index(ext, dim, o, k, r))));
    return t;
  }
};

/// Line form: iteration i walks `block` adjacent lines (consecutive inner indices) from start
/// to end, element k of every line before element k + 1 of any.
template <class Core>
struct scan_lines {
  Core c;
  index_type block, blocks_per_outer;
  KOKKOS_INLINE_FUNCTION void operator()(index_type it) const {
    using A = typename Core::acc_type;
    using T = typename Core::out_type;
    const index_type o = it / blocks_per_outer;
    const index_type r0 = (it % blocks_per_outer) * block;
    const index_type nb = c.inner - r0 < block ? c.inner - r0 : block;
    if (nb == 1) {
      A acc = c.init;
      bool has = c.has_init;
      c.run(o, r0, 0, c.length, acc, has);
      return;
    }
    A acc[max_scan_line_block];
    for (index_type l = 0; l < nb; ++l) acc[l] = c.init;
    for (index_type k = 0; k < c.length; ++k) {
      const index<Core::rank> i0 = line_index(c.ext, c.dim, o, k, r0);
      for (index_type l = 0; l < nb; ++l) {
        index<Core::rank> i = i0;
        i[Core::rank - 1] += l;
        const A x = A(read_at(c.e, i));
        if (c.exclusive) {
          c.out.at(i) = T(acc[l]);
          acc[l] = c.op(acc[l], x);
        } else {
          acc[l] = (k > 0 || c.has_init) ? A(c.op(acc[l], x)) : x;
          c.out.at(i) = T(acc[l]);
        }
      }
    }
  }
};

/// Segmented form: iteration i scans chunk i % chunks_per_line of line i / chunks_per_line;
/// Kokkos parallel_scan carries each chunk's combination into the next chunk of its line.
/// Only for backends whose Kokkos scan joins values in order (the host spaces: each thread
/// folds a contiguous range, then the threads' totals are joined first to last); Kokkos' CUDA
/// and HIP scans fold each thread's strided elements, which only a commutative join survives,
/// and this carry's join is not commutative (nor need the scan's operator be): the GPU family
/// uses the ordered passes below (kernel_plan::scan_carry_passes).
template <class Core>
struct scan_segments {
  using A = typename Core::acc_type;
  using value_type = scan_carry<A>;
  Core c;
  index_type chunk, chunks_per_line;

  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    v.v = A{};
    v.flags = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& d, const value_type& s) const {
    if (s.flags & 2) {
      d = s;
    } else if (s.flags & 1) {
      d.v = (d.flags & 1) ? A(c.op(d.v, s.v)) : s.v;
      d.flags |= 1;
    }
  }
#if !TESSERA_KOKKOS_VERSION_AT_LEAST(4, 0)
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& d, const volatile value_type& s) const {
    value_type dd, ss;
    dd.v = d.v;
    dd.flags = d.flags;
    ss.v = s.v;
    ss.flags = s.flags;
    join(dd, ss);
    d.v = dd.v;
    d.flags = dd.flags;
  }
#endif
  KOKKOS_INLINE_FUNCTION void operator()(index_type i, value_type& update, bool final) const {
    const index_type line = i / chunks_per_line, q = i % chunks_per_line;
    const index_type o = line / c.inner, r = line % c.inner;
    const index_type k0 = q * chunk;
    const index_type k1 = k0 + chunk < c.length ? k0 + chunk : c.length;
    // The carry into this chunk: the line's init for its first chunk, else everything before
    // it in its line (which includes the init).
    A acc = q == 0 ? c.init : update.v;
    bool has = q == 0 ? c.has_init : (update.flags & 1) != 0;
    if (final) {
      c.run(o, r, k0, k1, acc, has);
    } else {
      const A t = c.total(o, r, k0, k1);
      acc = has ? A(c.op(acc, t)) : t;
    }
    update.v = acc;
    update.flags = q == 0 ? 3 : (update.flags | 1);
  }
};

/// Rounds form (host spaces with several threads): one team of P members walks the chunks in
/// rounds of P. Member p takes the total of chunk r P + p (which brings the chunk into its
/// cache), a team barrier, then scans that chunk from its carry — the running carry combined
/// with the totals of the round's earlier chunks, in order — reading it again from cache; a
/// second barrier before the next round overwrites the totals. The input comes from memory
/// once (Kokkos' two-pass scan reads it twice: half the copy bandwidth on two threads) and
/// chunks are sized to stay in a core's L2 between the two reads. Any team size is correct
/// (Kokkos runs the team with one member inside an enclosing OpenMP region).
template <class Core, class Member>
struct scan_rounds {
  using A = typename Core::acc_type;
  using carry = scan_carry<A>;
  scan_segments<Core> seg;
  index_type chunks;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& m) const {
    const int P = m.team_size(), p = m.team_rank();
    carry* tot = static_cast<carry*>(
        m.team_scratch(0).get_shmem_aligned(std::size_t(P) * sizeof(carry), alignof(carry)));
    carry run;
    seg.init(run);
    for (index_type base = 0; base < chunks; base += P) {
      const index_type i = base + p;
      carry t;
      seg.init(t);
      if (i < chunks) seg(i, t, false);
      tot[p] = t;
      m.team_barrier();  // the round's totals complete before any carry combines them
      if (i < chunks) {
        carry x = run;
        for (int q = 0; q < p; ++q) seg.join(x, tot[q]);
        seg(i, x, true);
      }
      for (int q = 0; q < P; ++q) seg.join(run, tot[q]);
      m.team_barrier();  // every member read the totals before the next round writes them
    }
  }
};

/// Ordered segmented form, pass 1: iteration i stores the total of chunk i % chunks_per_line
/// of line i / chunks_per_line (its elements combined in order) at totals(line, chunk).
template <class Core>
struct scan_chunk_totals {
  Core c;
  index_type chunk, chunks_per_line;
  tessera::impl::strided_ref<typename Core::acc_type, 2> totals;
  KOKKOS_INLINE_FUNCTION void operator()(index_type i) const {
    const index_type line = i / chunks_per_line, q = i % chunks_per_line;
    const index_type k0 = q * chunk;
    const index_type k1 = k0 + chunk < c.length ? k0 + chunk : c.length;
    totals(line, q) = c.total(line / c.inner, line % c.inner, k0, k1);
  }
};

/// Ordered segmented form, pass 3: iteration i scans chunk i % chunks_per_line of line i /
/// chunks_per_line from its carry: the line's init (if any) combined with prefix(line, q - 1),
/// the inclusive scan of the chunk totals of its line (pass 2).
template <class Core>
struct scan_chunks_from_carries {
  Core c;
  index_type chunk, chunks_per_line;
  tessera::impl::strided_ref<const typename Core::acc_type, 2> prefix;
  KOKKOS_INLINE_FUNCTION void operator()(index_type i) const {
    using A = typename Core::acc_type;
    const index_type line = i / chunks_per_line, q = i % chunks_per_line;
    const index_type k0 = q * chunk;
    const index_type k1 = k0 + chunk < c.length ? k0 + chunk : c.length;
    A acc = c.init;
    bool has = c.has_init;
    if (q > 0) {
      const A p = prefix(line, q - 1);
      acc = has ? A(c.op(acc, p)) : p;
      has = true;
    }
    c.run(line / c.inner, line % c.inner, k0, k1, acc, has);
  }
};

}  // namespace tessera::backends::impl
