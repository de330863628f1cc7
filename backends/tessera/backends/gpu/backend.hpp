/// \file gpu/backend.hpp
/// \brief The GPU kernel family as the backend of an execution space: what the `cuda`, `hip`
///        and `gpu_emulation` folders specialise `backends::backend<Space>` and
///        `impl::tile_mapping<Space>` with (each adds only its name).
#pragma once

#include <tessera/backends/backend_fwd.hpp>
#include <tessera/backends/gpu/kernels.hpp>
#include <tessera/backends/gpu/target.hpp>
#include <tessera/backends/gpu/tile_mapping.hpp>

namespace tessera::backends::gpu {

/// backends::backend<Space> on the GPU kernel family (see backend_fwd.hpp).
template <class Space>
struct backend : kernels<Space> {
  /// Reductions: 8 consecutive elements per functor call, all loaded before the first
  /// addition (Kokkos' CUDA reduction runs one thread per unit of concurrency: with one element
  /// per call, one 4-byte load in flight per thread held an H200 to 0.7 of its 3.8 TB/s copy
  /// bandwidth's 0.18); Kokkos combines the calls' results across threads in a tree.
  /// Reproducible mode folds chunks of 1024 elements per thread, interleaved (chunk c of C:
  /// elements c, c + C, ...), 8 loads ahead.
  static constexpr index_type reduce_chunk = 8;
  static constexpr index_type reproducible_chunk = 1024;
  static codegen::target make_target() {
    codegen::target t = gpu::make_target<Space>();
    t.reduction.chunk = reduce_chunk;
    t.reduction.reproducible_chunk = reproducible_chunk;
    t.reduction.interleaved_reproducible = true;
    // Scans: one line per thread, or chunks of 32 elements of a line per thread whose
    // carries go through Tessera's ordered passes (Kokkos' CUDA/HIP parallel_scan folds each
    // thread's strided elements: only commutative joins survive it).
    t.scan.chunk = 32;
    t.scan.carry_passes = true;
    // Histograms: a team of 256 counts 16 elements per member into bins in shared memory.
    t.histogram.chunk = 4096;
    t.histogram.private_bins_bytes = t.scratch_max[0] < (32u << 10) ? t.scratch_max[0] : 32u << 10;
    t.histogram.copies = 1;
    // Sorts: a team ranks a tile of 256 in shared memory (256 comparisons per element), then
    // every element of a merge pass finds its place by binary search.
    t.sort.tile = 256;
    t.sort.merge_block = 1;
    return t;
  }
};

}  // namespace tessera::backends::gpu
