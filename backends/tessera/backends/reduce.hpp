/// \file reduce.hpp
/// \brief Whole-array reductions of any `readable` (array, array_view, array expressions):
///        `sum`, `mean`, `min_value`, `max_value`, `reduce(e, init, op)`, and
///        bitwise-reproducible variants of sum, mean and reduce; each is one Kokkos launch.
///
/// Scheme (seed 004's huge-array sum, without its inter-work-group locks). The row-major
/// element order is cut into fixed chunks of 2^14 consecutive elements. One call of the Kokkos
/// functor folds one chunk into L independent accumulator lanes (element k of a contiguous run
/// feeds lane k mod L), which the compiler keeps in SIMD registers; the lanes are merged by a
/// fixed pairwise tree. Chunk results are combined by the Kokkos reduction (a custom reducer),
/// or, in reproducible mode, written to a View of per-chunk partials and combined pairwise in
/// chunk order. No chunk or tile ever waits for another: the only synchronisation is the end
/// of the `parallel_reduce` / `parallel_for`, which Kokkos provides.
///
/// Accumulators: float sums go through float blocks of 16 (a pairwise tree, 4 roundings) into
/// double lanes; double sums through blocks of 8 (3 roundings) into compensated (TwoSum)
/// lanes; integer sums use 64-bit modular lanes; min, max and user operations stay in the
/// element type.
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/dsl/array.hpp>
#include <tessera/dsl/config.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/expr/ops.hpp>
#include <tessera/dsl/readable.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

// On host compilers the chunk fold is kept out of line: compiled on its own, GCC keeps the
// SIMD lanes in registers; inlined into Kokkos' loop it spills them. One call per 2^14 elements.
#if !defined(TESSERA_DEVICE_PASS) && !defined(__CUDACC__) && !defined(__HIPCC__) && \
    (defined(__GNUC__) || defined(__clang__))
#define TESSERA_REDUCE_OUTLINE __attribute__((noinline))
#else
#define TESSERA_REDUCE_OUTLINE
#endif
// Fully unrolls the loop over the lanes so the lanes live in registers.
#if defined(__CUDACC__) || defined(__HIPCC__)
#if defined(TESSERA_DEVICE_PASS)
#define TESSERA_REDUCE_UNROLL _Pragma("unroll")
#else
#define TESSERA_REDUCE_UNROLL
#endif
#elif defined(__clang__)
#define TESSERA_REDUCE_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define TESSERA_REDUCE_UNROLL _Pragma("GCC unroll 64")
#else
#define TESSERA_REDUCE_UNROLL
#endif

