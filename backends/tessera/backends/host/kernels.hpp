/// \file host/kernels.hpp
/// \brief The Tier 1 kernel families on CPU backends (Serial, OpenMP), launched as their plans
///        say: fused elementwise chains (flat vector loops, streaming stores for outputs larger
///        than the cache), staged transposes (16 x 16 register blocks), the packed matmul with
///        its fused epilogue, and tile_reduce (several output rows streaming at once).
#pragma once

#include <tessera/backends/eval/evaluators.hpp>
#include <tessera/backends/host/gemm.hpp>
#include <tessera/backends/host/simd.hpp>
#include <tessera/backends/host/transpose.hpp>
#include <tessera/backends/kernels/operands.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/backends/reduce/rules.hpp>
#include <tessera/backends/temporary_pool.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/runtime.hpp>

#include <algorithm>
#include <bit>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera::backends::host {

/// op-combines v[0..N) pairwise (v[k] = op(v[k], v[k + n - n/2]) with halving n) and returns
/// the result: log2(N) vectorizable steps instead of a serial fold. Overwrites v.
template <int N, class T, class Op>
TESSERA_HOST_FORCEINLINE T tree_combine(T* v, const Op& op) {
  for (int n = N; n > 1;) {
    const int h = n / 2;
    for (int k = 0; k < h; ++k) v[k] = op(v[k], v[k + n - h]);
    n -= h;
  }
  return v[0];
}

/// True for the reduction ops whose bodies apply lane-wise to GCC/Clang vectors (Tessera's own
/// `+`, `*`, min, max in either spelling, ops.hpp); a user's op is only ever called on scalars.
template <class Op>
inline constexpr bool lane_wise_op = ops::reduction_of<Op> != ops::reduction_kind::other;

/// True for expressions `X + matmul(...)` or `matmul(...) + X` with X an array operand: the
/// form a packed matmul can compute by adding into X when X is the output (the plan decides
/// at run time, from memory ranges).
template <class E>
inline constexpr bool accumulate_form = false;
template <class X, class M>
inline constexpr bool accumulate_form<binary_node<ops::add, X, M>> =
    (X::traits.kind == node_kind::terminal && M::traits.kind == node_kind::matmul) ||
    (M::traits.kind == node_kind::terminal && X::traits.kind == node_kind::matmul);

/// The CPU kernel families of execution space Space (see backends/backend.hpp for the
/// interface every backend implements).
template <class Space>
struct kernels {
  template <class Acc, int S>
  using ctx = eval::ectx<Acc, S, true>;  // staged tiles in output order
  using range = Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>;

  /// Reductions: the L lane sums of a block of K x L consecutive elements at p, lane l holding
  /// p[l] + p[l + L] + ... + p[l + (K - 1) L] added by a pairwise tree (the association the
  /// generic chunk fold uses: neighbouring runs first), handed to f as one GCC/Clang vector
  /// (f(const vec<T, L>&)). By reference, not returned: L lanes may be wider than the target's
  /// registers (16 floats on AVX2), and GCC notes an ABI change for every such return value.
  /// \tparam K power of two  \tparam L lanes (a multiple of the target's vector length)
#if defined(__GNUC__)  // GCC and Clang (which reads GCC's pragmas) both warn
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
  template <int K, int L, class T, class F>
  requires(simd::bytes > 0 &&
           std::is_arithmetic_v<T>) TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE
      static void block_sums(const T* p, const F& f) {
    simd::vec<T, L> t[1];
    block_tree<K, L, L>(p, t);
    f(t[0]);
  }
  /// block_sums' tree, depth first (each pair added as soon as both halves are loaded, in
  /// address order: a sum of 2^28 floats from DRAM reads 25 GB/s when every load of the block
  /// comes first, 31 GB/s this way, on a Zen 4 core). Blocks of more than 8 register loads
  /// are cut into runs the compiler may not interleave (simd::order_loads): left free, GCC
  /// schedules the 32 loads of a float block on AVX2 out of address order, and the same sum
  /// read 14 GB/s instead of 24 (Eigen: 22) on a Zen 4 core; runs of 16 still left a Zen 5
  /// core's AVX2 build at 24 GB/s against Eigen's 33, runs of 8 read 31-32 (2^24 floats: 27 ->
  /// 41 GB/s, Eigen 42). With 512-bit registers too: the 16 loads of a float block (1 KiB)
  /// in GCC's order (lines 0, 2, 3, 1, 4, ...) read 2^28 floats at 35 GB/s on a Zen 5 core, in
  /// runs of 8 at 38 (a plain loop's speed; 2^24: 43 -> 51), and Tessera's sum of 2^16 floats
  /// (L2) 0.97x Eigen -> 1.02-1.04x, 2^28 0.91-0.92x -> 0.95x (standalone, alternated).
  /// The L lanes are held as NR vectors V of W lanes each, lanes [r W, (r + 1) W) in out[r]
  /// (all L in one vector: W = L, NR = 1). OnFma: every addition issued to the multiply-add
  /// units (simd::add_on_fma with `one`), the same bits. A compensated sum adds as much again
  /// outside the tree (TwoSum), and the two sets then share the adders and the multiply-adders:
  /// with every addition on the adders, a double sum of 2^12 elements (in L1) read 0.76-0.77x
  /// Eigen's plain sum and 2^20 (in L3) 0.84-0.95x, this way 1.07-1.08x and 0.97-0.99x, on a
  /// Zen 4 core (AVX-512). A float sum's tree, widened into double lanes (block_fold), does
  /// not gain there: 2^12 floats tied Eigen either way and 2^20 read 0.84x instead of 1.00x;
  /// with 256-bit registers it does (block_fold).
  static constexpr int load_run = 8;  ///< register loads per run
  /// Whether a block fold's registers fit the target's: a tree of TR registers per level (log2
  /// K + 1 levels, depth first), Acc accumulator registers, and `one`.
  template <int K, int TR, int Acc>
  static constexpr bool tree_fits =
      int(std::bit_width(unsigned(K))) * TR + Acc + 1 <= simd::registers;
  template <int K, int L, int W, bool OnFma = false, class P, class V, int NR>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void block_tree(const P& p, V (&out)[NR],
                                                                          const V& one = V{}) {
    using T = simd::element_t<P>;
    if constexpr (K == 1) {
      for (int r = 0; r < NR; ++r) out[r] = simd::load<V>(p + r * W);
    } else {
      V a[NR], b[NR];
      block_tree<K / 2, L, W, OnFma>(p, a, one);
      if constexpr (K / 2 * L * int(sizeof(T)) >= load_run * simd::bytes) simd::order_loads();
      block_tree<K / 2, L, W, OnFma>(p + K / 2 * L, b, one);
      for (int r = 0; r < NR; ++r) {
        if constexpr (OnFma)
          out[r] = simd::add_on_fma(a[r], b[r], one);
        else
          out[r] = a[r] + b[r];
      }
    }
  }

  /// Prefetches into L2 the cache lines of the Bytes bytes at p + ahead (elements).
  template <int Bytes, class T>
  TESSERA_HOST_FORCEINLINE static void prefetch_lines(const T* p, index_type ahead) {
    constexpr int line = 64;
    // One base address, each line at a constant displacement from it (an offset per line
    // kept GCC busy with 16 offset registers, spilled to vector registers).
    const auto* base = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p) +
                                                     std::uintptr_t(ahead) * sizeof(T));
    for (int c = 0; c < (Bytes + line - 1) / line; ++c) simd::prefetch<2>(base, c * line);
  }
  template <int Bytes, simd::element_source P>
  TESSERA_HOST_FORCEINLINE static void prefetch_lines(const P&, index_type) {}

