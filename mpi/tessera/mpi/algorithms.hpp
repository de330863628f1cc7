/// \file algorithms.hpp
/// \brief Distributed Tier 1: element-wise expressions and tile reductions over local parts
///        (no messages), sums and reductions (Tessera's accuracy; a reproducible sum that is
///        bitwise identical for any number of processes and threads), SUMMA matmul on a P x Q
///        grid, and explain() of each: the messages, bytes and collectives it causes beside the
///        local kernel plans.
#pragma once

#include <mpi.h>

#include <sstream>
#include <string>
#include <vector>

#include <tessera/mpi/distributed_array.hpp>
#include <tessera/tessera.hpp>

namespace tessera::mpi {

namespace impl {
template <class T, int N>
std::string describe_array(const char* name, const distributed_array<T, N>& a) {
  return std::string(name) + " (" + a.layout().describe() + ")";
}
/// The partition of `dst` must be that of the operands, or theirs coarsened by the ratio of
/// the global extents (tile_mean and tile_reduce results).
template <int N>
bool compatible_destination(const partition<N>& dst, const partition<N>& src) {
  if (dst == src) return true;
  extent<N> f;
  for (int d = 0; d < N; ++d) {
    const index_type g = dst.global_extent()[d];
    if (g == 0 || src.global_extent()[d] % g != 0) return false;
    f[d] = src.global_extent()[d] / g;
  }
  try {
    return src.coarsened(f) == dst;
  } catch (const shape_error&) {
    return false;
  }
}

/// Combines one value per process in rank order (the same result on every process).
template <class Acc, class Merge>
Acc allgather_merge(MPI_Comm comm, const Acc& mine, const Acc& identity, bool have,
                    const Merge& merge, const char* fn) {
  struct entry {
    Acc v;
    int have;
  };
  entry e{mine, have ? 1 : 0};
  std::vector<entry> all(static_cast<std::size_t>(mpi::size(comm)));
  const MPI_Datatype t = bytes_type(sizeof(entry));
  check(MPI_Allgather(&e, 1, t, all.data(), 1, t, comm), fn);
  Acc r = identity;
  bool first = true;
  for (const auto& x : all) {
    if (!x.have) continue;
    if (first)
      r = x.v;
    else
      merge(r, x.v);
    first = false;
  }
  return r;
}

/// Reproducible sums: one partial per tile of the partition (the fixed global chunk grid),
/// each folded deterministically: element (.., j) of a tile into lane j mod 16, lanes merged
/// in order.
template <class T, int N, class Rule>
struct tile_fold {
  using acc = typename Rule::acc_type;
  tessera::impl::strided_ref<T, N> r;
  index<N> halo;
  extent<N> local, tile, tiles;
  Kokkos::View<acc*, memory_space> out;
  Rule rule;
  KOKKOS_INLINE_FUNCTION void operator()(index_type t) const {
    index_type lo[N], hi[N];
    index_type q = t;
    for (int d = N - 1; d >= 0; --d) {
      lo[d] = (q % tiles[d]) * tile[d];
      q /= tiles[d];
      hi[d] = lo[d] + tile[d] < local[d] ? lo[d] + tile[d] : local[d];
    }
    acc lanes[16];
    for (int l = 0; l < 16; ++l) lanes[l] = rule.identity();
    index_type rows = 1;
    for (int d = 0; d < N - 1; ++d) rows *= hi[d] - lo[d];
    for (index_type row = 0; row < rows; ++row) {
      index<N> i;
      index_type rq = row;
      for (int d = N - 2; d >= 0; --d) {
        i[d] = lo[d] + rq % (hi[d] - lo[d]);
        rq /= hi[d] - lo[d];
      }
      for (index_type j = lo[N - 1]; j < hi[N - 1]; ++j) {
        i[N - 1] = j;
        rule.step(lanes[(j - lo[N - 1]) & 15], r.at(i + halo));
      }
    }
    for (int l = 1; l < 16; ++l) rule.merge(lanes[0], lanes[l]);
    out(t) = lanes[0];
  }
};

/// The sum's accumulator over every process: each local part folded by Tessera's sum rule,
/// the accumulators combined in rank order (the same on every process).
template <class T, int N>
typename backends::impl::sum_rule_t<T>::acc_type sum_accumulator(const distributed_array<T, N>& a,
                                                                 const char* fn) {
  using rule = backends::impl::sum_rule_t<T>;
  using acc = typename rule::acc_type;
  const rule r{};
  const auto l = a.local();
  const bool have = l.size() > 0;
  const acc mine =
      have ? backends::impl::fold_all(execution_space(), fn, l, l.get_extent(), r) : r.identity();
  return allgather_merge(
      a.grid().comm(), mine, r.identity(), have, [&](acc& x, const acc& y) { r.merge(x, y); }, fn);
}

template <class T, int N>
void require_same(const char* fn, const char* an, const distributed_array<T, N>& a, const char* bn,
                  const partition<N>& bp) {
  if (!(a.layout() == bp))
    throw shape_error(std::string(fn) + ": " + an + " is " + a.layout().describe() + ", " + bn +
                      " is " + bp.describe() +
                      " (distributed operands need the same partition; "
                      "redistribute one explicitly)");
}
}  // namespace impl

/// Evaluates `f(a.local()...)` — a Tier 1 expression of the operands' local parts — into
/// dst's local part on every process: element-wise expressions, and tile_mean / tile_reduce
/// over tiles of the partition, need no messages.
/// \code
///   mpi::assign(D, [](auto a, auto b) { return relu(2.f * a + b); }, A, B);
///   mpi::assign(M, [](auto a) { return tile_mean<4, 4>(a); }, A);  // M: A's partition coarsened
/// \endcode
/// \throws shape_error naming both partitions when the operands' partitions differ, or dst's
///         is neither theirs nor theirs coarsened (tile results) — on every process, before any
///         kernel runs (never a silent redistribution)
template <class T, int N, class F, class U0, class... U>
void assign(const distributed_array<T, N>& dst, F&& f, const distributed_array<U0, N>& a0,
            const distributed_array<U, N>&... a) {
  (impl::require_same("tessera::mpi::assign", "an operand", a, "the first operand", a0.layout()),
   ...);
  if (!impl::compatible_destination(dst.layout(), a0.layout()))
    throw shape_error("tessera::mpi::assign: the destination is " + dst.layout().describe() +
                      ", the operands " + a0.layout().describe() +
                      " (the same partition, or the operands' coarsened by their tiles)");
  if (dst.local_extent().size() == 0 && a0.local_extent().size() == 0) return;
  const auto e = f(a0.local(), a.local()...);
  if constexpr (requires { typename std::remove_cvref_t<decltype(e)>::tessera_expression_tag; })
    tessera::assign(dst.local(), e);
  else  // an array or array_view: a copy (with conversion)
    tessera::assign(dst.local(), tessera::impl::as_expr(e));
}

/// Sum of every element of a distributed array, on every process: each process folds its local
/// part with Tessera's sum (double accumulation for float, compensated lanes for double), the
/// accumulators are gathered (MPI_Allgather) and combined in rank order, then rounded once —
/// Tessera's accuracy, independent of the process count. Collective over the grid.
template <class T, int N>
T sum(const distributed_array<T, N>& a) {
  using rule = backends::impl::sum_rule_t<T>;
  return rule::result(impl::sum_accumulator(a, "tessera::mpi::sum"));
}

/// Bitwise-reproducible distributed sum: the same bits for any number of processes, grid shape
/// and thread count, for a given global extent, tile and build. The fixed global chunk grid is
/// the partition's tiles (every block is a multiple of the tile, so each tile lies on one
/// process): each tile is folded deterministically into one partial, the partials are gathered
/// (MPI_Allgatherv) and combined pairwise in global row-major tile order on every process.
/// Cost: one partial (8 bytes for float, 16 for double) per tile gathered on every process:
/// use tiles of 2^10 elements or more for large arrays.
/// \throws resource_error when the tile grid has more than 2^26 tiles (a coarser tile is
///         needed), before any kernel runs
template <class T, int N>
T sum(const distributed_array<T, N>& a, reproducible_t) {
  using rule = backends::impl::sum_rule_t<T>;
  using acc = typename rule::acc_type;
  const rule r{};
  const partition<N>& p = a.layout();
  const extent<N> t = p.tile();
  extent<N> gt;
  index_type total = 1;
  for (int d = 0; d < N; ++d) {
    gt[d] = (p.global_extent()[d] + t[d] - 1) / t[d];
    total *= gt[d];
  }
  if (total > (index_type(1) << 26))
    throw resource_error("tessera::mpi::sum(reproducible): " + std::to_string(total) +
                         " tiles of " + to_string(t) + " in " + to_string(p.global_extent()) +
                         "; the chunk grid is the partition's tiles: choose a coarser tile");
  if (total == 0) return T(0);
  const auto& g = p.grid();
  // Tiles per process and where each lands in the global order.
  std::vector<int> counts(static_cast<std::size_t>(g.size())), displs(counts.size(), 0);
  auto local_tiles = [&](const index<N>& c) {
    extent<N> lt;
    const extent<N> le = p.local_extent(c);
    for (int d = 0; d < N; ++d) lt[d] = (le[d] + t[d] - 1) / t[d];
    return lt;
  };
  for (int rk = 0; rk < g.size(); ++rk)
    counts[static_cast<std::size_t>(rk)] = static_cast<int>(local_tiles(g.coords_of(rk)).size());
  for (std::size_t k = 1; k < counts.size(); ++k) displs[k] = displs[k - 1] + counts[k - 1];
  const extent<N> mine_tiles = local_tiles(g.coords());
  Kokkos::View<acc*, memory_space> partial("tessera::mpi::sum partials",
                                           static_cast<std::size_t>(mine_tiles.size()));
  if (mine_tiles.size() > 0)
    Kokkos::parallel_for(
        "tessera::mpi::sum(reproducible)",
        Kokkos::RangePolicy<execution_space, Kokkos::IndexType<index_type>>(0, mine_tiles.size()),
        impl::tile_fold<T, N, rule>{a.storage().ref(), a.halo(), a.local_extent(), t, mine_tiles,
                                    partial, r});
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), partial);
  std::vector<acc> all(static_cast<std::size_t>(displs.back() + counts.back()));
  const MPI_Datatype dt = impl::bytes_type(sizeof(acc));
  check(MPI_Allgatherv(host.data(), static_cast<int>(host.extent(0)), dt, all.data(), counts.data(),
                       displs.data(), dt, g.comm()),
        "tessera::mpi::sum(reproducible) (MPI_Allgatherv)");
  std::vector<acc> ordered(static_cast<std::size_t>(total), r.identity());
  for (int rk = 0; rk < g.size(); ++rk) {
    const index<N> c = g.coords_of(rk);
    const extent<N> lt = local_tiles(c);
    for (index_type k = 0; k < lt.size(); ++k) {
      index_type q = k, gi = 0;
      index<N> l;
      for (int d = N - 1; d >= 0; --d) {
        l[d] = q % lt[d];
        q /= lt[d];
      }
      for (int d = 0; d < N; ++d) gi = gi * gt[d] + p.global_of(d, c[d], l[d] * t[d]) / t[d];
      ordered[static_cast<std::size_t>(gi)] =
          all[static_cast<std::size_t>(displs[static_cast<std::size_t>(rk)] + k)];
    }
  }
  for (std::size_t s = 1; s < ordered.size(); s *= 2)  // fixed pairwise tree
    for (std::size_t i = 0; i + s < ordered.size(); i += 2 * s) r.merge(ordered[i], ordered[i + s]);
  return rule::result(ordered[0]);
}

