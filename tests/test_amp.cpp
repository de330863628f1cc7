// C++ AMP fidelity: misuse of the tile vocabulary is rejected before any kernel runs (every
// mode), atomics and free-standing fences follow C++ AMP's semantics, checked mode sees global
// memory (bounds, races within and between tiles) and can collect every finding, and a
// catalogue of racy and correct kernels is judged without a miss or a false positive.
#include "test_util.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {
using namespace tessera;
using tessera::index;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

/// Every finding of a checked run of `kernel` on `te` (collect mode, at most `cap`).
template <int... T, class K>
std::vector<finding> findings_of(const tiled_extent<T...>& te, const K& kernel,
                                 std::size_t cap = 100) {
  std::vector<finding> f;
  parallel_for_each(checked_collect(f, cap), te, kernel);
  return f;
}
bool any_race(const std::vector<finding>& f) {
  for (const auto& x : f)
    if (x.kind == "race") return true;
  return false;
}

// --- misuse: caught before any kernel runs, in fast mode, checked mode and explain ------------

TEST_CASE("a barrier inside for_each is a usage_error before anything runs (ranks 1-3)") {
  array<float, 1> o1{extent<1>(8)};
  array<float, 2> o2(4, 4);
  array<float, 3> o3(2, 2, 4);
  auto k1 = TESSERA_KERNEL(tile_group<4>& g) {
    g.for_each([&](const tiled_index<4>& t) {
      o1[t.global] = 1.f;
      g.barrier.wait();
    });
  };
  auto k2 = TESSERA_KERNEL(tile_group<2, 2>& g) {
    g.for_each([&](const tiled_index<2, 2>& t) {
      if (t.local[0] == 0) g.barrier.wait_with_tile_static_memory_fence();  // conditional
      o2[t.global] = 1.f;
    });
  };
  auto k3 = TESSERA_KERNEL(tile_group<2, 2, 4>& g) {
    g.for_each([&](const tiled_index<2, 2, 4>& t) {
      o3[t.global] = 1.f;
      g.barrier.wait_with_global_memory_fence();
    });
  };
  try {
    parallel_for_each(o1.extent.tile<4>(), k1);
    FAIL("accepted");
  } catch (const usage_error& e) {
    CHECK(contains(e.what(), "parallel_for_each"));
    CHECK(contains(e.what(), "inside for_each"));
    CHECK(contains(e.what(), "divergent barrier"));
  }
  CHECK_THROWS_AS(parallel_for_each(o2.extent.tile<2, 2>(), k2), usage_error);
  CHECK_THROWS_AS(parallel_for_each(o3.extent.tile<2, 2, 4>(), k3), usage_error);
  CHECK_THROWS_AS(parallel_for_each(checked, o2.extent.tile<2, 2>(), k2), usage_error);
  CHECK_THROWS_AS(explain(o3.extent.tile<2, 2, 4>(), k3), usage_error);
  // Nothing ran: the outputs are still zero.
  CHECK(sum(o1) == 0.f);
  CHECK(sum(o2) == 0.f);
  CHECK(sum(o3) == 0.f);
}

TEST_CASE("tile_static (and tile_local) declared inside for_each is a usage_error naming it") {
  array<float, 2> out(4, 4);
  auto kernel = TESSERA_KERNEL(tile_group<2, 2>& g) {
    g.for_each([&](const tiled_index<2, 2>& t) {
      auto s = g.tile_static<float[2][2]>("partial");
      s(t.local[0], t.local[1]) = 1.f;
      out[t.global] = s(t.local[0], t.local[1]);
    });
  };
  try {
    parallel_for_each(out.extent.tile<2, 2>(), kernel);
    FAIL("accepted");
  } catch (const usage_error& e) {
    CHECK(contains(e.what(), "'partial'"));
    CHECK(contains(e.what(), "declare it in the kernel body"));
  }
  CHECK_THROWS_AS(parallel_for_each(checked, out.extent.tile<2, 2>(), kernel), usage_error);
  CHECK_THROWS_AS(explain(out.extent.tile<2, 2>(), kernel), usage_error);
  CHECK(sum(out) == 0.f);
  auto local = TESSERA_KERNEL(tile_group<2, 2>& g) {
    g.for_each([&](const tiled_index<2, 2>& t) {
      auto acc = g.tile_local<float>(0.f, "acc");
      out[t.global] = acc(t);
    });
  };
  CHECK_THROWS_AS(parallel_for_each(out.extent.tile<2, 2>(), local), usage_error);
}

