/// \file workload_kernels.hpp
/// \brief The algorithms of the seed documents written as Tessera tile kernels (Tier 0). Shared by
/// the examples,
///        the tests and tessera-tour so each algorithm is written once.
#pragma once

#include <tessera/tessera.hpp>

#include <string>

namespace workloads {

using tessera::index_type;

/// Which of C++ AMP's four tile_barrier waits a kernel uses.
enum class barrier_variant { wait, all_memory, global_memory, tile_static_memory };

TESSERA_INLINE void wait(const tessera::tile_barrier& b, barrier_variant v) {
  switch (v) {
    case barrier_variant::wait:
      b.wait();
      break;
    case barrier_variant::all_memory:
      b.wait_with_all_memory_fence();
      break;
    case barrier_variant::global_memory:
      b.wait_with_global_memory_fence();
      break;
    case barrier_variant::tile_static_memory:
      b.wait_with_tile_static_memory_fence();
      break;
  }
}

/// Seed 000: the mean of every S x S tile of `m` (rows, cols multiples of S) into
/// `averages` (rows/S x cols/S). Each tile loads its values into tile_static memory, waits,
/// and logical thread (0,0) adds them up.
template <int S, class Data, class T>
void tile_average(const Data& m, const tessera::array<T, 2>& averages,
                  barrier_variant v = barrier_variant::wait, bool checked = false) {
  if (averages.extent[0] * S != m.extent[0] || averages.extent[1] * S != m.extent[1])
    throw tessera::shape_error("workloads::tile_average: input " + tessera::to_string(m.extent) +
                               " and output " + tessera::to_string(averages.extent) +
                               " do not match the tile " + std::to_string(S));
  auto kernel = TESSERA_KERNEL(tessera::tile_group<S, S>& g) {
    auto values = g.template tile_static<T[S][S]>("tileValues");
    g.for_each(
        [&](const tessera::tiled_index<S, S>& t) { values(t.local[0], t.local[1]) = m[t.global]; });
    wait(g.barrier, v);
    g.for_each([&](const tessera::tiled_index<S, S>& t) {
      if (t.local[0] == 0 && t.local[1] == 0) {
        T total = 0;
        for (int r = 0; r < S; ++r)
          for (int c = 0; c < S; ++c) total += values(r, c);
        averages[t.tile] = total / static_cast<T>(S * S);
      }
    });
  };
  if (checked)
    tessera::parallel_for_each(tessera::checked, m.extent.template tile<S, S>(), kernel);
  else
    tessera::parallel_for_each(m.extent.template tile<S, S>(), kernel);
}

/// Seed 000's tile averages with a tile collective instead of the tile_static copy, the barrier
/// and the one-thread loop: reduce_over_tile adds the tile's values (neighbours first) and
/// every logical thread gets the sum. Same shapes and errors as tile_average.
template <int S, class Data, class T>
void tile_average_reduce(const Data& m, const tessera::array<T, 2>& averages,
                         bool checked = false) {
  if (averages.extent[0] * S != m.extent[0] || averages.extent[1] * S != m.extent[1])
    throw tessera::shape_error(
        "workloads::tile_average_reduce: input " + tessera::to_string(m.extent) + " and output " +
        tessera::to_string(averages.extent) + " do not match the tile " + std::to_string(S));
  auto kernel = TESSERA_KERNEL(tessera::tile_group<S, S>& g) {
    const T total = tessera::reduce_over_tile(
        g, [&](const tessera::tiled_index<S, S>& t) { return T(m[t.global]); }, tessera::plus<>());
    g.for_each([&](const tessera::tiled_index<S, S>& t) {
      if (t.local[0] == 0 && t.local[1] == 0) averages[t.tile] = total / static_cast<T>(S * S);
    });
  };
  if (checked)
    tessera::parallel_for_each(tessera::checked, m.extent.template tile<S, S>(), kernel);
  else
    tessera::parallel_for_each(m.extent.template tile<S, S>(), kernel);
}

/// Seed 000's "do not do this": every logical thread adds into one tile_static float with no
/// barrier. Checked mode reports the race; the fast mode would return garbage on a GPU.
template <int S, class Data, class T>
void tile_average_racy(const Data& m, const tessera::array<T, 2>& averages, bool checked) {
  auto kernel = TESSERA_KERNEL(tessera::tile_group<S, S>& g) {
    auto total = g.template tile_static<T>("total");
    g.for_each([&](const tessera::tiled_index<S, S>& t) { total += m[t.global]; });
    g.barrier.wait();
    g.for_each([&](const tessera::tiled_index<S, S>& t) {
      if (t.local[0] == 0 && t.local[1] == 0) averages[t.tile] = T(total) / static_cast<T>(S * S);
    });
  };
  if (checked)
    tessera::parallel_for_each(tessera::checked, m.extent.template tile<S, S>(), kernel);
  else
    tessera::parallel_for_each(m.extent.template tile<S, S>(), kernel);
}

template <class A, class B, class C>
void check_matmul_shapes(const char* fn, const A& a, const B& b, const C& c) {
  if (a.extent[1] != b.extent[0] || c.extent[0] != a.extent[0] || c.extent[1] != b.extent[1])
    throw tessera::shape_error(std::string(fn) + ": A " + tessera::to_string(a.extent) + " x B " +
                               tessera::to_string(b.extent) + " -> C " +
                               tessera::to_string(c.extent) + " do not match");
}

/// Seed 002, plain element-parallel: one logical thread per element of C = A * B.
template <class A, class B, class T>
void matmul_simple(const A& a, const B& b, const tessera::array<T, 2>& c) {
  check_matmul_shapes("workloads::matmul_simple", a, b, c);
  const index_type K = a.extent[1];
  tessera::parallel_for_each(
      c.extent, TESSERA_KERNEL(const tessera::index<2>& idx) {
        T s = 0;
        for (index_type k = 0; k < K; ++k) s += a(idx[0], k) * b(k, idx[1]);
        c[idx] = s;
      });
}

/// Seed 002, tiled: C = A * B with TS x TS tiles of A and B staged through tile_static memory,
/// two barriers per k-step (after the loads: read-after-write; after the multiply:
/// write-after-read before the next loads). Any shapes: the launch is padded and the loads and
/// stores guarded. `checked` runs it in checked mode.
template <int TS, class A, class B, class T>
void matmul_tiled(const A& a, const B& b, const tessera::array<T, 2>& c, bool checked = false,
                  bool drop_second_barrier = false) {
  check_matmul_shapes("workloads::matmul_tiled", a, b, c);
  const index_type K = a.extent[1];
  auto kernel = TESSERA_KERNEL(tessera::tile_group<TS, TS>& g) {
    auto at = g.template tile_static<T[TS][TS]>("a_tile");
    auto bt = g.template tile_static<T[TS][TS]>("b_tile");
    auto acc = g.template tile_local<T>(T(0), "acc");
    for (index_type k0 = 0; k0 < K; k0 += TS) {
      g.for_each([&](const tessera::tiled_index<TS, TS>& t) {
        at(t.local[0], t.local[1]) =
            tessera::guarded_read(a, tessera::index<2>(t.global[0], k0 + t.local[1]));
        bt(t.local[0], t.local[1]) =
            tessera::guarded_read(b, tessera::index<2>(k0 + t.local[0], t.global[1]));
      });
      g.barrier.wait();
      g.for_each([&](const tessera::tiled_index<TS, TS>& t) {
        T s = acc(t);
        for (int k = 0; k < TS; ++k) s += at(t.local[0], k) * bt(k, t.local[1]);
        acc(t) = s;
      });
      if (!drop_second_barrier) g.barrier.wait();
    }
    g.for_each([&](const tessera::tiled_index<TS, TS>& t) {
      tessera::guarded_write(c, t.global, acc(t));
    });
  };
  auto te = c.extent.template tile<TS, TS>().pad();
  if (checked)
    tessera::parallel_for_each(tessera::checked, te, kernel);
  else
    tessera::parallel_for_each(te, kernel);
}

template <class A, class T>
void check_transpose_shapes(const char* fn, const A& a, const tessera::array<T, 2>& at) {
  if (at.extent[0] != a.extent[1] || at.extent[1] != a.extent[0])
    throw tessera::shape_error(std::string(fn) + ": input " + tessera::to_string(a.extent) +
                               " and output " + tessera::to_string(at.extent) +
                               " are not transposed shapes");
}

/// Seed 003, padded: At = transpose(A) for any shape. The launch covers A's extent rounded up
/// to tiles; every global read and write is guarded so the extra logical threads do nothing.
template <int TS, class A, class T>
void transpose_padded(const A& a, const tessera::array<T, 2>& at, bool checked = false) {
  check_transpose_shapes("workloads::transpose_padded", a, at);
  auto kernel = TESSERA_KERNEL(tessera::tile_group<TS, TS>& g) {
    auto t1 = g.template tile_static<T[TS][TS]>("t1");
    g.for_each([&](const tessera::tiled_index<TS, TS>& t) {
      t1(t.local[1], t.local[0]) = tessera::guarded_read(a, t.global);
    });
    g.barrier.wait();
    g.for_each([&](const tessera::tiled_index<TS, TS>& t) {
      const tessera::index<2> dst(t.tile_origin[1] + t.local[0], t.tile_origin[0] + t.local[1]);
      tessera::guarded_write(at, dst, T(t1(t.local[0], t.local[1])));
    });
  };
  auto te = a.extent.template tile<TS, TS>().pad();
  if (checked)
    tessera::parallel_for_each(tessera::checked, te, kernel);
  else
    tessera::parallel_for_each(te, kernel);
}

/// Seed 003, truncated: the tiled kernel covers A's extent rounded down to tiles (no guards
/// needed); the remainder — the bottom rows and right columns that do not fill a tile — is
/// transposed by an element-parallel launch.
template <int TS, class A, class T>
void transpose_truncated(const A& a, const tessera::array<T, 2>& at) {
  check_transpose_shapes("workloads::transpose_truncated", a, at);
  auto te = a.extent.template tile<TS, TS>().truncate();
  tessera::parallel_for_each(
      te, TESSERA_KERNEL(tessera::tile_group<TS, TS>& g) {
        auto t1 = g.template tile_static<T[TS][TS]>("t1");
        g.for_each([&](const tessera::tiled_index<TS, TS>& t) {
          t1(t.local[1], t.local[0]) = a[t.global];
        });
        g.barrier.wait();
        g.for_each([&](const tessera::tiled_index<TS, TS>& t) {
          at(t.tile_origin[1] + t.local[0], t.tile_origin[0] + t.local[1]) =
              t1(t.local[0], t.local[1]);
        });
      });
  const index_type r0 = te[0], c0 = te[1];
  const index_type rows = a.extent[0], cols = a.extent[1];
  // Bottom strip: rows [r0, rows), all columns.
  tessera::parallel_for_each(
      tessera::extent<2>(rows - r0, cols),
      TESSERA_KERNEL(const tessera::index<2>& i) { at(i[1], r0 + i[0]) = a(r0 + i[0], i[1]); });
  // Right strip: rows [0, r0), columns [c0, cols).
  tessera::parallel_for_each(
      tessera::extent<2>(r0, cols - c0),
      TESSERA_KERNEL(const tessera::index<2>& i) { at(c0 + i[1], i[0]) = a(i[0], c0 + i[1]); });
}

}  // namespace workloads
