/// \file backend.hpp
/// \brief The backends, one folder each, included when Kokkos has the execution space (the
///        Kokkos pattern: core/src/<Backend>/ under KOKKOS_ENABLE_<BACKEND>). CPU backends share
///        the host/ kernel family, GPU backends the gpu/ family; everything else is generic over
///        the execution space. A GPU-emulation build (TESSERA_GPU_EMULATION) gives
///        Kokkos::OpenMP the gpu/ family instead (gpu_emulation/). To add a backend: a folder
///        with a backend.hpp that specialises `tessera::backends::backend<Space>` and
///        `tessera::impl::tile_mapping<Space>`, included below with a static_assert of
///        backend_contract (backend_fwd.hpp), and its name in TESSERA_BACKEND_NAMES
///        (dsl/config.hpp) and TESSERA_BACKENDS (cmake/TesseraKokkos.cmake).
#pragma once

#include <tessera/backends/backend_fwd.hpp>

#ifdef KOKKOS_ENABLE_SERIAL
#include <tessera/backends/serial/backend.hpp>
#endif
#ifdef KOKKOS_ENABLE_OPENMP
#if TESSERA_GPU_EMULATION
#include <tessera/backends/gpu_emulation/backend.hpp>
#else
#include <tessera/backends/openmp/backend.hpp>
#endif
#endif
#ifdef KOKKOS_ENABLE_CUDA
#include <tessera/backends/cuda/backend.hpp>
#endif
#ifdef KOKKOS_ENABLE_HIP
#include <tessera/backends/hip/backend.hpp>
#endif

// Every backend included above keeps the contract (backend_fwd.hpp).
#ifdef KOKKOS_ENABLE_SERIAL
static_assert(tessera::backends::backend_contract<Kokkos::Serial>,
              "tessera: the Serial backend does not satisfy backends::backend_contract");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
static_assert(tessera::backends::backend_contract<Kokkos::OpenMP>,
              "tessera: the OpenMP backend does not satisfy backends::backend_contract");
#endif
#ifdef KOKKOS_ENABLE_CUDA
static_assert(tessera::backends::backend_contract<Kokkos::Cuda>,
              "tessera: the Cuda backend does not satisfy backends::backend_contract");
#endif
#ifdef KOKKOS_ENABLE_HIP
static_assert(tessera::backends::backend_contract<Kokkos::HIP>,
              "tessera: the HIP backend does not satisfy backends::backend_contract");
#endif
