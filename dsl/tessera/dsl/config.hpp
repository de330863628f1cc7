/// \file config.hpp
/// \brief Macros shared by every Tessera header: inline host/device functions and the
///        device-pass test used to compile host-only checking code out of GPU kernels.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

/// Introduces a kernel lambda: device code on every backend, capturing by value. The counterpart
/// of C++ AMP's `[=](...) restrict(amp)` and of Kokkos' KOKKOS_LAMBDA (which it expands to):
/// \code
///   tessera::parallel_for_each(e.tile<16, 16>(), TESSERA_KERNEL(tessera::tile_group<16, 16>& g) {
///     ...
///   });
/// \endcode
/// A plain `[=]` lambda is host code: on CUDA and HIP it cannot become a kernel, and
/// parallel_for_each says so at compile time. Functors with a TESSERA_INLINE call operator work
/// too.
#define TESSERA_KERNEL KOKKOS_LAMBDA

/// A function callable on the host and inside kernels of every backend.
#define TESSERA_INLINE KOKKOS_INLINE_FUNCTION
/// A function callable on the host and inside kernels, forced inline.
#define TESSERA_FORCEINLINE KOKKOS_FORCEINLINE_FUNCTION

/// A host-only function forced inline: for the CPU backends' kernels (host/), whose code uses
/// host-only features (GCC/Clang vector types, prefetches, streaming stores) that must never
/// reach a GPU device pass.
#if defined(__GNUC__) || defined(__clang__)
#define TESSERA_HOST_FORCEINLINE inline __attribute__((always_inline))
#else
#define TESSERA_HOST_FORCEINLINE inline
#endif

/// A host-only function never inlined into its callers (GCC/Clang; an ordinary inline function
/// elsewhere): for CPU kernel loops whose register allocation must not depend on the code
/// around the call (the gemm micro-kernel's K loop).
#if defined(__GNUC__) || defined(__clang__)
#define TESSERA_HOST_NOINLINE inline __attribute__((noinline))
#else
#define TESSERA_HOST_NOINLINE inline
#endif

/// Tells the optimizer that a host-side condition holds (GCC/Clang; nothing elsewhere). Only in
/// host-only code (the CPU backends' kernels), never in device code.
#if defined(__GNUC__) || defined(__clang__)
#define TESSERA_HOST_ASSUME(cond)         \
  do {                                    \
    if (!(cond)) __builtin_unreachable(); \
  } while (0)
#else
#define TESSERA_HOST_ASSUME(cond) \
  do {                            \
  } while (0)
#endif

/// Inline every call inside the function (GCC, Clang): used on launch functors so that the
/// fast path of a tile kernel is specialised as one function.
#if defined(__GNUC__) || defined(__clang__)
#define TESSERA_FLATTEN __attribute__((flatten))
#else
#define TESSERA_FLATTEN
#endif

/// Marks the next loop's iterations as free of loop-carried memory dependences, so the
/// vectorizer needs no alias checks. Used where the tile model itself guarantees it: the
/// logical threads of one for_each phase never write an element another one touches (a race,
/// reported by checked mode). GCC only: clang's equivalent (vectorize(assume_safety)) also
/// forces vectorization and warns where it cannot, and nvcc/hipcc do not know GCC's pragmas.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define TESSERA_IVDEP _Pragma("GCC ivdep")
#define TESSERA_GCC_UNROLL(n) _Pragma(TESSERA_STRINGIFY(GCC unroll n))
#else
#define TESSERA_IVDEP
#define TESSERA_GCC_UNROLL(n)
#endif
#define TESSERA_STRINGIFY_(x) #x
#define TESSERA_STRINGIFY(x) TESSERA_STRINGIFY_(x)

/// Defined while a GPU device pass is compiled (nvcc, hipcc, SYCL). Host-only machinery such as
/// the checked-mode recorder is left out of that pass.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || defined(__SYCL_DEVICE_ONLY__)
#define TESSERA_DEVICE_PASS 1
#endif

/// GPU emulation (CMake option TESSERA_GPU_EMULATION, the `gpu-emulation` preset): Kokkos::OpenMP
/// runs the GPU kernel family and the GPU tile mapping — one OpenMP thread per logical thread,
/// real team barriers, team scratch as on a GPU — so GPU code paths run and are tested on
/// machines without a GPU. 0 (the default): OpenMP runs the CPU kernel family.
#ifndef TESSERA_GPU_EMULATION
#define TESSERA_GPU_EMULATION 0
#endif
#if TESSERA_GPU_EMULATION && !defined(KOKKOS_ENABLE_OPENMP)
#error "TESSERA_GPU_EMULATION needs a Kokkos with the OpenMP backend (build-kokkos.sh openmp-gpu)"
#endif

/// The Kokkos execution spaces with a Tessera backend (backends/<name>/), as messages name them.
/// CMake's list is TESSERA_BACKENDS (cmake/TesseraKokkos.cmake); test_headers checks they agree.
#define TESSERA_BACKEND_NAMES "Serial, OpenMP, Cuda, HIP"

#define TESSERA_KOKKOS_VERSION_AT_LEAST(major, minor) \
  (KOKKOS_VERSION >= ((major)*10000 + (minor)*100))

namespace tessera {
/// Kokkos' math functions (exp, log, sqrt, pow, ...): in namespace Kokkos since 3.7, in
/// Kokkos::Experimental before.
#if KOKKOS_VERSION >= 30700
namespace kmath = ::Kokkos;
#else
namespace kmath = ::Kokkos::Experimental;
#endif
/// Element counts and global coordinates: 64-bit, since products of extents can exceed 2^31.
using index_type = std::int64_t;
/// Execution space every Tessera launch uses by default (Kokkos' default: Cuda, HIP, OpenMP or
/// Serial). Entry points also take an instance of it (a CUDA stream, ...) as first argument.
using execution_space = Kokkos::DefaultExecutionSpace;
/// Memory space of array<T,N> (the execution space's memory).
using memory_space = execution_space::memory_space;
/// True when host code can dereference pointers into memory_space (Serial, OpenMP).
inline constexpr bool host_accessible_memory =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
/// A Kokkos execution space Tessera can launch on: one with a backend (backends/) that can
/// access the memory arrays live in (memory_space). Every entry point takes an instance of one
/// first: the default execution space, and e.g. Kokkos::Serial beside Kokkos::OpenMP in an
/// OpenMP build (not Kokkos::Serial in a CUDA build: arrays live in device memory there).
template <class S>
concept launchable_space = bool(Kokkos::is_execution_space<S>::value) &&
                           bool(Kokkos::SpaceAccessibility<S, memory_space>::accessible);
/// True in a GPU-emulation build (TESSERA_GPU_EMULATION): OpenMP runs the GPU kernel family.
inline constexpr bool gpu_emulation = TESSERA_GPU_EMULATION != 0;
}  // namespace tessera