/// Arithmetic mean of every element (sum as sum(a), divided by the global size).
/// \throws shape_error for an empty global extent
template <class T, int N>
T mean(const distributed_array<T, N>& a) {
  const index_type n = a.global_extent().size();
  if (n == 0)
    throw shape_error("tessera::mpi::mean: empty global extent " + to_string(a.global_extent()));
  using rule = backends::impl::sum_rule_t<T>;
  return rule::mean(impl::sum_accumulator(a, "tessera::mpi::mean"), n);
}

/// Reduction with any associative operator: op(init, r) where r combines the local results in
/// rank order (each folded as tessera::reduce folds). Collective; the same value on every
/// process; init for an empty global extent.
template <class T, int N, class U, class Op>
T reduce(const distributed_array<T, N>& a, const U& init, const Op& op) {
  if (a.global_extent().size() == 0) return static_cast<T>(init);
  const auto l = a.local();
  const bool have = l.size() > 0;
  using rule = backends::impl::op_rule<T, Op>;
  const rule r{op};
  const T mine = have ? backends::impl::fold_all(execution_space(), "tessera::mpi::reduce", l,
                                                 l.get_extent(), r)
                      : static_cast<T>(init);
  const T all = impl::allgather_merge(
      a.grid().comm(), mine, static_cast<T>(init), have, [&](T& x, const T& y) { r.merge(x, y); },
      "tessera::mpi::reduce (MPI_Allgather)");
  return static_cast<T>(op(static_cast<T>(init), all));
}

