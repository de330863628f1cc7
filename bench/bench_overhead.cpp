// bench-overhead: what Tessera's host side costs per launch at small sizes, against the same
// kernel launched directly with Kokkos (one run, best of many batches, interleaved).
//
//   bench-overhead [--reps N]
//
// Rows: `d = a + b` (Tier 1; plan cache lookup, evaluator build, one RangePolicy launch) vs a
// Kokkos::parallel_for of a functor computing the same; a small Tier 0 tile kernel (planning
// pass, plan cache, one TeamPolicy launch) vs the same TeamPolicy kernel hand-written;
// `tessera::copy` of a 256 x 256 array vs Kokkos::deep_copy; `a = transpose(a)` at 64x64 (an
// aliased assignment: a temporary and the copy back) beside `d = transpose(a)`; and
// `d = relu(matmul(a, b) + c)` at 16x16 (the fused matmul's plan lookup). Ratio = Tessera time /
// Kokkos time per launch (the target is within 1.5x).
#include <tessera/tessera.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using tessera::index_type;
using space = tessera::execution_space;

/// Best time per call of f over `batches` batches of `calls` calls (each batch fenced), seconds.
template <class F>
double per_call(int batches, int calls, F&& f) {
  double best = 1e300;
  for (int b = 0; b < batches; ++b) {
    Kokkos::fence();
    Kokkos::Timer t;
    for (int c = 0; c < calls; ++c) f();
    Kokkos::fence();
    best = std::min(best, t.seconds() / calls);
  }
  return best;
}

struct add_functor {
  Kokkos::View<float*> a, b, d;
  KOKKOS_INLINE_FUNCTION void operator()(index_type i) const { d(i) = a(i) + b(i); }
};

/// The hand-written counterpart of the Tier 0 kernel below: a team per 64-element tile, the
/// tile staged through scratch, reversed.
struct reverse_functor {
  Kokkos::View<float*> in, out;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::TeamPolicy<space>::member_type& team) const {
    float* s = static_cast<float*>(team.team_scratch(0).get_shmem(64 * sizeof(float)));
    const index_type o = index_type(team.league_rank()) * 64;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 64), [&](int l) { s[l] = in(o + l); });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 64), [&](int l) { out(o + l) = s[63 - l]; });
  }
};

struct empty_functor {
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::TeamPolicy<space>::member_type&) const {}
};

void row(const char* what, double tessera_s, double kokkos_s) {
  std::printf("%-44s %10.2f us %10.2f us %8.2fx\n", what, tessera_s * 1e6, kokkos_s * 1e6,
              tessera_s / kokkos_s);
}

}  // namespace

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  int batches = 30;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reps") batches = std::max(1, std::atoi(argv[i + 1]));
  const int calls = 200;
  std::printf("bench-overhead: backend %s, %d threads; best of %d batches of %d calls\n",
              tessera::backend_name().c_str(), tessera::backend_concurrency(), batches, calls);
  std::printf("%-44s %13s %13s %9s\n", "launch", "Tessera", "Kokkos", "ratio");

  for (index_type n : {index_type(1000), index_type(100000)}) {
    tessera::array<float, 1> a(n), b(n), d(n);
    add_functor f{a.view(), b.view(), d.view()};
    const auto policy = Kokkos::RangePolicy<space, Kokkos::IndexType<index_type>>(0, n);
    double tt = 1e300, tk = 1e300;
    for (int r = 0; r < 3; ++r) {  // interleaved
      tt = std::min(tt, per_call(batches, calls, [&] { d = a + b; }));
      tk = std::min(tk, per_call(batches, calls, [&] { Kokkos::parallel_for("add", policy, f); }));
    }
    row(("d = a + b, n = " + std::to_string(n)).c_str(), tt, tk);
  }
  {
    const index_type n = 64 * 16;
    tessera::array<float, 1> in(n), out(n);
    auto kernel = TESSERA_KERNEL(tessera::tile_group<64>& g) {
      auto s = g.tile_static<float[64]>("s");
      g.for_each([&](const tessera::tiled_index<64>& t) { s(t.local[0]) = in[t.global]; });
      g.barrier.wait();
      g.for_each([&](const tessera::tiled_index<64>& t) { out[t.global] = s(63 - t.local[0]); });
    };
    const auto te = in.extent.tile<64>();
    reverse_functor rf{in.view(), out.view()};
    const int team = tessera::plan(te, kernel).team_size;  // the same mapping as Tessera's
    Kokkos::TeamPolicy<space> policy(int(n / 64), team);
    policy.set_scratch_size(0, Kokkos::PerTeam(64 * sizeof(float)));
    double tt = 1e300, tk = 1e300;
    for (int r = 0; r < 3; ++r) {
      tt = std::min(tt, per_call(batches, calls, [&] { tessera::parallel_for_each(te, kernel); }));
      tk = std::min(tk,
                    per_call(batches, calls, [&] { Kokkos::parallel_for("reverse", policy, rf); }));
    }
    row("Tier 0 tile<64> reverse, 16 tiles", tt, tk);
    // The same launch with an empty body: what the launch machinery itself costs.
    auto empty = TESSERA_KERNEL(tessera::tile_group<64>& g) {
      g.for_each([&](const tessera::tiled_index<64>&) {});
    };
    empty_functor ef;
    Kokkos::TeamPolicy<space> epolicy(int(n / 64), team);
    tt = tk = 1e300;
    for (int r = 0; r < 3; ++r) {
      tt = std::min(tt, per_call(batches, calls, [&] { tessera::parallel_for_each(te, empty); }));
      tk = std::min(tk,
                    per_call(batches, calls, [&] { Kokkos::parallel_for("empty", epolicy, ef); }));
    }
    row("Tier 0 tile<64>, empty body, 16 tiles", tt, tk);
  }
  {
    // tessera::copy (C++ AMP's copy) against Kokkos::deep_copy of the same Views.
    tessera::array<float, 2> a(256, 256), b(256, 256);
    double tt = 1e300, tk = 1e300;
    for (int r = 0; r < 3; ++r) {
      tt = std::min(tt, per_call(batches, calls / 4, [&] { tessera::copy(a, b); }));
      tk = std::min(tk,
                    per_call(batches, calls / 4, [&] { Kokkos::deep_copy(b.view(), a.view()); }));
    }
    row("copy(a, b), 256x256", tt, tk);
  }
  {
    // An aliased assignment: computed into a temporary (the temporary pool's), then copied back.
    tessera::array<float, 2> a(64, 64), d(64, 64);
    double ta = 1e300, td = 1e300;
    for (int r = 0; r < 3; ++r) {
      ta = std::min(ta, per_call(batches, calls / 4, [&] { a = transpose(a); }));
      td = std::min(td, per_call(batches, calls / 4, [&] { d = transpose(a); }));
    }
    std::printf("%-44s %10.2f us   (into another array: %.2f us)\n", "a = transpose(a), 64x64",
                ta * 1e6, td * 1e6);
  }
  {
    tessera::array<float, 2> a(16, 16), b(16, 16), c(16, 16), d(16, 16);
    const double tt = per_call(batches, calls / 4, [&] { d = relu(matmul(a, b) + c); });
    const double tp =
        per_call(batches, calls / 4, [&] { (void)tessera::plan(relu(matmul(a, b) + c)); });
    std::printf("%-44s %10.2f us   (plan lookup alone: %.2f us)\n",
                "d = relu(matmul(a, b) + c), 16x16", tt * 1e6, tp * 1e6);
  }
  return 0;
}
