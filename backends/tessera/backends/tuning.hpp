/// \file tuning.hpp
/// \brief Explicit tuning of the CPU matmul's cache blocking, of how CPU transposes write
///        their tiles and blocks and of the software prefetch of kernels that stream from memory.
///        Nothing is tuned implicitly: the default blocking is derived from the cache sizes
///        (deterministic), so equal inputs, blocking and thread count give bitwise-equal
///        products; the transpose's and the prefetch's choices move the same bits either way;
///        explain() never times anything.
#pragma once

#include <tessera/backends/backend.hpp>

#if defined(KOKKOS_ENABLE_SERIAL) || defined(KOKKOS_ENABLE_OPENMP)
#include <tessera/backends/execute.hpp>
#include <tessera/backends/host/backend.hpp>
#include <tessera/backends/host/gemm.hpp>
#include <tessera/backends/host/target.hpp>
#include <tessera/backends/host/timing.hpp>
#include <tessera/backends/reduce.hpp>
#include <tessera/dsl/array.hpp>
#include <tessera/dsl/expr/nodes.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

namespace impl {
/// host::impl::best_seconds_each over the choices c: `use(c[i])` before the runs under choice
/// i. Returns the best seconds under each choice, in c's order; `use` is left at the choice
/// timed last.
template <class C, std::size_t K, class Use, class Run>
std::array<double, K> best_seconds_of(const std::array<C, K>& c, const Use& use, const Run& run,
                                      int first, int rounds) {
  const std::vector<double> s = backends::host::impl::best_seconds_each(
      K, [&](std::size_t i) { use(c[i]); }, run, first, rounds);
  std::array<double, K> t;
  std::copy(s.begin(), s.end(), t.begin());
  return t;
}
/// The bytes a tuning times for data from memory: k times the last-level cache the machine
/// reports (host::impl::derived_memory_resident_min_bytes), at most `cap`, but never less than
/// k times `in_use` (the threshold of the rule being timed, which may have been set or measured
/// larger). Not k times a smaller measured threshold: the choices are for data from memory, and
/// with 4 MiB measured (tune_memory_threshold) 16 MiB arrays had chosen plain row loops.
inline double memory_sized_bytes(double k, std::size_t in_use, double cap) {
  const double derived = double(backends::host::impl::derived_memory_resident_min_bytes());
  return std::max(k * double(in_use), std::min(k * derived, cap));
}
/// The choice least behind the fastest in its worst place: seconds[p][k] is choice k's time in
/// place p (e.g. where a kernel's output lines are), and choice k's score in place p is
/// min_k' seconds[p][k'] / seconds[p][k] (1: the fastest there). Returns the k whose smallest
/// score over the places is the largest; choices whose smallest score is within a fraction
/// `near` of that largest one count as tied with it (timings that differ by a few % are often
/// the noise of the machine), and of the tied ones the k with the largest product of its
/// scores over the places (least behind on the whole) wins; the first such k on an exact tie.
/// With `near` 0 only exact ties count. P, K >= 1; every time > 0; 0 <= near < 1.
template <std::size_t P, std::size_t K>
std::size_t least_behind_everywhere(const std::array<std::array<double, K>, P>& seconds,
                                    double near = 0.03) {
  static_assert(P >= 1 && K >= 1);
  std::array<double, K> worst, product;
  for (std::size_t k = 0; k < K; ++k) {
    worst[k] = 1;
    product[k] = 1;
    for (const auto& place : seconds) {
      const double score = *std::min_element(place.begin(), place.end()) / place[k];
      worst[k] = std::min(worst[k], score);
      product[k] *= score;
    }
  }
  const double best_worst = *std::max_element(worst.begin(), worst.end());
  std::size_t pick = K;
  for (std::size_t k = 0; k < K; ++k)
    if (worst[k] >= best_worst * (1 - near) && (pick == K || product[k] > product[pick])) pick = k;
  return pick;
}

/// best_seconds_of for two choices a and b: the best seconds under a and under b.
template <class C, class Use, class Run>
std::pair<double, double> best_seconds_of_two(const C& a, const C& b, const Use& use,
                                              const Run& run, int first, int rounds) {
  const auto t = best_seconds_of(std::array<C, 2>{a, b}, use, run, first, rounds);
  return {t[0], t[1]};
}
}  // namespace impl

/// Cache blocking of the CPU matmul: rows of A per packed block (mc), depth per block (kc),
/// columns of B per packed panel (nc), in elements, and the k steps ahead that the micro-kernel
/// prefetches A (a_prefetch; 0: none).
using matmul_blocking = backends::host::gemm_blocking;

/// The blocking Tier 1 matmuls of element type T (float, double) use on CPU backends.
template <class T>
matmul_blocking matmul_blocking_in_use() {
  return backends::host::current_blocking<T>();
}
/// Uses `b` for later Tier 1 matmuls of element type T (plans made before are rebuilt).
/// \throws shape_error mc, kc or nc <= 0, or a_prefetch < 0
template <class T>
void set_matmul_blocking(const matmul_blocking& b) {
  backends::host::set_blocking<T>(b);
}
/// Times a few blockings around the default on a 512^3 product with the default host
/// execution space's threads (at most 92 products: 0.25 s at 100 GFLOP/s) and uses the fastest for
/// later matmuls of type T; returns it. Store it (mc, kc, nc, a_prefetch) and pass it to
/// set_matmul_blocking in later runs to skip the timing. @pre Kokkos is initialized.
template <class T>
matmul_blocking tune_matmul() {
  return backends::host::tune<T>();
}

