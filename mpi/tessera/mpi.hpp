/// \file mpi.hpp
/// \brief Tessera past one process (target Tessera::mpi, CMake option TESSERA_MPI): the MPI
///        environment, process grids, partitions (block and block-cyclic), distributed arrays
///        whose local parts are ordinary array_views, halo exchange (blocking, split, reverse),
///        distributed Tier 1 (element-wise, tile reductions, sums, SUMMA matmul) and explain.
///
/// \code
///   tessera::mpi::environment env(argc, argv);            // MPI_Init_thread + Kokkos
///   tessera::mpi::process_grid<2> grid;                   // every process, as square as can be
///   tessera::mpi::partition<2> p(tessera::extent<2>(n, n), grid, tessera::extent<2>(16, 16));
///   using tessera::index;
///   tessera::mpi::distributed_array<float, 2> A(p, index<2>(1, 1), tessera::boundary::zero);
///   tessera::mpi::distributed_array<float, 2> B(p);
///   A.exchange_halo();
///   assign(B.local(), 0.25f * (A.shifted(index<2>(-1, 0)) + A.shifted(index<2>(1, 0)) +
///                              A.shifted(index<2>(0, -1)) + A.shifted(index<2>(0, 1))));
///   float s = tessera::mpi::sum(B);                        // on every process
/// \endcode
/// Built on MPI (Open MPI, MPICH: found by CMake's FindMPI); no transport of Tessera's own.
#pragma once

#include <tessera/mpi/algorithms.hpp>
#include <tessera/mpi/distributed_array.hpp>
#include <tessera/mpi/environment.hpp>
#include <tessera/mpi/grid.hpp>
#include <tessera/mpi/partition.hpp>
#include <tessera/mpi/redistribute.hpp>
#include <tessera/tessera.hpp>