// --- atomics -------------------------------------------------------------------------------

TEST_CASE("atomics on tile_static memory: a histogram per tile, every C++ AMP function") {
  const long n = 4 * 64;
  std::vector<int> h(n);
  for (long i = 0; i < n; ++i) h[std::size_t(i)] = int((i * 7) % 5);
  array<int, 1> data(extent<1>(n), h.begin(), h.end());
  array<int, 2> hist(4, 5);
  array<int, 1> extra{extent<1>(4 * 8)};
  auto kernel = TESSERA_KERNEL(tile_group<64>& g) {
    auto bins = g.tile_static<int[5]>("bins");
    auto other = g.tile_static<int[8]>("other");
    g.for_each([&](const tiled_index<64>& t) {
      if (t.local[0] < 5) bins(t.local[0]) = 0;
      if (t.local[0] < 8) other(t.local[0]) = t.local[0] == 6 ? 1000 : 0;
    });
    g.barrier.wait();
    g.for_each([&](const tiled_index<64>& t) {
      atomic_fetch_add(&bins(data[t.global]), 1);
      atomic_fetch_inc(&other(0));
      atomic_fetch_dec(&other(1));
      atomic_fetch_sub(&other(2), 2);
      atomic_fetch_max(&other(3), int(t.local[0]));
      atomic_fetch_min(&other(6), int(t.local[0]) + 10);
      atomic_fetch_or(&other(4), 1 << (t.local[0] % 8));
      atomic_fetch_xor(&other(5), 1);
      int expected = 0;
      atomic_compare_exchange(&other(7), &expected, int(t.local[0]) + 1);  // first one wins
    });
    g.barrier.wait();
    g.for_each([&](const tiled_index<64>& t) {
      if (t.local[0] < 5) hist(t.tile[0], t.local[0]) = bins(t.local[0]);
      if (t.local[0] < 8) extra[t.tile[0] * 8 + t.local[0]] = other(t.local[0]);
    });
  };
  for (int mode = 0; mode < 2; ++mode) {
    CAPTURE(mode);
    if (mode == 0)
      parallel_for_each(data.extent.tile<64>(), kernel);
    else
      CHECK(findings_of(data.extent.tile<64>(), kernel).empty());
    const auto hv = hist.to_vector();
    for (int tile = 0; tile < 4; ++tile)
      for (int b = 0; b < 5; ++b) {
        int want = 0;
        for (long i = tile * 64; i < (tile + 1) * 64; ++i) want += h[std::size_t(i)] == b;
        CHECK(hv[std::size_t(tile * 5 + b)] == want);
      }
    const auto ev = extra.to_vector();
    for (int tile = 0; tile < 4; ++tile) {
      const int* e = ev.data() + tile * 8;
      CHECK(e[0] == 64);
      CHECK(e[1] == -64);
      CHECK(e[2] == -128);
      CHECK(e[3] == 63);
      CHECK(e[4] == 255);
      CHECK(e[5] == 0);  // 64 xors of 1
      CHECK(e[6] == 10);
      CHECK(e[7] >= 1);
      CHECK(e[7] <= 64);
    }
  }
}

