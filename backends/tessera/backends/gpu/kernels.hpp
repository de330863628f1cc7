/// \file gpu/kernels.hpp
/// \brief The Tier 1 kernel families on GPU backends (CUDA, HIP), launched as their plans say:
///        elementwise chains (one thread per element), staged transposes (the whole tile in
///        scratch, rows padded against bank conflicts, coalesced loads and stores), the
///        register-blocked matmul with its fused epilogue, and tile_reduce (a team per output
///        row). Every kernel is a named functor (no extended lambdas capturing user types).
///        The kernels are generic over the team size (TeamThreadRange loops), so they also run,
///        and are tested, on host execution spaces.
#pragma once

#include <tessera/backends/eval/evaluators.hpp>
#include <tessera/backends/kernels/operands.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/codegen/kernel_plan.hpp>

namespace tessera::backends::gpu {

template <class Acc, int S>
using ctx = eval::ectx<Acc, S, false>;  // staged tiles stored transposed

/// out(k) = ev(k), one iteration per element (flat: every operand contiguous).
template <int S, class Ev, class T>
struct elementwise_flat {
  Ev ev;
  T* out;
  KOKKOS_INLINE_FUNCTION void operator()(index_type k) const {
    out[k] = static_cast<T>(ev.flat(ctx<char, S>{}, k));
  }
};
/// out[idx] = ev(idx), one iteration per element of extent ext (some operand is a section).
template <int S, class Ev, class T, int N>
struct elementwise_indexed {
  Ev ev;
  tessera::impl::strided_ref<T, N> out;
  extent<N> ext;
  KOKKOS_INLINE_FUNCTION void operator()(index_type k) const {
    const index<N> i = tessera::impl::unflatten(ext, k);
    out.at(i) = static_cast<T>(ev.at(ctx<char, S>{}, i));
  }
};

/// Staged transposes: a team per output tile (th x tw); members stride over the tile's
/// elements. Phase 1 stages every staged operand's block transposed (s[r][ii] = in(oj + r,
/// oi + ii): consecutive members read consecutive elements of an operand row); the plan's
/// barrier; phase 2 evaluates and stores the tile row by row (consecutive members write
/// consecutive elements; staged reads stride ld = th + 1, so they fall in distinct banks).
template <int S, class Ev, class T, class Member>
struct staged_transpose_kernel {
  Ev ev;
  tessera::impl::strided_ref<T, 2> out;
  index_type rows, cols, tiles_i;
  int th, tw, ld;
  operands::staged_scratch<S> sc;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    // Tiles down a column of the output first: consecutive teams read the same operand rows.
    const index_type ti = team.league_rank() % tiles_i, tj = team.league_rank() / tiles_i;
    ctx<char, S> c;
    c.oi = ti * th;
    c.oj = tj * tw;
    c.ld = ld;
    sc.bind(team, c);
    const int n = th * tw;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int e) {
      const int r = e / th, ii = e % th;
      ev.visit_staged([&](const auto& t) { t.stage_row(c, r, ii); });
    });
    team.team_barrier();  // the plan's barrier: read-after-write on the staged tiles
    const index_type ni = rows - c.oi < th ? rows - c.oi : th;
    const index_type nj = cols - c.oj < tw ? cols - c.oj : tw;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(ni * nj)), [&](int e) {
      const index_type i = c.oi + e / nj, j = c.oj + e % nj;
      out.p[i * out.s[0] + j] = static_cast<T>(ev.at(c, i, j));
    });
  }
};

/// The register-blocked matmul (floating-point, default schedule): a team computes a BM x BN
/// block of C; each of its (BM/TM) x (BN/TN) members computes TM x TN outputs held in
/// registers, at rows ty + (BM/TM) i and columns tx + (BN/TN) j (strided, so scratch reads
/// hit distinct banks and stores are coalesced). K advances in BK-deep tiles through two
/// scratch buffers: the next tiles load while the current ones are multiplied, one barrier per
/// step. The epilogue runs on in-range elements only.
template <int S, class T, class OT, class Ev, class Member, int BM, int BN, int BK, int TM, int TN>
struct blocked_matmul_kernel {
  static constexpr int RT = BM / TM, CT = BN / TN, NT = RT * CT;  // threads per team
  static constexpr int LDA = BM + 4;                              // padded k-major A rows
  operands::matrix<T> A, B;
  Ev ev;
  tessera::impl::strided_ref<OT, 2> out;
  index_type M, N, K, tiles_i;
  operands::staged_scratch<4> sc;  // a_tile0, a_tile1, b_tile0, b_tile1 as planned

