/// \file host/gemm/driver.hpp
/// \brief The CPU gemm's driver: the Goto loop nest (host/gemm.hpp) as Kokkos launches — B
///        panels packed by a RangePolicy into a shared buffer, then one team per (row block,
///        column range) packing its A block into team scratch and running the micro-kernels —
///        exactly as the plan's gemm_params say.
#pragma once

#include <tessera/backends/host/gemm/blocking.hpp>
#include <tessera/backends/host/gemm/pack.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/codegen/passes/gemm_blocking.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/runtime.hpp>

#include <climits>
#include <cstddef>
#include <string>

namespace tessera::backends::host {

/// C = ep(A * B): cache-blocked, packed, register-blocked matrix multiply on a host execution
/// space (Serial or OpenMP), launched exactly as the plan `p` says.
///
/// \tparam T float or double
/// \tparam Epilogue callable as `T ep(index_type i, index_type j, T acc)`; its result is stored
///         to C(i, j). Called exactly once per element of C, after the full-K accumulation,
///         possibly concurrently from several host threads (must be thread-safe; may read
///         other memory, not C). Identity: `[](auto, auto, T v) { return v; }`.
/// \param exec [in] the host execution space instance the launches go to
/// \param M, N, K [in] C is M x N, A is M x K, B is K x N (elements; any may be 0; K == 0
///        gives C(i, j) = ep(i, j, 0))
/// \param A [in] row-major, A(i, k) = A[i * lda + k]; lda >= K
/// \param B [in] row-major, B(k, j) = B[k * ldb + j]; ldb >= N
/// \param C [in,out] row-major, C(i, j) = C[i * ldc + j]; ldc >= N; its prior contents are
///        ignored, or, with add_to_c, added to (C = ep(i, j, C + A B): BLAS beta = 1).
///        @pre C does not overlap A or B.
/// \param ep [in] the epilogue
/// \param p [in] launch parameters (plan<T>(M, N, K, blocking, threads)); mc, nc multiples of
///        MR, NR; the packed mc x kc block fits scratch level 1
/// \param label [in] Kokkos label of the main launches (the B-panel packing adds " (pack B)")
/// \param add_to_c [in] accumulate into C's prior contents (the first K block adds to C)
/// \throws shape_error negative M, N or K; lda < K, ldb < N or ldc < N; blocking values <= 0.
///         Thrown before anything is read or written.
/// \throws resource_error more than INT_MAX / 64 row blocks, before anything runs.
///
/// Execution: for each (jc, pc) block, one Kokkos::parallel_for packs the kc x nc panel of B
/// into a buffer shared by all threads, and a second one (TeamPolicy, p.m_blocks * p.splits
/// teams of one member) packs each team's A block into its team scratch (level 1) and runs
/// the micro-kernel over its block of C. Teams never wait on each other. With one team in all
/// (p.m_blocks * p.splits == 1) that team packs each micro-panel of B itself, right before
/// its micro-kernels read it, and there is no packing launch. With p.direct (a
/// problem that fits half of L2, one K block: codegen::direct_gemm_fits) one RangePolicy of
/// p.m_blocks row blocks runs the micro-kernels on A and B in place instead, the same
/// additions in the same order; with p.inline_run too (a small one) the row blocks run in
/// order on the calling thread after a fence of `exec`, without a launch. The summation order
/// depends only on the blocking, so equal inputs, blocking and thread count give equal bits.
/// Returns after a fence of `exec`: C is complete.
///
/// Source: Goto & van de Geijn 2008, "Anatomy of high-performance matrix multiplication"; the
/// micro-kernel and packing layout follow BLIS (Van Zee & van de Geijn 2015).
template <class T, class Space, class Epilogue>
void gemm(const Space& exec, index_type M, index_type N, index_type K, const T* A, index_type lda,
          const T* B, index_type ldb, T* C, index_type ldc, const Epilogue& ep,
          const codegen::gemm_params& p, const std::string& label = "tessera::host::gemm",
          bool add_to_c = false) {
  using S = impl::micro_tile<T>;
  constexpr int MR = S::MR, NR = S::NR;
  static_assert(std::is_invocable_r_v<T, const Epilogue&, index_type, index_type, T>,
                "tessera::backends::host::gemm: the epilogue must be callable as "
                "ep(index_type i, index_type j, T acc) and return T");
  if (M < 0 || N < 0 || K < 0)
    throw shape_error("gemm: negative size M=" + std::to_string(M) + " N=" + std::to_string(N) +
                      " K=" + std::to_string(K));
  if (lda < K || ldb < N || ldc < N) {
    std::string what;
    auto check = [&](const char* name, index_type ld, const char* dim, index_type len) {
      if (ld < len)
        what += std::string(what.empty() ? "" : ", ") + name + "=" + std::to_string(ld) + " < " +
                dim + "=" + std::to_string(len);
    };
    check("lda", lda, "K", K);
    check("ldb", ldb, "N", N);
    check("ldc", ldc, "N", N);
    throw shape_error("gemm: leading dimension smaller than the row length (" + what +
                      "; A is MxK, B is KxN, C is MxN, row-major)");
  }
  if (p.mc <= 0 || p.kc <= 0 || p.nc <= 0 || p.mc % MR != 0 || p.nc % NR != 0)
    throw shape_error("gemm: launch parameters mc=" + std::to_string(p.mc) +
                      " kc=" + std::to_string(p.kc) + " nc=" + std::to_string(p.nc) +
                      " must be positive, mc a multiple of " + std::to_string(MR) + " and nc of " +
                      std::to_string(NR));
  if (M == 0 || N == 0) return;

  if (K == 0) {
    backends::impl::launch(label + " (K=0)",
                           Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, M),
                           [=](index_type i) {
                             for (index_type j = 0; j < N; ++j)
                               C[i * ldc + j] = ep(i, j, add_to_c ? C[i * ldc + j] : T(0));
                           });
    tessera::impl::fence(exec);
    return;
  }