/// The memory threshold of CPU kernels, in bytes: outputs at least this large are written with
/// streaming stores, row loops and folds moving this much prefetch from memory (and folds read
/// it as several streams), staged transposes whose output and operand reach it together stream.
/// By default the last-level cache the machine reports (32 MiB where it reports none); a value
/// set_memory_threshold or tune_memory_threshold set replaces it.
inline std::size_t memory_threshold_in_use() {
  return backends::host::impl::memory_resident_min_bytes();
}
/// Uses `bytes` as the memory threshold of later CPU kernels; 0: the derived one again (the
/// reported last-level cache). Plans made before are rebuilt. The values are the same either way.
inline void set_memory_threshold(std::size_t bytes) {
  backends::host::set_memory_threshold(bytes);
}
/// Measures where this machine's memory starts for Tessera's CPU kernels, as a guest's reported
/// last-level cache may be shared with other guests or not be there at all: at output sizes S of
/// twice L2, doubling up to the derived threshold (at most 128 MiB), from the largest down, it
/// times 2A + 3B - C (doubles, S bytes each), a transpose of floats (about S bytes) and a sum of
/// the doubles, with the threshold at S (their memory ways: streamed, prefetched) and with none
/// (their cache ways), best of 3 each, then 2 alternated rounds. The threshold becomes the
/// smallest S from which the memory ways are 3 % faster at every size timed; where they are not
/// at the largest, the derived threshold stays. Measured on an Intel Xeon guest reporting 480 MiB
/// of L3 (2 MiB of L2 per core; GB/s read + written, memory way against cache way): 2A + 3B - C
/// at 4 MiB 28.5 against 21.9, at 128 MiB 19.5 against 15.9; transposes of 1024^2 floats 24.1
/// against 12.9, 4096^2 20.0 against 3.7; sums alike up to 16 MiB and ahead from 32 MiB (f64:
/// 17.9 against 16.1 GB/s at 64 MiB). About 2-4 s with 480 MiB reported, and six arrays of the
/// largest S at once. Returns the threshold now in use; on a GPU mapping returns it untimed.
/// Explicit: nothing calls it implicitly.
/// \tparam D the element type of 2A + 3B - C and of the sum (double). A template, as the other
///         tunings: a program that never calls it never compiles it for a GPU (clang 15's
///         AMDGPU back end fails on a double sum's kernel at -O0 for gfx90a).
/// \throws what allocating the arrays throws; the threshold in use before is then kept.
///         @pre Kokkos is initialized; not inside a parallel region.
template <class D = double>
std::size_t tune_memory_threshold() {
  namespace host = backends::host;
  const codegen::target target = backends::backend<execution_space>::make_target();
  if (target.thread_per_logical) return memory_threshold_in_use();
  const std::size_t l2 = target.l2_bytes > 0 ? target.l2_bytes : std::size_t(1) << 20;
  const std::size_t derived = host::impl::derived_memory_resident_min_bytes();
  const std::size_t top = std::min(derived, std::size_t(128) << 20);
  std::vector<std::size_t> sizes;
  for (std::size_t s = 2 * l2; s <= top; s *= 2) sizes.push_back(s);
  struct restore {
    std::size_t before = host::impl::memory_threshold_setting().load();
    bool done = false;
    ~restore() {
      if (!done) backends::host::set_memory_threshold(before);
    }
  } guard;
  // The cache ways: a threshold no array reaches.
  constexpr std::size_t none = std::size_t(1) << 62;
  std::size_t pick = 0;
  for (auto s = sizes.rbegin(); s != sizes.rend(); ++s) {
    const index_type n = index_type(*s / sizeof(D));
    const index_type side =
        std::max<index_type>(index_type(std::sqrt(double(*s) / sizeof(float))) / 16 * 16, 16);
    array<D, 1> a(n), b(n), c(n), d(n);
    array<float, 2> x(side, side), y(side, side);
    a = D(1);
    b = D(2);
    c = D(3);
    x = 1.f;
    volatile D sink = D(0);
    const auto [memory, cache] = impl::best_seconds_of_two(
        *s, none, host::set_memory_threshold,
        [&] {
          d = D(2) * a + D(3) * b - c;
          y = transpose(x);
          sink = sum(a);
        },
        3, 2);
    (void)sink;  // stored only so that no sum is optimised away
    if (!(memory < 0.97 * cache)) break;
    pick = *s;
  }
  host::set_memory_threshold(pick > 0 && pick < derived ? pick : 0);
  guard.done = true;
  return memory_threshold_in_use();
}