#if defined(TESSERA_HOST_SHUFFLE)
  /// Folds the run of n elements at p into acc[0..L) as the chunk fold reads a run
  /// (reduce/fold.hpp): its n / (K L) blocks of K x L elements (block_sums' trees, the same
  /// additions), each block's L lane sums converted to A and added into the lanes (acc[l] +=
  /// A(lane l), block after block); then its (n mod K L) / L runs of L elements, one per lane;
  /// then its last n mod L elements into lanes 0, 1, ... The same additions in the same order
  /// as the generic fold's lane steps, so the same bits. The accumulators live in registers of
  /// A for the whole run (W lanes each): stepped through an array of L scalars per block, GCC
  /// kept them in memory, and a float sum's 256-bit build read 2^16 elements at 183 GB/s
  /// instead of 240 on a Zen 5 core. With ahead > 0 each block first prefetches its cache lines
  /// `ahead` elements further on into L2 (a fold from memory: kernel_plan::
  /// reduce_prefetch_bytes); the sums are the same. Here and in block_fold_two_sum and op_fold,
  /// p is a pointer or a simd::element_source (an expression computed where it is read, W
  /// elements per load: reduce/fold.hpp's flat_source), read alike. Each variant below is the
  /// whole fold, inlined, so only those a call can take are compiled: prefetching where
  /// MayPrefetch (the caller's run is in an operand's memory: not a buffer or an expression),
  /// from memory where MayReadMemory (not a buffer) and the tree differs in cache
  /// (tree_on_fma_in_cache). Three per call had made the reductions of expressions in a unit of
  /// test_reduce 1.6x their code at -O0 (clang 14, x86-64) and 2.7x their compile time with
  /// g++ 12 -O2 -march=native (92 s against 35).
  /// \tparam K power of two  \tparam L lanes, a multiple of the target's lanes of A
  template <int K, int L, bool MayPrefetch = true, bool MayReadMemory = true, class P, class A>
  requires(simd::bytes > 0 && std::is_arithmetic_v<simd::element_t<P>> && std::is_arithmetic_v<A> &&
           simd::lanes<A> > 1 &&
           L % simd::lanes<A> == 0) TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE
      static void block_fold(const P& p, index_type n, A* acc, index_type ahead = 0,
                             bool from_memory = false) {
    constexpr int W = simd::lanes<A>;
    constexpr auto regs = std::make_index_sequence<L / W>{};
    if constexpr (MayPrefetch && !simd::element_source<P>)
      if (ahead > 0) return block_fold_regs<K, L, W, true, false>(p, n, acc, ahead, regs);
    if constexpr (MayReadMemory && tree_on_fma_in_cache<K, L, W, simd::element_t<P>>)
      if (from_memory) return block_fold_regs<K, L, W, false, false>(p, n, acc, 0, regs);
    block_fold_regs<K, L, W, false, true>(p, n, acc, 0, regs);
  }
  /// Whether block_fold_regs runs its tree on the multiply-add units when its input is in
  /// cache (below); where it does not, a fold from memory is the same code, not a variant.
  template <int K, int L, int W, class T>
  static constexpr bool tree_on_fma_in_cache =
      simd::adds_on_fma && (simd::bytes < 64) && (simd::lanes<T> > 1) &&
      (L % simd::lanes<T> == 0) &&
      tree_fits<K, (simd::lanes<T> > 1 ? L / simd::lanes<T> : 1), L / W>;
  template <int K, int L, int W, bool Prefetch, bool FromCache, class P, class A, std::size_t... R>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void block_fold_regs(
      const P& q, index_type n, A* acc, index_type ahead, std::index_sequence<R...>) {
    using T = simd::element_t<P>;
    using AV = simd::vec<A, W>;
    AV r[sizeof...(R)] = {simd::load<AV>(acc + R * W)...};
    // With 256-bit registers the tree's additions run on the multiply-add units (simd::
    // add_on_fma, the same bits), in registers of T, where its partial sums (log2 K + 1 levels
    // of L / WT registers), the accumulators and `one` fit: a float sum of 2^16 elements (in
    // L2) read 221-236 GB/s instead of 176-201 and 2^12 183-195 instead of 157-181 on a Zen 5
    // core's x86-64-v3 build (standalone, three alternated runs; OpenBLAS' AVX2 sasum about
    // 230); 2^20 tied. Not with 512-bit registers (above: a Zen 4 core lost in L3), nor from
    // memory (FromCache false: reduce_from_memory, or prefetched), where the same core read
    // 2^28 floats at 33-34.5 GB/s that way and 36-37.7 on the adders (Eigen 37-38).
    constexpr int WT = simd::lanes<T>;
    using TV = simd::vec<T, WT>;
    constexpr bool tree_on_fma = FromCache && tree_on_fma_in_cache<K, L, W, T>;
    const TV one = simd::opaque_one<TV>();
    using XV = simd::vec<T, W>;  // the elements of one accumulator register
    const index_type groups = n / (K * L), runs = n % (K * L) / L;
    const int rest = int(n % L);
    for (index_type g = 0; g < groups; ++g) {
      if constexpr (Prefetch) prefetch_lines<K * L* int(sizeof(T))>(q + g * K * L, ahead);
      if constexpr (tree_on_fma) {
        TV t[L / WT];
        block_tree<K, L, WT, true>(q + g * K * L, t, one);
        ((r[R] +=
          simd::widen<A>(lanes_of<(R * W) % WT, W>(t[R * W / WT], std::make_index_sequence<W>{}))),
         ...);
      } else {
        simd::vec<T, L> t[1];
        block_tree<K, L, L>(q + g * K * L, t);
        ((r[R] += simd::widen<A>(lanes_of<R * W, W>(t[0], std::make_index_sequence<W>{}))), ...);
      }
    }
    const P x = q + groups * K * L;
    for (index_type u = 0; u < runs; ++u)
      ((r[R] += simd::widen<A>(simd::load<XV>(x + u * L + R * W))), ...);
    // The last n mod L elements, the lanes beyond them adding -0.0 (x + -0.0 is x for
    // every x).
    if (rest > 0)
      ((r[R] += int(R) * W < rest ? simd::widen<A>(simd::load_first<XV>(x + runs * L + R * W,
                                                                        rest - int(R) * W, T(-0.0)))
                                  : AV{} + A(-0.0)),
       ...);
    (simd::store(acc + R * W, r[R]), ...);
  }
  /// block_tree<K, L, L> of the blocks at p[s] + off for every s < S at once (out[s]: the same
  /// additions), each level's loads taken from the S streams in turn, so that S streams from
  /// memory are in flight together.
  template <int K, int L, int S, class T, class V>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void block_tree_streams(
      const T* const (&p)[S], index_type off, V (&out)[S]) {
    if constexpr (K == 1) {
      for (int s = 0; s < S; ++s) out[s] = simd::load<V>(p[s] + off);
    } else {
      V a[S], b[S];
      block_tree_streams<K / 2, L, S>(p, off, a);
      if constexpr (K / 2 * L * S * int(sizeof(T)) >= load_run * simd::bytes) simd::order_loads();
      block_tree_streams<K / 2, L, S>(p, off + K / 2 * L, b);
      for (int s = 0; s < S; ++s) out[s] = a[s] + b[s];
    }
  }
  /// block_fold of S runs from memory at once: for each s < S the `groups` blocks of K x L
  /// elements at p[s] folded into acc[s][0..L) as block_fold(p[s], groups K L, acc[s], 0, true)
  /// folds them (the tree on the adders, each block's lane sums converted to A and added, block
  /// after block: the same additions, so the same bits), the S runs' blocks read together,
  /// block g of each before block g + 1 (block_tree_streams): one core reads several streams
  /// from memory faster than one (backends/host/backend.hpp).
  /// \tparam K power of two  \tparam L lanes, a multiple of the target's lanes of A
  template <int K, int L, int S, class T, class A>
  requires(simd::bytes > 0 && std::is_arithmetic_v<T> && std::is_arithmetic_v<A> &&
           simd::lanes<A> > 1 &&
           L % simd::lanes<A> == 0) TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE
      static void block_fold_streams(const T* const (&p)[S], index_type groups,
                                     A* const (&acc)[S]) {
    constexpr int W = simd::lanes<A>;
    constexpr int NR = L / W;
    using AV = simd::vec<A, W>;
    AV r[S][NR];
    for (int s = 0; s < S; ++s)
      for (int k = 0; k < NR; ++k) r[s][k] = simd::load<AV>(acc[s] + k * W);
    for (index_type g = 0; g < groups; ++g) {
      simd::vec<T, L> t[S];
      block_tree_streams<K, L, S>(p, g * K * L, t);
      for (int s = 0; s < S; ++s) widen_into<A, W>(t[s], r[s], std::make_index_sequence<NR>{});
    }
    for (int s = 0; s < S; ++s)
      for (int k = 0; k < NR; ++k) simd::store(acc[s] + k * W, r[s][k]);
  }
  /// r[R] += the lanes [R W, (R + 1) W) of t, converted to the accumulators' type.
  template <class A, int W, class TV, class AV, int NR, std::size_t... R>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void widen_into(
      const TV& t, AV (&r)[NR], std::index_sequence<R...>) {
    ((r[R] += simd::widen<A>(lanes_of<R * W, W>(t, std::make_index_sequence<W>{}))), ...);
  }
  /// Compensated lanes: folds the run of n elements at p into the lanes (s[l], c[l]) as the
  /// chunk fold reads a run: its n / (K L) blocks (block_sums' trees; K = 1: one element per
  /// lane), each block's L lane sums added by TwoSum, lane by lane, block after block; then its
  /// (n mod K L) / L runs of L elements, one per lane; then its last n mod L elements into
  /// lanes 0, 1, ...: the operations and order of compensated_sum_rule's step on each lane, so
  /// the same bits. The lanes live in vector registers for the whole run (the generic loop over
  /// the rule's lanes, 16 then, compiled to scalar code: a double sum of 2^16 elements in L2 read
  /// 48 GB/s against Eigen's 117 on a Zen 4 core). With ahead > 0 each block first prefetches its
  /// cache lines `ahead` elements on. The blocks are read in address order whether or not the input
  /// comes from memory: from_memory (kernel_plan::reduce_from_memory) is accepted and ignored.
  /// MayPrefetch false: ahead is 0, as in block_fold.
  /// \tparam K power of two  \tparam L lanes, a multiple of the target's lanes of T
  template <int K, int L, bool MayPrefetch = true, class P, class T = simd::element_t<P>>
  requires(simd::bytes > 0 && std::is_floating_point_v<T> && simd::lanes<T> > 1 &&
           L % simd::lanes<T> == 0) TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE
      static void block_fold_two_sum(const P& p, index_type n, T* s, T* c, index_type ahead = 0,
                                     bool from_memory = false) {
    (void)from_memory;
    constexpr int W = simd::lanes<T>;
    constexpr auto regs = std::make_index_sequence<L / W>{};
    if constexpr (MayPrefetch && !simd::element_source<P>)
      if (ahead > 0) return two_sum_regs<K, L, W, true>(p, n, s, c, ahead, regs);
    two_sum_regs<K, L, W, false>(p, n, s, c, 0, regs);
  }
  template <int K, int L, int W, bool Prefetch, class P, class T, std::size_t... R>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void two_sum_regs(
      const P& q, index_type n, T* s, T* c, index_type ahead, std::index_sequence<R...>) {
    using V = simd::vec<T, W>;
    constexpr int NR = int(sizeof...(R));
    V rs[NR] = {simd::load<V>(s + R * W)...};
    V rc[NR] = {simd::load<V>(c + R * W)...};
    const V one = simd::opaque_one<V>();
    using rule = tessera::backends::impl::compensated_sum_rule<T>;
    // Where the target has the multiply-adds and the block's tree, the lanes and `one` fit in
    // its registers (compensated_sum_rule's 8 lanes of doubles in blocks of 16: 15 of 16 with
    // AVX2, 8 of 32 with AVX-512), the tree runs on the multiply-add units in address order.
    // (With 16 lanes in blocks of 8 the block's tree did not fit AVX2's registers; adding one
    // register's lanes at a time, or the second half of each block so, was the best of what
    // was tried there, and still read 2^12 / 2^16 doubles at 0.84x / 0.86x OpenBLAS' dasum on
    // a Zen 5 core, where this reads 0.89-0.99x / 0.99-1.00x.)
    constexpr bool on_fma = simd::adds_on_fma && tree_fits<K, NR, 2 * NR>;
    const index_type groups = n / (K * L), runs = n % (K * L) / L;
    const int rest = int(n % L);
    for (index_type g = 0; g < groups; ++g) {
      if constexpr (Prefetch) prefetch_lines<K * L* int(sizeof(T))>(q + g * K * L, ahead);
      if constexpr (on_fma) {
        V t[NR];
        block_tree<K, L, W, true>(q + g * K * L, t, one);
        (rule::two_sum(rs[R], rc[R], t[R]), ...);
      } else {
        simd::vec<T, L> t[1];
        block_tree<K, L, L>(q + g * K * L, t);
        (rule::two_sum(rs[R], rc[R], V(lanes_of<R * W, W>(t[0], std::make_index_sequence<W>{}))),
         ...);
      }
    }
    const P x = q + groups * K * L;
    for (index_type u = 0; u < runs; ++u)
      (rule::two_sum(rs[R], rc[R], simd::load<V>(x + u * L + R * W)), ...);
    // The last n mod L elements: TwoSum in every lane, kept in lanes 0 .. rest - 1 only.
    if (rest > 0) (two_sum_first(rs[R], rc[R], x + runs * L + R * W, rest - int(R) * W), ...);
    (simd::store(s + R * W, rs[R]), ...);
    (simd::store(c + R * W, rc[R]), ...);
  }
  /// Folds the run of n elements at p into the L lanes acc[0..L) with one of Tessera's
  /// lane-wise operations (op_rule: acc[l] = op(acc[l], x)) as the chunk fold reads a run
  /// (reduce/fold.hpp): its runs of L elements, one per lane, in address order, then its last
  /// n mod L elements into lanes 0, 1, ...; the lanes in registers throughout. The same
  /// operations in the same order per lane, so the same bits (NaNs and signed zeros included).
  /// \tparam L lanes, a multiple of the target's lanes of T
  template <int L, class P, class Op, class T = simd::element_t<P>>
  requires(simd::bytes > 0 && std::is_arithmetic_v<T> && simd::lanes<T> > 1 &&
           L % simd::lanes<T> == 0 &&
           lane_wise_op<Op>) TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE
      static void op_fold(const P& p, index_type n, T* acc, const Op&) {
    op_fold_regs<L, simd::lanes<T>>(p, n, acc, ops::canonical_reduction<Op>{},
                                    std::make_index_sequence<L / simd::lanes<T>>{});
  }
  template <int L, int W, class P, class T, class VOp, std::size_t... R>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void op_fold_regs(
      const P& q, index_type n, T* acc, const VOp& op, std::index_sequence<R...>) {
    using V = simd::vec<T, W>;
    V r[sizeof...(R)] = {simd::load<V>(acc + R * W)...};
    const index_type runs = n / L;
    const int rest = int(n % L);
    for (index_type g = 0; g < runs; ++g)
      ((r[R] = op(r[R], simd::load<V>(q + g * L + R * W))), ...);
    if (rest > 0) {
      const P x = q + runs * L;
      ((r[R] = int(R) * W < rest
                   ? simd::select_first(
                         rest - int(R) * W,
                         V(op(r[R], simd::load_first<V>(x + R * W, rest - int(R) * W, T(0)))), r[R])
                   : r[R]),
       ...);
    }
    (simd::store(acc + R * W, r[R]), ...);
  }
  /// Copies p[0..n) to out[0..n) a vector at a time, the last n mod W elements (W: the
  /// target's lanes of T) by one load that reads no element past p + n (simd::load_first) and
  /// one whole-vector store: out must have room for W - 1 elements past out + n. The chunk
  /// fold gathers rows of sections into its buffer with it: row by row through a plain loop, a
  /// float sum of a 1000 x 10 section took 2.5 us, against 0.8 for the same rows folded in
  /// place (Zen 5, native).
  template <class T>
  requires(simd::bytes > 0 && std::is_arithmetic_v<T> &&
           simd::lanes<T> > 1) TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE
      static void copy_run(const T* p, index_type n, T* out) {
    constexpr int W = simd::lanes<T>;
    using V = simd::vec<T, W>;
    index_type t = 0;
    for (; t + W <= n; t += W) simd::store(out + t, simd::load<V>(p + t));
    if (t < n) simd::store(out + t, simd::load_first<V>(p + t, int(n - t), T(0)));
  }
  /// TwoSum of the first n elements at y into lanes 0 .. n - 1 of (s, c); the other lanes and
  /// elements untouched (n <= 0: nothing).
  template <class V, class P>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void two_sum_first(V& s, V& c, const P& y,
                                                                             int n) {
    using T = simd::element_t<P>;
    if (n <= 0) return;
    V ts = s, tc = c;
    tessera::backends::impl::compensated_sum_rule<T>::two_sum(ts, tc,
                                                              simd::load_first<V>(y, n, T(0)));
    s = simd::select_first(n, ts, s);
    c = simd::select_first(n, tc, c);
  }
  /// Adds the sum of the 4-byte integers p[0..n), modulo 2^64, to acc: each pair of elements
  /// read as one 64-bit lane q = hi 2^32 + lo (biased to unsigned first for signed T), and two
  /// accumulators per lane, of q and of hi, give sum(lo) + sum(hi) = sum(q) - 2^32 sum(hi) +
  /// sum(hi), exactly modulo 2^64: four in-lane operations per vector where widening each
  /// element to 64 bits took two sign extensions, a cross-lane extract and two additions (2^16
  /// ints in L2 read 72 GB/s against Eigen's 32-bit wrapping sum at 117 on a Zen 4 core; now
  /// 113-114). Integer addition modulo 2^64 does not depend on the order, so the result is the
  /// one every other fold of int_sum_rule gives. Runs of at least the last-level cache's size
  /// (impl::memory_resident_min_bytes) are read as four streams, a quarter each, one vector
  /// from each per step: more lines in flight from memory (2^24-2^26 ints: 19-21 GB/s in one
  /// stream, 24-28 in four, Eigen 22-25), where in cache one stream is 3 % faster.
  template <class T>
  requires(simd::bytes > 0 && std::is_integral_v<T> && sizeof(T) == 4 &&
           simd::lanes<std::uint64_t> > 1) TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE
      static void int32_sum(const T* p, index_type n, std::uint64_t& acc) {
    if (std::size_t(n) * sizeof(T) >= impl::memory_resident_min_bytes())
      int32_sum_streams<4, 1>(p, n, acc);
    else
      int32_sum_streams<1, 4>(p, n, acc);
  }
  /// int32_sum over S streams (a quarter of the whole vectors each for S = 4), R consecutive
  /// vectors of each per step.
  template <int S, int R, class T>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void int32_sum_streams(
      const T* p, index_type n, std::uint64_t& acc) {
    using U = simd::vec<std::uint64_t>;
    constexpr index_type E = simd::bytes / 4;  // elements per vector
    // Signed elements are biased to unsigned (x + 2^31, the sign bit flipped) and n 2^31 is
    // taken off at the end.
    constexpr std::uint64_t flip = std::is_signed_v<T> ? 0x8000000080000000ull : 0;
    U q[S * R] = {}, h[S * R] = {};
    const index_type per = n / (S * R * E) * (R * E);  // elements per stream
    for (index_type i = 0; i < per; i += R * E)
      for (int k = 0; k < S * R; ++k) {
        const U v = simd::load<U>(p + (k / R) * per + i + (k % R) * E) ^ flip;
        q[k] += v;
        h[k] += v >> 32;
      }
    for (int k = 1; k < S * R; ++k) {
      q[0] += q[k];
      h[0] += h[k];
    }
    std::uint64_t sq = 0, sh = 0;
    for (int l = 0; l < simd::lanes<std::uint64_t>; ++l) {
      sq += q[0][l];
      sh += h[0][l];
    }
    std::uint64_t total = sq - (sh << 32) + sh;
    for (index_type i = S * per; i < n; ++i)
      total += std::uint64_t(std::uint32_t(p[i]) ^ std::uint32_t(flip));
    if constexpr (std::is_signed_v<T>) total -= std::uint64_t(n) << 31;
    acc += total;
  }

  /// Lanes [First, First + W) of v as a vector of W lanes (a shuffle, which stays in
  /// registers where a copy through memory did not).
  template <int First, int W, class V, std::size_t... J>
  TESSERA_HOST_FORCEINLINE static auto lanes_of(const V& v, std::index_sequence<J...>) {
    return __builtin_shufflevector(v, v, (First + int(J))...);
  }