namespace tessera {

/// Tag selecting bitwise-reproducible reductions: `sum(e, tessera::reproducible)`.
struct reproducible_t {
  explicit constexpr reproducible_t() = default;
};
/// See reproducible_t.
inline constexpr reproducible_t reproducible{};

namespace backends::impl {

/// Elements folded by one functor call, from the backend: 2^14 on CPUs (64 KiB of floats:
/// large enough to amortise the call, small enough to balance 2^28 elements over many threads,
/// folded with SIMD lanes), 1 on GPUs (Kokkos reduces in a coalesced tree). Fixed, independent
/// of the thread count, which is what makes reproducible mode reproducible.
template <class Space>
inline constexpr index_type chunk_elements = backend<Space>::reduce_chunk;
/// Chunk size of reproducible mode (on GPUs the per-element chunk would make one partial per
/// element, so longer chunks are folded by one thread each there).
template <class Space>
inline constexpr index_type reproducible_chunk_elements = backend<Space>::reproducible_chunk;

// --- accumulation rules ---------------------------------------------------------------------
// A rule says how elements of type T are folded: acc_type; lift(x), an element as an
// accumulator; optionally identity(), then the lanes start from it, else from the chunk's first
// L elements; step(a, x): a <- a (+) x; merge(a, b): a <- a (+) b. And three tuning constants:
// `lanes` (accumulators per chunk, to fill the vector registers), `block` (elements first
// added in T per lane step: 1, or a power of two for floating sums) and `unroll` (unroll the
// lane loop fully, so that GCC keeps the lanes in registers: best for the float and integer
// sums; min/max and the compensated lanes vectorize better as a plain loop). They were tuned
// with GCC 12, -O3 -march=native, on x86-64 with AVX-512. Rules are small values (a user's op
// may carry state).

/// Integer sums: 64-bit modular arithmetic (unsigned, so overflow is defined); the result is
/// exact whenever the true sum fits in the 64-bit accumulator, and converted modulo 2^bits.
template <class T>
struct int_sum_rule {
  using acc_type = std::uint64_t;
  static constexpr int lanes = 16;
  static constexpr int block = 1;
  static constexpr bool unroll = true;
  KOKKOS_INLINE_FUNCTION acc_type identity() const { return 0; }
  KOKKOS_INLINE_FUNCTION acc_type lift(const T& x) const { return static_cast<acc_type>(x); }
  KOKKOS_INLINE_FUNCTION void step(acc_type& a, const T& x) const { a += static_cast<acc_type>(x); }
  KOKKOS_INLINE_FUNCTION void merge(acc_type& a, const acc_type& b) const { a += b; }
  static T result(const acc_type& a) { return static_cast<T>(a); }
  static T mean(const acc_type& a, index_type n) {
    if constexpr (std::is_signed_v<T>)
      return static_cast<T>(static_cast<std::int64_t>(a) / n);
    else
      return static_cast<T>(a / static_cast<acc_type>(n));
  }
};

/// Sums of floating types narrower than double (float): blocks of 16 elements, one per lane
/// and 16 lanes apart, are added in float by a pairwise tree (4 roundings of 2^-24), then
/// converted to double and added into double lanes (roundings of 2^-53). The float blocks keep
/// conversions to one per 16 elements, which is what lets the loop run at memory bandwidth.
template <class T>
struct widening_sum_rule {
  using acc_type = double;
  static constexpr int lanes = 16;
  static constexpr int block = 16;
  static constexpr bool unroll = true;
  KOKKOS_INLINE_FUNCTION acc_type identity() const { return 0.0; }
  KOKKOS_INLINE_FUNCTION acc_type lift(const T& x) const { return static_cast<double>(x); }
  KOKKOS_INLINE_FUNCTION void step(acc_type& a, const T& x) const { a += static_cast<double>(x); }
  KOKKOS_INLINE_FUNCTION void merge(acc_type& a, const acc_type& b) const { a += b; }
  static T result(const acc_type& a) { return static_cast<T>(a); }
  static T mean(const acc_type& a, index_type n) {
    return static_cast<T>(a / static_cast<double>(n));
  }
};

/// A compensated sum: s + c, where c collects the rounding errors of the additions into s.
template <class D>
struct compensated {
  D s, c;
};

/// Sums of double (and wider) types: blocks of 8 elements added in T by a pairwise tree (3
/// roundings), then folded into compensated lanes. Each lane addition s + x is split exactly
/// into the rounded sum and its error with Knuth's branch-free TwoSum (6 flops) and the errors
/// are accumulated apart (Ogita, Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci.
/// Comput. 26(6), 2005, algorithm Sum2), so the lanes add as if in twice the precision.
template <class T>
struct compensated_sum_rule {
  using acc_type = compensated<T>;
  static constexpr int lanes = 16;
  static constexpr int block = 8;
  static constexpr bool unroll = false;
  KOKKOS_INLINE_FUNCTION acc_type identity() const { return {T(0), T(0)}; }
  KOKKOS_INLINE_FUNCTION acc_type lift(const T& x) const { return {x, T(0)}; }
  KOKKOS_INLINE_FUNCTION static void two_sum(T& s, T& c, const T& x) {
    const T t = s + x;
    const T z = t - s;
    c += (s - (t - z)) + (x - z);
    s = t;
  }
  KOKKOS_INLINE_FUNCTION void step(acc_type& a, const T& x) const { two_sum(a.s, a.c, x); }
  KOKKOS_INLINE_FUNCTION void merge(acc_type& a, const acc_type& b) const {
    a.c += b.c;
    two_sum(a.s, a.c, b.s);
  }
  static T result(const acc_type& a) { return a.s + a.c; }
  static T mean(const acc_type& a, index_type n) { return (a.s + a.c) / static_cast<T>(n); }
};

template <class T>
using sum_rule_t =
    std::conditional_t<std::is_integral_v<T>, int_sum_rule<T>,
                       std::conditional_t<(sizeof(T) < sizeof(double)), widening_sum_rule<T>,
                                          compensated_sum_rule<T>>>;

/// Folds with a binary operation `op` in the element type (min, max, a user's op). The op must
/// be associative and commutative: elements are grouped into lanes and chunks.
template <class T, class Op>
struct op_rule {
  using acc_type = T;
  static constexpr int lanes = sizeof(T) <= 4 ? 64 : 32;
  static constexpr int block = 1;
  static constexpr bool unroll = false;
  Op op;
  KOKKOS_INLINE_FUNCTION acc_type lift(const T& x) const { return x; }
  KOKKOS_INLINE_FUNCTION void step(acc_type& a, const T& x) const { a = static_cast<T>(op(a, x)); }
  KOKKOS_INLINE_FUNCTION void merge(acc_type& a, const acc_type& b) const {
    a = static_cast<T>(op(a, b));
  }
};

// --- SIMD lanes -------------------------------------------------------------------------------

/// L accumulators, one per SIMD lane: lane l receives elements l, l + L, l + 2L, ... of a run.
/// combine() merges them by a fixed pairwise tree (l += l + L/2 for l < L/2, then L/4, ...).
template <class Rule, int L>
struct lane_block {
  typename Rule::acc_type a[L];
  KOKKOS_INLINE_FUNCTION void clear(const Rule& r, int l) { a[l] = r.identity(); }
  template <class T>
  KOKKOS_INLINE_FUNCTION void init(const Rule& r, int l, const T& x) {
    a[l] = r.lift(x);
  }
  template <class T>
  KOKKOS_INLINE_FUNCTION void step(const Rule& r, int l, const T& x) {
    r.step(a[l], x);
  }
  KOKKOS_INLINE_FUNCTION typename Rule::acc_type combine(const Rule& r) {
    for (int w = L / 2; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) r.merge(a[l], a[l + w]);
    return a[0];
  }
};

/// Compensated lanes stored as two arrays (sums, errors) so each is one set of vector
/// registers.
template <class T, int L>
struct lane_block<compensated_sum_rule<T>, L> {
  using rule = compensated_sum_rule<T>;
  T s[L], c[L];
  KOKKOS_INLINE_FUNCTION void clear(const rule&, int l) {
    s[l] = T(0);
    c[l] = T(0);
  }
  KOKKOS_INLINE_FUNCTION void init(const rule&, int l, const T& x) {
    s[l] = x;
    c[l] = T(0);
  }
  KOKKOS_INLINE_FUNCTION void step(const rule&, int l, const T& x) { rule::two_sum(s[l], c[l], x); }
  KOKKOS_INLINE_FUNCTION compensated<T> combine(const rule& r) {
    compensated<T> a[L];
    for (int l = 0; l < L; ++l) a[l] = {s[l], c[l]};
    for (int w = L / 2; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) r.merge(a[l], a[l + w]);
    return a[0];
  }
};

// --- the chunk fold -------------------------------------------------------------------------

/// An array or array_view read by a reduction through its raw strided pointer: no per-element
/// host hook test (which keeps the chunk fold from vectorizing).
template <class T, int N>
struct raw_operand {
  static constexpr int rank = N;
  using value_type = T;
  tessera::impl::strided_ref<const T, N> r;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION T operator()(I... i) const {
    return r(i...);
  }
  /// The element at (i..., 0): the start of a contiguous run of the last dimension.
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION const T* run(I... i) const {
    return &r(i..., index_type(0));
  }
};

/// A contiguous run of elements, read as get(j) = p[j]; data() exposes the run to a backend's
/// vector block sums.
template <class T>
struct contiguous_run {
  const T* p;
  KOKKOS_FORCEINLINE_FUNCTION T operator()(index_type j) const { return p[j]; }
  KOKKOS_FORCEINLINE_FUNCTION const T* data() const { return p; }
};

/// True when the backend of Space provides vector block sums (block_sums<K, L>(const T*)).
template <class Space, class T, int K, int L>
concept has_block_sums = requires(const T* p) {
  backend<Space>::template block_sums<K, L>(p);
};

template <class E>
inline constexpr bool is_raw_operand = false;
template <class T, int N>
inline constexpr bool is_raw_operand<raw_operand<T, N>> = true;

template <class E>
struct fold_value {
  using type = readable_value_t<E>;
};
template <class T, int N>
struct fold_value<raw_operand<T, N>> {
  using type = T;
};

/// Folds runs of the row-major order of `e` with `rule` on execution space Space. Where the
/// backend provides `block_sums<K, L>(p)` (the CPU backends: vector code whose loads walk each
/// block in address order, which keeps the hardware prefetchers streaming) contiguous runs go
/// through it; the sums are the same, so are the bits.
template <class Space, class E, class Rule>
struct chunk_folder {
  static constexpr int N = E::rank;
  static constexpr int L = Rule::lanes;
  using value_type = typename fold_value<E>::type;
  using acc_type = typename Rule::acc_type;