  if (p.direct) {
    // Small (codegen::direct_gemm_fits): one iteration per row block of MR rows, the
    // micro-kernels reading A and B in place, no packing.
    if (K > codegen::direct_gemm_max_k || K > p.kc || p.m_blocks != (M + MR - 1) / MR)
      throw shape_error("gemm: a direct launch of " + std::to_string(p.m_blocks) +
                        " row blocks for M=" + std::to_string(M) + " K=" + std::to_string(K) +
                        " (direct needs K <= " + std::to_string(codegen::direct_gemm_max_k) +
                        " and kc=" + std::to_string(p.kc) + ", one block per " +
                        std::to_string(MR) + " rows)");
    const auto row_block = [=](index_type ib) {
      const index_type i = ib * MR;
      const int m = int(std::min<index_type>(MR, M - i));
      for (index_type j = 0; j < N; j += NR) {
        const int n = int(std::min<index_type>(NR, N - j));
        if (n == NR)
          impl::direct_micro_kernel(K, A + i * lda, lda, B + j, ldb, C + i * ldc + j, ldc, m, n,
                                    add_to_c, ep, i, j);
        else
          impl::direct_padded_micro_kernel<codegen::direct_gemm_max_k>(
              K, A + i * lda, lda, B + j, ldb, C + i * ldc + j, ldc, m, n, add_to_c, ep, i, j);
      }
    };
    if (p.inline_run) {
      // Small (codegen::packed_gemm_params): the row blocks in order on the calling thread.
      tessera::impl::fence(exec);  // earlier kernels on exec may still write A, B or C
      for (index_type ib = 0; ib < p.m_blocks; ++ib) row_block(ib);
      return;
    }
    backends::impl::launch(
        label, Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, p.m_blocks),
        row_block);
    tessera::impl::fence(exec);
    return;
  }

  using team_policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  const index_type mc = p.mc, kc = p.kc, nc = p.nc;
  const index_type m_blocks = (M + mc - 1) / mc;
  if (m_blocks > INT_MAX / 64)
    throw resource_error("gemm: M=" + std::to_string(M) + " needs " + std::to_string(m_blocks) +
                         " row blocks of mc=" + std::to_string(mc) +
                         ", more than a Kokkos league holds; use a larger mc");
  const std::size_t a_bytes = std::size_t(mc * kc) * sizeof(T) + 64;
  const int level = p.scratch_level;

  const index_type splits = p.splits;
  const int a_prefetch = p.a_prefetch;
  // One team per launch (M within one row block, N not split: small M on one thread): each
  // kb x NR micro-panel of B is packed by that team right before its micro-kernels read it,
  // into one slot that stays in cache, as GotoBLAS' drivers do for their first row block.
  // A separate packing launch writes the whole kc x nc panel and reads it back once: for
  // 64 x 4096 x 4096 floats on a Zen 5 core (x86-64-v3, 11 micro-tile rows) a fifth of the
  // time went to that launch, 0.84x OpenBLAS' sgemm.
  const bool pack_in_team = m_blocks * splits == 1;
  // Shared packed B panel (kc x nc; one micro-panel when packed in the team), once per call.
  Kokkos::View<T*, Kokkos::HostSpace> b_buf(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "tessera::host::gemm B panel"),
      std::size_t(kc * (pack_in_team ? index_type(NR) : nc)) + 64 / sizeof(T));
  T* const bp = impl::align64(b_buf.data());

  for (index_type jc = 0; jc < N; jc += nc) {
    const index_type nb = std::min(nc, N - jc);
    const index_type n_panels = (nb + NR - 1) / NR;
    const index_type panels_per_split = (n_panels + splits - 1) / splits;
    for (index_type pc = 0; pc < K; pc += kc) {
      const index_type kb = std::min(kc, K - pc);
      const bool accumulate = pc > 0 || add_to_c, finish = pc + kb == K;
      const T* const bsrc = B + pc * ldb + jc;
      if (!pack_in_team)
        backends::impl::launch(
            label + " (pack B)",
            Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>(exec, 0, n_panels),
            [=](index_type q) {
              impl::pack_b_panel(kb, int(std::min<index_type>(NR, nb - q * NR)), bsrc + q * NR, ldb,
                                 bp + q * kb * NR);
            });
      team_policy policy(exec, int(m_blocks * splits), 1);
      policy.set_scratch_size(p.scratch_level, Kokkos::PerTeam(a_bytes));
      backends::impl::launch(label, policy, [=](const typename team_policy::member_type& team) {
        const index_type ib = team.league_rank() / splits, js = team.league_rank() % splits;
        const index_type ic = ib * mc, mb = std::min(mc, M - ic);
        T* const ap = impl::align64(static_cast<T*>(team.team_scratch(level).get_shmem(a_bytes)));
        impl::pack_a(mb, kb, A + ic * lda + pc, lda, ap);
        const index_type p_end = std::min(n_panels, (js + 1) * panels_per_split);
        for (index_type q = js * panels_per_split; q < p_end; ++q) {
          const index_type j0 = jc + q * NR;
          const int n = int(std::min<index_type>(NR, N - j0));
          if (pack_in_team) impl::pack_b_panel(kb, n, bsrc + q * NR, ldb, bp);
          const T* const bpp = pack_in_team ? bp : bp + q * kb * NR;
          for (index_type i = 0; i < mb; i += MR) {
            const int m = int(std::min<index_type>(MR, mb - i));
            impl::micro_kernel(kb, ap + i * kb, bpp, C + (ic + i) * ldc + j0, ldc, m, n, accumulate,
                               finish, ep, ic + i, j0, a_prefetch);
          }
        }
      });
    }
  }
  tessera::impl::fence(exec);
}

/// gemm on the default host execution space with blocking `blk` (planned for its threads).
template <class T, class Epilogue>
void gemm(index_type M, index_type N, index_type K, const T* A, index_type lda, const T* B,
          index_type ldb, T* C, index_type ldc, const Epilogue& ep, gemm_blocking blk) {
  impl::check_blocking("gemm", blk);
  const Kokkos::DefaultHostExecutionSpace exec;
  gemm(exec, M, N, K, A, lda, B, ldb, C, ldc, ep,
       plan<T>(M, N, K, blk, tessera::impl::concurrency_of(exec)));
}

}  // namespace tessera::backends::host