/// Where streamed CPU transposes (outputs that take at least the last-level cache's size with the
/// operand they transpose: codegen::staged_output_streams) assemble each output tile in team
/// scratch and write its rows as 256-byte runs, instead of writing 16 x 16 blocks from registers:
/// `rows_exceed_l2` (the default: where a tile's operand rows do not fit in L2 together), `always`
/// or `never`; or `wide_rows`: never staged, in tiles of one block row whose output rows are 1 KiB
/// runs (codegen::transpose_options::wide_row_bytes). The values are the same every way.
/// to_string(s) names a choice (codegen/target.hpp).
using transpose_staging = codegen::tile_staging;

/// The staging later Tier 1 transposes use on CPU backends.
inline transpose_staging transpose_staging_in_use() {
  return backends::host::transpose_staging_setting().load();
}
/// Uses `s` for later Tier 1 transposes on CPU backends (plans made before are rebuilt).
inline void set_transpose_staging(transpose_staging s) {
  backends::host::set_transpose_staging(s);
}
/// Times a square transpose of T (default float) whose output is twice the derived memory
/// threshold, at most 256 MiB and at least twice the threshold in use (memory_threshold_in_use;
/// side x side elements, side a multiple of 16: 4096 floats with a 32 MiB last-level cache),
/// staged, unstaged and in wide rows, on the default execution space (best of 3 each, then 2
/// alternated rounds: 16 transposes with a warm-up), and uses the fastest for later
/// transposes: wide_rows where it is 3 % faster than both others, else `always` or `never`
/// where one is 3 % faster than the other, else the default. Which wins depends on the core
/// and its memory: on a Zen 5 guest (family 26 model 2) 8192^2 floats read 11.5 GB/s in
/// 128 x 32 tiles and 15.3 in wide rows, where another Zen 5 had read 30 in 128 x 32 tiles.
/// Two arrays of that size are allocated (128 MiB with 32 MiB of L3). Returns the staging now
/// in use; on a GPU mapping (no streamed CPU tiles) returns it without timing anything.
/// Explicit: nothing calls it implicitly.
/// \throws what allocating the two arrays throws (Kokkos's allocation error); the staging in use
///         before the call is then kept. @pre Kokkos is initialized; not inside a parallel region.
template <class T = float>
transpose_staging tune_transpose() {
  namespace host = backends::host;
  const codegen::target target = backends::backend<execution_space>::make_target();
  if (target.thread_per_logical || target.transpose.stream_run_bytes <= 0 ||
      target.streaming_store_min_bytes == 0)
    return transpose_staging_in_use();
  // Twice the derived threshold, at most 256 MiB (the transposes it decides for are large
  // ones), and at least twice the threshold in use (so that the output streams).
  const double bytes =
      impl::memory_sized_bytes(2, target.streaming_store_min_bytes, double(std::size_t(256) << 20));
  const double elems = bytes / double(sizeof(T));
  const index_type side = std::max<index_type>(index_type(std::sqrt(elems)) / 16 * 16, 16);
  array<T, 2> a(side, side), t(side, side);
  a = T(1);
  // The timing switches the staging: an exception on the way restores the caller's.
  struct restore {
    transpose_staging before = transpose_staging_in_use();
    bool done = false;
    ~restore() {
      if (!done) backends::host::set_transpose_staging(before);
    }
  } guard;
  const auto s = impl::best_seconds_of(
      std::array<transpose_staging, 3>{transpose_staging::never, transpose_staging::always,
                                       transpose_staging::wide_rows},
      host::set_transpose_staging, [&] { t = transpose(a); }, 3, 2);
  const double blocks = s[0], staged = s[1], wide = s[2];
  const transpose_staging pick = wide < 0.97 * std::min(blocks, staged)
                                     ? transpose_staging::wide_rows
                                 : staged < 0.97 * blocks ? transpose_staging::always
                                 : blocks < 0.97 * staged ? transpose_staging::never
                                                          : transpose_staging::rows_exceed_l2;
  host::set_transpose_staging(pick);
  guard.done = true;
  return pick;
}

/// How CPU transposes of 4-byte elements write 16 x 16 blocks whose output rows do not start on
/// a cache line (an output row stride that is not whole 64-byte lines, e.g. 999 x 666 floats):
/// `strips` (8 x 8 transposes, 32-byte pieces, 8 output rows at a time across a row of blocks;
/// the default), `quads` (4 x 4 transposes, 16-byte pieces), `halves` (8 x 8 transposes, block
/// by block), `halves_prefetched` (halves, each block's output lines prefetched for writing
/// two blocks ahead) or `halves_prefetched_near` (halves, each block's new output lines
/// prefetched for writing just before it), in builds with vectors of 32 bytes or more
/// (elsewhere none applies). The values are the same every way; which is faster depends on the
/// core and on where the output's lines are (backends/host/transpose.hpp has the figures).
using transpose_unaligned = backends::host::unaligned_block_store;

/// Where a transpose's output is taken to be, from its size: `cache` (under a third of the
/// last-level cache) or `memory` (backends::host::output_place_of).
using transpose_output_place = backends::host::transpose_output_place;