  E e;
  Rule rule;
  extent<N> ext;

  /// Element q of the row-major order (two divisions for ranks 2 and 3).
  KOKKOS_INLINE_FUNCTION value_type at_linear(index_type q) const {
    if constexpr (N == 1) {
      return e(q);
    } else if constexpr (N == 2) {
      return e(q / ext[1], q % ext[1]);
    } else {
      const index_type k = q % ext[2];
      q /= ext[2];
      return e(q / ext[1], q % ext[1], k);
    }
  }

  /// Calls f(get, j0, count) for each contiguous run of the last dimension inside the
  /// row-major range [lo, hi): the run's elements are get(j0), ..., get(j0 + count - 1).
  template <class F>
  KOKKOS_INLINE_FUNCTION void for_each_run(index_type lo, index_type hi, F&& f) const {
    constexpr bool raw = is_raw_operand<E>;
    if constexpr (N == 1) {
      if constexpr (raw)
        f(contiguous_run<value_type>{e.run()}, lo, hi - lo);
      else
        f([&](index_type j) -> value_type { return e(j); }, lo, hi - lo);
    } else {
      const index_type cols = ext[N - 1];
      index_type row = lo / cols, j = lo % cols, left = hi - lo;
      while (left > 0) {
        const index_type cnt = cols - j < left ? cols - j : left;
        if constexpr (N == 2) {
          if constexpr (raw)
            f(contiguous_run<value_type>{e.run(row)}, j, cnt);
          else
            f([&](index_type jj) -> value_type { return e(row, jj); }, j, cnt);
        } else {
          const index_type r0 = row / ext[1], r1 = row % ext[1];
          if constexpr (raw)
            f(contiguous_run<value_type>{e.run(r0, r1)}, j, cnt);
          else
            f([&](index_type jj) -> value_type { return e(r0, r1, jj); }, j, cnt);
        }
        left -= cnt;
        ++row;
        j = 0;
      }
    }
  }