  KOKKOS_INLINE_FUNCTION void load(const Member& team, T* as, T* bs, index_type m0, index_type n0,
                                   index_type k0) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BM * BK), [&](int e) {
      const int r = e / BK, k = e % BK;  // consecutive members: consecutive k of one A row
      const index_type gi = m0 + r, gk = k0 + k;
      as[k * LDA + r] = (gi < M && gk < K) ? A(gi, gk) : T(0);
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BK * BN), [&](int e) {
      const int k = e / BN, c = e % BN;  // consecutive members: consecutive columns of B
      const index_type gk = k0 + k, gj = n0 + c;
      bs[k * BN + c] = (gk < K && gj < N) ? B(gk, gj) : T(0);
    });
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const index_type m0 = (team.league_rank() % tiles_i) * BM;
    const index_type n0 = (team.league_rank() / tiles_i) * BN;
    char* base = sc.base(team);
    T* as[2] = {reinterpret_cast<T*>(base + sc.offs[0]), reinterpret_cast<T*>(base + sc.offs[1])};
    T* bs[2] = {reinterpret_cast<T*>(base + sc.offs[2]), reinterpret_cast<T*>(base + sc.offs[3])};
    const int tid = team.team_rank();
    const int ty = tid / CT, tx = tid % CT;
    T acc[TM][TN];
    for (int i = 0; i < TM; ++i)
      for (int j = 0; j < TN; ++j) acc[i][j] = T(0);
    const index_type steps = (K + BK - 1) / BK;
    if (steps > 0) load(team, as[0], bs[0], m0, n0, 0);
    team.team_barrier();
    for (index_type s = 0; s < steps; ++s) {
      const int cur = int(s & 1);
      if (s + 1 < steps) load(team, as[1 - cur], bs[1 - cur], m0, n0, (s + 1) * BK);
      if (tid < NT) {
        const T* a = as[cur];
        const T* b = bs[cur];
        for (int k = 0; k < BK; ++k) {
          T av[TM], bv[TN];
          for (int i = 0; i < TM; ++i) av[i] = a[k * LDA + ty + RT * i];
          for (int j = 0; j < TN; ++j) bv[j] = b[k * BN + tx + CT * j];
          for (int i = 0; i < TM; ++i)
            for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
        }
      }
      team.team_barrier();  // the plan's barrier: the loaded tiles are read next step, the
                            // read ones are overwritten next step
    }
    if (tid < NT) {
      ctx<T, S> c;
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) {
          const index_type gi = m0 + ty + RT * i, gj = n0 + tx + CT * j;
          if (gi < M && gj < N) {
            c.acc = acc[i][j];
            out.p[gi * out.s[0] + gj] = static_cast<OT>(ev.at(c, gi, gj));
          }
        }
    }
  }
};

/// tile_reduce on GPUs: a team per output row; the R input rows combine element by element
/// into a scratch row (each element owned by one member), then after the plan's barrier each
/// output element combines its C entries and the epilogue runs. Reads stay in range.
template <int S, class Core, class In, class Ev, class OT, class Member>
struct tile_reduce_kernel {
  using T = typename Core::value_type;
  static constexpr int R = Core::rows, C = Core::cols;
  In in;
  Ev ev;
  typename Core::op_type op;
  tessera::impl::strided_ref<OT, 2> out;
  index_type ocols;
  int level;
  std::size_t bytes;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& m) const {
    const index_type i = m.league_rank();
    const index_type icols = ocols * C;
    auto raw = reinterpret_cast<std::uintptr_t>(m.team_scratch(level).get_shmem(bytes + 64));
    T* row = reinterpret_cast<T*>((raw + 63) & ~std::uintptr_t{63});
    const ctx<char, S> c0;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, icols),
                         [&](index_type j) { row[j] = in.at(c0, i * R, j); });
    for (int r = 1; r < R; ++r)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, icols),
                           [&](index_type j) { row[j] = op(row[j], in.at(c0, i * R + r, j)); });
    m.team_barrier();  // the plan's barrier: output elements read other members' entries
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, ocols), [&](index_type jo) {
      T a = row[jo * C];
      for (int cc = 1; cc < C; ++cc) a = op(a, row[jo * C + cc]);
      ctx<T, S> c;
      c.acc = Core::mean ? T(a / T(R * C)) : a;
      out.p[i * out.s[0] + jo] = static_cast<OT>(ev.at(c, i, jo));
    });
  }
};