/// The kernel of blocks whose output rows do not start on a line, for each output place.
struct transpose_unaligned_choice {
  transpose_unaligned cache = transpose_unaligned::strips;   ///< outputs the cache holds
  transpose_unaligned memory = transpose_unaligned::strips;  ///< larger outputs
  friend bool operator==(const transpose_unaligned_choice&,
                         const transpose_unaligned_choice&) = default;
};

/// "K (outputs in cache), K' (larger outputs)", K the kernels' descriptions
/// (backends::host::to_string).
inline std::string describe(const transpose_unaligned_choice& c) {
  return std::string(backends::host::to_string(c.cache)) + " (outputs in cache), " +
         backends::host::to_string(c.memory) + " (larger outputs)";
}

/// The kernels later CPU transposes use for blocks whose output rows do not start on a line.
inline transpose_unaligned_choice transpose_unaligned_in_use() {
  namespace host = backends::host;
  return {host::transpose_unaligned_setting(transpose_output_place::cache).load(),
          host::transpose_unaligned_setting(transpose_output_place::memory).load()};
}
/// Uses `c` for later CPU transposes' blocks whose output rows do not start on a line.
inline void set_transpose_unaligned(const transpose_unaligned_choice& c) {
  namespace host = backends::host;
  host::transpose_unaligned_setting(transpose_output_place::cache).store(c.cache);
  host::transpose_unaligned_setting(transpose_output_place::memory).store(c.memory);
}
/// Uses `s` for every output place.
inline void set_transpose_unaligned(transpose_unaligned s) {
  set_transpose_unaligned(transpose_unaligned_choice{s, s});
}
/// Times float transposes whose output rows do not start on a line with every kernel
/// (backends::host::unaligned_block_stores) and picks one kernel for each output place
/// (transpose_output_place), each timed where it applies. Outputs in cache: two places, the
/// output in L2 and in the last-level cache, both written again and again, and the kernel whose
/// slowest place is the least behind that place's fastest kernel (impl::least_behind_everywhere;
/// kernels within 3 % of that are tied, and of them the one least behind on both wins, the
/// earlier of the list on an exact tie). Larger outputs: outputs of about 0.4 of the last-level
/// cache (at most 256 MiB; from a third of it an output is `memory`, and from half of it, with
/// its operand, it is streamed, its full tiles skewed, not written by these kernels), the
/// fastest kernel. Each place times three transposes per run, so
/// that no one shape's cache conflicts decide, with neither the operand's rows nor the output's
/// on whole lines (the padded shapes the kernels are for): operands of s + 5, s - 11 and s + 3
/// columns into output rows 1, 7 and 13 floats longer than whole lines (s a multiple of 16). In
/// L2 s is about sqrt(L2 / 32) (176 with 1 MiB of L2: about 125 KB out each), in the last-level
/// cache about sqrt(2 L2 / 4) (720: about 2 MB each; at most a sixth of the last-level cache),
/// beyond it about sqrt(0.4 LLC / 4) (1824 with 32 MiB of L3: about 13 MB each). Which kernel is
/// fastest varies with the shape: on a Zen 5 core (x86-64-v3, best of 30) `strips` wrote
/// 721 x 725 at 78-79 GB/s read + written and `halves` at 72-73, but 727 x 709 at 57 against 65,
/// and operand rows on whole lines favour `halves` (727 x 704: 57-67 against 69-80). With one
/// kernel for every output, timed with two shapes of whole-line operand rows and, beyond the
/// cache, 2 MB outputs rotated through 1.5 times it, that build picked `halves_prefetched`,
/// and the 999 x 666 transpose (output in cache) took 85-98 us where `strips` took 69-70. Best
/// of 10 each, then 20 alternated rounds, in cache (about 0.1 s); best of 2 and 4 rounds
/// beyond it (six arrays of about 0.4 of the last-level cache's size).
/// Returns the kernels now in use; on a GPU mapping, or in builds where the choice does not
/// apply (vectors under 32 bytes), returns them untimed. Explicit: nothing calls it implicitly.
/// \throws what allocating the arrays throws; the kernels in use before are then kept.
///         @pre Kokkos is initialized; not inside a parallel region.
inline transpose_unaligned_choice tune_transpose_unaligned() {
  const codegen::target target = backends::backend<execution_space>::make_target();
#if defined(TESSERA_HOST_SHUFFLE)
  constexpr bool applies = backends::host::simd::bytes >= 32;
#else
  constexpr bool applies = false;
#endif
  if (!applies || target.thread_per_logical) return transpose_unaligned_in_use();
  const std::size_t l2 = target.l2_bytes > 0 ? target.l2_bytes : std::size_t(1) << 20;
  // The reported last-level cache, not a memory threshold set or measured: the kernels place
  // their outputs by it (backends/host/kernels.hpp).
  const std::size_t llc = std::max(backends::host::impl::derived_memory_resident_min_bytes(), l2);
  auto side_of = [](double bytes) {
    return std::max<index_type>(index_type(std::sqrt(bytes / sizeof(float))) / 16 * 16, 32);
  };
  const index_type small = side_of(double(l2) / 8),
                   side = side_of(std::min(2.0 * double(l2), double(llc) / 6)),
                   large = side_of(std::min(0.4 * double(llc), double(std::size_t(256) << 20)));
  // The three shapes of a place of side s: (rows, columns) of the operand, (columns, rows) out.
  struct shape {
    index_type rows, cols;
  };
  const auto shapes_of = [](index_type s) {
    return std::array<shape, 3>{shape{s + 1, s + 5}, shape{s + 7, s - 11}, shape{s + 13, s + 3}};
  };
  struct place {
    std::array<array<float, 2>, 3> in, out;
    explicit place(const std::array<shape, 3>& shapes) {
      for (std::size_t i = 0; i < 3; ++i) {
        in[i] = array<float, 2>(shapes[i].rows, shapes[i].cols);
        out[i] = array<float, 2>(shapes[i].cols, shapes[i].rows);
        in[i] = 1.f;
      }
    }
    void run() {
      for (std::size_t i = 0; i < 3; ++i) out[i] = transpose(in[i]);
    }
  };
  struct restore {
    transpose_unaligned_choice before = transpose_unaligned_in_use();
    bool done = false;
    ~restore() {
      if (!done) set_transpose_unaligned(before);
    }
  } guard;
  constexpr auto& kernels = backends::host::unaligned_block_stores;
  const auto use = [](transpose_unaligned s) {
    set_transpose_unaligned(s);
  };
  transpose_unaligned_choice pick;
  {
    place in_l2(shapes_of(small)), in_llc(shapes_of(side));
    const std::array<std::array<double, kernels.size()>, 2> seconds{
        impl::best_seconds_of(
            kernels, use, [&] { in_l2.run(); }, 10, 20),
        impl::best_seconds_of(
            kernels, use, [&] { in_llc.run(); }, 10, 20)};
    pick.cache = kernels[impl::least_behind_everywhere(seconds)];
  }
  {
    place beyond(shapes_of(large));
    const std::array<std::array<double, kernels.size()>, 1> seconds{impl::best_seconds_of(
        kernels, use, [&] { beyond.run(); }, 2, 4)};
    pick.memory = kernels[impl::least_behind_everywhere(seconds)];
  }
  set_transpose_unaligned(pick);
  guard.done = true;
  return pick;
}