  /// get(j) + get(j + L) + ... + get(j + (K - 1) L), added in the element type by a pairwise
  /// tree: log2(K) roundings per element. K is a power of two.
  template <int K, int Lanes, class G>
  KOKKOS_FORCEINLINE_FUNCTION static value_type block_sum(const G& get, index_type j) {
    if constexpr (K == 1)
      return get(j);
    else
      return block_sum<K / 2, Lanes>(get, j) + block_sum<K / 2, Lanes>(get, j + K / 2 * Lanes);
  }

  /// The fold of elements [lo, hi) of the row-major order (hi > lo). Deterministic: depends
  /// only on lo, hi and the data.
  TESSERA_REDUCE_OUTLINE KOKKOS_INLINE_FUNCTION acc_type fold(index_type lo, index_type hi) const {
    if (hi - lo < 2 * L) {
      acc_type a = rule.lift(at_linear(lo));
      for (index_type q = lo + 1; q < hi; ++q) rule.step(a, at_linear(q));
      return a;
    }
    lane_block<Rule, L> lanes;
    index_type start = lo;
    if constexpr (requires { rule.identity(); }) {
      for (int l = 0; l < L; ++l) lanes.clear(rule, l);
    } else {  // no identity: the lanes start from the chunk's first L elements
      for (int l = 0; l < L; ++l) lanes.init(rule, l, at_linear(lo + l));
      start = lo + L;
    }
    for_each_run(start, hi, [&](const auto& get, index_type j0, index_type cnt) {
      // One group = K consecutive runs of L elements (K = Rule::block; 1: plain lane steps).
      // For block rules the K runs are first added in T, lane by lane, by a pairwise tree
      // (log2 K roundings in T), then folded into the accumulator lanes.
      constexpr int K = Rule::block > 1 ? Rule::block : 1;
      constexpr index_type G = index_type(K) * L;
      constexpr bool vector_blocks =
          Rule::block > 1 && is_raw_operand<E> && has_block_sums<Space, value_type, K, L>;
      auto group = [&](index_type j) {
        if constexpr (vector_blocks) {
          const auto t = backend<Space>::template block_sums<K, L>(get.data() + j);
          if constexpr (Rule::unroll) {
            TESSERA_REDUCE_UNROLL
            for (int l = 0; l < L; ++l) lanes.step(rule, l, t[l]);
          } else {
            for (int l = 0; l < L; ++l) lanes.step(rule, l, t[l]);
          }
        } else if constexpr (Rule::block > 1) {
          if constexpr (Rule::unroll) {
            TESSERA_REDUCE_UNROLL
            for (int l = 0; l < L; ++l) lanes.step(rule, l, block_sum<K, L>(get, j + l));
          } else {
            for (int l = 0; l < L; ++l) lanes.step(rule, l, block_sum<K, L>(get, j + l));
          }
        } else if constexpr (Rule::unroll) {
          TESSERA_REDUCE_UNROLL
          for (int l = 0; l < L; ++l) lanes.step(rule, l, get(j + l));
        } else {
          for (int l = 0; l < L; ++l) lanes.step(rule, l, get(j + l));
        }
      };
      // The run's groups are cut into S equal parts read in turn, one group from each: S
      // sequential streams keep more memory requests in flight than one where the loads of a
      // group come in no particular order. A backend's block sums load in address order, which
      // the prefetchers follow in one stream (measured: as fast from DRAM, and 1.5x faster
      // from L2, than four). The order depends only on the run, so results are deterministic.
      constexpr index_type S = vector_blocks ? 1 : 4;
      const index_type per = cnt / G / S;
      for (index_type b = 0; b < per; ++b)
        for (index_type u = 0; u < S; ++u) group(j0 + (u * per + b) * G);
      index_type q = S * per * G;
      for (; q + G <= cnt; q += G) group(j0 + q);
      if constexpr (Rule::block > 1) {
        if constexpr (Rule::unroll) {
          for (; q + L <= cnt; q += L) {
            TESSERA_REDUCE_UNROLL
            for (int l = 0; l < L; ++l) lanes.step(rule, l, get(j0 + q + l));
          }
        } else {
          for (; q + L <= cnt; q += L)
            for (int l = 0; l < L; ++l) lanes.step(rule, l, get(j0 + q + l));
        }
      }
      for (int l = 0; q < cnt; ++q, ++l) lanes.step(rule, l, get(j0 + q));
    });
    return lanes.combine(rule);
  }
};

/// The reduction value of the Kokkos reducer: a fold result, or nothing yet.
template <class A>
struct partial_fold {
  A a;
  bool set;
};

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

/// Functor of parallel_reduce: folds chunk c and merges it into the thread's value.
template <class Folder>
struct fold_chunks {
  Folder f;
  index_type n, chunk;
  KOKKOS_INLINE_FUNCTION void operator()(index_type c,
                                         partial_fold<typename Folder::acc_type>& v) const {
    const index_type lo = c * chunk;
    const index_type hi = n - lo < chunk ? n : lo + chunk;
    const auto a = f.fold(lo, hi);
    if (v.set) {
      f.rule.merge(v.a, a);
    } else {
      v.a = a;
      v.set = true;
    }
  }
};

/// Functor of the reproducible parallel_for: folds chunk c into partials(c).
template <class Folder, class View>
struct fold_chunks_to {
  Folder f;
  View partials;
  index_type n, chunk;
  KOKKOS_INLINE_FUNCTION void operator()(index_type c) const {
    const index_type lo = c * chunk;
    const index_type hi = n - lo < chunk ? n : lo + chunk;
    partials(c) = f.fold(lo, hi);
  }
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

/// Reductions of at most this many chunks run on Kokkos::Serial when the execution space is a
/// threaded host space, without waking its thread pool: one chunk cannot be split between
/// threads (OpenMP, 2 threads, 2^14 floats: 0.49 instead of 1.03 us), and waking the pool
/// costs about what one core takes to fold four chunks from cache (2^16 floats: 1.0 us on one
/// thread, 1.3 on two). The chunks are the same; only the order their partials merge in
/// differs, as it does between thread counts (reproducible mode fixes it).
inline constexpr index_type serial_fold_chunks = 4;

/// Folds every element of e (size n > 0) with rule, through parallel_reduce on exec (which
/// returns after the reduction: the result is a host value).
template <class Space, class E, class Rule>
typename Rule::acc_type fold_all_direct(const Space& exec, const char* label, const E& e,
                                        const extent<E::rank>& x, const Rule& rule) {
  using folder = chunk_folder<Space, E, Rule>;
  constexpr index_type chunk = chunk_elements<Space>;
  const index_type n = x.size();
  const index_type chunks = (n + chunk - 1) / chunk;
#if defined(KOKKOS_ENABLE_SERIAL)
  // Up to serial_fold_chunks chunks run on Kokkos::Serial on a threaded host space.
  if constexpr (!std::is_same_v<Space, Kokkos::Serial> &&
                Kokkos::SpaceAccessibility<Kokkos::Serial,
                                           typename Space::memory_space>::accessible &&
                chunk_elements<Kokkos::Serial> == chunk) {
    if (chunks <= serial_fold_chunks) {
      exec.fence();
      return fold_all_direct(Kokkos::Serial(), label, e, x, rule);
    }
  }
#endif
  partial_fold<typename Rule::acc_type> result{};
  tessera::impl::require_runtime(label);
  Kokkos::Profiling::pushRegion(label);
  Kokkos::parallel_reduce(
      label, Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, chunks),
      fold_chunks<folder>{folder{e, rule, x}, n, chunk}, fold_reducer<Rule>(rule, result));
  exec.fence();
  Kokkos::Profiling::popRegion();
  return result.a;
}

/// Folds every element of e (size n > 0) with rule into per-chunk partials, then combines the
/// partials on the host by a fixed pairwise tree: (p0+p1)+(p2+p3), ... Bitwise reproducible.
template <class Space, class E, class Rule>
typename Rule::acc_type fold_all_direct(const Space& exec, reproducible_t, const char* label,
                                        const E& e, const extent<E::rank>& x, const Rule& rule) {
  using folder = chunk_folder<Space, E, Rule>;
  using acc = typename Rule::acc_type;
  const index_type n = x.size();
  constexpr index_type chunk = reproducible_chunk_elements<Space>;
  const index_type chunks = (n + chunk - 1) / chunk;
  tessera::impl::require_runtime(label);
  Kokkos::Profiling::pushRegion(label);
  using view = Kokkos::View<acc*, typename Space::memory_space>;
  view partials(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label) + " partials"),
                chunks);
  Kokkos::parallel_for(label,
                       Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, chunks),
                       fold_chunks_to<folder, view>{folder{e, rule, x}, partials, n, chunk});
  exec.fence();
  auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), partials);
  Kokkos::Profiling::popRegion();
  for (index_type w = 1; w < chunks; w *= 2)
    for (index_type i = 0; i + w < chunks; i += 2 * w) rule.merge(p(i), p(i + w));
  return p(0);
}