TEST_CASE("atomics on global memory across tiles: no race among atomics, exact totals") {
  const long n = 1000;
  array<long, 1> v{extent<1>(n)};
  parallel_for_each(
      v.extent, TESSERA_KERNEL(const index<1>& i) { v[i] = i[0] + 1; });
  array<long, 1> total{extent<1>(1)}, maxv{extent<1>(1)};
  auto kernel = TESSERA_KERNEL(tile_group<16>& g) {
    g.for_each([&](const tiled_index<16>& t) {
      const long x = guarded_read(v, t.global);
      atomic_fetch_add(&total[0], x);
      atomic_fetch_max(&maxv(0), x);
    });
  };
  parallel_for_each(v.extent.tile<16>().pad(), kernel);
  CHECK(total.to_vector()[0] == n * (n + 1) / 2);
  CHECK(maxv.to_vector()[0] == n);
  const auto f = findings_of(v.extent.tile<16>().pad(), kernel);
  CHECK(f.empty());
  CHECK(total.to_vector()[0] == n * (n + 1));  // checked mode keeps the kernel's effects
}

// --- free-standing fences --------------------------------------------------------------------

/// A tile reduction whose last steps are "warp-synchronous": separated by free-standing
/// tile_static fences in tile-uniform code rather than barriers.
template <bool WithFences>
void fence_reduction(const array<int, 1>& in, const array<int, 1>& out) {
  auto kernel = TESSERA_KERNEL(tile_group<256>& g) {
    auto s = g.tile_static<int[256]>("partial");
    g.for_each([&](const tiled_index<256>& t) { s(t.local[0]) = in[t.global]; });
    for (int w = 128; w > 32; w /= 2) {
      g.barrier.wait();
      g.for_each([&](const tiled_index<256>& t) {
        if (t.local[0] < w) s(t.local[0]) = s(t.local[0]) + s(t.local[0] + w);
      });
    }
    g.barrier.wait();
    for (int w = 32; w > 0; w /= 2) {
      g.for_each([&](const tiled_index<256>& t) {
        if (t.local[0] < w) s(t.local[0]) = s(t.local[0]) + s(t.local[0] + w);
      });
      if constexpr (WithFences) tile_static_memory_fence(g.barrier);
    }
    g.for_each([&](const tiled_index<256>& t) {
      if (t.local[0] == 0) out[t.tile] = s(0);
    });
  };
  if constexpr (WithFences) {
    CHECK(findings_of(in.extent.tile<256>(), kernel).empty());
    parallel_for_each(in.extent.tile<256>(), kernel);
  } else {
    const auto f = findings_of(in.extent.tile<256>(), kernel);
    REQUIRE(any_race(f));
    CHECK(f[0].site.buffer == "partial");
  }
}

TEST_CASE("free-standing fences order the memory they name (warp-synchronous reduction tail)") {
  const long tiles = 30, n = tiles * 256;
  array<int, 1> in{extent<1>(n)}, out{extent<1>(tiles)};
  parallel_for_each(
      in.extent, TESSERA_KERNEL(const index<1>& i) { in[i] = int(i[0] % 256); });
  fence_reduction<true>(in, out);
  const auto o = out.to_vector();
  for (long t = 0; t < tiles; ++t) CHECK(o[std::size_t(t)] == 255 * 256 / 2);
  CHECK(sum(out) == tiles * (255 * 256 / 2));
  fence_reduction<false>(in, out);  // without the fences the tail is a race
}

// --- checked mode on global memory -------------------------------------------------------------

TEST_CASE("checked mode: out-of-bounds global reads and writes are bounds_error") {
  // A literal port of a histogram sample that indexes past its bins.
  array<int, 1> data{extent<1>(64)}, bins{extent<1>(8)};
  parallel_for_each(
      data.extent, TESSERA_KERNEL(const index<1>& i) { data[i] = int(i[0]); });
  auto kernel = TESSERA_KERNEL(tile_group<16>& g) {
    g.for_each([&](const tiled_index<16>& t) { atomic_fetch_add(&bins[data[t.global]], 1); });
  };
  try {
    parallel_for_each(checked, data.extent.tile<16>(), kernel);
    FAIL("no bounds error");
  } catch (const bounds_error& e) {
    CHECK(e.site.memory == "global");
    CHECK(e.site.element == std::vector<std::int64_t>{8});
    CHECK(contains(e.what(), "extent (8)"));
  }
  // Fast mode: the validation dry run of the first launch finds it before anything runs.
  array<int, 1> bins2{extent<1>(8)};
  auto kernel2 = TESSERA_KERNEL(tile_group<16>& g) {
    g.for_each([&](const tiled_index<16>& t) { bins2[t.global[0] + 8] = 1; });
  };
  CHECK_THROWS_AS(parallel_for_each(extent<1>(16).tile<16>(), kernel2), bounds_error);
  CHECK(sum(bins2) == 0);
}