/// Software prefetch of the CPU kernels that stream from memory: by default derived from the
/// cache sizes and the vector width (codegen::tile_reduce_line; backends/host/backend.hpp), or
/// as tune_prefetch measured it on the running machine, or set by hand. A prefetch only brings
/// data into cache earlier: the values are the same every way.
struct prefetch_tuning {
  /// tile_reduce (tile_mean, tile_reduce<R, C> with vector lines): whether its lines prefetch
  /// ahead into L2 (at the distance the rule derives), for tiles of at most 2, 3-4, 5-8 and
  /// more rows (codegen::tile_rows_class).
  std::array<bool, codegen::tile_rows_classes> tile_reduce{true, true, true, true};
  /// Folds from memory (sum, mean, min, ... of inputs larger than the last-level cache): bytes
  /// each input line is prefetched ahead into L2; 0 none; -1 the rule (4 KiB in builds with
  /// 512-bit vectors, none in narrower ones). Float sums of memory without gaps on one thread
  /// read several streams instead and take none (kernel_plan::reduce_streams).
  int reduce_bytes = -1;
  /// tile_reduce: how many more times (0-3) its lines are halved than the cache rule halves
  /// them, per height class (while a line still holds a tile row and one vector; the prefetch
  /// distance per row stays the rule's): 1 is half the rule's line, 2 a quarter, 3 an eighth.
  std::array<int, codegen::tile_rows_classes> tile_reduce_line_halvings{0, 0, 0, 0};
  /// Elementwise row loops (sections, shifts, generated operands) moving more than the
  /// last-level cache: prefetching their operands' leading rows ahead and streaming large
  /// outputs (the rule), prefetching only, or plain row loops; for loops reading each operand
  /// row once, and for stencils (some operand read over several rows: its rows are read again
  /// from cache by the next output rows).
  codegen::row_loop_memory row_loops = codegen::row_loop_memory::prefetch_and_stream;
  codegen::row_loop_memory stencil_row_loops = codegen::row_loop_memory::prefetch_and_stream;
  friend bool operator==(const prefetch_tuning&, const prefetch_tuning&) = default;
};

/// The height classes of `p` whose tile_reduce lines do not prefetch, as a bit set.
inline unsigned no_prefetch_rows(const prefetch_tuning& p) {
  unsigned off = 0;
  for (int c = 0; c < codegen::tile_rows_classes; ++c)
    if (!p.tile_reduce[std::size_t(c)]) off |= 1u << c;
  return off;
}

/// The tile_reduce line halvings of `p`, two bits per height class
/// (codegen::tile_reduce_options::line_halvings).
inline unsigned line_halvings(const prefetch_tuning& p) {
  unsigned packed = 0;
  for (int c = 0; c < codegen::tile_rows_classes; ++c)
    packed |= unsigned(p.tile_reduce_line_halvings[std::size_t(c)] & 3) << (2 * c);
  return packed;
}