/// fold_all_direct on e, or on its raw_operand (with_fold_operand).
template <class Space, class E, class Rule>
typename Rule::acc_type fold_all(const Space& exec, const char* label, const E& e,
                                 const extent<E::rank>& x, const Rule& rule) {
  return with_fold_operand(
      e, [&](const auto& op) { return fold_all_direct(exec, label, op, x, rule); });
}
template <class Space, class E, class Rule>
typename Rule::acc_type fold_all(const Space& exec, reproducible_t, const char* label, const E& e,
                                 const extent<E::rank>& x, const Rule& rule) {
  return with_fold_operand(
      e, [&](const auto& op) { return fold_all_direct(exec, reproducible, label, op, x, rule); });
}

template <class T>
inline constexpr bool summable = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

template <class E, class U, class Op>
inline constexpr bool reducible = std::is_convertible_v<const U&, readable_value_t<E>>&&
    std::is_invocable_v<const Op&, const readable_value_t<E>&, const readable_value_t<E>&>;

}  // namespace backends::impl

/// Sum of every element of `e`.
///
/// \tparam E a readable (array, array_view, array expression) of rank 1..3 whose element type
///         T is arithmetic (not bool)
/// \param e [in] the values: n = e.get_extent().size() elements, any extent; n = 0 gives T(0)
/// \return the sum, as T.
///         Accuracy, float: with s the exact sum and A = sum |x_i|, the error is at most
///         2^-24 |s| (the final rounding) + 4 * 2^-24 A (float blocks of 16, pairwise) +
///         (2^6 + 4 + n / 2^14) * 2^-53 A (double lanes and chunk combine): for n = 2^28 that is
///         2^-24 |s| + 4.0001 * 2^-24 A, against ceil(log2 n) * 2^-24 A = 28 * 2^-24 A for
///         pairwise float summation and (n - 1) * 2^-24 A for a plain float loop; for every
///         n >= 256 (the smallest with a float block) 4 <= log2 n, and below that the error is
///         the final rounding plus n * 2^-53 A.
///         double: 2^-53 |s| + 3 * 2^-53 A + (n 2^-53)^2 A (blocks of 8, then compensated
///         lanes). Integers: exact while the sum fits in 64 bits, then converted to T (modulo
///         2^bits when T is narrower).
/// \throws shape_error on a negative extent (before any kernel runs)
/// Cost: one Kokkos parallel_reduce over ceil(n / 2^14) chunks; on host backends a chunk is
/// one vectorized loop, and the sum runs at memory bandwidth (2^28 floats, 1 thread: within a
/// few percent of Eigen's `VectorXf::sum()`, see examples/05_huge_sum). The grouping of chunk
/// results depends on the thread count, so the last bit may change with it: see
/// sum(e, reproducible).
/// Source: seed 004 (sum of 1024*1024*256 floats over many levels of tiles), done with a Kokkos
/// reduction instead of inter-tile locks; compensated lanes after Ogita, Rump & Oishi, SIAM J.
/// Sci. Comput. 26(6), 2005.
/// \code
///   tessera::array<float, 1> a(1 << 28);   // ... filled ...
///   float s = tessera::sum(a);
/// \endcode
template <launchable_space Space, readable E>
readable_value_t<E> sum(const Space& exec, const E& e) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::sum(e): e's element type must be arithmetic (and not bool)");
  const auto x = backends::impl::checked_extent("tessera::sum", e);
  if (x.size() == 0) return T(0);
  using rule = backends::impl::sum_rule_t<T>;
  return rule::result(backends::impl::fold_all(exec, "tessera::sum", e, x, rule{}));
}