TEST_CASE("checked_collect gathers every finding up to its cap, with full descriptions") {
  array<float, 1> out{extent<1>(32)};
  auto kernel = TESSERA_KERNEL(tile_group<8>& g) {
    auto s = g.tile_static<float>("total");
    g.for_each([&](const tiled_index<8>& t) { s = s + float(t.local[0]); });  // race per tile
    g.barrier.wait();
    g.for_each([&](const tiled_index<8>& t) { out[t.global] = s; });
  };
  const auto all = findings_of(out.extent.tile<8>(), kernel);
  CHECK(all.size() >= 4);  // at least one per tile
  std::vector<std::int64_t> tiles_seen;
  for (const auto& f : all) {
    if (f.kind != "race") continue;
    CHECK(f.site.buffer == "total");
    CHECK(f.site.memory == "tile_static");
    CHECK(f.site.phase == 0);
    CHECK(!f.first_thread.empty());
    CHECK(contains(f.message, "in tile"));
    tiles_seen.push_back(f.site.tile[0]);
  }
  CHECK(std::find(tiles_seen.begin(), tiles_seen.end(), 3) != tiles_seen.end());
  CHECK(findings_of(out.extent.tile<8>(), kernel, 2).size() == 2);
}

TEST_CASE("checked mode: global races between logical threads of a tile and between tiles") {
  array<int, 1> out{extent<1>(16)};
  SUBCASE("two threads of one tile write one element") {
    auto k = TESSERA_KERNEL(tile_group<4>& g) {
      g.for_each([&](const tiled_index<4>& t) { out[t.tile[0]] = int(t.local[0]) + 1; });
    };
    try {
      parallel_for_each(checked, out.extent.tile<4>(), k);
      FAIL("no race");
    } catch (const race_error& e) {
      CHECK(e.kind == "write/write");
      CHECK(e.site.memory == "global");
      CHECK(e.site.element == std::vector<std::int64_t>{0});
      CHECK(e.first_thread == std::vector<std::int64_t>{0});
      CHECK(e.second_thread == std::vector<std::int64_t>{1});
    }
  }
  SUBCASE("one thread writes what a neighbour reads in the same phase") {
    auto k = TESSERA_KERNEL(tile_group<4>& g) {
      g.for_each([&](const tiled_index<4>& t) {
        out[t.global] = 1;
        if (t.local[0] > 0) out[t.global[0] - 1] = out[t.global[0] - 1] + 0;
      });
    };
    CHECK(any_race(findings_of(out.extent.tile<4>(), k)));
  }
  SUBCASE("two tiles write one element (no barrier orders tiles)") {
    auto k = TESSERA_KERNEL(tile_group<4>& g) {
      g.for_each([&](const tiled_index<4>& t) {
        if (t.local[0] == 0) out[0] = int(t.tile[0]);
      });
    };
    try {
      parallel_for_each(checked, out.extent.tile<4>(), k);
      FAIL("no race");
    } catch (const race_error& e) {
      CHECK(contains(e.what(), "between tiles"));
      CHECK(e.first_tile == std::vector<std::int64_t>{0});
      CHECK(e.site.tile == std::vector<std::int64_t>{1});
    }
  }
  SUBCASE("a barrier with a global fence orders a tile's global accesses") {
    array<int, 1> rev{extent<1>(16)};
    auto k = TESSERA_KERNEL(tile_group<4>& g) {
      g.for_each([&](const tiled_index<4>& t) { out[t.global] = int(t.global[0]); });
      g.barrier.wait_with_global_memory_fence();
      g.for_each(
          [&](const tiled_index<4>& t) { rev[t.global] = out[t.tile_origin[0] + 3 - t.local[0]]; });
    };
    CHECK(findings_of(out.extent.tile<4>(), k).empty());
    CHECK(rev.to_vector()[0] == 3);
    CHECK(rev.to_vector()[15] == 12);
  }
}

