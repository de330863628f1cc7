/// \file reduce/fold.hpp
/// \brief The chunk fold of whole-array reductions (device code): a chunk of the row-major
///        element order folded into SIMD lanes, runs of contiguous elements through the
///        backend's vector block sums where it has them; and the Kokkos functors that fold one
///        chunk per call.
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/reduce/lanes.hpp>
#include <tessera/dsl/array.hpp>
#include <tessera/dsl/readable.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

// On host compilers the chunk fold is kept out of line: compiled on its own, GCC keeps the
// SIMD lanes in registers; inlined into Kokkos' loop it spills them. One call per chunk (2^16
// elements on CPUs).
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

namespace tessera::backends::impl {

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
  /// Elements from one row (last-dimension run) to the next along the second-to-last
  /// dimension (rank >= 2).
  KOKKOS_FORCEINLINE_FUNCTION index_type row_stride() const { return r.s[N >= 2 ? N - 2 : 0]; }
};

/// Keeps x as computed: the operation that produced it is not fused with the one that uses it (an
/// empty `asm` that takes and gives back its register, on host passes of GCC and Clang; no
/// instruction). A fold steps an expression's elements into its lanes: where the target has
/// fused multiply-adds the compiler would contract a product of the expression with that
/// addition, and the fold would round differently from the fold of the same values read from
/// memory. T: float, double, or a GCC/Clang vector of them (a whole register, or memory);
/// other types as they are. Device passes keep their compiler's contraction (their bits are
/// their own).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION void settle(T& x) {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  if constexpr (!std::is_integral_v<T>) {
#if defined(__AVX512F__)
    constexpr std::size_t reg = 64;
#elif defined(__AVX__)
    constexpr std::size_t reg = 32;
#else
    constexpr std::size_t reg = 16;
#endif
    constexpr bool scalar = std::is_same_v<T, float> || std::is_same_v<T, double>;
    constexpr bool vector = !std::is_arithmetic_v<T> && sizeof(T) >= 16 && sizeof(T) <= reg &&
                            (sizeof(T) & (sizeof(T) - 1)) == 0;
#if defined(__x86_64__) && defined(__SSE2__)
    if constexpr (scalar || vector)
      asm("" : "+v"(x));
    else
      asm("" : "+m"(x));
#elif defined(__aarch64__)
    if constexpr (scalar || (vector && sizeof(T) == 16))
      asm("" : "+w"(x));
    else
      asm("" : "+m"(x));
#else
    asm("" : "+m"(x));
#endif
  }
#else
  (void)x;
#endif
}

/// A contiguous run of elements, read as get(j) = p[j]; data() exposes the run to a backend's
/// vector block sums.
template <class T>
struct contiguous_run {
  const T* p;
  KOKKOS_FORCEINLINE_FUNCTION T operator()(index_type j) const { return p[j]; }
  KOKKOS_FORCEINLINE_FUNCTION const T* data() const { return p; }
};

/// A contiguous_run in a buffer of the chunk fold (elements gathered or evaluated there):
/// already in cache, so never prefetched.
template <class T>
struct buffer_run : contiguous_run<T> {};

/// The elements of an expression read by flat index (a reader with flat_at(q), where its
/// `flat` holds: element q of the row-major order) as a pointer-like source for the CPU vector
/// folds (host simd::element_source): s + i, and W consecutive elements computed into one
/// vector, which the compiler turns into the vector loads and operations of the expression
/// (kept as computed by settle: rounded as in memory). The folds then read an expression as they
/// read memory, its elements never stored.
template <class R, class T>
struct flat_source {
  using value_type = T;
  const R* e;
  index_type pos;
  KOKKOS_FORCEINLINE_FUNCTION flat_source operator+(index_type i) const { return {e, pos + i}; }
  /// v = the W elements at this source (W: the lanes of V). Filled by reference, not returned:
  /// V may be wider than the target's registers, and GCC notes an ABI change for every such
  /// return value.
  template <class V>
  KOKKOS_FORCEINLINE_FUNCTION void load_into(V& v) const {
    fill<V>(v, std::make_index_sequence<sizeof(V) / sizeof(T)>{});
    settle(v);
  }
  template <class V, std::size_t... J>
  KOKKOS_FORCEINLINE_FUNCTION void fill(V& v, std::index_sequence<J...>) const {
    v = V{static_cast<T>(e->flat_at(pos + index_type(J)))...};
  }
  /// v = the first n elements (only those computed), `fill` in the other lanes.
  template <class V>
  KOKKOS_FORCEINLINE_FUNCTION void load_first_into(V& v, int n, T fill) const {
    constexpr int W = int(sizeof(V) / sizeof(T));
    T b[W];
    for (int l = 0; l < W; ++l) b[l] = l < n ? static_cast<T>(e->flat_at(pos + l)) : fill;
    std::memcpy(&v, b, sizeof(V));
    settle(v);
  }
};
/// A flat-readable expression as a run: get(j) its element j, data() its flat_source.
template <class R, class T>
struct flat_run {
  const R* e;
  KOKKOS_FORCEINLINE_FUNCTION T operator()(index_type j) const {
    return static_cast<T>(e->flat_at(j));
  }
  KOKKOS_FORCEINLINE_FUNCTION flat_source<R, T> data() const { return {e, 0}; }
};
/// True for readables that can be read by flat index (exec::expression_reader).
template <class E>
concept flat_reader = requires(const E& e, index_type q) {
  e.flat_at(q);
  { e.flat } -> std::convertible_to<bool>;
};