/// Bitwise-reproducible sum: the same bits for any number of threads and any scheduling, on a
/// given backend and build (other builds or devices may round differently).
///
/// Shapes, accuracy and errors as sum(e). The elements are cut into fixed chunks of 2^14 (1024
/// on GPUs) in row-major order; a parallel_for folds each chunk, deterministically, into a
/// View of per-chunk partials (ceil(n / 2^14) accumulators of 8 bytes for float and integers,
/// 16 for double), and the host combines the partials in a fixed pairwise order.
/// Cost: the partials' allocation and the O(n / 2^14) host combine (on GPUs also their copy
/// to the host); for 2^28 floats 16384 partials (128 KiB), measured within a few percent of
/// sum(e) on host backends (examples/05_huge_sum prints both).
/// \throws shape_error on a negative extent
template <launchable_space Space, readable E>
readable_value_t<E> sum(const Space& exec, const E& e, reproducible_t) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::sum(e, reproducible): e's element type must be arithmetic (and not "
                "bool)");
  const auto x = backends::impl::checked_extent("tessera::sum(reproducible)", e);
  if (x.size() == 0) return T(0);
  using rule = backends::impl::sum_rule_t<T>;
  return rule::result(
      backends::impl::fold_all(exec, reproducible, "tessera::sum(reproducible)", e, x, rule{}));
}