#endif
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

  /// Elements from p to the first address at the start of a cache line (0 when p is, or when
  /// elements do not tile a line evenly). Rows shorter than row_peel_min elements
  /// are not peeled (a few scalar iterations would cost more than the split stores they save).
  static constexpr index_type row_peel_min = 128;
  template <class T>
  static index_type row_peel(const T* p) {
    constexpr std::uintptr_t V = 64;
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
    if (V % sizeof(T) != 0 || a % sizeof(T) != 0) return 0;
    return index_type(((V - a % V) % V) / sizeof(T));
  }

  /// o[j] = ev(i with its last index j) for j in [a, e) under context cx (boundary policies
  /// applied or not), one loop with no loop-carried dependences (an output that partly
  /// overlaps an operand is written through a temporary: codegen/passes/fusion.hpp). Rows
  /// stream only where they also prefetch (main_span): without the prefetch, streaming these
  /// stores measured slower for PRK's stencil as sections on a Zen 5 core (AVX2 build: 20.7 ->
  /// 18.6 GB/s; AVX-512 unchanged).
  template <class Cx, class Ev, class T, int N>
  TESSERA_HOST_FORCEINLINE static void row_span(const Cx& cx, const Ev& ev, index<N> i, T* o,
                                                index_type a, index_type e) {
    TESSERA_IVDEP
    for (index_type j = a; j < e; ++j) {
      i[N - 1] = j;
      o[j] = static_cast<T>(ev.at(cx, i));
    }
  }

  /// buf[q] = ev(i with its last index j0 + q) for q in [0, Q): row_span into a buffer.
  template <index_type Q, class Cx, class Ev, class T, int N>
  TESSERA_HOST_FORCEINLINE static void row_batch(const Cx& cx, const Ev& ev, index<N> i, T* buf,
                                                 index_type j0) {
    TESSERA_IVDEP
    for (index_type q = 0; q < Q; ++q) {
      i[N - 1] = j0 + q;
      buf[q] = static_cast<T>(ev.at(cx, i));
    }
  }

  /// The main span [a, e) of a row: row_span, or with Prefetch one output cache line at a
  /// time, each line first prefetching (into every cache level) the plan's streams `ahead`
  /// bytes past the elements it reads (ev.visit_prefetch: each prefetched buffer's leading
  /// row). One line per prefetch batch: PRK's stencil on a Zen 5 core read 32.2-32.4 GB/s at
  /// x86-64-v3 against 27.7-28.1 with batches of four lines (which were 3 % ahead in the
  /// AVX-512 build: 30.4-31.0 against 29.2-30.1).
  ///
  /// With `stream` (plan.streaming_stores) and o + a at the start of a line, the span's whole
  /// lines are evaluated four at a time into a buffer in L1 (the same loop, the same values)
  /// and written with non-temporal stores, each line's prefetches first, then a store fence at
  /// the end of the span; the lines left over are stored as above. PRK's stencil as sections,
  /// 8000^2 doubles on a Zen 4 core: 20.0-20.3 GB/s against 15.4-15.6 with plain stores; in a
  /// standalone copy of this loop (4 KiB ahead), batches of four lines 15.4-15.7, of one line
  /// 13.2-15.0, of eight 15.1-15.4, plain stores 11.1-13.6.
  template <bool Prefetch, class Cx, class Ev, class T, int N>
  TESSERA_HOST_FORCEINLINE static void main_span(const Cx& cx, const Ev& ev, index<N> i, T* o,
                                                 index_type a, index_type e, index_type ahead,
                                                 bool stream = false) {
    if constexpr (Prefetch) {
      constexpr index_type L = sizeof(T) < 64 ? index_type(64 / sizeof(T)) : 1;
      constexpr int M = int(codegen::max_row_prefetches);
      const char* at[M];
      index_type size[M];
      int streams = 0;
      index<N> first = i;
      first[N - 1] = 0;
      ev.visit_prefetch(first, [&](std::uintptr_t p, index_type b) {
        if (streams < M) {
          at[streams] = reinterpret_cast<const char*>(p);
          size[streams++] = b;
        }
      });
      index_type j = a;
      if constexpr (streaming_supported && (sizeof(T) == 4 || sizeof(T) == 8) &&
                    std::is_trivially_copyable_v<T>) {
        constexpr index_type Q = 4 * L;  // elements per batch: four lines
        if (stream && j + Q <= e && streamable(o + j)) {
          for (; j + Q <= e; j += Q) {
            for (index_type q = 0; q < Q; q += L)
              for (int s = 0; s < streams; ++s) simd::prefetch<3>(at[s], ahead + (j + q) * size[s]);
            alignas(64) T buf[Q];
            row_batch<Q>(cx, ev, i, buf, j);
            for (index_type q = 0; q < Q; q += L) stream_line(o + j + q, buf + q);
          }
          store_fence();
        }
      }
      for (; j + L <= e; j += L) {
        for (int s = 0; s < streams; ++s) simd::prefetch<3>(at[s], ahead + j * size[s]);
        row_span(cx, ev, i, o, j, j + L);
      }
      row_span(cx, ev, i, o, j, e);
    } else {
      row_span(cx, ev, i, o, a, e);
    }
  }

  /// Row r of an elementwise kernel that is not one flat loop (see elementwise), its main span
  /// through main_span<Prefetch> (streamed when `stream`).
  template <bool Prefetch, int S, class Ev, class T, int N>
  TESSERA_HOST_FORCEINLINE static void elementwise_row(const Ev& ev,
                                                       const tessera::impl::strided_ref<T, N>& out,
                                                       const extent<N>& ext, index_type r,
                                                       index_type ahead, bool stream = false) {
    using E = typename eval::expr_of<Ev>::type;
    constexpr bool split = codegen::kind_count<E, node_kind::shift>() > 0 &&
                           codegen::kind_count<E, node_kind::custom>() == 0;
    const index_type cols = ext[N - 1];
    const ctx<char, S> c;
    index<N> i = tessera::impl::unflatten(ext, r * cols);
    index_type lo = cols, hi = cols;  // the interior columns [lo, hi)
    if constexpr (split) {
      lo = 0;
      ev.visit_shifts(index<N>(), [&](const index<N>& o, const extent<N>& x) {
        for (int d = 0; d < N - 1; ++d)
          if (i[d] + o[d] < 0 || i[d] + o[d] >= x[d]) hi = lo;
        lo = lo > -o[N - 1] ? lo : -o[N - 1];
        hi = hi < x[N - 1] - o[N - 1] ? hi : x[N - 1] - o[N - 1];
      });
      if (hi < lo) hi = lo;
      if (lo > cols) lo = hi = cols;
    }
    T* o = &out.at(i);
    // The main span of a row (all of it, or the interior columns of a row with shifts) starts
    // at the first column whose store starts a cache line; the columns before it run first. A
    // section's rows start anywhere in a line; stored unaligned, every 512-bit store split over
    // two lines and PRK's stencil as sections wrote 17 GB/s instead of 20-21 on a Zen 5 core.
    const index_type m0 = split ? lo : 0, m1 = split ? hi : lo;
    index_type a = m1 - m0 >= row_peel_min ? m0 + row_peel(o + m0) : m0;
    if (a > m1) a = m1;
    if constexpr (split) {
      const eval::ectx<char, S, true, false, true> inner;
      row_span(c, ev, i, o, 0, lo);
      row_span(inner, ev, i, o, lo, a);
      main_span<Prefetch>(inner, ev, i, o, a, hi, ahead, stream);
    } else {
      row_span(c, ev, i, o, 0, a);
      main_span<Prefetch>(c, ev, i, o, a, lo, ahead, stream);
    }
    row_span(c, ev, i, o, hi, cols);
  }
  /// elementwise_row with prefetches, compiled for the target's memory_rows_vector_bytes
  /// (TESSERA_MEMORY_ROWS; called, not inlined, from the launch).
  template <int S, class Ev, class T, int N>
  TESSERA_MEMORY_ROWS static void memory_row(const Ev& ev,
                                             const tessera::impl::strided_ref<T, N>& out,
                                             const extent<N>& ext, index_type r, index_type ahead,
                                             bool stream) {
    elementwise_row<true, S>(ev, out, ext, r, ahead, stream);
  }

  /// f(0), ..., f(n - 1) as kernel k (element-wise, tile_reduce) plans them: launched over a
  /// RangePolicy, or, for a plan that runs inline (kernel_plan::inline_run), in order on the
  /// calling thread after a fence of exec (the assignment's profiling region,
  /// exec/executor.hpp, names it).
  template <class F>
  static void run_range(const Space& exec, const codegen::kernel_plan& k, index_type n,
                        const F& f) {
    run_range(exec, k, n, f, [](const F& g, index_type i) { g(i); });
  }
  /// f(ev, 0), ..., f(ev, n - 1), as run_range runs f(i): on the inline path f reads the
  /// evaluator ev where it lies, and only a launch copies it (into its functor). A closure
  /// holding a copy made at the call copied ev right after make_eval had written it field by
  /// field, with wide loads those stores cannot forward (a stall of tens of cycles in every
  /// small assignment).
  template <class Ev, class F>
  static void run_range(const Space& exec, const codegen::kernel_plan& k, index_type n,
                        const Ev& ev, const F& f) {
    if (k.inline_run) {
      tessera::impl::fence(exec);  // earlier kernels on exec may still write the operands
      for (index_type i = 0; i < n; ++i) f(ev, i);
      return;
    }
    backends::impl::launch(k.label, range(exec, 0, n), [=](index_type i) { f(ev, i); });
  }

  /// out = ev elementwise (out: extent ext, row-major, last dimension contiguous).
  template <int S, class Ev, class T, int N>
  static void elementwise(const Space& exec, const codegen::kernel_plan& k, const Ev& ev,
                          const tessera::impl::strided_ref<T, N>& out, const extent<N>& ext) {
    const index_type n = ext.size();
    if (n == 0) return;
    if (!k.flat_index) {
      // Some operand is a section, a generated node or a shift: rows of the last dimension,
      // each a contiguous vector loop. With shifts, each row splits into the columns where
      // every shift reads inside its operand (evaluated without boundary tests: contiguous
      // loads that vectorize) and the edges (the boundary policy applies); a row where a shift
      // reads outside its operand in an outer dimension is all edge. Rows whose operands come
      // from memory prefetch them (plan.row_prefetches), and where the output is larger than
      // the cache and not read by the kernel, its whole lines leave with streaming stores
      // (plan.streaming_stores).
      const index_type rows = n / ext[N - 1];
      using E = typename eval::expr_of<Ev>::type;
      if constexpr (codegen::kind_count<E, node_kind::custom>() == 0) {
        if (!k.row_prefetches.empty() && k.row_prefetch_bytes > 0) {
          const index_type ahead = k.row_prefetch_bytes;
          const bool stream = k.streaming_stores;  // whole lines of each row (main_span)
          run_range(exec, k, rows, ev, [=](const Ev& e, index_type r) {
            memory_row<S>(e, out, ext, r, ahead, stream);
          });
          return;
        }
      }
      run_range(exec, k, rows, ev,
                [=](const Ev& e, index_type r) { elementwise_row<false, S>(e, out, ext, r, 0); });
      return;
    }
    T* o = out.p;
    if (k.streaming_stores && streamable(o)) {
      // Outputs larger than the cache are written in whole lines with streaming stores (no
      // read-for-ownership: 2A + 3B - C moves 4 arrays instead of 5). Chunks of 4096 elements
      // (the plan's league), each ending with a store fence on the thread that wrote it.
      constexpr int B = transpose_block_size;
      constexpr index_type chunk = 4096;
      run_range(exec, k, k.league_size, ev, [=](const Ev& e, index_type ch) {
        const ctx<char, S> c;
        const index_type k0 = ch * chunk, k1 = k0 + chunk < n ? k0 + chunk : n;
        // Evaluate 256 elements into an L1-resident buffer (a plain loop that vectorizes),
        // then stream it out line by line.
        constexpr int L = 16 * B;
        index_type q = k0;
        for (; q + L <= k1; q += L) {
          alignas(64) T buf[L];
          for (int j = 0; j < L; ++j) buf[j] = static_cast<T>(e.flat(c, q + j));
          for (int j = 0; j < L; j += B) store_row(o + q + j, buf + j, true);
        }
        for (; q < k1; ++q) o[q] = static_cast<T>(e.flat(c, q));
        store_fence();
      });
      return;
    }
    run_range(exec, k, n, ev,
              [=](const Ev& e, index_type q) { o[q] = static_cast<T>(e.flat(ctx<char, S>{}, q)); });
  }

  /// A full th x tw tile of a plain transpose (operand `src`, row stride lds; output tile at
  /// (oi, oj)) moved block by block into `buf` (row stride tw), the operand's rows in groups of
  /// `group`. Out of line: inlined into the team's tile loop, the same loop nest ran 10-15 %
  /// slower (8192^2 floats, Zen 3 core, interleaved runs in one process).
  template <class T>
  TESSERA_HOST_NOINLINE static void plain_tile_to_buffer(const T* src, index_type lds, T* buf,
                                                         index_type oi, index_type oj,
                                                         index_type th, index_type tw,
                                                         index_type group) {
    constexpr int B = transpose_block_size;
    for (index_type jg = 0; jg < tw; jg += group) {
      const index_type blocks = ((tw < jg + group ? tw : jg + group) - jg + B - 1) / B;
      for (index_type ib = 0; ib < th; ib += B)
        transpose_blocks(src + (oj + jg) * lds + oi + ib, lds, buf + ib * tw + jg, tw, blocks,
                         false);
    }
  }
  /// Bytes of a tile row that skewed_tile_rows takes (its buffer: B rows of this plus a block).
  static constexpr index_type skewed_row_max_bytes = 1024;
  /// The first `rows` rows (whole blocks) of the tile at (oi, oj), tw columns (whole blocks), of a
  /// plain transpose (operand `src`, row stride lds) to an output whose rows do not all start on
  /// a line (`o`, row stride ldo), every whole line with a streaming store. Each block row is
  /// transposed into a buffer, then each output row written shifted to its line boundaries:
  /// columns [oj + d, oj + tw + d), d the elements from column oj to the row's next line, so
  /// that this tile and the tile to its right split every line between them exactly once
  /// (`extend`: that tile is skewed too; one more block is transposed for the d columns past
  /// the tile). Without `extend` the row ends at oj + tw, its last part line stored normally,
  /// and with `first` (the output's first tile column) it starts at column 0, its first part
  /// line stored normally. Where the output rows do not start on lines, the blocks' own
  /// 64-byte rows straddle two lines each, and every line was read for ownership and written
  /// in two halves, from two tiles.
  template <class T>
  TESSERA_HOST_NOINLINE static void skewed_tile_rows(const T* src, index_type lds, T* o,
                                                     index_type ldo, index_type oi, index_type oj,
                                                     index_type rows, index_type tw, bool first,
                                                     bool extend) {
    constexpr int B = transpose_block_size;
    constexpr index_type max_cols = skewed_row_max_bytes / index_type(sizeof(T)) + B;
    alignas(64) T buf[B * max_cols];
    const index_type ldb = tw + B;  // whole blocks: every buffer row starts on a line
    const index_type blocks = tw / B + (extend ? 1 : 0);
    for (index_type ib = 0; ib < rows; ib += B) {
      transpose_blocks(src + oj * lds + oi + ib, lds, buf, ldb, blocks, false);
      for (int r = 0; r < B; ++r) {
        T* const at = o + (oi + ib + r) * ldo + oj;
        const index_type d = elements_to_line(at);
        const index_type begin = first ? 0 : d, end = extend ? tw + d : tw;
        stream_run(at + begin, buf + r * ldb + begin, end - begin);
      }
    }
  }
  /// The ni x nj output tile at (oi, oj) of a plain transpose whose output has fewer than B
  /// rows or columns: out(i, j) = src(j, i) (operand row stride lds, output row stride ldo).
  /// The short side goes four lines at a time and the long side is the inner loop, so each
  /// step reads a few consecutive elements of one operand row (a wide output) or writes a few
  /// consecutive elements of one output row (a tall one); a line whose elements are adjacent
  /// on both sides (a transpose of a vector) is a copy. Measured on a Zen 4 core (floats, one
  /// call, best of 7 runs of 20 ms, Eigen alongside): through scratch block by block, 5000 x 1
  /// -> 1 x 5000 took 10.1 us and 5000 x 3 -> 3 x 5000 9.4 (Eigen 4.5 and 2.4); see the
  /// performance log for these loops' figures.
  template <class T>
  TESSERA_HOST_NOINLINE static void plain_narrow_tile(const T* src, index_type lds, T* o,
                                                      index_type ldo, index_type oi, index_type oj,
                                                      index_type ni, index_type nj) {
    const index_type ie = oi + ni, je = oj + nj;
    if (nj >= ni) {  // few output rows: K at a time along them, from K adjacent operand columns
      auto rows = [&]<int K>(index_type i) {
        T* d[K];
        for (int k = 0; k < K; ++k) d[k] = o + (i + k) * ldo;
        for (index_type j = oj; j < je; ++j) {
          const T* const q = src + j * lds + i;
          for (int k = 0; k < K; ++k) d[k][j] = q[k];
        }
      };
      index_type i = oi;
      for (; i + 4 <= ie; i += 4) rows.template operator()<4>(i);
      if (ie - i == 3) rows.template operator()<3>(i);
      if (ie - i == 2) rows.template operator()<2>(i);
      if (ie - i == 1) {
        if (lds == 1)
          std::copy(src + oj + i, src + je + i, o + i * ldo + oj);
        else
          rows.template operator()<1>(i);
      }
    } else {  // few output columns: K at a time down them, from K operand rows
      auto cols = [&]<int K>(index_type j) {
        const T* s[K];
        for (int k = 0; k < K; ++k) s[k] = src + (j + k) * lds;
        for (index_type i = oi; i < ie; ++i) {
          T* const q = o + i * ldo + j;
          for (int k = 0; k < K; ++k) q[k] = s[k][i];
        }
      };
      index_type j = oj;
      for (; j + 4 <= je; j += 4) cols.template operator()<4>(j);
      if (je - j == 3) cols.template operator()<3>(j);
      if (je - j == 2) cols.template operator()<2>(j);
      if (je - j == 1) {
        if (ldo == 1)
          std::copy(src + j * lds + oi, src + j * lds + ie, o + oi + j);
        else
          cols.template operator()<1>(j);
      }
    }
  }
  /// A plan that copies a transpose's lines directly (kernel_plan::staged_narrow_copy) needs a
  /// plain transpose (`plain`: one operand of the output's element type, no other step).
  /// \throws plan_error when the plan says so and the expression is not one
  static void check_narrow_copy(const codegen::kernel_plan& k, bool plain) {
    if (k.staged_narrow_copy && !plain) [[unlikely]]
      throw plan_error("tessera: plan '" + k.name +
                       "' copies a transpose's operand lines directly (staged_narrow_copy), but "
                       "its expression is not a plain transpose of an operand of the output's "
                       "element type");
  }
  /// Staged transposes: each tile (plan.tile) is walked in B x B blocks (B = plan.staged_block);
  /// every staged operand block is transposed into its scratch slot through vector registers,
  /// then each output row of the block (one or two cache lines) is evaluated into a line and
  /// stored whole, streaming when the plan says so. Where the plan has an output tile in
  /// scratch (kernel_plan::staged_output_tile), a full tile's blocks are stored there instead
  /// and the tile then streams out row by row, each row one run of whole lines. A streamed plain
  /// transpose whose output rows do not start on lines writes its full-width tiles skewed
  /// (skewed_tile_rows): each output row's whole lines streamed. One team member per tile, so
  /// the stage -> evaluate order (the plan's barrier) is program order.
  template <int S, class Ev, class T>
  static void staged_transpose(const Space& exec, const codegen::kernel_plan& k, const Ev& ev,
                               const tessera::impl::strided_ref<T, 2>& out, const extent<2>& ext,
                               bool pure_transpose) {
    constexpr int B = transpose_block_size;
    if (k.staged_block != B)
      throw error("tessera: staged-transpose plan with block " + std::to_string(k.staged_block) +
                  " for a kernel built for " + std::to_string(B));
    const index_type th = k.tile[0], tw = k.tile[1];
    const index_type rows = ext[0], cols = ext[1];
    const index_type tiles_i = k.tiles[0];
    const auto sc = operands::staged_scratch<S>::from_plan(k);
    T* const o = out.p;
    const index_type ldo = out.s[0];
    const bool stream = k.streaming_stores && streamable(o) && ldo % B == 0 && tw % B == 0;
    // Full tiles go through the output tile when the plan has one of this tile's size in T.
    const bool tile_out =
        stream && th % B == 0 && sc.out_tile_bytes >= std::size_t(th) * std::size_t(tw) * sizeof(T);
    const index_type per = k.tiles_per_team, groups_i = (tiles_i + per - 1) / per;
    const index_type group = k.staged_row_group > 0 ? k.staged_row_group : tw;
    // Blocks whose output rows do not start on a line: the kernel in use for an output of this
    // size (read once a launch), placed by the last-level cache the machine reports, not by the
    // memory threshold: such rows stream only from that size on (in skewed tiles, below), and
    // a threshold measured with whole-line outputs says nothing of where their lines stay (999
    // x 666 floats, on an Intel Xeon guest whose measured threshold was 4 MiB: 206 us in the
    // cache's kernel, 281 in the memory's).
    const unaligned_block_store unaligned =
        transpose_unaligned_setting(
            output_place_of(std::size_t(rows) * std::size_t(cols) * sizeof(T),
                            impl::derived_memory_resident_min_bytes()))
            .load();
    // A plain transpose of an operand of the output's type: its full blocks go from registers
    // straight to their destination, no scratch bounce; where the plan says so
    // (staged_narrow_copy) its lines are copied directly.
    const T* plain = nullptr;
    index_type plain_ld = 0;
    if (pure_transpose)
      ev.visit_staged([&](const auto& t) {
        if constexpr (requires { t.child.row_ptr(0); }) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(*t.child.row_ptr(0))>, T>) {
            plain = t.child.row_ptr(0);
            plain_ld = t.child.row_stride();
          }
        }
      });
    check_narrow_copy(k, plain != nullptr);
    const bool narrow_copy = k.staged_narrow_copy;
    // A streamed plain transpose whose output rows do not all start on a line (a row stride
    // that is not whole lines, or an output that does not start on one): full tiles go through
    // skewed_tile_rows, whole lines streamed. On an Intel Xeon guest (8193 x 8197 floats, 128 x
    // 32 tiles) the blocks stored in place ran 1.2-4.2 GB/s read + written (the five kernels of
    // unaligned_block_store; OpenBLAS' somatcopy 4.0), skewed 10 (8192^2, rows on lines, 18).
    const bool skew = streaming_supported && k.streaming_stores && !stream && !narrow_copy &&
                      plain != nullptr && (sizeof(T) == 4 || sizeof(T) == 8) && tw % B == 0 &&
                      tw * index_type(sizeof(T)) <= skewed_row_max_bytes;
    // Team `rank`'s tiles, with its scratch at `scratch` (64-byte aligned).
    auto team_tiles = [=](index_type rank, char* const scratch) {
      // Tiles down a column of the output first: consecutive teams (and a team's `per` tiles)
      // read the same operand rows.
      const index_type tj = rank / groups_i;
      const index_type ti0 = rank % groups_i * per;
      const index_type ti1 = tiles_i - ti0 < per ? tiles_i : ti0 + per;
      ctx<char, S> c;
      c.ld = B;
      sc.bind(scratch, c);
      T* const tile_buf = tile_out ? reinterpret_cast<T*>(sc.out_tile(scratch)) : nullptr;
      for (index_type ti = ti0; ti < ti1; ++ti) {
        const index_type oi = ti * th, oj = tj * tw;
        const index_type ni = rows - oi < th ? rows - oi : th;
        const index_type nj = cols - oj < tw ? cols - oj : tw;
        // Where this tile's blocks go: the output tile (a full tile), else the output.
        const bool staged_out = tile_buf != nullptr && ni == th && nj == tw;
        const index_type ldd = staged_out ? tw : ldo;
        const bool stream_blocks = stream && !staged_out;
        auto dst = [&](index_type i, index_type j) {
          return staged_out ? tile_buf + (i - oi) * tw + (j - oj) : o + i * ldo + j;
        };
        if (narrow_copy) {
          // An output with no full block (fewer than B rows or columns: a vector, a few rows):
          // staged block by block, every element went through scratch one at a time.
          plain_narrow_tile(plain, plain_ld, o, ldo, oi, oj, ni, nj);
          continue;
        }
        // Skewed: the tile's whole block rows (a full-width tile; the tile to the right, when
        // full, is skewed as well), then its last rows, if any, below as other tiles' are.
        const bool skewed = skew && nj == tw;
        const index_type ib0 = skewed ? ni / B * B : 0;
        if (skewed) {
          skewed_tile_rows(plain, plain_ld, o, ldo, oi, oj, ib0, tw, oj == 0,
                           cols - (oj + tw) >= tw);
          if (ib0 == ni) continue;
        }
        // The tile's operand rows (output columns) in groups of `group` (the plan's rule).
        if (staged_out && plain != nullptr) {
          plain_tile_to_buffer(plain, plain_ld, tile_buf, oi, oj, th, tw, group);
        } else {
          for (index_type jg = 0; jg < nj; jg += group)
            for (index_type ib = ib0; ib < ni; ib += B)
              for (index_type jb = jg; jb < nj && jb < jg + group; jb += B) {
                c.oi = oi + ib;
                c.oj = oj + jb;
                const index_type bi = ni - ib < B ? ni - ib : B, bj = nj - jb < B ? nj - jb : B;
                if (plain != nullptr && bi == B && bj == B) {
                  // This block and the full ones after it in the group, in one call.
                  const index_type jend = nj < jg + group ? nj : jg + group;
                  const index_type blocks = (jend - jb) / B;
                  transpose_blocks(plain + c.oj * plain_ld + c.oi, plain_ld, dst(c.oi, c.oj), ldd,
                                   blocks, stream_blocks, unaligned);
                  jb += (blocks - 1) * B;
                  continue;
                }
                if (plain != nullptr && rows >= B && cols >= B) {
                  // An edge block: the full block ending at the output's last row and column
                  // is read (reads only, of the operand). Where that block lies in this tile
                  // (a tile of at least B x B), its elements outside this block are ones this
                  // member writes in the tile's other blocks, with the same values, so it is
                  // written whole, as full blocks are; else only this block's elements are
                  // written (lane by lane where a row is partial; tiles narrower than a block,
                  // which codegen::edge_fitted_tile keeps out of default plans). On a Zen 4 core
                  // (x86-64-v3, floats, best of 200, alternated with the element-wise edges) a
                  // 999 x 666 transpose took 99.5-101 us instead of 106-109.
                  // (In a skewed tile the rows above are written shifted, some of their
                  // columns by the tile to the left: only this block's elements.)
                  const index_type si = c.oi + bi - B, sj = c.oj + bj - B;
                  if (ni >= B && nj >= B && !skewed)
                    transpose_blocks(plain + sj * plain_ld + si, plain_ld, dst(si, sj), ldd, 1,
                                     false, unaligned);
                  else
                    transpose_block_part(plain + sj * plain_ld + si, plain_ld, dst(si, sj), ldd,
                                         int(B - bi), int(B - bj));
                  continue;
                }
                ev.visit_staged([&](const auto& t) { stage_block(t, c); });
                if (bj == B) {
                  for (index_type ii = 0; ii < bi; ++ii) {
                    alignas(64) T line[B];
                    const index_type i = c.oi + ii;
                    for (int jj = 0; jj < B; ++jj)
                      line[jj] = static_cast<T>(ev.at(c, i, c.oj + jj));
                    store_row(dst(i, c.oj), line, stream_blocks);
                  }
                } else {
                  for (index_type ii = 0; ii < bi; ++ii)
                    for (index_type jj = 0; jj < bj; ++jj)
                      *dst(c.oi + ii, c.oj + jj) = static_cast<T>(ev.at(c, c.oi + ii, c.oj + jj));
                }
              }
        }
        if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
          if (staged_out) {
            // Each output row of the tile in one run of whole lines (tw x sizeof(T) is a
            // multiple of 64 bytes, every row 64-byte aligned: `stream`'s conditions).
            constexpr index_type line = 64 / index_type(sizeof(T));
            for (index_type r = 0; r < th; ++r) {
              T* const row = o + (oi + r) * ldo + oj;
              const T* const from = tile_buf + r * tw;
              for (index_type q = 0; q < tw; q += line) stream_line(row + q, from + q);
            }
          }
        }
      }
      if (stream || skew) store_fence();
    };
    if (k.inline_run) {
      // The teams in order on the calling thread, each in one scratch buffer of the plan's
      // size (kept for the thread's next small transpose).
      tessera::impl::fence(exec);  // earlier kernels on exec may still write the operands
      thread_local std::vector<char> buffer;
      if (buffer.size() < sc.bytes + 64) buffer.resize(sc.bytes + 64);
      char* const scratch = sc.base(static_cast<void*>(buffer.data()));
      for (index_type rank = 0; rank < k.league_size; ++rank) team_tiles(rank, scratch);
      return;
    }
    using policy = Kokkos::TeamPolicy<Space>;
    policy p(exec, static_cast<int>(k.league_size), k.team_size);
    sc.request(p);
    backends::impl::launch(k.label, p, [=](const typename policy::member_type& team) {
      team_tiles(team.league_rank(), sc.base(team));
    });
  }

  /// Stages the B x B block of the output at (c.oi, c.oj) of staged transpose `t` in output
  /// order: staged[ii * B + jj] = in(c.oj + jj, c.oi + ii); a full block of a plain operand
  /// moves through vector registers, edges element by element (only in-range elements read).
  template <class Tr, class Cx>
  TESSERA_HOST_FORCEINLINE static void stage_block(const Tr& t, Cx& c) {
    constexpr int B = transpose_block_size;
    using T = typename Tr::T;
    T* s = static_cast<T*>(c.staged[t.slot]);
    const index_type nr = t.in_ext[0] - c.oj < B ? t.in_ext[0] - c.oj : B;
    const index_type nc = t.in_ext[1] - c.oi < B ? t.in_ext[1] - c.oi : B;
    if constexpr (requires { t.child.row_ptr(0); }) {
      if (nr == B && nc == B) {
        transpose_block(t.child.row_ptr(c.oj) + c.oi, t.child.row_stride(), s, B);
        return;
      }
    }
    for (index_type r = 0; r < nr; ++r)
      for (index_type ii = 0; ii < nc; ++ii) s[ii * B + r] = T(t.child.at(c, c.oj + r, c.oi + ii));
  }

  /// The packed matmul core + epilogue (plan.packed_matmul), else the generic tiled form.
  template <int S, class Ev, class T, class OT>
  static void matmul(const Space& exec, const codegen::kernel_plan& k, const operands::matrix<T>& A,
                     const operands::matrix<T>& B, const Ev& ev,
                     const tessera::impl::strided_ref<OT, 2>& out, const extent<2>& ext) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (k.packed_matmul) {
        // Packed panels + register-blocked micro-kernel, epilogue on each finished element.
        // With one matmul node in the expression, it is this kernel's core at compile time.
        constexpr bool one_core =
            codegen::kind_count<typename eval::expr_of<Ev>::type, node_kind::matmul>() == 1;
        constexpr bool in_place = std::is_same_v<T, OT>;
        if (k.matmul_workspace == in_place)
          throw plan_error("tessera: plan '" + k.name + "' " +
                           (in_place ? "accumulates in a workspace" : "accumulates in its output") +
                           ", but the kernel stores " + tessera::impl::scalar_type_name<OT>() +
                           " from a " + tessera::impl::scalar_type_name<T>() + " matmul");
        if (k.matmul_accumulates_output) {
          // out = out + matmul(A, B) (the plan checked the expression's shape and that out is
          // that operand): the matmul adds into out, the epilogue is the identity.
          if constexpr (in_place && accumulate_form<typename eval::expr_of<Ev>::type>) {
            host::gemm<T>(
                exec, ext[0], ext[1], A.cols, A.p, A.ld, B.p, B.ld, out.p, out.s[0],
                [](index_type, index_type, T acc) { return acc; }, k.gemm, k.label, true);
            return;
          } else {
            throw plan_error("tessera: plan '" + k.name +
                             "' accumulates into its output, but the expression is not "
                             "C + matmul(A, B) of the output's type");
          }
        }
        if constexpr (in_place) {
          host::gemm<T>(
              exec, ext[0], ext[1], A.cols, A.p, A.ld, B.p, B.ld, out.p, out.s[0],
              [ev](index_type i, index_type j, T acc) {
                eval::ectx<T, S, true, one_core> c;
                c.acc = acc;
                return static_cast<T>(ev.at(c, i, j));
              },
              k.gemm, k.label);
        } else {
          // The output's type differs: accumulate in a T workspace, then store the epilogue
          // of each element once, converted (plan: c_work and the epilogue launch).
          const index_type M = ext[0], N = ext[1];
          // (From the temporary pool: back to it once the epilogue has finished.)
          auto& pool =
              tessera::backends::impl::temporary_pool<typename Space::memory_space>::instance();
          auto work = pool.take(std::size_t(M * N) * sizeof(T));
          T* const w = reinterpret_cast<T*>(work.data());
          host::gemm<T>(
              exec, M, N, A.cols, A.p, A.ld, B.p, B.ld, w, N,
              [](index_type, index_type, T acc) { return acc; }, k.gemm, k.label);
          const tessera::impl::strided_ref<OT, 2> o = out;
          const auto store_row = [=](index_type i) {
            eval::ectx<T, S, true, one_core> c;
            for (index_type j = 0; j < N; ++j) {
              c.acc = w[i * N + j];
              o.row(i)[j] = static_cast<OT>(ev.at(c, i, j));
            }
          };
          if (k.inline_run) {  // a small direct matmul: its epilogue on the calling thread too
            for (index_type i = 0; i < M; ++i) store_row(i);
          } else {
            backends::impl::launch(k.label + " (epilogue)", range(exec, 0, M), store_row);
            tessera::impl::fence(exec);
          }
          pool.give_back(std::move(work));
        }
        return;
      }
    }
    if (k.packed_matmul)
      throw plan_error("tessera: plan '" + k.name + "' is a packed matmul of " +
                       tessera::impl::scalar_type_name<T>() +
                       ", an element type the packed kernel lacks");
    operands::tiled_matmul<S, Space>(exec, k, A, B, ev, out, ext);
  }

  /// tile_reduce core + epilogue (out: rows/R x cols/C): one iteration per group of
  /// plan.rows_per_team output rows (8/R for R < 8, else 1), every input element read once.
  ///  * Plain operands (an array or view read as is) under one of Tessera's ops: line_rows —
  ///    the R input rows under a line of W = 16 (or 8) vectors combine vertically in vector
  ///    registers, one row after another (each row read as one contiguous 1 KiB run on
  ///    AVX-512), then the line's groups of C combine into outputs.
  ///  * Otherwise, narrow tiles (a tile row shorter than a cache line): for each output row,
  ///    the R input rows under a chunk of outputs combine element-wise into a line in one loop
  ///    (R concurrent streams; vectorizes for any C), whose groups of C then combine into the
  ///    outputs. Wide tiles: the R rows of a tile accumulate element by element in a
  ///    register-sized chunk of C values, which then combine pairwise.
  /// Outputs larger than the cache leave in whole lines with streaming stores when the plan says
  /// so.
  template <int S, class Core, class In, class Ev, class OT>
  static void tile_reduce(const Space& exec, const codegen::kernel_plan& k, const Core& tr,
                          const In& in, const Ev& ev, const tessera::impl::strided_ref<OT, 2>& out,
                          const extent<2>& ext) {
    using T = typename Core::value_type;
    constexpr int R = Core::rows, C = Core::cols;
    constexpr int G = R >= 8 ? 1 : 8 / R;  // output rows per iteration (as planned)
    if (k.rows_per_team != G)
      throw error("tessera: tile_reduce plan with " + std::to_string(k.rows_per_team) +
                  " rows per iteration for a kernel built for " + std::to_string(G));
    const auto op = tr.op;
    const index_type ocols = ext[1], rows = ext[0];
    constexpr bool narrow = C * sizeof(T) < 64;
    constexpr bool lines = line_rows_apply<Core, In>;
    const bool stream = (narrow || lines) && k.streaming_stores && streamable(out.p) &&
                        out.s[0] % transpose_block_size == 0;
    // A tile's combined value -> the node's value; A: T, or a vector of T (lane by lane, the
    // same operation).
    auto finish = [](auto a) {
      using A = decltype(a);
      if constexpr (Core::mean && std::is_floating_point_v<T>)
        return A(a * (T(1) / T(R * C)));
      else if constexpr (Core::mean)
        return A(a / T(R * C));
      else
        return a;
    };
    if constexpr (lines) {
      // The plan's line: the widest, or a half or a quarter of it, each load prefetching the
      // plan's number of lines ahead (codegen::tile_reduce_line).
      const index_type ahead =
          index_type(k.prefetch_lines) * (k.line_bytes / index_type(sizeof(T)));
      // The expression is the node itself, into an array of its type: each line's outputs go
      // from the registers to the output row (line_step).
      constexpr bool direct = std::is_same_v<Ev, eval::eval<Core>> && std::is_same_v<OT, T>;
      auto run = [&](auto nv) {
        constexpr int NV = decltype(nv)::value;
        run_range(exec, k, k.league_size, [=](index_type ig) {
          const index_type i0 = ig * G;
          const index_type i1 = rows - i0 < G ? rows : i0 + G;
          for (index_type i = i0; i < i1; ++i)
            line_rows<S, R, C, T, NV, direct>(op, finish, in, ev, out, i, ocols, ahead, stream);
          if (stream) store_fence();
        });
      };
      // Every power of two of vectors from line_vectors down to one, at least a tile row.
      constexpr int L = simd::lanes<T>;
      const int nv = k.line_bytes / int(simd::bytes);
      if (nv * int(simd::bytes) == k.line_bytes && run_line<line_vectors, L, C>(nv, run)) return;
      std::string widths;
      for (int w = line_vectors; w >= 1 && w * L >= C; w /= 2)
        widths += (widths.empty() ? "" : ", ") + std::to_string(w * simd::bytes);
      throw plan_error("tessera: tile_reduce plan '" + k.name + "' asks for lines of " +
                       std::to_string(k.line_bytes) + " B per row; the kernel has lines of " +
                       widths + " B (every power of two of vectors, at least a tile row)");
    }
    if constexpr (narrow) {
      run_range(exec, k, k.league_size, [=](index_type ig) {
        const index_type i0 = ig * G;
        const index_type i1 = rows - i0 < G ? rows : i0 + G;
        for (index_type i = i0; i < i1; ++i)
          narrow_rows<S, 1, R, C, T>(op, finish, in, ev, out, i, ocols, stream);
        if (stream) store_fence();
      });
    } else {
      run_range(exec, k, k.league_size, [=](index_type ig) {
        const ctx<char, S> c0;
        ctx<T, S> c;  // the epilogue's context: c.acc = the tile's combined value
        constexpr index_type Q = 4;
        const index_type i0 = ig * G, i1 = rows - i0 < G ? rows : i0 + G;
        for (index_type q0 = 0; q0 < ocols; q0 += Q) {
          const index_type q1 = ocols - q0 < Q ? ocols : q0 + Q;
          for (index_type i = i0; i < i1; ++i) {
            OT* const orow = out.row(i);
            for (index_type q = q0; q < q1; ++q) {
              T acc[C];
              for (int cc = 0; cc < C; ++cc) acc[cc] = in.at(c0, i * R, q * C + cc);
              for (int r = 1; r < R; ++r)
                for (int cc = 0; cc < C; ++cc)
                  acc[cc] = op(acc[cc], in.at(c0, i * R + r, q * C + cc));
              c.acc = finish(tree_combine<C>(acc, op));
              orow[q] = static_cast<OT>(ev.at(c, i, q));
            }
          }
        }
      });
    }
  }

  /// Vectors per line of line_rows: 16 where the target has 32 vector registers, else 8 (the
  /// accumulators and one operand fit the register file).
  static constexpr int line_vectors = simd::registers >= 32 ? 16 : 8;
  /// run(integral_constant<int, nv>) where nv is NV or a power-of-two fraction of it of at least
  /// one vector of L lanes and C lanes (a tile row); false where none is nv.
  template <int NV, int L, int C, class Run>
  static bool run_line(int nv, const Run& run) {
    if constexpr (NV >= 1 && NV * L >= C) {
      if (nv == NV) {
        run(std::integral_constant<int, NV>{});
        return true;
      }
      return run_line<NV / 2, L, C>(nv, run);
    } else {
      (void)nv;
      (void)run;
      return false;
    }
  }

  /// line_rows serves tile_reduce: SIMD target, one of Tessera's lane-wise ops, an operand read
  /// straight from memory (rows with unit column stride), and tiles no wider than a line.
  template <class Core, class In>
  static constexpr bool line_rows_apply =
      simd::lanes<typename Core::value_type> > 1 &&
      lane_wise_op<typename Core::op_type>&& requires(const In& x) {
    x.row_ptr(0);
  }
  &&Core::cols <= line_vectors* simd::lanes<typename Core::value_type>;

  /// tile_reduce of output row i, line by line: a line is W = NV x lanes consecutive input
  /// columns (up to 256 floats on AVX-512), Q = W / C outputs. The R input rows under a line
  /// combine lane-wise in W / lanes vector accumulators, row after row (R contiguous runs of W
  /// elements, so the prefetchers see long sequential streams), then each group of C
  /// neighbours combines into an output, the epilogue runs, and the Q results are stored
  /// (whole lines streamed when `stream` and Q fills lines). The rest of the row (less than a
  /// line) goes through lines of NV / 2, NV / 4, ..., 1 vectors while one holds a tile row, and
  /// only what is left after those (less than a vector, or than a tile row) element by
  /// element: a 64 x 64 float tile_mean<4, 4> took 0.74 us with every output of its 64-column
  /// rows combined element by element under a 256-float line, Eigen's loop of 4 x 4 block means
  /// 0.11 (Zen 5, AVX-512). NV: vectors per row of a line; `ahead` (elements, 0 for none): each
  /// load also prefetches the same row that far ahead into L2 (a prefetch never faults past
  /// the end), keeping memory busy while the line's groups combine. The plan chooses both from
  /// the cache sizes (codegen::tile_reduce_line).
  /// @pre line_rows_apply<Core, In>
  template <int S, int R, int C, class T, int NV, bool Direct, class Op, class Fin, class In,
            class Ev, class OT>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void line_rows(
      const Op& op, const Fin& finish, const In& in, const Ev& ev,
      const tessera::impl::strided_ref<OT, 2>& out, index_type i, index_type ocols,
      index_type ahead, bool stream) {
    constexpr int L = simd::lanes<T>, W = NV * L, Q = W / C;
    const index_type cols = ocols * C;
    index_type qa = 0;
    for (; qa * C + W <= cols; qa += Q)
      line_step<S, R, C, T, NV, Direct>(op, finish, in, ev, out, i, qa, ahead, stream);
    line_rest<S, R, C, T, NV / 2, Direct>(op, finish, in, ev, out, i, qa, cols);
    const ctx<char, S> c0;
    ctx<T, S> c;
    OT* const orow = out.row(i);
    for (index_type q = qa; q < ocols; ++q) {
      T a = in.at(c0, i * R, q * C);
      for (int r = 0; r < R; ++r)
        for (int cc = r == 0 ? 1 : 0; cc < C; ++cc) a = op(a, in.at(c0, i * R + r, q * C + cc));
      c.acc = finish(a);
      orow[q] = static_cast<OT>(ev.at(c, i, q));
    }
  }
  /// line_rows' rest of a row: one line of NV vectors where the rest holds one and the line a
  /// tile row, then the same for NV / 2, ... 1 (qa advances past the outputs done).
  template <int S, int R, int C, class T, int NV, bool Direct, class Op, class Fin, class In,
            class Ev, class OT>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void line_rest(
      const Op& op, const Fin& finish, const In& in, const Ev& ev,
      const tessera::impl::strided_ref<OT, 2>& out, index_type i, index_type& qa, index_type cols) {
    if constexpr (NV >= 1) {
      constexpr int W = NV * simd::lanes<T>;
      if constexpr (W >= C) {
        if (qa * C + W <= cols) {
          line_step<S, R, C, T, NV, Direct>(op, finish, in, ev, out, i, qa, 0, false);
          qa += W / C;
        }
        line_rest<S, R, C, T, NV / 2, Direct>(op, finish, in, ev, out, i, qa, cols);
      }
    }
  }
  /// One line of line_rows: the Q = NV x lanes / C outputs from output column qa of row i.
  /// Direct: the expression is the tile_reduce node itself and OT its type, so where its
  /// evaluator reads the kernel's values (ev.core) the finished vectors are the output row's
  /// elements (stored, or streamed in whole cache lines).
  template <int S, int R, int C, class T, int NV, bool Direct, class Op, class Fin, class In,
            class Ev, class OT>
  TESSERA_SIMD_FULL_WIDTH TESSERA_HOST_FORCEINLINE static void line_step(
      const Op& op, const Fin& finish, const In& in, const Ev& ev,
      const tessera::impl::strided_ref<OT, 2>& out, index_type i, index_type qa, index_type ahead,
      bool stream) {
    constexpr int L = simd::lanes<T>, W = NV * L, Q = W / C;
    constexpr int B = transpose_block_size;
    // Vectors per 64-byte cache line: one prefetch per line.
    constexpr int VPL = std::max(1, 64 / (L * int(sizeof(T))));
    using V = simd::vec<T>;
    const ops::canonical_reduction<Op> vop{};  // the same operator, lane by lane on vectors
    const index_type ld = in.row_stride();
    OT* const orow = out.row(i);
    ctx<T, S> c;
    const T* p = in.row_ptr(i * R) + qa * C;
    V acc[NV];
    TESSERA_GCC_UNROLL(16)
    for (int v = 0; v < NV; ++v) {
      if (ahead && v % VPL == 0) simd::prefetch<2>(p, ahead + v * L);
      acc[v] = simd::load<V>(p + v * L);
    }
    // Not unrolled over the rows: GCC would otherwise schedule R rows of loads at once and
    // spill them to the stack (tile_mean 16x16 on a Zen 4 core: 0.69 -> 0.87x Eigen).
    TESSERA_GCC_UNROLL(1)
    for (int r = 1; r < R; ++r) {
      p += ld;
      TESSERA_GCC_UNROLL(16)
      for (int v = 0; v < NV; ++v) {
        if (ahead && v % VPL == 0) simd::prefetch<2>(p, ahead + v * L);
        acc[v] = vop(acc[v], simd::load<V>(p + v * L));
      }
    }
    alignas(64) T red[Q < L ? L : Q];
    alignas(64) OT res[Q];
    // res -> the output row: whole cache lines streamed (non-temporal) when `stream`.
    const auto leave = [&] {
      if constexpr (Q % B == 0) {
        if (stream) {
          for (int q = 0; q < Q; q += B) store_row(orow + qa + q, res + q, true);
          return;
        }
      }
      std::memcpy(orow + qa, res, sizeof res);
    };
#if defined(TESSERA_HOST_SHUFFLE)
    if constexpr ((C & (C - 1)) == 0) {
      // Groups of C combine in registers (a shuffle tree, simd::fold_groups): the scalar
      // loop below leaves memory idle while it extracts lanes one by one (tile_mean 16x16
      // of 8192^2 floats on a Zen 4 core: 20.5 -> 24.0 GB/s).
      simd::fold_groups<C, NV>(acc, vop);
      constexpr int M = Q < L ? 1 : Q / L;
      if constexpr (Direct && Q % L == 0) {
        // Into the row from the registers: through `red` and `res` each line's outputs were
        // stored and read back twice, and its epilogue went element by element (tile_mean
        // 2x2 of 256^2 floats, in L2, on a Zen 4 core: 3.55 -> 3.05 us, 4x4 2.95 -> 2.77;
        // Eigen 2.81, 3.22). Streamed outputs leave in whole cache lines through `res`
        // (tile_mean 2x2 of 8192^2 floats, a Zen 4 core, best of 11 against Eigen in one
        // process: 1.46 -> 1.52x Eigen on the rule's line, 1.59-1.61 -> 1.65-1.66x on a half
        // or a quarter of it); with the same path as outputs that fit the cache, the line
        // tune_prefetch times on those stands for these too.
        if (ev.core) {
          T* const to = stream ? res : orow + qa;
          TESSERA_GCC_UNROLL(16)
          for (int v = 0; v < M; ++v) simd::store(to + v * L, finish(acc[v]));
          if (stream) leave();
          return;
        }
      }
      TESSERA_GCC_UNROLL(16)
      for (int v = 0; v < M; ++v) simd::store(red + v * L, acc[v]);
      for (int q = 0; q < Q; ++q) red[q] = finish(red[q]);
    } else
#endif
    {
      alignas(64) T line[W];
      TESSERA_GCC_UNROLL(16)
      for (int v = 0; v < NV; ++v) simd::store(line + v * L, acc[v]);
      // Three plain loops (combine, epilogue, store) rather than one: GCC then reads the
      // groups of C with two-source permutes instead of gathers.
      for (int q = 0; q < Q; ++q) {
        T a = line[q * C];
        for (int cc = 1; cc < C; ++cc) a = op(a, line[q * C + cc]);
        red[q] = finish(a);
      }
    }
    for (int q = 0; q < Q; ++q) {
      c.acc = red[q];
      res[q] = static_cast<OT>(ev.at(c, i, qa + q));
    }
    leave();
  }

  /// Narrow tile_reduce of output rows i0 .. i0 + M: chunks of L outputs; the M x R input rows
  /// under a chunk combine element-wise into M lines in one loop (M x R concurrent streams;
  /// M = 1 measured best: more streams than the prefetchers follow cost bandwidth), then each
  /// line's groups of C neighbours combine into outputs, the epilogue runs, and the results are
  /// stored (whole lines streamed when `stream`).
  template <int S, int M, int R, int C, class T, class Op, class Fin, class In, class Ev, class OT>
  TESSERA_HOST_FORCEINLINE static void narrow_rows(const Op& op, const Fin& finish, const In& in,
                                                   const Ev& ev,
                                                   const tessera::impl::strided_ref<OT, 2>& out,
                                                   index_type i0, index_type ocols, bool stream) {
    constexpr int B = transpose_block_size;
    constexpr index_type L = (256 / C) / B * B;
    const ctx<char, S> c0;
    ctx<T, S> c;
    for (index_type qa = 0; qa < ocols; qa += L) {
      const index_type nq = ocols - qa < L ? ocols - qa : L, w = nq * C, j0 = qa * C;
      alignas(64) T line[M][L * C];
      for (index_type j = 0; j < w; ++j)
        for (int m = 0; m < M; ++m) {
          T a = in.at(c0, (i0 + m) * R, j0 + j);
          for (int r = 1; r < R; ++r) a = op(a, in.at(c0, (i0 + m) * R + r, j0 + j));
          line[m][j] = a;
        }
      for (int m = 0; m < M; ++m) {
        const index_type i = i0 + m;
        alignas(64) T red[L];
        for (index_type q = 0; q < nq; ++q) {
          T a = line[m][q * C];
          for (int cc = 1; cc < C; ++cc) a = op(a, line[m][q * C + cc]);
          red[q] = finish(a);
        }
        alignas(64) OT res[L];
        for (index_type q = 0; q < nq; ++q) {
          c.acc = red[q];
          res[q] = static_cast<OT>(ev.at(c, i, qa + q));
        }
        OT* const orow = out.row(i) + qa;
        index_type q = 0;
        if (stream)
          for (; q + B <= nq; q += B) store_row(orow + q, res + q, true);
        for (; q < nq; ++q) orow[q] = res[q];
      }
    }
  }
};

}  // namespace tessera::backends::host
