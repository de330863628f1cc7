/// \file host/target.hpp
/// \brief The code generator's target description of a CPU backend: scratch limits, tile
///        mapping, staged-transpose blocking, streaming-store threshold, matmul blocking.
#pragma once

#include <tessera/backends/host/gemm.hpp>
#include <tessera/backends/host/kernels.hpp>
#include <tessera/backends/host/simd.hpp>
#include <tessera/backends/host/transpose.hpp>
#include <tessera/backends/kernels/target_core.hpp>
#include <tessera/codegen/expr_graph.hpp>
#include <tessera/codegen/plan_cache.hpp>

#include <atomic>

namespace tessera::backends::host {

/// Where streamed transposes assemble their tiles in scratch on CPU targets made from now on
/// (codegen::tile_staging; the L2 rule until set_transpose_staging changes it). Thread-safe.
inline std::atomic<codegen::tile_staging>& transpose_staging_setting() {
  static std::atomic<codegen::tile_staging> setting{codegen::tile_staging::rows_exceed_l2};
  return setting;
}
/// Makes `s` the staging of later CPU transposes (plans made before are not reused).
inline void set_transpose_staging(codegen::tile_staging s) {
  transpose_staging_setting().store(s);
  ++codegen::target_generation();
}

/// Software prefetch of CPU streaming kernels as set by tessera::set_prefetch_tuning (the
/// derived rules until then): the tile_reduce height classes whose lines do not prefetch
/// (codegen::tile_reduce_options::no_prefetch_rows), how many more times each class's lines
/// are halved (line_halvings: two bits per class), the bytes folds from memory prefetch
/// ahead (-1: the rule of backend.hpp) and how the elementwise row loops from memory run.
/// Thread-safe; the values are the same every way.
inline std::atomic<unsigned>& tile_reduce_no_prefetch_setting() {
  static std::atomic<unsigned> setting{0};
  return setting;
}
inline std::atomic<unsigned>& tile_reduce_line_halvings_setting() {
  static std::atomic<unsigned> setting{0};
  return setting;
}
inline std::atomic<int>& reduce_prefetch_setting() {
  static std::atomic<int> setting{-1};
  return setting;
}
/// How the elementwise row loops from memory read and write it: loops reading each operand
/// row once, and stencils (codegen::target::row_loops, stencil_row_loops).
inline std::atomic<codegen::row_loop_memory>& row_loops_setting() {
  static std::atomic<codegen::row_loop_memory> setting{
      codegen::row_loop_memory::prefetch_and_stream};
  return setting;
}
inline std::atomic<codegen::row_loop_memory>& stencil_row_loops_setting() {
  static std::atomic<codegen::row_loop_memory> setting{
      codegen::row_loop_memory::prefetch_and_stream};
  return setting;
}
/// Makes these the prefetch choices of later CPU kernels (plans made before are not reused).
inline void set_prefetch(
    unsigned tile_reduce_no_prefetch_rows, int reduce_prefetch_bytes,
    unsigned tile_reduce_line_halvings = 0,
    codegen::row_loop_memory row_loops = codegen::row_loop_memory::prefetch_and_stream,
    codegen::row_loop_memory stencil_row_loops = codegen::row_loop_memory::prefetch_and_stream) {
  tile_reduce_no_prefetch_setting().store(tile_reduce_no_prefetch_rows);
  tile_reduce_line_halvings_setting().store(tile_reduce_line_halvings);
  reduce_prefetch_setting().store(reduce_prefetch_bytes);
  row_loops_setting().store(row_loops);
  stencil_row_loops_setting().store(stencil_row_loops);
  ++codegen::target_generation();
}

/// Makes `bytes` the memory threshold of later CPU kernels (impl::memory_resident_min_bytes; 0:
/// the derived one again; plans made before are not reused).
inline void set_memory_threshold(std::size_t bytes) {
  impl::memory_threshold_setting().store(bytes);
  ++codegen::target_generation();
}

/// Makes `bytes` the size (output and operand together) from which later CPU transposes whose
/// output rows are not whole blocks are streamed (codegen::staged_output_streams; 0: the
/// last-level cache the machine reports again; plans made before are not reused). Such outputs
/// keep the reported cache's rule by default, whatever set_memory_threshold set: a threshold
/// measured with whole-line outputs says nothing of them (backends/host/kernels.hpp).
inline void set_unaligned_rows_threshold(std::size_t bytes) {
  impl::unaligned_rows_threshold_setting().store(bytes);
  ++codegen::target_generation();
}

template <class Space>
codegen::target make_target() {
  codegen::target t = backends::impl::kokkos_target<Space>();
  t.thread_per_logical = false;
  t.max_team_size = 1;
  t.tile_local_per_thread = false;  // every logical thread's copy in team scratch
  // Streamed outputs (past the threshold further down) and schedules' tiles:
  // 128 x 32 output tiles walked in 16 x 16 blocks, tiles down a column of the output first:
  // the 32 operand rows of a column of tiles stream through once, each output row of a block
  // is one 64-byte line written whole. Measured on a 2-core AMD EPYC (Zen 5, 8192^2 floats,
  // best of 5, non-temporal stores, each block's lines stored as they were transposed): with
  // 2 MiB pages 30 GB/s (64..256 x 32 alike), 128 x 128 23 GB/s, 512 x 64 22.6; with 4 KiB
  // pages every shape 20-22 GB/s.
  t.transpose.tile[0] = 128;
  t.transpose.tile[1] = 32;
  t.transpose.block = transpose_block_size;
  t.transpose.pad = 0;
  // Outputs that stay in cache: 64-row tiles whose rows are 1 KiB long (256 floats, 128
  // doubles), so each output row is written in runs of 16 lines, which the L2 prefetchers
  // follow, where the 128 x 32 tile wrote 128-byte runs of four times as many rows. Measured
  // on a 2-core AMD EPYC (Zen 5; floats, every form timed in turn, each into its own output,
  // best of 21; GB/s read + written), 128 x 32 -> 64 x 256, -march=native / x86-64-v3:
  // 999 x 666 35.5 / 31.4 -> 42.7 / 41.5; 1024^2 27.2 / 11.9 -> 40.4 / 24.1; 2048^2 20.4 / 11.0
  // -> 29.7 / 22.4; 2000 x 3000 20.1 / 18.5 -> 22.6 / 22.3 (OpenBLAS' somatcopy 44-47, 32-33,
  // 24.5, 25); doubles 64 x 128: 999 x 666 29.8 -> 34.2, 2000 x 1000 24.8 -> 29.9. Tiles of
  // 16-128 rows of 512 B-1 KiB measured within 10 % of each other.
  t.transpose.cached_tile_rows = 64;
  t.transpose.cached_row_bytes = 1024;
  // Streamed outputs whose tiles' operand rows do not fit in L2 together (walked in groups, so
  // written one 64-byte line per row at a time; codegen::staged_rows_exceed_l2): each output
  // row of a tile is written in one run of at least 256 bytes (four lines) from a tile
  // assembled in scratch. Non-temporal stores to many rows one line at
  // a time reach a fraction of the write bandwidth (Zen 3 core, 8192^2 floats, stores alone in
  // the transpose's order: 64-byte runs 6 GB/s, 128-byte 10.5, 256-byte 15, as fast as
  // memcpy's writes); the whole transpose, before -> after (alternated runs): 8192^2 floats
  // 7.8-8.5 -> 12.2-12.9 GB/s, 8064^2 11.1-11.5 -> 12.5-14.1, 4096 x 8192 doubles 10.6-11.9 ->
  // 12.0-13.2.
  t.transpose.stream_run_bytes = 256;
  // tessera::set_transpose_staging(wide_rows) (tessera::tune_transpose times it): streamed
  // outputs in tiles of one block row, 1 KiB per output row (256 floats, 128 doubles), so each
  // output row is written in a 1 KiB run, block after block, and each operand line read once.
  // Measured on a 2-core AMD EPYC (Zen 5, family 26 model 2; a guest whose memcpy moved
  // between 28 and 31 GB/s), best of 6 in one process, alternated with the other tiles: 8192^2
  // floats 128 x 32 tiles 11.5 GB/s, 16 x 256 15.3, 16 x 128 15.4; 8064^2 14.6 / 21.5 / 18.4;
  // 4096 x 8192 doubles (16 x 128: 1 KiB) 15.6 -> 16.4; 3000 x 5000 floats 13.5 -> 14.6.
  // Non-temporal stores alone, 64-byte lines to 16 rows at a time: 6.7 GB/s where each row
  // got one line per pass, 15 with two, 22 with four, 28 with eight, 34 with sixteen.
  t.transpose.wide_row_bytes = 1024;
  t.transpose.staging = transpose_staging_setting().load();
  t.l1d_bytes = std::size_t(impl::host_caches().l1);
  t.l2_bytes = std::size_t(impl::host_caches().l2);
  // Outputs larger than the last-level cache are written with non-temporal stores: they
  // cannot stay in cache for the next kernel anyway, and skipping the read-for-ownership
  // halves the traffic of the write side. Smaller outputs are stored normally and stay
  // cache-resident. The threshold (impl::memory_resident_min_bytes) is the one set or measured
  // (set_memory_threshold, tessera::tune_memory_threshold), else this machine's L3; a
  // staged transpose counts the operand it transposes with its output (staged_output_streams).
  const std::size_t memory_bytes = impl::memory_resident_min_bytes();
  t.streaming_store_min_bytes = streaming_supported ? memory_bytes : 0;
  // Transposes' outputs whose rows are not whole blocks keep the reported L3's rule for their
  // tiles, whatever threshold was set or measured, unless set_unaligned_rows_threshold set one.
  const std::size_t unaligned_rows = impl::unaligned_rows_threshold_setting().load();
  t.transpose.unaligned_rows_min_bytes = !streaming_supported ? 0
                                         : unaligned_rows > 0
                                             ? unaligned_rows
                                             : impl::derived_memory_resident_min_bytes();
  // Row loops moving more than the last-level cache holds prefetch their operands' leading
  // rows 4 KiB ahead: about what one core's memory bandwidth brings in during one memory
  // latency (40 GB/s x 100 ns). PRK's stencil as sections (8000^2 doubles, Zen 5 core): 20 ->
  // 25 GB/s (512-bit vectors), 31-32 (256-bit); any distance from 2 to 32 KiB measured alike.
  t.row_prefetch_min_bytes = memory_bytes;
  t.row_prefetch_bytes = 4096;
  t.row_loops = row_loops_setting().load();
  t.stencil_row_loops = stencil_row_loops_setting().load();
  t.memory_rows_vector_bytes = TESSERA_MEMORY_ROWS_VECTOR_BYTES;
  t.matmul.packed = true;
  t.matmul.gemm_float = current_blocking<float>();
  t.matmul.gemm_float.mr = gemm_mr<float>;
  t.matmul.gemm_float.nr = gemm_nr<float>;
  t.matmul.gemm_double = current_blocking<double>();
  t.matmul.gemm_double.mr = gemm_mr<double>;
  t.matmul.gemm_double.nr = gemm_nr<double>;
  t.matmul.gemm_origin = blocking_origin<float>();
  t.matmul.generic_tile = 16;
  // Direct matmuls of up to 2^16 multiply-adds (40^3) run on the calling thread: about where
  // two threads repay a Kokkos 4.6 OpenMP launch. float n^3, per call on a Zen 4 core (Clang
  // 14), launched on two OpenMP threads against on the calling thread: 16: 1.38 against 0.38
  // us, 32: 1.69 / 0.84, 40: 2.54 / 2.45, 48: 3.0 / 3.3, 64: 4.0 / 5.1.
  t.matmul.inline_madds = std::int64_t(1) << 16;
  t.tile_reduce.line_bytes = simd::bytes * kernels<Space>::line_vectors;
  t.tile_reduce.vector_bytes = simd::bytes;
  t.tile_reduce.no_prefetch_rows = tile_reduce_no_prefetch_setting().load();
  t.tile_reduce.line_halvings = tile_reduce_line_halvings_setting().load();
  // Each input row of a tile prefetched at least 2 KiB ahead (codegen::tile_reduce_line).
  t.tile_reduce.row_ahead_bytes = 2048;
  return t;
}

}  // namespace tessera::backends::host