/// A callable that takes the lanes of a block sum and drops them (the concept's probe; a named
/// type rather than a lambda in an unevaluated operand, which some device front ends reject).
struct ignore_lanes {
  template <class V>
  void operator()(const V&) const {}
};

/// True when the backend of Space provides vector block sums (block_sums<K, L>(const T*, f)).
template <class Space, class T, int K, int L>
concept has_block_sums = requires(const T* p, const ignore_lanes& f) {
  backend<Space>::template block_sums<K, L>(p, f);
};

/// True when the backend of Space folds a run into accumulator lanes with vector code, the
/// lanes in registers (block_fold<K, L>(const T* p, index_type n, A* acc, index_type ahead,
/// bool from_memory): the n elements at p as the chunk fold reads a run: blocks of K x L, runs of
/// L, the last elements into the first lanes; acc[l] += A(x)).
template <class Space, class T, class A, int K, int L>
concept has_block_fold = requires(const T* p, A* acc) {
  backend<Space>::template block_fold<K, L>(p, index_type{}, acc, index_type{});
};

/// True when the backend of Space folds S runs from memory at once into accumulator lanes
/// (block_fold_streams<K, L, S>(const T* const (&p)[S], index_type groups, A* const (&acc)[S]):
/// the groups blocks of K x L elements at each p[s], as block_fold folds them from memory).
template <class Space, class T, class A, int K, int L>
concept has_block_fold_streams = requires(const T* const (&p)[2], A* const (&acc)[2]) {
  backend<Space>::template block_fold_streams<K, L, 2>(p, index_type{}, acc);
};

/// Rules whose lanes start from an identity (rule.identity()), not from the first elements.
template <class R>
concept rule_with_identity = requires(const R& r) {
  r.identity();
};

/// True when a fold of elements of type T with Rule on Space can read several streams from
/// memory at once (chunk_folder::fold_streams): sums whose lanes add their elements (a rule
/// with an identity and lane_add) where the backend folds their blocks from several streams
/// (has_block_fold_streams). The plan asks for streams only for these (reduction_desc::streams).
template <class Space, class T, class Rule>
concept folds_streams = rule_with_identity<Rule> && lane_add_rule<Rule> &&
    has_block_fold_streams<Space, T, typename Rule::acc_type, (Rule::block > 1 ? Rule::block : 1),
                           Rule::lanes>;

/// True when the host can read Space's memory (the CPU backends and the GPU emulation). A
/// variable, not a function: device passes call no host function from fold().
template <class Space, class = void>
inline constexpr bool host_readable_space = false;
template <class Space>
inline constexpr bool host_readable_space<Space, std::void_t<typename Space::memory_space>> =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;

/// True when the backend of Space folds a run into compensated lanes with vector code
/// (block_fold_two_sum<K, L>(const T* p, index_type n, T* s, T* c, index_type ahead, bool
/// from_memory): TwoSum of each step into (s[l], c[l]), the order of has_block_fold).
template <class Space, class T, int K, int L>
concept has_block_fold_two_sum = requires(const T* p, T* s) {
  backend<Space>::template block_fold_two_sum<K, L>(p, index_type{}, s, s, index_type{}, false);
};

/// True when the backend of Space folds a run into the lanes of op_rule<T, Op> with vector
/// code (op_fold<L>(const T* p, index_type n, T* acc, const Op& op): runs of L, the last
/// elements into the first lanes): the CPU backends, for Tessera's lane-wise operations.
template <class Space, class T, class Op, int L>
concept has_op_fold = requires(const T* p, T* acc, const Op& op) {
  backend<Space>::template op_fold<L>(p, index_type{}, acc, op);
};

/// True when the backend of Space sums runs of 4-byte integers of T exactly modulo 2^64
/// (int32_sum(const T* p, index_type n, std::uint64_t& acc): acc += p[0] + ... + p[n - 1]).
template <class Space, class T>
concept has_int32_sum = requires(const T* p, std::uint64_t& a) {
  backend<Space>::int32_sum(p, index_type{}, a);
};