/// Arithmetic mean of every element of `e`: the sum, accumulated as in sum(e), divided by n in
/// the accumulator's precision (double for float; compensated double for double), then
/// rounded to T. Integers: the 64-bit sum divided by n, truncated toward zero.
/// \param e [in] readable of rank 1..3 with an arithmetic element type and n >= 1 elements
/// \return the mean as T; error as sum(e) / n plus one rounding
/// \throws shape_error "tessera::mean: empty extent (...)" when n == 0, or on a negative
///         extent, before any kernel runs
template <launchable_space Space, readable E>
readable_value_t<E> mean(const Space& exec, const E& e) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::mean(e): e's element type must be arithmetic (and not bool)");
  const auto x = backends::impl::checked_nonempty_extent("tessera::mean", e);
  using rule = backends::impl::sum_rule_t<T>;
  return rule::mean(backends::impl::fold_all(exec, "tessera::mean", e, x, rule{}), x.size());
}

/// Bitwise-reproducible mean (see sum(e, reproducible)). \throws as mean(e)
template <launchable_space Space, readable E>
readable_value_t<E> mean(const Space& exec, const E& e, reproducible_t) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::mean(e, reproducible): e's element type must be arithmetic (and not "
                "bool)");
  const auto x = backends::impl::checked_nonempty_extent("tessera::mean(reproducible)", e);
  using rule = backends::impl::sum_rule_t<T>;
  return rule::mean(
      backends::impl::fold_all(exec, reproducible, "tessera::mean(reproducible)", e, x, rule{}),
      x.size());
}

/// Smallest element of `e`, exact (always one of the elements, whatever the thread count).
/// \param e [in] readable of rank 1..3 with an arithmetic element type and n >= 1 elements
/// \return the minimum as T. With NaNs the result is unspecified (as Eigen's minCoeff());
///         between -0.0 and +0.0 either may be returned.
/// \throws shape_error "tessera::min_value: empty extent (...)" when n == 0, or on a negative
///         extent, before any kernel runs
/// Cost: one parallel_reduce; at memory bandwidth on host backends.
template <launchable_space Space, readable E>
readable_value_t<E> min_value(const Space& exec, const E& e) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::min_value(e): e's element type must be arithmetic (and not bool)");
  const auto x = backends::impl::checked_nonempty_extent("tessera::min_value", e);
  using rule = backends::impl::op_rule<T, minimum<T>>;
  return backends::impl::fold_all(exec, "tessera::min_value", e, x, rule{});
}