/// The prefetch choices later CPU kernels use.
inline prefetch_tuning prefetch_tuning_in_use() {
  prefetch_tuning p;
  const unsigned off = backends::host::tile_reduce_no_prefetch_setting().load();
  const unsigned halvings = backends::host::tile_reduce_line_halvings_setting().load();
  for (int c = 0; c < codegen::tile_rows_classes; ++c) {
    p.tile_reduce[std::size_t(c)] = !((off >> c) & 1u);
    p.tile_reduce_line_halvings[std::size_t(c)] = codegen::line_halvings_of(halvings, c);
  }
  p.reduce_bytes = backends::host::reduce_prefetch_setting().load();
  p.row_loops = backends::host::row_loops_setting().load();
  p.stencil_row_loops = backends::host::stencil_row_loops_setting().load();
  return p;
}
/// Uses `p` for later CPU kernels (plans made before are rebuilt).
/// \throws shape_error reduce_bytes < -1 or not a multiple of 64 (a cache line), or a line
///         halving count outside 0-3
inline void set_prefetch_tuning(const prefetch_tuning& p) {
  if (p.reduce_bytes < -1 || (p.reduce_bytes > 0 && p.reduce_bytes % 64 != 0))
    throw shape_error("tessera::set_prefetch_tuning: reduce_bytes " +
                      std::to_string(p.reduce_bytes) +
                      " is neither -1 (the rule) nor a multiple of 64 bytes (0: none)");
  for (int c = 0; c < codegen::tile_rows_classes; ++c)
    if (const int h = p.tile_reduce_line_halvings[std::size_t(c)]; h < 0 || h > 3)
      throw shape_error("tessera::set_prefetch_tuning: tile_reduce_line_halvings[" +
                        std::to_string(c) + "] is " + std::to_string(h) + ", not 0-3");
  backends::host::set_prefetch(no_prefetch_rows(p), p.reduce_bytes, line_halvings(p), p.row_loops,
                               p.stencil_row_loops);
}
/// One line, e.g. "tile_reduce rows <=2 on line/2, 3-4 off, 5-8 on, >8 on line/4; folds from
/// memory 4096 B ahead; row loops plain, stencils prefetch" ("line/2": half the rule's line; "the
/// rule" for -1).
inline std::string describe(const prefetch_tuning& p) {
  static constexpr const char* rows[] = {"<=2", "3-4", "5-8", ">8"};
  std::string s = "tile_reduce rows";
  for (int c = 0; c < codegen::tile_rows_classes; ++c)
    s += std::string(c ? ", " : " ") + rows[c] + (p.tile_reduce[std::size_t(c)] ? " on" : " off") +
         (p.tile_reduce_line_halvings[std::size_t(c)] > 0
              ? " line/" + std::to_string(1 << p.tile_reduce_line_halvings[std::size_t(c)])
              : "");
  s += "; folds from memory " +
       (p.reduce_bytes < 0 ? std::string("the rule") : std::to_string(p.reduce_bytes) + " B ahead");
  s += std::string("; row loops ") + codegen::to_string(p.row_loops) + ", stencils " +
       codegen::to_string(p.stencil_row_loops);
  return s;
}