// --- the race catalogue -------------------------------------------------------------------------

TEST_CASE("race catalogue: every racy kernel reported, no correct kernel flagged") {
  array<float, 2> m(8, 8), out(8, 8);
  parallel_for_each(
      m.extent, TESSERA_KERNEL(const index<2>& i) { m[i] = float(i[0] * 8 + i[1]); });
  const auto te = m.extent.tile<4, 4>();
  using ti = tiled_index<4, 4>;
  int racy_reported = 0, racy_total = 0;
  auto racy = [&](const std::vector<finding>& f, const char* what) {
    CAPTURE(what);
    ++racy_total;
    CHECK(!f.empty());
    racy_reported += !f.empty();
  };
  auto clean = [&](const std::vector<finding>& f, const char* what) {
    CAPTURE(what);
    if (!f.empty()) CAPTURE(f[0].message);
    CHECK(f.empty());
  };

  // Racy.
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float>("total");
                       g.for_each([&](const ti& t) { s += m[t.global]; });
                       g.barrier.wait();
                       g.for_each([&](const ti& t) { out[t.global] = s; });
                     }),
      "seed 000's total += without atomics");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float[4][4]>("s");
                       g.for_each([&](const ti& t) { s(t.local[0], t.local[1]) = m[t.global]; });
                       g.for_each(
                           [&](const ti& t) { out[t.global] = s(3 - t.local[0], t.local[1]); });
                     }),
      "read after write without a barrier");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float[4]>("row");
                       g.for_each([&](const ti& t) { s(t.local[1]) = m[t.global]; });
                       g.barrier.wait();
                       g.for_each([&](const ti& t) { out[t.global] = s(t.local[1]); });
                     }),
      "write/write: four threads write each element");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
            auto s = g.tile_static<float[4][4]>("s");
            for (int it = 0; it < 2; ++it) {
              g.for_each([&](const ti& t) { s(t.local[0], t.local[1]) = m[t.global] + float(it); });
              g.barrier.wait();
              g.for_each([&](const ti& t) { out[t.global] = s(t.local[1], t.local[0]); });
            }
          }),
      "write-after-read across loop iterations");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float[4][4]>("s");
                       g.for_each([&](const ti& t) { s(t.local[0], t.local[1]) = m[t.global]; });
                       g.barrier.wait_with_global_memory_fence();  // does not cover tile_static
                       g.for_each([&](const ti& t) { out[t.global] = s(t.local[1], t.local[0]); });
                     }),
      "barrier whose fence does not cover the memory");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
            g.for_each([&](const ti& t) { out[t.global] = m[t.global]; });
            g.barrier.wait_with_tile_static_memory_fence();  // does not cover global memory
            g.for_each([&](const ti& t) {
              out[t.global] = out[index<2>(t.tile_origin[0] + 3 - t.local[0], t.global[1])];
            });
          }),
      "global write then read by another thread, tile_static fence only");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<int>("count");
                       g.for_each([&](const ti& t) {
                         if (t.local_linear() == 0) s = 0;
                       });
                       g.barrier.wait();
                       g.for_each([&](const ti& t) {
                         if (t.local_linear() == 1)
                           out[t.global] = float(int(s));
                         else
                           atomic_fetch_add(&s, 1);
                       });
                     }),
      "an atomic and a plain read of one element in one phase");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float[16]>("s");
                       g.for_each([&](const ti& t) {
                         s(t.local_linear()) = m[t.global];
                         tile_static_memory_fence(
                             g.barrier);  // inside for_each: orders this thread only
                         out[t.global] = s((t.local_linear() + 1) % 16);
                       });
                     }),
      "a fence inside for_each does not synchronise threads");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       g.for_each(
                           [&](const ti& t) { out[index<2>(0, t.local[1])] = float(t.tile[0]); });
                     }),
      "tiles write the same global elements");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float[4][4]>("s");
                       g.for_each([&](const ti& t) {
                         if (t.local[0] == 0) s(0, t.local[1]) = 1.f;
                       });
                       g.barrier.wait();
                       g.for_each([&](const ti& t) { out[t.global] = s(t.local[0], t.local[1]); });
                     }),
      "reads of tile_static elements nobody wrote");
  racy(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float[4][4]>("s");
                       g.for_each([&](const ti& t) { s(t.local[0], t.local[1]) = 1.f; });
                       g.barrier.wait();
                       g.for_each(
                           [&](const ti& t) { out[t.global] = s(t.local[0] + 1, t.local[1]); });
                     }),
      "tile_static index out of bounds");
  CHECK(racy_reported == racy_total);

  // Correct.
  clean(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float[4][4]>("s");
                       g.for_each([&](const ti& t) { s(t.local[0], t.local[1]) = m[t.global]; });
                       g.barrier.wait_with_tile_static_memory_fence();
                       g.for_each(
                           [&](const ti& t) { out[t.global] = s(3 - t.local[0], 3 - t.local[1]); });
                     }),
      "tile_static exchange with a tile_static fence");
  clean(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
            auto s = g.tile_static<float[4][4]>("s");
            for (int it = 0; it < 3; ++it) {
              g.for_each([&](const ti& t) { s(t.local[0], t.local[1]) = m[t.global] + float(it); });
              g.barrier.wait();
              g.for_each([&](const ti& t) { out[t.global] = s(t.local[1], t.local[0]); });
              g.barrier.wait();
            }
          }),
      "loop with both barriers");
  clean(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<int>("count");
                       g.for_each([&](const ti& t) {
                         if (t.local_linear() == 0) s = 0;
                       });
                       g.barrier.wait();
                       g.for_each([&](const ti&) { atomic_fetch_add(&s, 1); });
                       g.barrier.wait();
                       g.for_each([&](const ti& t) { out[t.global] = float(int(s)); });
                     }),
      "atomics only, then a barrier, then reads");
  clean(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       g.for_each([&](const ti& t) { out[t.global] = m[t.global] * 2.f; });
                       g.barrier.wait_with_global_memory_fence();
                       g.for_each([&](const ti& t) {
                         const index<2> o(t.tile_origin[0] + 3 - t.local[0], t.global[1]);
                         m[t.global] = out[o];
                       });
                     }),
      "global exchange inside a tile ordered by a global fence");
  clean(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       g.for_each(
                           [&](const ti& t) { out[t.global] = out[t.global] + m[index<2>(0, 0)]; });
                     }),
      "every tile reads a shared element; each thread updates its own");
  clean(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto acc = g.tile_local<float>(0.f);
                       for (int k = 0; k < 4; ++k) {
                         g.for_each([&](const ti& t) { acc(t) += m[index<2>(t.global[0], k)]; });
                         g.barrier.wait();
                       }
                       g.for_each([&](const ti& t) { out[t.global] = acc(t); });
                     }),
      "tile_local accumulation across barriers");
  clean(findings_of(
      te,
      TESSERA_KERNEL(tile_group<4, 4>& g) {
                       auto s = g.tile_static<float[4][4]>("s");
                       g.for_each([&](const ti& t) { s(t.local[0], t.local[1]) = m[t.global]; });
                       g.barrier.wait();
                       g.for_each([&](const ti& t) {
                         float r = 0;
                         for (int k = 0; k < 4; ++k) r += s(t.local[0], k);  // everyone reads a row
                         out[t.global] = r;
                       });
                     }),
      "many readers of one element after a barrier");
}

}  // namespace
