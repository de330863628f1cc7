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
#include <tessera/backends/kernels/plan_check.hpp>
#include <tessera/backends/kernels/team_policy.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/codegen/kernel_plan.hpp>

namespace tessera::backends::gpu {

template <class Acc, int S>
using ctx = eval::ectx<Acc, S, false>;  // staged tiles stored transposed

/// store(e, load(e)) for every e in [0, n), the team's members striding over e, K elements of
/// a member at a time: its K loads are issued before the first store. A member otherwise keeps
/// one load in flight (each store to scratch orders the next load after it), which held the
/// GPU tile_reduce to a third of an H200's copy bandwidth.
template <int K, class Member, class Load, class Store>
KOKKOS_INLINE_FUNCTION void team_batched(const Member& team, int n, const Load& load,
                                         const Store& store) {
  const int step = team.team_size();
  for (int e0 = team.team_rank(); e0 < n; e0 += K * step) {
    decltype(load(0)) v[K];
    for (int k = 0; k < K; ++k)
      if (e0 + k * step < n) v[k] = load(e0 + k * step);
    for (int k = 0; k < K; ++k)
      if (e0 + k * step < n) store(e0 + k * step, v[k]);
  }
}

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

/// Staged stencils: a team per output tile (plan.tile, rank N); phase 0 loads every stencil
/// operand's box (the tile grown by its shifts' or sections' halo, boundary policy applied)
/// into its scratch slot, members striding over the box in row-major order (coalesced rows);
/// the plan's barrier; phase 1 evaluates the tile's in-range elements, each staged shift or
/// section reading the box.
template <int K, class Ev, class T, int N, class Member>
struct staged_stencil_kernel {
  Ev ev;
  tessera::impl::strided_ref<T, N> out;
  extent<N> ext, tile, tiles;
  operands::staged_scratch<K> sc;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    eval::stencil_ctx<K> c;
    index_type r = team.league_rank();
    for (int d = N - 1; d >= 0; --d) {
      c.origin[d] = (r % tiles[d]) * tile[d];
      r /= tiles[d];
    }
    sc.bind(team, c);
    ev.visit_stencil([&](const auto& s) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, s.box_elements()),
                           [&](index_type e) { s.stage_element(c, e); });
    });
    team.team_barrier();  // the plan's barrier: read-after-write on the staged boxes
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile.size()), [&](index_type e) {
      index<N> i = tessera::impl::unflatten(tile, e);
      bool in = true;
      for (int d = 0; d < N; ++d) {
        i[d] += c.origin[d];
        in = in && i[d] < ext[d];
      }
      if (in) out.at(i) = static_cast<T>(ev.at(c, i));
    });
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
    // Tile-local coordinates in 32-bit ints: with a 64-bit division per element the kernel
    // took 1.2x as long on an H200.
    const int ni = int(rows - c.oi < th ? rows - c.oi : th);
    const int nj = int(cols - c.oj < tw ? cols - c.oj : tw);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, ni * nj), [&](int e) {
      const int r = e / nj;
      const index_type i = c.oi + r, j = c.oj + (e - r * nj);
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
///
/// Plan (passes/phases.hpp): phase 0 loads the first tiles; the loop's two phases are two
/// consecutive k-steps (buffers 0 then 1), each ending in a barrier; so: a barrier after phase
/// 0, and barriers after phases 1 and 2 per loop iteration. `shape()` states it for the
/// launcher's plan check.
template <int S, class T, class OT, class Ev, class Member, int BM, int BN, int BK, int TM, int TN>
struct blocked_matmul_kernel {
  static constexpr int RT = BM / TM, CT = BN / TN, NT = RT * CT;  // threads per team
  static constexpr int LDA = BM + 4;                              // padded k-major A rows
  operands::matrix<T> A, B;
  Ev ev;
  tessera::impl::strided_ref<OT, 2> out;
  index_type M, N, K, tiles_i;
  operands::staged_scratch<4> sc;  // a_tile0, a_tile1, b_tile0, b_tile1 as planned

  static backends::impl::kernel_shape shape() {
    backends::impl::kernel_shape s;
    s.kernel = "GPU register-blocked matmul " + std::to_string(BM) + "x" + std::to_string(BN) +
               "x" + std::to_string(BK) + " (" + std::to_string(TM) + "x" + std::to_string(TN) +
               " per member)";
    s.team_size = NT;
    s.tile = {BM, BN};
    s.compare_scratch = true;
    const std::size_t a = std::size_t(BK) * LDA * sizeof(T), b = std::size_t(BK) * BN * sizeof(T);
    s.scratch_bytes = {a, a, b, b};
    s.compare_barriers = true;
    s.barriers = {{0, false}, {1, true}, {2, true}};
    return s;
  }

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
    // One member per micro-tile: a smaller team would leave outputs uncomputed.
    if (team.team_size() != NT)
      Kokkos::abort("tessera: GPU matmul launched with a team size other than its plan's");
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
      // The plan's barriers per k-step: the loaded tiles are read next step, the read ones
      // overwritten next step. After the last step only registers are read: no barrier.
      if (s + 1 < steps) team.team_barrier();
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
    // Each member owns columns j, four at a time: their R elements each are loaded together
    // and combined in registers, first row first, then stored once.
    team_batched<4>(
        m, int(icols),
        [&](int j) {
          T v[R];
          for (int r = 0; r < R; ++r) v[r] = in.at(c0, i * R + r, index_type(j));
          T a = v[0];
          for (int r = 1; r < R; ++r) a = op(a, v[r]);
          return a;
        },
        [&](int j, const T& a) { row[j] = a; });
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

/// Records the scratch bytes each staged transpose of a kernel touches (tw rows of ld
/// elements of its type, in its plan slot): a named functor, so the HD visit_staged may call it
/// from host code without a host/device diagnostic.
template <int S>
struct staged_slot_bytes {
  std::size_t* bytes;
  int tw, ld;
  template <class Tr>
  TESSERA_INLINE void operator()(const Tr& t) const {
    if (t.slot >= 0 && t.slot < S)
      bytes[t.slot] = std::size_t(tw) * std::size_t(ld) * sizeof(typename Tr::T);
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
    // Only expressions with shifts, or with two arrays one of which is a view (sections of one
    // buffer), instantiate the staged form (plans stage nothing else).
    using X = typename eval::expr_of<Ev>::type;
    if constexpr (codegen::kind_count<X, node_kind::shift>() > 0 ||
                  (codegen::view_terminal_count<X>() > 0 &&
                   codegen::kind_count<X, node_kind::terminal>() >= 2)) {
      if (!k.stencil_stages.empty()) {
        staged_stencil(exec, k, ev, out, ext);
        return;
      }
    }
    if (k.league_size != n)
      throw plan_error("tessera: the GPU elementwise kernel cannot run plan '" + k.name + "' (" +
                       k.backend + "): " + std::to_string(k.league_size) +
                       " iterations planned, one per element (" + std::to_string(n) + ") run");
    if (k.flat_index)
      backends::impl::launch(k.label, range(exec, 0, n), elementwise_flat<S, Ev, T>{ev, out.p});
    else
      backends::impl::launch(k.label, range(exec, 0, n),
                             elementwise_indexed<S, Ev, T, N>{ev, out, ext});
  }

  /// The staged stencil form of an elementwise kernel (plan.stencil_stages non-empty).
  template <class Ev, class T, int N>
  static void staged_stencil(const Space& exec, const codegen::kernel_plan& k, const Ev& ev,
                             const tessera::impl::strided_ref<T, N>& out, const extent<N>& ext) {
    using X = typename eval::expr_of<Ev>::type;
    constexpr int K =
        codegen::kind_count<X, node_kind::shift>() + codegen::kind_count<X, node_kind::terminal>();
    // The kernel: one scratch slot per stage holding its box; one barrier between staging
    // and evaluating.
    backends::impl::kernel_shape shape;
    shape.kernel = "GPU staged stencil";
    shape.compare_scratch = true;
    for (const auto& s : k.stencil_stages) shape.scratch_bytes.push_back(s.bytes);
    shape.compare_barriers = true;
    shape.barriers = {{0, false}};
    backends::impl::check_plan(k, shape);
    if (k.tile.size() != std::size_t(N) || k.tiles.size() != std::size_t(N) ||
        k.stencil_stages.size() > std::size_t(K))
      throw plan_error("tessera: the GPU staged stencil kernel cannot run plan '" + k.name +
                       "': tile " + codegen::list_dims(k.tile) + " for a rank-" +
                       std::to_string(N) + " output, " + std::to_string(k.stencil_stages.size()) +
                       " staged operands for " + std::to_string(K) + " shifts and arrays");
    extent<N> tile, tiles;
    index_type league = 1;
    for (int d = 0; d < N; ++d) {
      tile[d] = k.tile[std::size_t(d)];
      tiles[d] = (ext[d] + tile[d] - 1) / tile[d];
      league *= tiles[d];
    }
    if (league != k.league_size)
      throw plan_error("tessera: the GPU staged stencil kernel cannot run plan '" + k.name + "' (" +
                       k.backend + "): " + std::to_string(k.league_size) + " tiles planned, " +
                       std::to_string(league) + " run");
    const auto sc = operands::staged_scratch<K>::from_plan(k);
    using kernel = staged_stencil_kernel<K, Ev, T, N, member>;
    const kernel fn{ev, out, ext, tile, tiles, sc};
    const auto p =
        backends::impl::planned_team_policy(exec, k, fn, sc.level, sc.bytes ? sc.bytes + 64 : 0);
    backends::impl::launch(k.label, p, fn);
  }

  template <int S, class Ev, class T>
  static void staged_transpose(const Space& exec, const codegen::kernel_plan& k, const Ev& ev,
                               const tessera::impl::strided_ref<T, 2>& out, const extent<2>& ext,
                               bool /*pure_transpose*/) {
    // The kernel: any team size; one scratch slot per staged operand holding its tw x th block
    // transposed (tw rows of ld >= th elements); one barrier between staging and storing.
    backends::impl::kernel_shape shape;
    shape.kernel = "GPU staged transpose";
    shape.compare_scratch = true;
    const int th = k.tile.size() == 2 ? int(k.tile[0]) : 0,
              tw = k.tile.size() == 2 ? int(k.tile[1]) : 0;
    std::size_t slot_bytes[S] = {};
    ev.visit_staged(staged_slot_bytes<S>{slot_bytes, tw, k.staged_ld});
    for (int i = 0; i < S; ++i)
      if (slot_bytes[i]) {
        shape.scratch_bytes.resize(std::size_t(i) + 1);
        shape.scratch_bytes[std::size_t(i)] = slot_bytes[i];
      }
    shape.compare_barriers = true;
    shape.barriers = {{0, false}};
    backends::impl::check_plan(k, shape);
    if (th <= 0 || tw <= 0 || k.staged_ld < th)
      throw plan_error("tessera: the GPU staged transpose kernel cannot run plan '" + k.name +
                       "': tile " + codegen::list_dims(k.tile) + " with staged rows of " +
                       std::to_string(k.staged_ld) + " elements");
    if (k.staged_narrow_copy)  // a CPU form: one team member copying lines
      throw plan_error("tessera: the GPU staged transpose kernel cannot run plan '" + k.name +
                       "': it copies the operand's lines directly (staged_narrow_copy), a "
                       "CPU form");
    const auto sc = operands::staged_scratch<S>::from_plan(k);
    using kernel = staged_transpose_kernel<S, Ev, T, member>;
    const kernel fn{ev, out, ext[0], ext[1], k.tiles[0], th, tw, k.staged_ld, sc};
    const auto p =
        backends::impl::planned_team_policy(exec, k, fn, sc.level, sc.bytes ? sc.bytes + 64 : 0);
    backends::impl::launch(k.label, p, fn);
  }

  template <int S, class Ev, class T, class OT>
  static void matmul(const Space& exec, const codegen::kernel_plan& k, const operands::matrix<T>& A,
                     const operands::matrix<T>& B, const Ev& ev,
                     const tessera::impl::strided_ref<OT, 2>& out, const extent<2>& ext) {
    if constexpr (std::is_floating_point_v<T>) {
      if (k.gpu_mm.bm) {
        constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
        using kernel = blocked_matmul_kernel<S, T, OT, Ev, member, BM, BN, BK, TM, TN>;
        if (k.gpu_mm.bm != BM || k.gpu_mm.bn != BN || k.gpu_mm.bk != BK || k.gpu_mm.tm != TM ||
            k.gpu_mm.tn != TN)
          throw plan_error("tessera: plan '" + k.name + "' asks for a GPU matmul blocking (" +
                           std::to_string(k.gpu_mm.bm) + "x" + std::to_string(k.gpu_mm.bn) + "x" +
                           std::to_string(k.gpu_mm.bk) + ", " + std::to_string(k.gpu_mm.tm) + "x" +
                           std::to_string(k.gpu_mm.tn) +
                           " per member) this build has no kernel "
                           "for (" +
                           kernel::shape().kernel + ")");
        backends::impl::check_plan(k, kernel::shape());
        const auto sc = operands::staged_scratch<4>::from_plan(k);
        const kernel fn{A, B, ev, out, ext[0], ext[1], A.cols, k.tiles[0], sc};
        const auto p = backends::impl::planned_team_policy(exec, k, fn, sc.level,
                                                           sc.bytes ? sc.bytes + 64 : 0);
        backends::impl::launch(k.label, p, fn);
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
    // The kernel: any team size; one scratch row of the input's columns; one barrier after the
    // R rows are combined (prologue = first row, loop = the other rows, epilogue = outputs).
    backends::impl::kernel_shape shape;
    shape.kernel = "GPU tile_reduce";
    shape.compare_scratch = true;
    shape.scratch_bytes = {std::size_t(ext[1] * Core::cols) * sizeof(T)};
    shape.compare_barriers = true;
    shape.barriers = {{1, false}};
    backends::impl::check_plan(k, shape);
    const std::size_t bytes = k.scratch_bytes[k.scratch_level];
    using kernel = tile_reduce_kernel<S, Core, In, Ev, OT, member>;
    const kernel fn{in, ev, tr.op, out, ext[1], k.scratch_level, bytes};
    const auto p = backends::impl::planned_team_policy(exec, k, fn, k.scratch_level, bytes + 64);
    backends::impl::launch(k.label, p, fn);
  }
};

}  // namespace tessera::backends::gpu
