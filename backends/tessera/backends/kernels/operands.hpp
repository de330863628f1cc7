/// \file kernels/operands.hpp
/// \brief Pieces every backend's Tier 1 kernels share: raw matrix operands, the staged-tile
///        scratch layout read from a plan, and the generic tiled matmul (seed 002 as a Tier 2
///        program), used for element types and schedules the fast matmul kernels do not take.
#pragma once

#include <tessera/backends/eval/evaluators.hpp>
#include <tessera/backends/kernels/plan_check.hpp>
#include <tessera/backends/tile_launch.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/tile_program.hpp>

#include <cstdint>
#include <iterator>
#include <utility>

namespace tessera::backends::operands {

/// A rank-2 operand with contiguous rows: element (i, k) = p[i * ld + k].
template <class T>
struct matrix {
  const T* p = nullptr;
  index_type ld = 0, rows = 0, cols = 0;
  TESSERA_FORCEINLINE T operator()(index_type i, index_type k) const { return p[i * ld + k]; }
};

/// Team scratch of a kernel as planned: the level, the bytes, each scratch buffer's offset (the
/// plan's scratch buffers, in order; for staged transposes one slot per staged operand). request()
/// sizes a policy (64 spare bytes for alignment); bind() points a kernel context's staged slots
/// into the team's 64-byte aligned scratch. S: slots the expression type can need.
template <int S>
struct staged_scratch {
  int level = 0, nslots = 0;
  std::size_t bytes = 0;
  std::size_t offs[S] = {};
  /// The plan's output tile (kernel_plan::staged_output_tile; out_tile_bytes 0: none).
  std::size_t out_tile_off = 0, out_tile_bytes = 0;
  static staged_scratch from_plan(const codegen::kernel_plan& k) {
    staged_scratch s;
    s.level = k.scratch_level;
    s.bytes = k.scratch_bytes[s.level];
    for (const auto& b : k.buffers)
      if (b.space == codegen::memory_space_kind::scratch_level0 ||
          b.space == codegen::memory_space_kind::scratch_level1) {
        if (b.name == codegen::kernel_plan::staged_output_tile) {
          s.out_tile_off = b.offset;
          s.out_tile_bytes = b.bytes;
          continue;
        }
        if (s.nslots == S)
          throw error("tessera: a plan with more scratch buffers (" + k.name +
                      ") than the kernel's " + std::to_string(S));
        s.offs[s.nslots++] = b.offset;
      }
    return s;
  }
  template <class Policy>
  void request(Policy& p) const {
    if (bytes) p.set_scratch_size(level, Kokkos::PerTeam(bytes + 64));
  }
  /// The team's scratch, 64-byte aligned (nullptr when the plan has none).
  template <class Member>
  KOKKOS_INLINE_FUNCTION char* base(const Member& team) const {
    return bytes ? base(team.team_scratch(level).get_shmem(bytes + 64)) : nullptr;
  }
  /// The scratch within `raw`, `bytes + 64` bytes of storage: raw rounded up to 64 bytes
  /// (nullptr when the plan has none).
  KOKKOS_INLINE_FUNCTION char* base(void* raw) const {
    if (!bytes) return nullptr;
    const auto r = reinterpret_cast<std::uintptr_t>(raw);
    return reinterpret_cast<char*>((r + 63) & ~std::uintptr_t{63});
  }
  /// Points c's staged slots into the team's scratch at `b` (base(team): take it once per
  /// team, every get_shmem call allocates anew).
  template <class Cx>
  KOKKOS_INLINE_FUNCTION void bind(char* b, Cx& c) const {
    for (int s = 0; s < nslots; ++s) c.staged[s] = b + offs[s];
  }
  template <class Member, class Cx>
  KOKKOS_INLINE_FUNCTION void bind(const Member& team, Cx& c) const {
    bind(base(team), c);
  }
  /// The output tile in the team's scratch at `b` (nullptr when the plan has none).
  KOKKOS_INLINE_FUNCTION char* out_tile(char* b) const {
    return out_tile_bytes && b ? b + out_tile_off : nullptr;
  }
};

/// The output of a Tier 1 kernel as a tile program's store destination: extent + element.
template <class T>
struct output_matrix {
  tessera::impl::strided_ref<T, 2> ref;
  tessera::extent<2> extent;
  TESSERA_FORCEINLINE T& operator[](const index<2>& i) const { return ref.at(i); }
};

/// The body of the generic tiled matmul (seed 002): two TS x TS tiles in scratch, the program
/// inserts the two barriers per k-step (read-after-write after the loads, write-after-read
/// before the next loads); the epilogue runs on in-range elements only.
template <int TS, int S, class T, class OT, class Ev>
struct tiled_matmul_body {
  matrix<T> A, B;
  Ev ev;
  output_matrix<OT> out;
  template <class P>
  TESSERA_INLINE void operator()(P& p) const {
    using ti = tiled_index<TS, TS>;
    const index_type M = A.rows, K = A.cols, N = B.cols;
    auto at = p.template tile_static<T[TS][TS]>("a_tile");
    auto bt = p.template tile_static<T[TS][TS]>("b_tile");
    auto acc = p.template tile_local<T>(T(0), "acc");
    for (index_type k0 = 0; k0 < K; k0 += TS) {
      p.load(at, [&](const ti& t) {
        const index_type i = t.global[0], k = k0 + t.local[1];
        return (i < M && k < K) ? A(i, k) : T(0);
      });
      p.load(bt, [&](const ti& t) {
        const index_type k = k0 + t.local[0], j = t.global[1];
        return (k < K && j < N) ? B(k, j) : T(0);
      });
      p.compute(reads(at, bt), [&](const ti& t) {
        T s = acc(t);
        const T* arow = at.data() + t.local[0] * TS;
        const T* bcol = bt.data() + t.local[1];
        for (int k = 0; k < TS; ++k) s += arow[k] * bcol[k * TS];
        acc(t) = s;
      });
    }
    p.store(out, [&](const ti& t) {
      eval::ectx<T, S> c;
      c.acc = acc(t);
      return static_cast<OT>(ev.at(c, t.global[0], t.global[1]));
    });
  }
};

/// Checks a Tier 1 plan `k` of a kernel that runs as a tile program against the program
/// itself: its planning pass (the body run on the host, as every Tier 0 launch does) gives the
/// team size, the scratch buffers and the barriers it inserts while its loop makes `trips`
/// iterations; they must be the plan's. \throws plan_error naming what differs
template <class Space, int... T, class F>
void check_program_plan(const codegen::kernel_plan& k, const tiled_extent<T...>& te, const F& body,
                        std::int64_t trips) {
  const auto& rec = impl::record_body<Space, T...>(body);
  const codegen::kernel_plan run = impl::plan_from_body<Space>("tile program", te, rec);
  impl::kernel_shape shape;
  shape.kernel = "tile program " + run.name;
  shape.team_size = run.team_size;
  shape.tile = run.tile;
  shape.compare_scratch = true;
  for (const auto* b : impl::scratch_buffers(run)) shape.scratch_bytes.push_back(b->bytes);
  impl::check_plan(k, shape);
  const std::int64_t planned = codegen::executed_barriers(k.barriers, trips);
  if (k.scratch_level != run.scratch_level ||
      k.scratch_bytes[k.scratch_level] != run.scratch_bytes[run.scratch_level] ||
      std::int64_t(run.barriers.size()) != planned)
    throw plan_error("tessera: the tile program of plan '" + k.name + "' (" + k.backend +
                     ") runs " + std::to_string(run.barriers.size()) + " barriers and " +
                     std::to_string(run.scratch_bytes[run.scratch_level]) + " B of scratch level " +
                     std::to_string(run.scratch_level) + " per tile; the plan says " +
                     std::to_string(planned) + " barriers (" + std::to_string(trips) +
                     " loop iterations) and " + std::to_string(k.scratch_bytes[k.scratch_level]) +
                     " B of level " + std::to_string(k.scratch_level));
}

/// The generic tiled matmul with run-time tiles (plan.tile = TM x TN, plan.k_step = TK): one
/// team per output tile; scratch a_tile (TM x TK), b_tile (TK x TN) and acc (TM x TN), in plan
/// order. Each phase's elements are strided over the team's members, a member keeping the same
/// output elements in every phase; the loop's two barriers (after the loads; before the next
/// loads) are the plan's. Any team size, so any tile runs where its scratch fits.
template <int S, class T, class OT, class Ev, class Member>
struct team_tiled_matmul_kernel {
  matrix<T> A, B;
  Ev ev;
  output_matrix<OT> out;
  index_type tm, tn, tk, tiles_j;
  staged_scratch<3> sc;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const index_type M = A.rows, K = A.cols, N = B.cols;
    const index_type i0 = team.league_rank() / tiles_j * tm, j0 = team.league_rank() % tiles_j * tn;
    char* const base = sc.base(team);
    T* const a = reinterpret_cast<T*>(base + sc.offs[0]);
    T* const b = reinterpret_cast<T*>(base + sc.offs[1]);
    T* const acc = reinterpret_cast<T*>(base + sc.offs[2]);
    const index_type r = team.team_rank(), nt = team.team_size(), outs = tm * tn;
    for (index_type e = r; e < outs; e += nt) acc[e] = T(0);
    for (index_type k0 = 0; k0 < K; k0 += tk) {
      if (k0 > 0) team.team_barrier();  // write-after-read on a_tile, b_tile across iterations
      for (index_type e = r; e < tm * tk; e += nt) {
        const index_type i = i0 + e / tk, k = k0 + e % tk;
        a[e] = (i < M && k < K) ? A(i, k) : T(0);
      }
      for (index_type e = r; e < tk * tn; e += nt) {
        const index_type k = k0 + e / tn, j = j0 + e % tn;
        b[e] = (k < K && j < N) ? B(k, j) : T(0);
      }
      team.team_barrier();  // read-after-write on a_tile, b_tile
      if (nt == 1) {
        // One member runs the tile (CPUs): rows of B stream through a vector loop.
        for (index_type i = 0; i < tm; ++i)
          for (index_type k = 0; k < tk; ++k) {
            const T x = a[i * tk + k];
            T* c = acc + i * tn;
            const T* brow = b + k * tn;
            TESSERA_IVDEP
            for (index_type j = 0; j < tn; ++j) c[j] += x * brow[j];
          }
      } else {
        for (index_type e = r; e < outs; e += nt) {
          const T* arow = a + e / tn * tk;
          const T* bcol = b + e % tn;
          T s = acc[e];
          for (index_type k = 0; k < tk; ++k) s += arow[k] * bcol[k * tn];
          acc[e] = s;
        }
      }
    }
    for (index_type e = r; e < outs; e += nt) {
      const index_type i = i0 + e / tn, j = j0 + e % tn;
      if (i < M && j < N) {
        eval::ectx<T, S> c;
        c.acc = acc[e];
        out[index<2>(i, j)] = static_cast<OT>(ev.at(c, i, j));
      }
    }
  }
};

