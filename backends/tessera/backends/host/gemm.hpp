/// \file host/gemm.hpp
/// \brief Cache-blocked matrix multiply for the host backends (Serial, OpenMP):
///        `C = epilogue(A * B)` with packed panels and a register-blocked micro-kernel,
///        parallelised with Kokkos on `Kokkos::DefaultHostExecutionSpace`.
///
/// Algorithm (Goto & van de Geijn 2008, "Anatomy of high-performance matrix multiplication",
/// ACM TOMS 34(3); micro-kernel design after BLIS, Van Zee & van de Geijn 2015, "BLIS: a
/// framework for rapidly instantiating BLAS functionality", ACM TOMS 41(3)):
///
/// ```
/// for jc in [0, N) step nc                      B panel  kc x nc  -> shared buffer (L3)
///   for pc in [0, K) step kc                    packed once per (jc, pc), in parallel
///     for ic in [0, M) step mc    (parallel)    A block  mc x kc  -> team scratch (L2)
///       for jr in [0, nc) step NR               B micro-panel kc x NR stays in L1
///         for ir in [0, mc) step MR             A micro-panel MR x kc streams from L2
///           C(ir.., jr..) (+)= A~(ir) * B~(jr)  MR x NR accumulators in registers
/// ```
/// Packed A micro-panels are stored k-major (MR values of one column of A per k), packed B
/// micro-panels k-major as well (NR values of one row of B per k), both zero-padded to full
/// MR / NR, so the micro-kernel never branches on edges; partial tiles are handled when C is
/// written. The accumulation over K blocks goes through C itself: the first K block stores,
/// later ones add, and the last one applies the epilogue (exactly once per element).
#pragma once
///
/// The pieces: gemm/micro_kernel.hpp, gemm/pack.hpp, gemm/blocking.hpp (cache sizes, default
/// blocking, launch parameters), gemm/driver.hpp (the Kokkos launches), gemm/tune.hpp (the
/// blocking in use, set_blocking, the autotuner).
#pragma once

#include <tessera/backends/host/gemm/blocking.hpp>
#include <tessera/backends/host/gemm/driver.hpp>
#include <tessera/backends/host/gemm/micro_kernel.hpp>
#include <tessera/backends/host/gemm/pack.hpp>
#include <tessera/backends/host/gemm/tune.hpp>
