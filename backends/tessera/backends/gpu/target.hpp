/// \file gpu/target.hpp
/// \brief The code generator's target description of a GPU backend: scratch (shared memory /
///        LDS) limits, one member per logical thread, staged transposes padded against bank
///        conflicts, the register-blocked matmul's blocking.
#pragma once

#include <tessera/backends/kernels/target_core.hpp>
#include <tessera/codegen/expr_graph.hpp>
#include <tessera/dsl/config.hpp>

namespace tessera::backends::gpu {

/// Scratch level 0 per team on a CUDA GPU through Kokkos: 48 KiB of shared memory per block
/// less what Kokkos reserves for team reductions ((1024 + 2) doubles and an int64, see
/// Kokkos::TeamPolicy<Cuda>::scratch_size_max). What the GPU emulation compares its plans with.
inline constexpr std::size_t cuda_scratch_level0_bytes = 48 * 1024 - (1024 + 2) * 8 - 8;

template <class Space>
codegen::target make_target() {
  codegen::target t = backends::impl::kokkos_target<Space>();
  t.thread_per_logical = true;
  t.max_team_size = 256;
  t.tile_local_per_thread = true;
  t.transpose.tile[0] = 32;
  t.transpose.tile[1] = 32;
  t.transpose.block = 0;
  t.transpose.pad = 1;  // 33-element rows: a column of the staged tile spans every bank
  t.streaming_store_min_bytes = 0;
  t.matmul.packed = false;
  t.matmul.generic_tile = 16;
  t.matmul.blocked = {64, 64, 16, 4, 4, true};
  t.tile_reduce.team = 128;
  return t;
}

}  // namespace tessera::backends::gpu