/// The GPU kernel families of execution space Space (see backends/backend_fwd.hpp).
template <class Space>
struct kernels {
  using range = Kokkos::RangePolicy<Space, Kokkos::IndexType<index_type>>;
  using policy = Kokkos::TeamPolicy<Space>;
  using member = typename policy::member_type;

  template <int S, class Ev, class T, int N>
  static void elementwise(const Space& exec, const codegen::kernel_plan& k, const Ev& ev,
                          const tessera::impl::strided_ref<T, N>& out, const extent<N>& ext) {
    const index_type n = ext.size();
    if (n == 0) return;
    if (k.flat_index)
      backends::impl::launch(k.label, range(exec, 0, n), elementwise_flat<S, Ev, T>{ev, out.p});
    else
      backends::impl::launch(k.label, range(exec, 0, n),
                             elementwise_indexed<S, Ev, T, N>{ev, out, ext});
  }

  template <int S, class Ev, class T>
  static void staged_transpose(const Space& exec, const codegen::kernel_plan& k, const Ev& ev,
                               const tessera::impl::strided_ref<T, 2>& out, const extent<2>& ext,
                               bool /*pure_transpose*/) {
    if (k.barriers.size() != 1)
      throw error("tessera: staged-transpose plan with " + std::to_string(k.barriers.size()) +
                  " barriers for a kernel with one");
    const auto sc = operands::staged_scratch<S>::from_plan(k);
    policy p(exec, static_cast<int>(k.league_size), k.team_size);
    sc.request(p);
    backends::impl::launch(
        k.label, p,
        staged_transpose_kernel<S, Ev, T, member>{ev, out, ext[0], ext[1], k.tiles[0],
                                                  int(k.tile[0]), int(k.tile[1]), k.staged_ld, sc});
  }

  template <int S, class Ev, class T, class OT>
  static void matmul(const Space& exec, const codegen::kernel_plan& k, const operands::matrix<T>& A,
                     const operands::matrix<T>& B, const Ev& ev,
                     const tessera::impl::strided_ref<OT, 2>& out, const extent<2>& ext) {
    if constexpr (std::is_floating_point_v<T>) {
      if (k.gpu_mm.bm) {
        constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
        if (k.gpu_mm.bm != BM || k.gpu_mm.bn != BN || k.gpu_mm.bk != BK || k.gpu_mm.tm != TM ||
            k.gpu_mm.tn != TN)
          throw error("tessera: GPU matmul plan with a blocking this build has no kernel for");
        using kernel = blocked_matmul_kernel<S, T, OT, Ev, member, BM, BN, BK, TM, TN>;
        const auto sc = operands::staged_scratch<4>::from_plan(k);
        if (sc.nslots != 4 || k.barriers.size() != 2)
          throw error("tessera: GPU matmul plan " + k.name + " is not the double-buffered form");
        policy p(exec, static_cast<int>(k.league_size), k.team_size);
        sc.request(p);
        backends::impl::launch(k.label, p,
                               kernel{A, B, ev, out, ext[0], ext[1], A.cols, k.tiles[0], sc});
        return;
      }
    }
    operands::tiled_matmul<S>(exec, k, A, B, ev, out, ext);
  }

  template <int S, class Core, class In, class Ev, class OT>
  static void tile_reduce(const Space& exec, const codegen::kernel_plan& k, const Core& tr,
                          const In& in, const Ev& ev, const tessera::impl::strided_ref<OT, 2>& out,
                          const extent<2>& ext) {
    using T = typename Core::value_type;
    const std::size_t bytes = k.scratch_bytes[k.scratch_level];
    if (bytes < std::size_t(ext[1] * Core::cols) * sizeof(T))
      throw error("tessera: tile_reduce plan with less scratch than a row needs");
    policy p(exec, static_cast<int>(k.league_size), k.team_size);
    p.set_scratch_size(k.scratch_level, Kokkos::PerTeam(bytes + 64));
    backends::impl::launch(k.label, p,
                           tile_reduce_kernel<S, Core, In, Ev, OT, member>{
                               in, ev, tr.op, out, ext[1], k.scratch_level, bytes});
  }
};

}  // namespace tessera::backends::gpu