/// True when the backend of Space prefetches cache lines ahead of a run (prefetch_lines<Bytes>(p,
/// ahead)): the CPU backends.
template <class Space, class T>
concept has_prefetch_lines = requires(const T* p) {
  backend<Space>::template prefetch_lines<64>(p, index_type{});
};

/// True when the backend of Space copies runs of T into a buffer with vector code
/// (copy_run(const T* p, index_type n, T* out), writing up to 64 bytes past out + n): the CPU
/// backends.
template <class Space, class T>
concept has_copy_run = requires(const T* p, T* out) {
  backend<Space>::copy_run(p, index_type{}, out);
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
  /// Elements ahead at which contiguous runs prefetch their input into L2 (0: none; CPU block
  /// sums only: kernel_plan::reduce_prefetch_bytes).
  index_type prefetch = 0;
  /// The input comes from memory (kernel_plan::reduce_from_memory): CPU block folds read each
  /// block in address order, and add a float block's tree on the adders (the same bits).
  bool from_memory = false;

  /// e(i...); for readables that compute their elements (expressions) kept as computed
  /// (settle: not fused with the step that folds it), so an expression folds to the bits of
  /// its values in memory.
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION value_type read(I... i) const {
    if constexpr (is_raw_operand<E>)
      return e(i...);
    else {
      value_type x = static_cast<value_type>(e(i...));
      settle(x);
      return x;
    }
  }

  /// Element q of the row-major order (two divisions for ranks 2 and 3).
  KOKKOS_INLINE_FUNCTION value_type at_linear(index_type q) const {
    if constexpr (N == 1) {
      return read(q);
    } else if constexpr (N == 2) {
      return read(q / ext[1], q % ext[1]);
    } else {
      const index_type k = q % ext[2];
      q /= ext[2];
      return read(q / ext[1], q % ext[1], k);
    }
  }

  /// Row `row` of the row-major order (rank 3: slab row / ext[1], row row % ext[1]) as a getter
  /// of its elements by column: a contiguous_run for raw operands.
  KOKKOS_INLINE_FUNCTION auto row_run(index_type row) const {
    static_assert(N >= 2, "row_run: rank 2 or 3");
    if constexpr (is_raw_operand<E>) {
      if constexpr (N == 2)
        return contiguous_run<value_type>{e.run(row)};
      else
        return contiguous_run<value_type>{e.run(row / ext[1], row % ext[1])};
    } else if constexpr (N == 2) {
      return [this, row](index_type j) -> value_type {
        return read(row, j);
      };
    } else {
      const index_type r0 = row / ext[1], r1 = row % ext[1];
      return [this, r0, r1](index_type j) -> value_type {
        return read(r0, r1, j);
      };
    }
  }

  /// Whether a raw operand's elements lie in memory in row-major order without gaps
  /// (dimensions of extent 1 may have any stride).
  KOKKOS_INLINE_FUNCTION bool contiguous() const {
    static_assert(is_raw_operand<E>, "contiguous: raw operands only");
    return tessera::impl::row_major_contiguous(ext, e.r.s);
  }

  /// Elements of slack a gather buffer has past its end (copy_run's whole-vector stores).
  static constexpr index_type gather_slack = 64 / index_type(sizeof(value_type)) + 1;

  /// Writes the cnt elements [pos, pos + cnt) of the row-major order to buf, which has room
  /// for gather_slack more.
  KOKKOS_INLINE_FUNCTION void gather(index_type pos, index_type cnt, value_type* buf) const {
    if constexpr (N == 1) {
      for (index_type t = 0; t < cnt; ++t) buf[t] = e(pos + t);
    } else {
      const index_type cols = ext[N - 1];
      index_type row = pos / cols, col = pos % cols;
      for (index_type q = 0; q < cnt; ++row, col = 0) {
        const auto get = row_run(row);
        const index_type k = cols - col < cnt - q ? cols - col : cnt - q;
        if constexpr (is_raw_operand<E> && has_copy_run<Space, value_type>) {
          backend<Space>::copy_run(get.data() + col, k, buf + q);
        } else {
          for (index_type t = 0; t < k; ++t) buf[q + t] = get(col + t);
        }
        q += k;
      }
    }
  }

  /// Elements a piece of a fold from memory gathers at most (a multiple of G): 16 KiB.
  template <index_type G>
  static constexpr index_type gather_elements = G*(G* index_type(sizeof(value_type)) >= 16384
                                                       ? 1
                                                       : 16384 /
                                                             (G * index_type(sizeof(value_type))));

  /// Cuts the row-major range [lo, hi) into pieces that the chunk fold takes as ONE run,
  /// whatever the rank: the association of a rank-1 array of the same elements, so an array, a
  /// section of a larger one (rows apart in memory) and any expression of the same values fold
  /// to the same bits. Calls run(get, j0, cnt), the piece's elements being get(j0), ...,
  /// get(j0 + cnt - 1), in order: every piece starts a multiple of G elements after lo and
  /// holds whole groups of G, but the last. Raw operands without gaps are one piece, a
  /// contiguous_run. Otherwise, with FromMemory (a fold that reads its input through pointers:
  /// the CPU backends' vector folds), the elements are gathered (rows of sections, by the
  /// backend's copy_run) or evaluated into a buffer, gather_elements<G> at a time (buffer_run
  /// pieces); without it, a rank-1 readable is one piece read through a getter, and rows are
  /// read in place, each group that crosses the end of a row first gathered into a buffer.
  template <index_type G, bool FromMemory, bool Sources = false, class Run>
  KOKKOS_INLINE_FUNCTION void for_each_piece(index_type lo, index_type hi, Run&& run) const {
    if constexpr (is_raw_operand<E> && N == 1) {
      run(contiguous_run<value_type>{e.run()}, lo, hi - lo);
    } else {
      if constexpr (is_raw_operand<E>) {
        if (contiguous()) {
          run(contiguous_run<value_type>{e.r.p}, lo, hi - lo);
          return;
        }
      }
      if constexpr (FromMemory && Sources && flat_reader<E>) {
        if (e.flat) {
          run(flat_run<E, value_type>{&e}, lo, hi - lo);
          return;
        }
      }
      if constexpr (FromMemory) {
        constexpr index_type B = gather_elements<G>;
        value_type buf[B + gather_slack];
        for (index_type pos = lo; pos < hi; pos += B) {
          const index_type cnt = hi - pos < B ? hi - pos : B;
          gather(pos, cnt, buf);
          run(buffer_run<value_type>{buf}, index_type(0), cnt);
        }
      } else if constexpr (N == 1) {
        run([&](index_type j) -> value_type { return read(j); }, lo, hi - lo);
      } else {
        const index_type cols = ext[N - 1];
        const index_type end = lo + (hi - lo) / G * G;  // the run's whole groups end here
        value_type buf[G + gather_slack];
        auto piece = [&](index_type pos, index_type cnt) {
          if (pos % cols + cnt <= cols) {
            run(row_run(pos / cols), pos % cols, cnt);
          } else {
            gather(pos, cnt, buf);
            run(buffer_run<value_type>{buf}, index_type(0), cnt);
          }
        };
        for (index_type pos = lo; pos < end;) {
          const index_type col = pos % cols;
          index_type k = (cols - col) / G;  // whole groups left in this row
          if (k == 0) {
            piece(pos, G);
            pos += G;
          } else {
            k = k < (end - pos) / G ? k : (end - pos) / G;
            run(row_run(pos / cols), col, k * G);
            pos += k * G;
          }
        }
        if (end < hi) piece(end, hi - end);
      }
    }
  }

  /// The contiguous runs of the last dimension in [lo, hi), with every span of whole rows
  /// (rank 3: within one slab of the first dimension) handed to rows(p, ld, count) instead:
  /// count rows of ext[N - 1] elements, the first at p, ld elements apart; the partial rows at
  /// either end go to run(get, j0, cnt). Raw operands of rank >= 2 only.
  template <class Run, class Rows>
  KOKKOS_INLINE_FUNCTION void for_each_rows(index_type lo, index_type hi, Run&& run,
                                            Rows&& rows) const {
    static_assert(N >= 2 && is_raw_operand<E>, "for_each_rows: raw operands of rank 2 or 3");
    const index_type cols = ext[N - 1];
    auto row_ptr = [&](index_type row) {
      if constexpr (N == 2)
        return e.run(row);
      else
        return e.run(row / ext[1], row % ext[1]);
    };
    index_type row = lo / cols;
    if (const index_type j = lo % cols; j != 0) {
      const index_type cnt = cols - j < hi - lo ? cols - j : hi - lo;
      run(contiguous_run<value_type>{row_ptr(row)}, j, cnt);
      ++row;
    }
    const index_type whole_end = hi / cols;  // rows [row, whole_end) are whole
    while (row < whole_end) {
      index_type count = whole_end - row;
      if constexpr (N == 3) {
        const index_type left = ext[1] - row % ext[1];
        count = count < left ? count : left;
      }
      rows(row_ptr(row), e.row_stride(), count);
      row += count;
    }
    if (row * cols < hi)  // a partial last row
      run(contiguous_run<value_type>{row_ptr(row)}, index_type(0), hi - row * cols);
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

  /// The fold of the n < 2 L elements get(0), ..., get(n - 1) (n >= 1). From L elements on,
  /// the first L are lifted into the lanes, element L + q is stepped into lane q, and the
  /// lanes combine as every chunk's do; fewer are lifted and stepped in order. Lanes instead of
  /// one chain of n dependent steps, measured per call on a Zen 4 core: a float sum of 24
  /// elements 22 -> 16 ns, a double (compensated) sum of 24 28 -> 21 ns, a float max of 100
  /// elements 45 -> 22 ns.
  template <class G>
  KOKKOS_FORCEINLINE_FUNCTION acc_type fold_few(const G& get, index_type n) const {
    if (n >= L) {
      lane_block<Rule, L> lanes;
      TESSERA_REDUCE_UNROLL
      for (int l = 0; l < L; ++l) lanes.init(rule, l, get(l));
      for (index_type q = L; q < n; ++q) lanes.step(rule, int(q - L), get(q));
      return lanes.combine(rule);
    }
    acc_type a = rule.lift(get(0));
    for (index_type q = 1; q < n; ++q) rule.step(a, get(q));
    return a;
  }

  /// The fold of the C elements [lo, lo + C) for a compile-time C < 2 L: fold(lo, lo + C)
  /// (fold_few's association), with every element loaded first, so that a GPU thread keeps C
  /// loads in flight.
  template <index_type C>
  KOKKOS_INLINE_FUNCTION acc_type fold_short(index_type lo) const {
    static_assert(C >= 1 && C < 2 * L, "fold_short: C must be below two lane widths");
    value_type v[C];
    for (index_type q = 0; q < C; ++q) v[q] = at_linear(lo + q);
    return fold_few([&](index_type q) { return v[q]; }, C);
  }

  /// The fold of the count > 0 elements first, first + stride, ... in that order (the first
  /// lifted, one step per element; a reproducible GPU chunk): eight loads issued before their
  /// steps.
  KOKKOS_INLINE_FUNCTION acc_type fold_strided(index_type first, index_type stride,
                                               index_type count) const {
    acc_type a = rule.lift(at_linear(first));
    index_type k = 1;
    for (; k + 8 <= count; k += 8) {
      value_type v[8];
      for (int j = 0; j < 8; ++j) v[j] = at_linear(first + (k + j) * stride);
      for (int j = 0; j < 8; ++j) rule.step(a, v[j]);
    }
    for (; k < count; ++k) rule.step(a, at_linear(first + k * stride));
    return a;
  }

  /// The fold of elements [lo, hi) of the row-major order (hi > lo), taken as one run whatever
  /// the rank (for_each_piece). Deterministic: depends only on lo, hi and the data.
  TESSERA_REDUCE_OUTLINE KOKKOS_INLINE_FUNCTION acc_type fold(index_type lo, index_type hi) const {
    if (hi - lo < 2 * L) {
      if constexpr (N >= 2 && host_readable_space<Space>) {
        if constexpr (is_raw_operand<E>) {
          // In place where the elements have no gaps (the same elements in the same order):
          // gathered, with a division and a copy call, a float sum of a 2 x 15 array took 42
          // ns per call on a Zen 4 core, in place 21 (4 x 4: 25 -> 16.5).
          if (contiguous()) return fold_few(contiguous_run<value_type>{e.r.p + lo}, hi - lo);
        }
        // Gathered first: a row walk, one division, instead of two per element through
        // at_linear (a float sum of a 1 x 16 array 30 -> 20 ns per call on a Zen 4 core). The
        // buffer starts zeroed: GCC 12 at x86-64-v3 cannot prove that gather wrote what
        // fold_few reads (-Wmaybe-uninitialized).
        value_type buf[2 * L + gather_slack] = {};
        gather(lo, hi - lo, buf);
        return fold_few([&](index_type q) { return buf[q]; }, hi - lo);
      } else {
        return fold_few([&](index_type q) { return at_linear(lo + q); }, hi - lo);
      }
    }
    if constexpr (std::is_same_v<Rule, int_sum_rule<value_type>> &&
                  has_int32_sum<Space, value_type>) {
      // 32-bit integer sums: the backend's whole-run sums modulo 2^64, added in run order (any
      // order gives the same sum, so rows that follow each other in memory are one run: a
      // 1000 x 10 int array took 3.7 us row by row, as one run 0.17). Sections are read in
      // place row by row (no gather: a 1000 x 1000 int section 41-47 us in place, 83 gathered).
      acc_type a = 0;
      auto run = [&](const auto& get, index_type j0, index_type cnt) {
        backend<Space>::int32_sum(get.data() + j0, cnt, a);
      };
      if constexpr (N >= 2 && is_raw_operand<E>)
        for_each_rows(lo, hi, run, [&](const value_type* p, index_type ld, index_type rows) {
          const index_type cols = ext[N - 1];
          if (ld == cols) {
            backend<Space>::int32_sum(p, rows * cols, a);
          } else {
            for (index_type i = 0; i < rows; ++i) backend<Space>::int32_sum(p + i * ld, cols, a);
          }
        });
      else
        for_each_piece<L, true>(lo, hi, run);
      return a;
    }
    lane_block<Rule, L> lanes;
    index_type start = lo;
    if constexpr (requires { rule.identity(); }) {
      // Unrolled: as a loop GCC turns the clearing into a memset, which x86-64-v3's generic
      // tuning expands to `rep stos` (about 30 cycles to start, and the vector loads of the
      // lanes right after cannot forward from it): a double sum of 16 elements took 23 ns per
      // call on a Zen 5 core, 12 unrolled; 2^12 doubles 172 -> 164 ns.
      TESSERA_REDUCE_UNROLL
      for (int l = 0; l < L; ++l) lanes.clear(rule, l);
    } else {  // no identity: the lanes start from the chunk's first L elements
      for (int l = 0; l < L; ++l) lanes.init(rule, l, at_linear(lo + l));
      start = lo + L;
    }
    // The range [start, hi) is one run (for_each_piece): groups of G = K L elements, K =
    // Rule::block consecutive runs of L (1: plain lane steps), in order; then the run's last
    // runs of L (block rules); then its last elements into lanes 0, 1, ... Where the backend
    // folds memory with vector code and the lanes in registers (the CPU backends: sums, and
    // min, max and reduce with Tessera's lane-wise operations), every piece is one call of it:
    // the same steps in the same order, so the same bits.
    constexpr int K = Rule::block > 1 ? Rule::block : 1;
    constexpr index_type G = index_type(K) * L;
    // Runs in the operand's memory prefetch as the plan says; buffers are in cache, and the
    // operands of an expression read by flat index are the hardware prefetchers'. Both are
    // known from the run's type, so the backends' folds compile only the variants a run can
    // take (MayPrefetch: a run in the operand's memory; MayReadMemory: not a buffer).
    if constexpr (lane_add_rule<Rule> && has_block_fold<Space, value_type, acc_type, K, L>) {
      for_each_piece<G, true, true>(start, hi, [&](const auto& get, index_type j0, index_type cnt) {
        using run_type = std::decay_t<decltype(get)>;
        constexpr bool in_place = std::is_same_v<run_type, contiguous_run<value_type>>;
        constexpr bool memory = !std::is_same_v<run_type, buffer_run<value_type>>;
        backend<Space>::template block_fold<K, L, in_place, memory>(
            get.data() + j0, cnt, lanes.a, in_place ? prefetch : 0, from_memory && memory);
      });
      return lanes.combine(rule);
    } else if constexpr (two_sum_lanes_rule<Rule> &&
                         has_block_fold_two_sum<Space, value_type, K, L>) {
      for_each_piece<G, true, true>(start, hi, [&](const auto& get, index_type j0, index_type cnt) {
        using run_type = std::decay_t<decltype(get)>;
        constexpr bool in_place = std::is_same_v<run_type, contiguous_run<value_type>>;
        constexpr bool memory = !std::is_same_v<run_type, buffer_run<value_type>>;
        backend<Space>::template block_fold_two_sum<K, L, in_place>(
            get.data() + j0, cnt, lanes.s, lanes.c, in_place ? prefetch : 0, from_memory && memory);
      });
      return lanes.combine(rule);
    }
    if constexpr (is_op_rule<Rule>) {
      if constexpr (has_op_fold<Space, value_type, typename Rule::op_type, L>) {
        for_each_piece<G, true, true>(
            start, hi, [&](const auto& get, index_type j0, index_type cnt) {
              backend<Space>::template op_fold<L>(get.data() + j0, cnt, lanes.a, rule.op);
            });
        return lanes.combine(rule);
      }
    }
    // Elsewhere the lane steps of the rule, each group of a block rule first added in T, lane by
    // lane, by a pairwise tree (log2 K roundings in T), then folded into the lanes; through the
    // backend's vector block sums where it has them (the same sums, loaded in address order,
    // which keeps the hardware prefetchers streaming).
    constexpr bool vector_blocks =
        Rule::block > 1 && is_raw_operand<E> && has_block_sums<Space, value_type, K, L>;
    auto ahead = [&](const auto& get) {
      return std::is_same_v<std::decay_t<decltype(get)>, contiguous_run<value_type>> ? prefetch : 0;
    };
    // One stream, the groups in order (the order of the backend's vector folds), at every rank:
    // every operand then folds to the bits of a rank-1 array of the same elements. (Four
    // interleaved streams read 2^16 floats from L2 faster here: a max of an expression 1.5 us
    // against 3.5 on a Zen 5 core; the CPU backends now fold expressions with their vector folds.)
    for_each_piece<G, false>(start, hi, [&](const auto& get, index_type j0, index_type cnt) {
      auto group = [&](index_type j) {
        if constexpr (vector_blocks) {
          if constexpr (has_prefetch_lines<Space, value_type>)
            if (ahead(get) > 0)
              backend<Space>::template prefetch_lines<int(G * sizeof(value_type))>(get.data() + j,
                                                                                   prefetch);
          backend<Space>::template block_sums<K, L>(get.data() + j, [&](const auto& t) {
            if constexpr (Rule::unroll) {
              TESSERA_REDUCE_UNROLL
              for (int l = 0; l < L; ++l) lanes.step(rule, l, t[l]);
            } else {
              for (int l = 0; l < L; ++l) lanes.step(rule, l, t[l]);
            }
          });
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
      index_type q = 0;
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

  /// Whether fold_streams cuts its range into parts for Rule: sums whose lanes the backend
  /// folds from several streams at once (block_fold_streams). Other rules fold one run.
  static constexpr bool streams_rule = folds_streams<Space, value_type, Rule>;

  /// The operand's elements as one run in its memory, where they come from memory
  /// (from_memory) and the fold reads several streams of them (streams_rule): a raw operand
  /// without gaps in host-readable memory; its first element. Otherwise nullptr.
  KOKKOS_INLINE_FUNCTION const value_type* memory_run() const {
    if constexpr (streams_rule && is_raw_operand<E> && host_readable_space<Space>) {
      if (!from_memory) return nullptr;
      if constexpr (N == 1)
        return e.run();
      else
        return contiguous() ? e.r.p : nullptr;
    } else {
      return nullptr;
    }
  }

  /// Clears lanes[0..streams) and folds into lanes[s] the `groups` whole groups of Rule::block
  /// x L elements at p + s step, for each s < streams (2, 4 or 8), the runs' groups read
  /// together (the backend's block_fold_streams: fold()'s steps on each run, so its bits).
  /// p from memory_run(). Rules other than streams_rule: nothing.
  KOKKOS_INLINE_FUNCTION void fold_together(const value_type* p, index_type step, index_type groups,
                                            int streams, lane_block<Rule, L>* lanes) const {
    if constexpr (streams_rule && host_readable_space<Space>) {
      constexpr int K = Rule::block > 1 ? Rule::block : 1;
      for (int s = 0; s < streams; ++s) {
        TESSERA_REDUCE_UNROLL
        for (int l = 0; l < L; ++l) lanes[s].clear(rule, l);
      }
      auto together = [&](auto count) {
        constexpr int S = decltype(count)::value;
        const value_type* at[S];
        acc_type* acc[S];
        for (int s = 0; s < S; ++s) {
          at[s] = p + s * step;
          acc[s] = lanes[s].a;
        }
        backend<Space>::template block_fold_streams<K, L, S>(at, groups, acc);
      };
      if (streams == 2)
        together(std::integral_constant<int, 2>{});
      else if (streams == 4)
        together(std::integral_constant<int, 4>{});
      else
        together(std::integral_constant<int, 8>{});
    } else {
      (void)p, (void)step, (void)groups, (void)streams, (void)lanes;
    }
  }

  /// out[i] = fold(lo + i len, min(lo + (i + 1) len, hi)) for each i < count (1-8, every range
  /// non-empty): consecutive chunks of the reproducible mode, `count` an iteration (kernel_plan::
  /// reduce_streams), each to its own partial. Where fold_streams reads streams together and
  /// the count is 2, 4 or 8 ranges of whole groups, all of them before hi, the ranges are read
  /// together (fold_together); otherwise one after another. The same bits either way.
  KOKKOS_INLINE_FUNCTION void fold_ranges(index_type lo, index_type len, int count, index_type hi,
                                          acc_type* out) const {
    if constexpr (streams_rule && host_readable_space<Space>) {
      constexpr index_type G = index_type(Rule::block > 1 ? Rule::block : 1) * L;
      if ((count == 2 || count == 4 || count == 8) && len % G == 0 && lo + count * len <= hi)
        if (const value_type* p = memory_run()) {
          lane_block<Rule, L> lanes[8];
          fold_together(p + lo, len, len / G, count, lanes);
          for (int i = 0; i < count; ++i) out[i] = lanes[i].combine(rule);
          return;
        }
    }
    for (int i = 0; i < count; ++i)
      out[i] = fold(lo + i * len, hi - (lo + i * len) < len ? hi : lo + (i + 1) * len);
  }

  /// The fold of [lo, hi) cut into `streams` parts (kernel_plan::reduce_streams; 2, 4 or 8):
  /// parts [lo + s per, lo + (s + 1) per) of per = (hi - lo) / streams elements rounded down
  /// to whole groups of Rule::block x L, the last part to hi, each folded as fold() folds a
  /// run, their results merged in order (part 0 first). Deterministic: depends only on lo, hi,
  /// streams and the data; every operand of the same values gives the same bits. Raw operands
  /// without gaps, from memory, read the parts' blocks together (the backend's
  /// block_fold_streams: that many streams from memory, which one core reads faster than one),
  /// without a prefetch: the streams take its place (2^24-2^28 floats on a Zen 5 core, native
  /// build: four streams 31-48 GB/s, four prefetched 25-36, one prefetched 26-44); other
  /// operands fold the parts one after another, prefetching as fold() does. Rules other than
  /// streams_rule, another number of streams or fewer than two whole groups a part: fold(lo, hi).
  TESSERA_REDUCE_OUTLINE KOKKOS_INLINE_FUNCTION acc_type fold_streams(index_type lo, index_type hi,
                                                                      int streams) const {
    if constexpr (!streams_rule) {
      (void)streams;
      return fold(lo, hi);
    } else {
      constexpr int K = Rule::block > 1 ? Rule::block : 1;
      constexpr index_type G = index_type(K) * L;
      if (streams != 2 && streams != 4 && streams != 8) return fold(lo, hi);
      const index_type per = (hi - lo) / streams / G * G;
      if (per < 2 * G) return fold(lo, hi);
      if constexpr (host_readable_space<Space>) {
        if (const value_type* p = memory_run()) {
          // fold()'s steps on each part (lanes cleared, the part one contiguous run: its whole
          // groups, then the last part's rest), the parts' groups read together.
          lane_block<Rule, L> lanes[8];
          fold_together(p + lo, per, per / G, streams, lanes);
          const index_type rest = lo + index_type(streams) * per;
          if (rest < hi)
            backend<Space>::template block_fold<K, L, true, true>(
                p + rest, hi - rest, lanes[streams - 1].a, index_type(0), from_memory);
          acc_type a = lanes[0].combine(rule);
          for (int s = 1; s < streams; ++s) rule.merge(a, lanes[s].combine(rule));
          return a;
        }
      }
      acc_type a = fold(lo, lo + per);
      for (int s = 1; s < streams; ++s)
        rule.merge(a, fold(lo + s * per, s + 1 < streams ? lo + (s + 1) * per : hi));
      return a;
    }
  }
};

/// The reduction value of the Kokkos reducer: a fold result, or nothing yet.
template <class A>
struct partial_fold {
  A a;
  bool set;
};

/// Functor of parallel_reduce: folds chunk c and merges it into the thread's value.
/// Chunks shorter than two lane widths (GPUs) fold whole through fold_short<Short>: the same
/// sums, with the loads first.
template <class Folder, index_type Short = 0>
struct fold_chunks {
  Folder f;
  index_type n, chunk;
  KOKKOS_INLINE_FUNCTION void operator()(index_type c,
                                         partial_fold<typename Folder::acc_type>& v) const {
    const index_type lo = c * chunk;
    const index_type hi = n - lo < chunk ? n : lo + chunk;
    typename Folder::acc_type a;
    if constexpr (Short > 0) {
      a = hi - lo == Short ? f.template fold_short<Short>(lo) : f.fold(lo, hi);
    } else {
      a = f.fold(lo, hi);
    }
    if (v.set) {
      f.rule.merge(v.a, a);
    } else {
      v.a = a;
      v.set = true;
    }
  }
};

/// Functor of the reproducible parallel_for: folds chunk c into partials(c); with streams > 1
/// (kernel_plan::reduce_streams) iteration c folds the chunks [c streams, (c + 1) streams),
/// each into its own partial, read together where the operand allows (Folder::fold_ranges).
template <class Folder, class View>
struct fold_chunks_to {
  Folder f;
  View partials;
  index_type n, chunk;
  index_type interleave = 0;  ///< interleaved chunks: their number (0: contiguous chunks)
  int streams = 0;            ///< chunks an iteration (2, 4 or 8; 0 or 1: one)
  KOKKOS_INLINE_FUNCTION void operator()(index_type c) const {
    if (interleave > 0) {
      partials(c) = f.fold_strided(c, interleave, (n - c + interleave - 1) / interleave);
      return;
    }
    if (streams > 1) {
      const index_type c0 = c * streams, lo = c0 * chunk;
      const index_type left = (n - lo + chunk - 1) / chunk;
      const int count = left < streams ? int(left) : streams;
      typename Folder::acc_type out[8];
      f.fold_ranges(lo, chunk, count, n, out);
      for (int i = 0; i < count; ++i) partials(c0 + i) = out[i];
      return;
    }
    const index_type lo = c * chunk;
    const index_type hi = n - lo < chunk ? n : lo + chunk;
    partials(c) = f.fold(lo, hi);
  }
};

}  // namespace tessera::backends::impl