/// Runs the generic tiled matmul as planned: the compiled tile program for the square tiles of
/// codegen::program_matmul_tiles (plan.k_step == 0), the team-loop form for any other tile.
template <int S, class Space, class T, class OT, class Ev>
void tiled_matmul(const Space& exec, const codegen::kernel_plan& k, const matrix<T>& A,
                  const matrix<T>& B, const Ev& ev, const tessera::impl::strided_ref<OT, 2>& out,
                  const extent<2>& ext) {
  const output_matrix<OT> o{out, ext};
  if (k.k_step > 0) {
    using member = typename Kokkos::TeamPolicy<Space>::member_type;
    using kernel = team_tiled_matmul_kernel<S, T, OT, Ev, member>;
    if (k.tile.size() != 2 || k.tile[0] <= 0 || k.tile[1] <= 0)
      throw plan_error("tessera: plan '" + k.name + "' gives the tiled matmul no 2-D tile");
    const index_type tm = k.tile[0], tn = k.tile[1], tk = k.k_step;
    impl::kernel_shape shape;
    shape.kernel = "tiled matmul (run-time tile)";
    shape.tile = k.tile;
    shape.compare_scratch = true;
    shape.scratch_bytes = {std::size_t(tm * tk) * sizeof(T), std::size_t(tk * tn) * sizeof(T),
                           std::size_t(tm * tn) * sizeof(T)};
    shape.compare_barriers = true;
    shape.barriers = {{1, true}, {2, true}};
    impl::check_plan(k, shape);
    const auto sc = staged_scratch<3>::from_plan(k);
    const kernel fn{A, B, ev, o, tm, tn, tk, k.tiles[1], sc};
    const auto p =
        backends::impl::planned_team_policy(exec, k, fn, sc.level, sc.bytes ? sc.bytes + 64 : 0);
    backends::impl::launch(k.label, p, fn);
    return;
  }
  const int ts = k.tile.empty() ? 0 : int(k.tile[0]);
  auto run = [&](auto tile) {
    constexpr int TS = decltype(tile)::value;
    if (ts != TS) return false;
    const auto te = ext.template tile<TS, TS>().pad();
    const auto body = tile_program(tiled_matmul_body<TS, S, T, OT, Ev>{A, B, ev, o});
    check_program_plan<Space>(k, te, body, (A.cols + TS - 1) / TS);
    impl::launch_planned(exec, te, body, k);
    return true;
  };
  const bool ran = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return (run(std::integral_constant<int, codegen::program_matmul_tiles[I]>{}) || ...);
  }
  (std::make_index_sequence<std::size(codegen::program_matmul_tiles)>{});
  if (!ran)
    throw plan_error("tessera: plan '" + k.name + "' runs the tiled matmul as a tile program of " +
                     codegen::list_dims(k.tile) +
                     ", a tile it has no compiled program for (square 8, 16 or 32)");
}

}  // namespace tessera::backends::operands
