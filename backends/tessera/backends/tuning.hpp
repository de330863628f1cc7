/// \file tuning.hpp
/// \brief Explicit tuning of the CPU matmul's cache blocking and of how streamed CPU transposes
///        write their tiles. Nothing is tuned implicitly: the default blocking is derived from
///        the cache sizes (deterministic), so equal inputs, blocking and thread count give
///        bitwise-equal products; the transpose's choice moves the same bits either way;
///        explain() never times anything.
#pragma once

#include <tessera/backends/backend.hpp>

#if defined(KOKKOS_ENABLE_SERIAL) || defined(KOKKOS_ENABLE_OPENMP)
#include <tessera/backends/execute.hpp>
#include <tessera/backends/host/gemm.hpp>
#include <tessera/backends/host/target.hpp>
#include <tessera/dsl/array.hpp>
#include <tessera/dsl/expr/nodes.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>

namespace tessera {

/// Cache blocking of the CPU matmul: rows of A per packed block (mc), depth per block (kc),
/// columns of B per packed panel (nc), in elements.
using matmul_blocking = backends::host::gemm_blocking;

/// The blocking Tier 1 matmuls of element type T (float, double) use on CPU backends.
template <class T>
matmul_blocking matmul_blocking_in_use() {
  return backends::host::current_blocking<T>();
}
/// Uses `b` for later Tier 1 matmuls of element type T (plans made before are rebuilt).
/// \throws shape_error a value <= 0
template <class T>
void set_matmul_blocking(const matmul_blocking& b) {
  backends::host::set_blocking<T>(b);
}
/// Times a few blockings around the default on a 512^3 product with the default host
/// execution space's threads (about 0.1 s) and uses the fastest for later matmuls of type T;
/// returns it. Store it (mc, kc, nc) and pass it to set_matmul_blocking in later runs to skip
/// the timing. @pre Kokkos is initialized.
template <class T>
matmul_blocking tune_matmul() {
  return backends::host::tune<T>();
}

/// Where streamed CPU transposes (outputs of at least the last-level cache's size) assemble
/// each output tile in team scratch and write its rows as 256-byte runs, instead of writing
/// 16 x 16 blocks from registers: `rows_exceed_l2` (the default: where a tile's operand rows do
/// not fit in L2 together), `always` or `never`. The values are the same every way.
using transpose_staging = codegen::tile_staging;

/// The staging later Tier 1 transposes use on CPU backends.
inline transpose_staging transpose_staging_in_use() {
  return backends::host::transpose_staging_setting().load();
}
/// Uses `s` for later Tier 1 transposes on CPU backends (plans made before are rebuilt).
inline void set_transpose_staging(transpose_staging s) {
  backends::host::set_transpose_staging(s);
}
/// Times a square transpose of T (default float) whose output is twice the streaming threshold
/// (side x side elements, side a multiple of 16: 4096 floats with a 32 MiB last-level cache),
/// staged and unstaged, on the default execution space (best of 3 each, then 2 alternated
/// rounds: 11 transposes with a warm-up), and uses the faster for later transposes; the default
/// stays unless one is 3 % faster. Two arrays of that size are allocated (128 MiB with 32 MiB
/// of L3). Returns the staging now in use; on a GPU mapping (no streamed CPU tiles) returns it
/// without timing anything. Explicit: nothing calls it implicitly.
/// \throws what allocating the two arrays throws (Kokkos's allocation error); the staging in use
///         before the call is then kept. @pre Kokkos is initialized; not inside a parallel region.
template <class T = float>
transpose_staging tune_transpose() {
  namespace host = backends::host;
  const codegen::target target = backends::backend<execution_space>::make_target();
  if (target.thread_per_logical || target.transpose.stream_run_bytes <= 0 ||
      target.streaming_store_min_bytes == 0)
    return transpose_staging_in_use();
  const double elems = 2.0 * double(target.streaming_store_min_bytes) / double(sizeof(T));
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
  auto best_of = [&](transpose_staging s, int reps) {
    host::set_transpose_staging(s);
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
      Kokkos::Timer timer;
      t = transpose(a);
      Kokkos::fence();
      best = std::min(best, timer.seconds());
    }
    return best;
  };
  (void)best_of(transpose_staging::never, 1);  // warm-up: first touch, plans, scratch
  double staged = best_of(transpose_staging::always, 3);
  double blocks = best_of(transpose_staging::never, 3);
  for (int r = 0; r < 2; ++r) {  // alternated, so that drifting machine load hits both alike
    staged = std::min(staged, best_of(transpose_staging::always, 1));
    blocks = std::min(blocks, best_of(transpose_staging::never, 1));
  }
  const transpose_staging pick = staged < 0.97 * blocks   ? transpose_staging::always
                                 : blocks < 0.97 * staged ? transpose_staging::never
                                                          : transpose_staging::rows_exceed_l2;
  host::set_transpose_staging(pick);
  guard.done = true;
  return pick;
}

}  // namespace tessera
#endif