/// Largest element of `e`; the contract of min_value(e) with "largest".
/// \throws shape_error "tessera::max_value: empty extent (...)" when n == 0, or on a negative
///         extent, before any kernel runs
template <launchable_space Space, readable E>
readable_value_t<E> max_value(const Space& exec, const E& e) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::summable<T>,
                "tessera::max_value(e): e's element type must be arithmetic (and not bool)");
  const auto x = backends::impl::checked_nonempty_extent("tessera::max_value", e);
  using rule = backends::impl::op_rule<T, maximum<T>>;
  return backends::impl::fold_all(exec, "tessera::max_value", e, x, rule{});
}

/// Generalised reduction, like std::reduce: `op(T(init), x_0 (op) x_1 (op) ... (op) x_n-1)`,
/// the elements grouped in an unspecified (but fixed for a given n) order.
///
/// \tparam E readable of rank 1..3; T = readable_value_t<E>, trivially copyable
/// \tparam Op callable inside kernels as op(T, T), result convertible to T; it must be
///         associative and commutative (elements are spread over SIMD lanes and chunks), e.g.
///         tessera::plus<>, multiplies<>, minimum<>, maximum<> (the same operators as ops::add,
///         ops::mul, ops::min, ops::max of tile_reduce and elementwise expressions)
/// \param e [in] the values (n elements); \param init [in] used once, converted to T
/// \param op [in] the operation, copied into the kernel
/// \return T; T(init) when n == 0. Every step is computed in T (no wider accumulator: use
///         sum() for accurate floating sums); integer ops are exact as T's arithmetic is.
/// \throws shape_error on a negative extent
/// Cost: one parallel_reduce; at memory bandwidth on host backends for simple ops.
/// \code
///   int p = tessera::reduce(a, 1, tessera::multiplies<>{});
/// \endcode
template <launchable_space Space, readable E, class U, class Op>
readable_value_t<E> reduce(const Space& exec, const E& e, const U& init, const Op& op) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::reducible<E, U, Op>,
                "tessera::reduce(e, init, op): init must convert to e's element type T and op "
                "must be callable as op(T, T)");
  static_assert(std::is_trivially_copyable_v<T>,
                "tessera::reduce(e, init, op): e's element type must be trivially copyable");
  const auto x = backends::impl::checked_extent("tessera::reduce", e);
  if (x.size() == 0) return static_cast<T>(init);
  using rule = backends::impl::op_rule<T, Op>;
  const T r = backends::impl::fold_all(exec, "tessera::reduce", e, x, rule{op});
  return static_cast<T>(op(static_cast<T>(init), r));
}

/// Bitwise-reproducible reduce: one fixed grouping of the elements (fixed chunks, partials
/// combined pairwise), independent of the number of threads. Otherwise as
/// reduce(e, init, op); cost as sum(e, reproducible).
template <launchable_space Space, readable E, class U, class Op>
readable_value_t<E> reduce(const Space& exec, const E& e, const U& init, const Op& op,
                           reproducible_t) {
  using T = readable_value_t<E>;
  static_assert(backends::impl::reducible<E, U, Op>,
                "tessera::reduce(e, init, op, reproducible): init must convert to e's element "
                "type T and op must be callable as op(T, T)");
  static_assert(std::is_trivially_copyable_v<T>,
                "tessera::reduce(e, init, op, reproducible): e's element type must be "
                "trivially copyable");
  const auto x = backends::impl::checked_extent("tessera::reduce(reproducible)", e);
  if (x.size() == 0) return static_cast<T>(init);
  using rule = backends::impl::op_rule<T, Op>;
  const T r =
      backends::impl::fold_all(exec, reproducible, "tessera::reduce(reproducible)", e, x, rule{op});
  return static_cast<T>(op(static_cast<T>(init), r));
}

/// The reductions above on the default execution space.
template <readable E>
readable_value_t<E> sum(const E& e) {
  return sum(execution_space(), e);
}
template <readable E>
readable_value_t<E> sum(const E& e, reproducible_t r) {
  return sum(execution_space(), e, r);
}
template <readable E>
readable_value_t<E> mean(const E& e) {
  return mean(execution_space(), e);
}
template <readable E>
readable_value_t<E> mean(const E& e, reproducible_t r) {
  return mean(execution_space(), e, r);
}
template <readable E>
readable_value_t<E> min_value(const E& e) {
  return min_value(execution_space(), e);
}
template <readable E>
readable_value_t<E> max_value(const E& e) {
  return max_value(execution_space(), e);
}
template <readable E, class U, class Op>
readable_value_t<E> reduce(const E& e, const U& init, const Op& op) {
  return reduce(execution_space(), e, init, op);
}
template <readable E, class U, class Op>
readable_value_t<E> reduce(const E& e, const U& init, const Op& op, reproducible_t r) {
  return reduce(execution_space(), e, init, op, r);
}

}  // namespace tessera