namespace impl {
/// The panels of a SUMMA matmul along k: cut at every block boundary of A's columns and of B's
/// rows, and at most `cap` wide.
inline std::vector<std::pair<index_type, index_type>> summa_panels(index_type k, index_type ba,
                                                                   index_type bb, index_type cap) {
  std::vector<std::pair<index_type, index_type>> out;
  index_type k0 = 0;
  while (k0 < k) {
    index_type k1 = (k0 / ba + 1) * ba;
    const index_type kb = (k0 / bb + 1) * bb;
    if (kb < k1) k1 = kb;
    if (k1 - k0 > cap) k1 = k0 + cap;
    if (k1 > k) k1 = k;
    out.emplace_back(k0, k1);
    k0 = k1;
  }
  return out;
}

template <class TC, class TA, class TB>
void check_summa(const char* fn, const distributed_array<TC, 2>& C,
                 const distributed_array<TA, 2>& A, const distributed_array<TB, 2>& B) {
  const auto a = A.global_extent(), b = B.global_extent(), c = C.global_extent();
  if (a[1] != b[0] || c[0] != a[0] || c[1] != b[1])
    throw shape_error(std::string(fn) + ": C " + to_string(c) + " = A " + to_string(a) + " x B " +
                      to_string(b) + " does not conform");
  if (!(A.grid() == C.grid()) || !(B.grid() == C.grid()))
    throw shape_error(std::string(fn) + ": A, B and C must share one process grid (A " +
                      A.layout().describe() + ", B " + B.layout().describe() + ", C " +
                      C.layout().describe() + ")");
  if (A.layout().block()[0] != C.layout().block()[0])
    throw shape_error(std::string(fn) + ": A's rows (" + A.layout().describe() +
                      ") and C's rows (" + C.layout().describe() + ") are partitioned differently");
  if (B.layout().block()[1] != C.layout().block()[1])
    throw shape_error(std::string(fn) + ": B's columns (" + B.layout().describe() +
                      ") and C's columns (" + C.layout().describe() +
                      ") are partitioned differently");
}
}  // namespace impl