/// Times the software prefetch of streaming CPU kernels on the running machine and keeps, for each,
/// the faster of prefetching (the rule's distance; for folds 4 KiB) and not, and for tile_mean also
/// the line: the rule's and a half, a quarter and an eighth of it (those the kernel has), timed
/// round-robin with the prefetch just chosen, the fastest kept where 5 % faster than the rule's:
/// tile_mean of R x R tiles for R = 2, 4, 8, 16 (one per height class) over a square array of T
/// four times the last-level cache reported, at most 256 MiB, or four times a larger memory
/// threshold in use (memory_threshold_in_use) (5808^2 floats, 129 MiB, with 32 MiB of L3:
/// the 2x2 means' output streams, as a large caller's does); the elementwise row loops three ways
/// (prefetching and streaming, prefetching only, plain), stencils on PRK's star stencil of radius 2
/// as sections and the others on 2A + 3B - C over sections, square arrays of doubles each four
/// times the L3 (4096^2 with 32 MiB; at most 256 MiB); and a sum of doubles (the folds that read
/// one stream: a float sum reads streams, never prefetched) over 32 times it (at most 1 GiB) of
/// plain memory (an array_view of new[]'s: 4 KiB pages, as callers' data usually has), on the
/// default execution space (best of 5 each way, then 4 alternated rounds; the sum best of 3, then
/// 4). A choice leaves the rule only where the other is 5 % faster, 3 % for the sum (closer calls
/// flip from run to run on a busy machine). 4-7 s with 32 MiB of L3 (a Zen 5 guest), 11-12 s on an
/// Intel Xeon guest reporting 480 MiB (one core reading 12.5 GB/s from memory). Returns the choices
/// now in use (set_prefetch_tuning); on a GPU mapping, or where no kernel streams from memory,
/// returns them without timing anything. Measured on a Zen 5 core (native build): tile_mean 4x4 of
/// 8192^2 floats 0.95-0.97x Eigen with the rule's prefetch, 1.12-1.16x without it; 2x2 the other
/// way (1.27-1.33x with, 0.92-0.96x without).
/// \throws what allocating the input throws; the choices in use before the call are then
///         kept. @pre Kokkos is initialized; not inside a parallel region.
template <class T = float>
prefetch_tuning tune_prefetch() {
  const codegen::target target = backends::backend<execution_space>::make_target();
  if (target.thread_per_logical || target.row_prefetch_min_bytes == 0)
    return prefetch_tuning_in_use();
  // Arrays of four times the L3, at most 256 MiB (tune_transpose_unaligned's cap): a guest
  // reporting 480 MiB of L3 (one core reading 12.5 GB/s from memory) timed 1.9 GB arrays for
  // tile_mean, and the call took 38-40 s. Four times a larger threshold in use, never a smaller
  // one (impl::memory_sized_bytes).
  const double array_bytes =
      impl::memory_sized_bytes(4, target.row_prefetch_min_bytes, double(std::size_t(256) << 20));
  const double elems = array_bytes / double(sizeof(T));
  // Rounded up to a multiple of 16: the 2x2 means' output (a quarter of the input, the L3's
  // size) then streams as a large caller's does (rounded down it stayed in cache and took
  // another store path, whose timing chose another line).
  const index_type side =
      std::max<index_type>((index_type(std::ceil(std::sqrt(elems))) + 15) / 16 * 16, 64);
  struct restore {
    prefetch_tuning before = prefetch_tuning_in_use();
    bool done = false;
    ~restore() {
      if (!done)
        backends::host::set_prefetch(no_prefetch_rows(before), before.reduce_bytes,
                                     line_halvings(before), before.row_loops,
                                     before.stencil_row_loops);
    }
  } guard;
  prefetch_tuning pick = guard.before;
  // Times run() under `with` and `without`, alternated; returns which is faster by 5 %: 0
  // without, 1 with, -1 neither.
  auto faster = [&](auto&& run, const prefetch_tuning& with, const prefetch_tuning& without) {
    const auto [on, off] = impl::best_seconds_of_two(
        with, without, [](const prefetch_tuning& p) { set_prefetch_tuning(p); }, run, 5, 4);
    return off < 0.95 * on ? 0 : on < 0.95 * off ? 1 : -1;
  };
  {
    array<T, 2> a(side, side);
    a = T(1);
    auto tile_class = [&](auto rows) {
      constexpr int R = decltype(rows)::value;
      constexpr std::size_t c = std::size_t(codegen::tile_rows_class(R));
      array<T, 2> out(side / R, side / R);
      prefetch_tuning with = pick, without = pick;
      with.tile_reduce[c] = true;
      without.tile_reduce[c] = false;
      pick.tile_reduce[c] = faster([&] { out = tile_mean<R, R>(a); }, with, without) != 0;
      // Then the line, with the prefetch just chosen: the rule's and each narrower one the
      // kernel has (its plan differs), timed round-robin (best_seconds_each: one run each,
      // then 9 rounds, each starting from the next line); the fastest is kept where 5 % faster
      // than the rule's.
      // Not one against the next: on a Zen 4 core 16x16 tiles ran about as fast on half the
      // rule's line as on the rule's and 10-25 % faster on a quarter or an eighth, and a
      // chain of 5 % steps sometimes stopped at the rule's (tessera-tour 0.93x Eigen).
      std::vector<prefetch_tuning> lines{pick};
      set_prefetch_tuning(pick);
      std::string plan = explain(tile_mean<R, R>(a));
      for (int h = 1; h <= 3; ++h) {
        prefetch_tuning narrower = pick;
        narrower.tile_reduce_line_halvings[c] = h;
        set_prefetch_tuning(narrower);
        std::string narrower_plan = explain(tile_mean<R, R>(a));
        if (narrower_plan == plan) break;  // no narrower line
        plan = std::move(narrower_plan);
        lines.push_back(narrower);
      }
      if (lines.size() > 1) {
        const std::vector<double> best = backends::host::impl::best_seconds_each(
            lines.size(), [&](std::size_t k) { set_prefetch_tuning(lines[k]); },
            [&] { out = tile_mean<R, R>(a); }, 1, 9);
        const std::size_t fastest =
            std::size_t(std::min_element(best.begin(), best.end()) - best.begin());
        if (best[fastest] < 0.95 * best[0]) pick = lines[fastest];
      }
    };
    tile_class(std::integral_constant<int, 2>{});
    tile_class(std::integral_constant<int, 4>{});
    tile_class(std::integral_constant<int, 8>{});
    tile_class(std::integral_constant<int, 16>{});
  }
  {
    // The row loops (sections, shifts, generated operands) over square arrays of doubles each four
    // times the last-level cache (at most 256 MiB), each way of reading and writing memory timed in
    // turn (best of 5, then 4 alternated rounds; the fastest kept where 5 % faster than the
    // rule's): stencils on PRK's star stencil of radius 2 as sections (one operand read at nine
    // offsets over five rows), the other row loops on 2A + 3B - C over sections of three arrays
    // (each operand row read once) into a fourth. On a Zen 5 guest (8000^2 doubles, alternated in
    // one process, best of 7; native build) the stencil read 17.6-18.2 GB/s prefetched and
    // streamed, 27.7-28.0 prefetched only, 24.3-24.8 plain, and 2A + 3B - C 36.1-39.1 streamed,
    // 31.9-32.7 prefetched only, 38.7-40.2 plain; in other runs the same day the stencil read as
    // fast streamed as plain, or faster: the memory of such a guest changes under it, and the
    // choice is the running machine's.
    using D = double;
    constexpr index_type R = 2;
    const index_type n =
        std::max<index_type>(index_type(std::ceil(std::sqrt(array_bytes / sizeof(D)))), 4 * R + 1);
    array<D, 2> a(n, n), b(n, n), c(n, n), d(n, n);
    a = D(1);
    b = D(0);
    c = D(2);
    const extent<2> in(n - 2 * R, n - 2 * R);
    const index<2> o(R, R);
    auto at = [&](index_type di, index_type dj) {
      return a.section(index<2>(R + di, R + dj), in);
    };
    const D w1 = D(1) / D(2 * R), w2 = D(1) / D(4 * R);
    // The fastest way for the loops whose setting `way` selects, timed on run().
    auto fastest = [&](codegen::row_loop_memory prefetch_tuning::*way, auto&& run) {
      std::array<prefetch_tuning, codegen::row_loop_memories.size()> ways;
      for (std::size_t k = 0; k < ways.size(); ++k) {
        ways[k] = pick;
        ways[k].*way = codegen::row_loop_memories[k];
      }
      const auto seconds = impl::best_seconds_of(
          ways, [](const prefetch_tuning& p) { set_prefetch_tuning(p); }, run, 5, 4);
      std::size_t k = 0;  // the rule
      for (std::size_t i = 1; i < ways.size(); ++i)
        if (seconds[i] < 0.95 * seconds[0] && seconds[i] < seconds[k]) k = i;
      return codegen::row_loop_memories[k];
    };
    pick.stencil_row_loops = fastest(&prefetch_tuning::stencil_row_loops, [&] {
      assign(b.section(o, in), w1 * (at(0, 1) - at(0, -1) + at(1, 0) - at(-1, 0)) +
                                   w2 * (at(0, 2) - at(0, -2) + at(2, 0) - at(-2, 0)));
    });
    pick.row_loops = fastest(&prefetch_tuning::row_loops, [&] {
      assign(d.section(o, in), D(2) * at(0, 0) + D(3) * b.section(o, in) - c.section(o, in));
    });
  }
  {
    // A sum over 32 times the last-level cache (at most 1 GiB) of memory allocated as a
    // caller's usually is (4 KiB pages; Tessera's arrays ask for 2 MiB ones): on a Zen 5 core
    // the 4 KiB prefetch cost such memory 3 % at 2^25 floats, 8 % at 2^26 and 2^28, while on
    // a Tessera array it gained 0-3 % at every size; over four times the L3 the cost hid
    // within the noise, and the 512-bit rule kept it. A 3 % margin: one sum's runs vary less
    // than tile_mean's. Not 8 times the L3: with 32 MiB of it, 2^26 floats (256 MiB) timed
    // 1.01-1.08x slower with the prefetch than without in six tries, two of them within the
    // margin (the rule kept then), 2^28 (1 GiB) 1.06-1.13x in six (another Zen 5 core; a
    // Tessera array of 2^28 floats there: 0.98-1.10x, and 0.90-0.92x Eigen's sum with the
    // prefetch against 1.00-1.02x without, alternated in one process, best of 25).
    // Timed on doubles: their compensated sum reads one stream and takes the prefetch, where
    // a float sum of memory without gaps reads four streams instead (kernel_plan::
    // reduce_streams) and never prefetches; timing it compared one code with itself.
    using D = double;
    const std::size_t n = std::size_t(
        impl::memory_sized_bytes(32, target.row_prefetch_min_bytes, double(1ll << 30)) / sizeof(D));
    const std::unique_ptr<D[]> plain(new D[n]);
    std::fill_n(plain.get(), n, D(1));
    const array_view<const D, 1> v(extent<1>(index_type(n)), plain.get());
    prefetch_tuning with = pick, without = pick;
    with.reduce_bytes = backends::host::reduce_prefetch_bytes;
    without.reduce_bytes = 0;
    volatile D sink = D(0);
    const auto [on, off] = impl::best_seconds_of_two(
        with, without, [](const prefetch_tuning& p) { set_prefetch_tuning(p); },
        [&] { sink = sum(v); }, 3, 4);
    (void)sink;  // stored only so that no sum is optimised away
    pick.reduce_bytes = off < 0.97 * on ? 0 : on < 0.97 * off ? with.reduce_bytes : -1;
  }
  set_prefetch_tuning(pick);
  guard.done = true;
  return pick;
}

}  // namespace tessera
#endif