/// The default epilogue of mpi::matmul: none.
struct no_epilogue {};

/// The widest k panel SUMMA broadcasts in one step (narrower where blocks end sooner): about
/// one k block of the CPU matmul, so a step adds no pass over C the kernel would not make, and
/// the next panel's broadcast has a step's compute to hide behind (2048^3 f32 on two processes
/// of a Zen 5: 512 wide 0.88x ScaLAPACK's psgemm, 256 0.91-0.92x, 128 0.91-0.96x).
inline constexpr index_type summa_panel_cap = 256;

/// C = alpha * A B + beta * C on a P x Q process grid by SUMMA (van de Geijn & Watts, 1997, as
/// in DLA-Future and SLATE): the k dimension is cut into panels at the block boundaries of A's
/// columns and B's rows (at most summa_panel_cap wide); for each panel the process column
/// owning it broadcasts A's column panel along the row communicators and the process row owning
/// it broadcasts B's row panel along the column communicators (MPI_Ibcast, double-buffered:
/// the next panel is in flight while this one multiplies), and every process adds the product
/// of the two panels into its local part of C with Tessera's matmul (`C += matmul(Ap, Bp)`, in
/// place; alpha and beta fused into the first step, the epilogue into the last).
///
/// \param C [in,out] m x n; A m x k; B k x n — block or block-cyclic, any blocks, on one grid
/// \param epilogue applied to every element of the result in the last step, as a Tier 1
///        expression builder: `[](auto x) { return tessera::relu(x); }` makes C =
///        relu(alpha A B + beta C), fused into that step's kernel (default: none)
/// \throws shape_error, on every process before any message, when the extents do not conform,
///         the grids differ, A's row blocks differ from C's or B's column blocks from C's
/// Collective over the grid. Device buffers go to MPI directly when gpu_aware(), else staged
/// through host memory.
template <class TC, class TA, class TB, class Epilogue = no_epilogue>
void matmul(const distributed_array<TC, 2>& C, const distributed_array<TA, 2>& A,
            const distributed_array<TB, 2>& B, TC alpha = TC(1), TC beta = TC(0),
            const Epilogue& epilogue = {}) {
  constexpr bool has_epilogue = !std::is_same_v<Epilogue, no_epilogue>;
  const char* fn = "tessera::mpi::matmul";
  impl::check_summa(fn, C, A, B);
  const auto& g = C.grid();
  const index<2> me = g.coords();
  const index_type k = A.global_extent()[1];
  // A grid of one process broadcasts nothing: one panel per block, no width cap.
  const bool one_process = g.dims()[0] == 1 && g.dims()[1] == 1;
  const auto panels = impl::summa_panels(k, A.layout().block()[1], B.layout().block()[0],
                                         one_process ? k + 1 : summa_panel_cap);
  const index_type mloc = A.local_extent()[0], nloc = B.local_extent()[1];
  const auto Cl = C.local();
  if (panels.empty()) {  // k = 0: C = epilogue(beta C)
    if (Cl.size() > 0) {
      if (beta == TC(0))
        tessera::fill(Cl, TC(0));
      else
        Cl *= beta;
      if constexpr (has_epilogue) tessera::assign(Cl, epilogue(tessera::impl::as_expr(Cl)));
    }
    return;
  }
  index_type wmax = 0;
  for (const auto& pk : panels) wmax = std::max(wmax, pk.second - pk.first);
  // Without halos C's local part is its whole storage: the array itself is the destination
  // (the CPU matmul accumulates into it in place).
  const bool no_halo = C.halo() == index<2>();
  auto local_step = [&](std::size_t step, const auto& Ap, const auto& Bp) {
    auto run = [&](auto& Cd) {
      if constexpr (has_epilogue) {
        if (step + 1 == panels.size()) {  // the last step applies the epilogue
          if (step == 0)
            tessera::assign(Cd, epilogue(matmul(Ap, Bp) * alpha + beta * Cd));
          else
            tessera::assign(Cd, epilogue(Cd + matmul(Ap, Bp) * alpha));
          return;
        }
      }
      if (step == 0) {
        if (beta == TC(0)) {
          if (alpha == TC(1))
            tessera::assign(Cd, matmul(Ap, Bp));
          else
            tessera::assign(Cd, matmul(Ap, Bp) * alpha);
        } else {
          tessera::assign(Cd, matmul(Ap, Bp) * alpha + beta * Cd);
        }
      } else if (alpha == TC(1)) {
        Cd += matmul(Ap, Bp);
      } else {
        Cd += matmul(Ap, Bp) * alpha;
      }
    };
    if (no_halo) {
      array<TC, 2> Cs = C.storage();
      run(Cs);
    } else {
      run(Cl);
    }
  };
  // A grid dimension of one process broadcasts nothing: its panels are sections of the local
  // parts, multiplied in place without a copy.
  const bool a_alone = g.dims()[1] == 1, b_alone = g.dims()[0] == 1;
  if (a_alone && b_alone) {
    for (std::size_t step = 0; step < panels.size(); ++step) {
      if (Cl.size() == 0) break;
      const auto [k0, k1] = panels[step];
      local_step(step, A.local().section(index<2>(0, k0), extent<2>(mloc, k1 - k0)),
                 B.local().section(index<2>(k0, 0), extent<2>(k1 - k0, nloc)));
    }
    Kokkos::fence();
    return;
  }
  const bool stage = impl::must_stage();
  impl::message_buffer<TA> abuf[2];
  impl::message_buffer<TB> bbuf[2];
  for (int s = 0; s < 2; ++s) {
    abuf[s].allocate(mloc * wmax, stage);
    bbuf[s].allocate(wmax * nloc, stage);
  }
  const MPI_Datatype ta = impl::bytes_type(sizeof(TA)), tb = impl::bytes_type(sizeof(TB));
  MPI_Request reqs[2][2] = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                            {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
  auto post = [&](std::size_t step) {
    const int s = static_cast<int>(step % 2);
    const auto [k0, k1] = panels[step];
    const index_type w = k1 - k0;
    const int qa = static_cast<int>((k0 / A.layout().block()[1]) % g.dims()[1]);
    const int pb = static_cast<int>((k0 / B.layout().block()[0]) % g.dims()[0]);
    if (me[1] == qa && mloc > 0) {
      impl::box<2> bx{A.halo() + index<2>(0, A.layout().local_of(1, k0)), extent<2>(mloc, w)};
      impl::run_box_copy(execution_space(), A.storage(), abuf[s].dev, bx, impl::copy_mode::pack);
    }
    if (me[0] == pb && nloc > 0) {
      impl::box<2> bx{B.halo() + index<2>(B.layout().local_of(0, k0), 0), extent<2>(w, nloc)};
      impl::run_box_copy(execution_space(), B.storage(), bbuf[s].dev, bx, impl::copy_mode::pack);
    }
    Kokkos::fence();
    if (me[1] == qa) abuf[s].to_host();
    if (me[0] == pb) bbuf[s].to_host();
    check(MPI_Ibcast(abuf[s].mpi_data(), static_cast<int>(mloc * w), ta, qa, g.row_comm(),
                     &reqs[s][0]),
          "tessera::mpi::matmul (MPI_Ibcast of A's panel)");
    check(MPI_Ibcast(bbuf[s].mpi_data(), static_cast<int>(w * nloc), tb, pb, g.col_comm(),
                     &reqs[s][1]),
          "tessera::mpi::matmul (MPI_Ibcast of B's panel)");
  };
  post(0);
  for (std::size_t step = 0; step < panels.size(); ++step) {
    if (step + 1 < panels.size()) post(step + 1);
    const int s = static_cast<int>(step % 2);
    check(MPI_Waitall(2, reqs[s], MPI_STATUSES_IGNORE), "tessera::mpi::matmul (MPI_Waitall)");
    if (Cl.size() == 0) continue;
    const index_type w = panels[step].second - panels[step].first;
    abuf[s].to_device();
    bbuf[s].to_device();
    using va = typename array<TA, 2>::view_type;
    using vb = typename array<TB, 2>::view_type;
    const array<TA, 2> Ap(
        va(abuf[s].dev.data(), static_cast<std::size_t>(mloc), static_cast<std::size_t>(w)));
    const array<TB, 2> Bp(
        vb(bbuf[s].dev.data(), static_cast<std::size_t>(w), static_cast<std::size_t>(nloc)));
    local_step(step, Ap, Bp);
  }
  Kokkos::fence();
}

/// What mpi::matmul(C, A, B) does on this process: the panels, the broadcasts (count, bytes,
/// communicator) and the local kernel plan of one step. Runs nothing.
template <class TC, class TA, class TB>
std::string explain_matmul(const distributed_array<TC, 2>& C, const distributed_array<TA, 2>& A,
                           const distributed_array<TB, 2>& B) {
  impl::check_summa("tessera::mpi::explain_matmul", C, A, B);
  const auto& g = C.grid();
  const auto panels = impl::summa_panels(A.global_extent()[1], A.layout().block()[1],
                                         B.layout().block()[0], summa_panel_cap);
  const index_type mloc = A.local_extent()[0], nloc = B.local_extent()[1];
  index_type abytes = 0, bbytes = 0, wmax = 0;
  for (const auto& p : panels) {
    const index_type w = p.second - p.first;
    abytes += mloc * w * static_cast<index_type>(sizeof(TA));
    bbytes += w * nloc * static_cast<index_type>(sizeof(TB));
    wmax = std::max(wmax, w);
  }
  std::ostringstream os;
  os << "SUMMA matmul C " << to_string(C.global_extent()) << " = A " << to_string(A.global_extent())
     << " x B " << to_string(B.global_extent()) << " on a " << to_string(g.dims())
     << " process grid (this process " << to_string(g.coords()) << ", rank " << g.rank() << ")\n"
     << "  A: " << A.layout().describe() << "\n  B: " << B.layout().describe()
     << "\n  C: " << C.layout().describe() << "\n"
     << "  " << panels.size() << " steps, k panels up to " << wmax << " wide (cut at A's column"
     << " and B's row blocks, at most " << summa_panel_cap << ")\n"
     << "  per step: MPI_Ibcast of A's panel (" << mloc << " x w) along the row communicator ("
     << g.dims()[1] << " processes), MPI_Ibcast of B's panel (w x " << nloc
     << ") along the column communicator (" << g.dims()[0]
     << " processes); two panels in flight (double-buffered)\n"
     << "  this process receives or sends " << abytes << " + " << bbytes << " bytes in "
     << 2 * panels.size() << " broadcasts"
     << (impl::must_stage() ? ", staged through host memory" : "") << "\n";
  if (mloc > 0 && nloc > 0 && wmax > 0) {
    const array<TA, 2> Ap(mloc, wmax);
    const array<TB, 2> Bp(wmax, nloc);
    os << "  local step (C += matmul(Ap, Bp), in place):\n"
       << tessera::explain(C.local(), C.local() + matmul(Ap, Bp));
  }
  return os.str();
}

/// What exchange_halo() does on this process: the messages (point to point, no collective) and
/// their bytes, and the boundary. Runs nothing.
template <class T, int N>
std::string explain_exchange(const distributed_array<T, N>& a) {
  const auto t = a.halo_traffic();
  std::ostringstream os;
  os << "halo exchange of " << a.layout().describe() << ", halo " << to_string(a.halo())
     << ", boundary " << boundary::to_string(a.boundary_policy().k) << "\n  this process "
     << to_string(a.grid().coords()) << ": " << t.messages << " MPI_Isend + " << t.messages
     << " MPI_Irecv (faces, edges, corners), " << t.bytes
     << " bytes each way, packed and unpacked by Kokkos kernels"
     << (impl::must_stage() ? ", staged through host memory" : "") << "; no collective\n";
  return os.str();
}

/// What sum(a) (or sum(a, reproducible) with `reproducible_mode`) does: the local reduction
/// plan and the collective. Runs nothing.
template <class T, int N>
std::string explain_sum(const distributed_array<T, N>& a, bool reproducible_mode = false) {
  std::ostringstream os;
  os << "distributed sum of " << a.layout().describe() << "\n";
  if (reproducible_mode) {
    using acc = typename backends::impl::sum_rule_t<T>::acc_type;
    const auto t = a.layout().tile();
    index_type tiles = 1;
    for (int d = 0; d < N; ++d) tiles *= (a.global_extent()[d] + t[d] - 1) / t[d];
    os << "  reproducible: one partial per tile " << to_string(t) << " (" << tiles
       << " in all), one Kokkos parallel_for over this process's tiles, then MPI_Allgatherv of "
       << tiles * static_cast<index_type>(sizeof(acc))
       << " bytes and a fixed pairwise combine in global tile order\n";
  } else {
    os << "  MPI_Allgather of one accumulator per process, combined in rank order\n";
    if (a.local_extent().size() > 0)
      os << "  local: " << tessera::explain(reduction::sum, a.local());
  }
  return os.str();
}

}  // namespace tessera::mpi
