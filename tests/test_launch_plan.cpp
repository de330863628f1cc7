// The plan is the program: for every kernel kind on the backend under test, the launches
// Kokkos receives — seen by Kokkos Tools' begin-kernel callback (labels) and by Tessera's launch
// observer (league, team, vector sizes and scratch bytes read back from the Kokkos policy) —
// are exactly the kernels explain()/plan() printed, in order.
#include "test_util.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {
using namespace tessera;
using backends::launch_record;
using tessera::index;

std::vector<std::string>& tool_labels() {
  static std::vector<std::string> v;
  return v;
}
std::vector<launch_record>& launches() {
  static std::vector<launch_record> v;
  return v;
}
void on_begin_for(const char* name, const std::uint32_t, std::uint64_t* kernel_id) {
  tool_labels().emplace_back(name);
  *kernel_id = 0;
}
void on_launch(const launch_record& r) {
  launches().push_back(r);
}

/// Observes launches (Kokkos Tools callback + Tessera's observer) for its lifetime.
struct observing {
  observing() {
    Kokkos::fence();
    tool_labels().clear();
    launches().clear();
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(&on_begin_for);
    backends::current_launch_observer() = &on_launch;
  }
  ~observing() {
    Kokkos::fence();
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
    backends::current_launch_observer() = nullptr;
  }
};

bool starts_with(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

/// Every launch matches its planned kernel; every planned kernel ran.
void check_launches_match(const std::vector<codegen::kernel_plan>& kernels) {
  // Kokkos Tools saw the same Tessera launches, in the same order, as the observer.
  std::vector<std::string> tessera_tools;
  for (const auto& l : tool_labels())
    if (starts_with(l, "tessera::")) tessera_tools.push_back(l);
  std::vector<std::string> observed;
  for (const auto& r : launches()) observed.push_back(r.label);
  CHECK(tessera_tools == observed);

  std::size_t next = 0;
  for (const auto& k : kernels) {
    CAPTURE(k.name);
    // A packed CPU matmul is one B-panel packing launch and one team launch per (column
    // panel, K block), a direct one (small) one launch or, smaller, none; a small element-wise
    // kernel on a host backend runs on the calling thread, no launch; every other kernel is one
    // launch.
    const std::int64_t expected = k.packed_matmul ? k.gemm.launches : k.inline_run ? 0 : 1;
    std::int64_t seen = 0;
    for (; next < launches().size() && starts_with(launches()[next].label, k.label); ++next) {
      const launch_record& r = launches()[next];
      CAPTURE(r.label);
      if (k.packed_matmul && !k.gemm.direct && r.label != k.label) {
        CHECK(r.label == k.label + " (pack B)");
        CHECK(r.policy == "RangePolicy");
        continue;
      }
      ++seen;
      CHECK(r.label == k.label);
      CHECK(r.policy == (starts_with(k.policy, "TeamPolicy") ? "TeamPolicy" : "RangePolicy"));
      CHECK(r.league_size == k.league_size);
      if (r.policy == "TeamPolicy") {
        CHECK(r.team_size == k.team_size);
        CHECK(r.vector_length == k.vector_length);
        const std::size_t planned = k.scratch_bytes[k.scratch_level];
        CHECK(r.scratch_bytes[k.scratch_level] ==
              (planned ? planned + codegen::scratch_align_slack : 0));
        CHECK(r.scratch_bytes[1 - k.scratch_level] == 0);
      }
    }
    CHECK(seen == expected);
  }
  CHECK(next == launches().size());
}

/// Plans `e` assigned to `dst` (an array or an array_view), runs the assignment while
/// observing, compares.
template <class D, class E>
void check_assignment(const D& dst, const E& e) {
  const auto mem = dst.describe_memory();
  const auto planned =
      backends::exec::plan_of(execution_space(), e, &mem).plan;  // what explain shows
  {
    observing obs;
    assign(dst, e);
  }
  check_launches_match(planned.kernels);
}

TEST_CASE("Tier 1: every kernel family launches as planned") {
  auto ea = tt::random_matrix<float>(67, 45), eb = tt::random_matrix<float>(45, 38);
  array<float, 2> A = from_eigen(ea), B = from_eigen(eb), C(67, 38), T(45, 67), D(67, 45);
  SUBCASE("elementwise") {
    check_assignment(D, 2.f * A + relu(A) - 1.f);
  }
  SUBCASE("elementwise over sections: one iteration per row, as planned") {
    const auto inner = extent<2>(60, 40);
    check_assignment(D.section(index<2>(3, 2), inner),
                     A.section(index<2>(1, 1), inner) + A.section(index<2>(2, 3), inner));
    check_assignment(D, A + A.section(index<2>(0, 0), D.extent));
  }
  SUBCASE("a star stencil of shifts, and a shift of a matmul (materialized first)") {
    check_assignment(D, 0.5f * A + 0.125f * (shift(A, index<2>(-1, 0), boundary::zero) +
                                             shift(A, index<2>(1, 0), boundary::clamp) +
                                             shift(A, index<2>(0, -2), boundary::mirror) +
                                             shift(A, index<2>(0, 2), boundary::periodic)));
    check_assignment(C, shift(matmul(A, B), index<2>(1, 1), boundary::constant(1)) + C);
  }
  SUBCASE("C + matmul(A, B) into C: accumulated in place on CPUs") {
    check_assignment(C, C + matmul(A, B));
    check_assignment(C, matmul(A, B) + C);
  }
  SUBCASE("elementwise with a generated operand and a fill") {
    check_assignment(
        D, A + generate(
                   D.extent, TESSERA_KERNEL(const index<2>& i) { return float(i[0] - i[1]); }));
    check_assignment(D, generate(D.extent, impl::constant_fn<float>{2.f}));
  }
  SUBCASE("staged transpose with an epilogue") {
    array<float, 2> At = from_eigen(tt::random_matrix<float>(45, 67));
    check_assignment(T, transpose(A) + At * 0.5f);
  }
  SUBCASE("matmul with a fused epilogue") {
    array<float, 2> Cin = from_eigen(tt::random_matrix<float>(67, 38));
    check_assignment(C, relu(matmul(A, B) * 1.5f + Cin));
  }
  SUBCASE("matmuls packed (K beyond the direct form's) and direct, float and double") {
    // K = 300 > codegen::direct_gemm_max_k: packed panels, one packing launch per panel.
    array<float, 2> Ak = from_eigen(tt::random_matrix<float>(40, 300)),
                    Bk = from_eigen(tt::random_matrix<float>(300, 50)), Ck(40, 50);
    const auto pk = backends::exec::plan_of(execution_space(), matmul(Ak, Bk), nullptr).plan;
    if (pk.kernels.back().packed_matmul) CHECK_FALSE(pk.kernels.back().gemm.direct);
    check_assignment(Ck, matmul(Ak, Bk));
    check_assignment(Ck, Ck + matmul(Ak, Bk));
    // Direct where the backend packs (a few KiB; M x K x N 67 x 45 x 38, 96 x 100 x 80, 13 x 7 x
    // 29): at most target::matmul.inline_madds multiply-adds (or on one thread) on the calling
    // thread, more in one launch over row blocks.
    const auto t = backends::backend<execution_space>::make_target();
    const auto check_direct = [&](const auto& a, const auto& b) {
      const auto p = backends::exec::plan_of(execution_space(), matmul(a, b), nullptr).plan;
      if (!p.kernels.back().packed_matmul) return;
      const auto& k = p.kernels.back();
      const std::int64_t madds =
          std::int64_t(a.get_extent()[0]) * a.get_extent()[1] * b.get_extent()[1];
      CAPTURE(madds);
      CHECK(k.gemm.direct);
      const bool on_caller = t.concurrency == 1 || madds <= t.matmul.inline_madds;
      CHECK(k.gemm.inline_run == on_caller);
      CHECK(k.inline_run == on_caller);
      CHECK(k.gemm.launches == (on_caller ? 0 : 1));
      CHECK(tt::has(codegen::to_string(p), on_caller ? "no launch" : "1 launch"));
    };
    check_direct(A, B);
    check_assignment(C, matmul(A, B));
    array<float, 2> Aw = from_eigen(tt::random_matrix<float>(96, 100)),
                    Bw = from_eigen(tt::random_matrix<float>(100, 80)), Cw(96, 80);
    check_direct(Aw, Bw);
    check_assignment(Cw, relu(matmul(Aw, Bw)));
    array<double, 2> Ad = from_eigen(tt::random_matrix<double>(13, 7)),
                     Bd = from_eigen(tt::random_matrix<double>(7, 29)), Cd(13, 29);
    check_direct(Ad, Bd);
    check_assignment(Cd, matmul(Ad, Bd) * 2.0);
    check_assignment(Cd, Cd + matmul(Ad, Bd));
  }
  SUBCASE("generic tiled matmul (int, .tile<8,8>())") {
    array<int, 2> Ai(extent<2>(29, 17)), Bi(extent<2>(17, 21)), Ci(extent<2>(29, 21));
    check_assignment(Ci, (matmul(Ai, Bi) + 1).tile<8, 8>());
    check_assignment(Ci, matmul(Ai, Bi) - Ci);
  }
  SUBCASE("tile_mean and tile_reduce with epilogues") {
    array<float, 2> X = from_eigen(tt::random_matrix<float>(64, 96)), Y(16, 24), Z(32, 12);
    check_assignment(Y, tile_mean<4, 4>(X) * 2.f);
    check_assignment(Z, tile_reduce<2, 8>(X, ops::max{}) + 1.f);
  }
  SUBCASE("several kernels: temporaries first, post-order") {
    check_assignment(C, matmul(A + 1.f, B) + matmul(A, B));
  }
  SUBCASE("aliasing: the output is computed into a temporary, then copied") {
    array<float, 2> S = from_eigen(tt::random_matrix<float>(40, 40));
    check_assignment(S, transpose(S) + 1.f);
    const auto p = plan(transpose(S) + 1.f);  // a fresh output: no copy
    CHECK(p.kernels.back().family != codegen::kernel_family::copy);
    // The copy runs on the calling thread where element-wise kernels of its size do (host
    // backends: at most target::elementwise_inline_elements), and launches past it.
    const auto t = backends::backend<execution_space>::make_target();
    for (const index_type n : {index_type(40), index_type(130)}) {
      CAPTURE(n);
      array<float, 2> Q = from_eigen(tt::random_matrix<float>(n, n));
      const auto mem = Q.describe_memory();
      const auto pq = backends::exec::plan_of(execution_space(), transpose(Q), &mem).plan;
      REQUIRE(pq.kernels.back().family == codegen::kernel_family::copy);
      const std::int64_t limit = t.elementwise_inline_elements;
      CHECK(pq.kernels.back().inline_run == (limit > 0 && n * n <= limit));
      const auto want = to_eigen(Q);
      check_assignment(Q, transpose(Q));
      CHECK(to_eigen(Q) == want.transpose());
    }
  }
  SUBCASE("aliasing: the copy back in runs of a row (CPUs) or one element per iteration") {
    // CPUs copy up to target::copy_run_elements consecutive elements of a row per iteration
    // (rows longer than that in several runs), GPUs one element; launched (more elements than
    // elementwise_inline_elements) or not, the launch is the plan's.
    const auto t = backends::backend<execution_space>::make_target();
    const std::int64_t run = t.copy_run_elements;
    const std::vector<std::pair<index_type, index_type>> shapes = {
        {3, 9000}, {1, 5}, {4100, 3}, {17, 4097}, {2, 4096}};
    for (const auto& shape : shapes) {
      const index_type m = shape.first, n = shape.second;
      CAPTURE(m);
      CAPTURE(n);
      const auto es = tt::random_matrix<float>(m, m), ew = tt::random_matrix<float>(m, n);
      array<float, 2> Sm = from_eigen(es), W = from_eigen(ew);
      const auto mem = W.describe_memory();
      const auto p = backends::exec::plan_of(execution_space(), matmul(Sm, W), &mem).plan;
      REQUIRE(p.kernels.back().family == codegen::kernel_family::copy);
      const std::int64_t iters = run > 1 ? m * ((n + run - 1) / run) : m * n;
      CHECK(p.kernels.back().league_size == iters);
      check_assignment(W, matmul(Sm, W));
      const Eigen::MatrixXf want = (es.cast<double>() * ew.cast<double>()).cast<float>();
      CHECK((to_eigen(W) - want).cwiseAbs().maxCoeff() <= 1e-4f * float(m));
    }
  }
}

/// Kokkos Tools' view of the temporary pool: allocations labelled "tessera::temporary".
int& temporary_allocations() {
  static int n = 0;
  return n;
}
void on_allocate(const Kokkos_Profiling_SpaceHandle, const char* label, const void*,
                 const std::uint64_t) {
  if (std::string(label) == "tessera::temporary") ++temporary_allocations();
}

TEST_CASE("temporaries reuse pooled memory and large ones are freed") {
  using pool = backends::impl::temporary_pool<memory_space>;
  const auto count = [](const auto& run) {
    Kokkos::fence();
    temporary_allocations() = 0;
    Kokkos::Tools::Experimental::set_allocate_data_callback(&on_allocate);
    run();
    Kokkos::fence();
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    return temporary_allocations();
  };
  // An aliased assignment (A = transpose(A)) and one with two matmul temporaries, repeated:
  // the first call may allocate, the next ones take the same buffers back.
  const auto e0 = tt::random_matrix<float>(40, 40);
  array<float, 2> Q = from_eigen(e0);
  Q = transpose(Q);
  CHECK(count([&] {
          for (int r = 0; r < 5; ++r) Q = transpose(Q);
        }) == 0);
  CHECK(to_eigen(Q) == e0);  // six transposes
  const auto ea = tt::random_matrix<float>(33, 20), eb = tt::random_matrix<float>(20, 27);
  array<float, 2> A = from_eigen(ea), B = from_eigen(eb), C(33, 27);
  C = matmul(A + 1.f, B) + matmul(A, B);
  CHECK(count([&] {
          for (int r = 0; r < 3; ++r) C = matmul(A + 1.f, B) + matmul(A, B);
        }) == 0);
  const Eigen::MatrixXf ones = Eigen::MatrixXf::Ones(33, 20);
  const Eigen::MatrixXf want =
      ((ea + ones).cast<double>() * eb.cast<double>() + ea.cast<double>() * eb.cast<double>())
          .cast<float>();
  CHECK((to_eigen(C) - want).cwiseAbs().maxCoeff() <= 1e-4f);
  // A sort's merge buffer, and the workspace of a matmul whose output has another type
  // (float products into a double array), likewise.
  std::vector<int> keys(1000);
  std::mt19937 g(5);
  for (int& k : keys) k = int(g() % 5000) - 2500;
  array<int, 1> K(extent<1>(1000));
  const auto sorted_once = [&] {
    tessera::copy(keys.begin(), keys.end(), K);
    tessera::sort(K);
  };
  sorted_once();
  CHECK(count([&] {
          for (int r = 0; r < 3; ++r) sorted_once();
        }) == 0);
  std::vector<int> want_keys = keys;
  std::stable_sort(want_keys.begin(), want_keys.end());
  CHECK(K.to_vector() == want_keys);
  array<double, 2> Cd(33, 27);
  Cd = matmul(A, B);
  CHECK(count([&] {
          for (int r = 0; r < 3; ++r) Cd = matmul(A, B);
        }) == 0);
  const Eigen::MatrixXd prod = (ea * eb).cast<double>();
  CHECK((to_eigen(Cd) - prod).cwiseAbs().maxCoeff() <= 1e-4);
  CHECK(pool::instance().kept() >= 1);
  CHECK(pool::instance().kept() <= backends::impl::temporary_keep_count);
  // Past temporary_keep_bytes (600 x 600 floats, 1.4 MB) a temporary is allocated each time
  // and freed after its operation, never kept.
  const auto ez = tt::random_matrix<float>(600, 600);
  array<float, 2> Z = from_eigen(ez);
  REQUIRE(600 * 600 * sizeof(float) > backends::impl::temporary_keep_bytes);
  CHECK(count([&] {
          Z = transpose(Z);
          Z = transpose(Z);
        }) == 2);
  CHECK(to_eigen(Z) == ez);
  CHECK(pool::instance().kept() <= backends::impl::temporary_keep_count);
}

TEST_CASE("Tier 0 and Tier 2 launches as planned") {
  array<float, 2> m(37, 53), out(37, 53);
  auto kernel = TESSERA_KERNEL(tile_group<8, 16>& g) {
    auto s = g.tile_static<float[8][16]>("s");
    auto acc = g.tile_local<float>(0.f, "acc");
    g.for_each([&](const tiled_index<8, 16>& t) {
      s(t.local[0], t.local[1]) = guarded_read(m, t.global);
    });
    g.barrier.wait();
    g.for_each([&](const tiled_index<8, 16>& t) {
      acc(t) = s(7 - t.local[0], 15 - t.local[1]);
      guarded_write(out, t.global, acc(t));
    });
  };
  const auto te = m.extent.tile<8, 16>().pad();
  const auto p = tessera::plan(te, kernel);
  {
    observing obs;
    parallel_for_each(te, kernel);
  }
  check_launches_match({p});
  CHECK(p.league_size == 5 * 4);

  auto prog = tile_program(TESSERA_KERNEL(tile_program_context<4, 4>& q) {
    auto a = q.tile_static<float[4][4]>("a");
    q.load(a, [&](const tiled_index<4, 4>& t) { return guarded_read(m, t.global); });
    q.store(
        out, [&](const tiled_index<4, 4>& t) { return a(3 - t.local[0], t.local[1]); }, reads(a));
  });
  const auto te4 = m.extent.tile<4, 4>().pad();
  const auto p2 = tessera::plan(te4, prog);
  {
    observing obs;
    parallel_for_each(te4, prog);
  }
  check_launches_match({p2});
  REQUIRE(p2.barriers.size() == 1);
}

std::vector<std::string>& reduce_labels() {
  static std::vector<std::string> v;
  return v;
}
void on_begin_reduce(const char* name, const std::uint32_t, std::uint64_t* kernel_id) {
  reduce_labels().emplace_back(name);
  *kernel_id = 0;
}

// Reductions are planned like every other kernel: explain(reduction::sum, e) prints the kernels
// that run — for an expression, the kernels materializing its non-elementwise parts, then the
// reduction (a parallel_reduce, or a parallel_for into partials when reproducible) — with the
// labels Kokkos Tools sees.
TEST_CASE("reductions launch as planned: labels, kernels, chunks") {
  auto ea = tt::random_matrix<float>(67, 45), eb = tt::random_matrix<float>(45, 38);
  array<float, 2> A = from_eigen(ea), B = from_eigen(eb);
  const auto check = [&](const codegen::program_plan& p, auto&& run) {
    Kokkos::fence();
    tool_labels().clear();
    reduce_labels().clear();
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(&on_begin_for);
    Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(&on_begin_reduce);
    run();
    Kokkos::fence();
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
    Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(nullptr);
    std::vector<std::string> seen;
    for (const auto& l : tool_labels())
      if (starts_with(l, "tessera::")) seen.push_back(l);
    for (const auto& l : reduce_labels()) seen.push_back(l);
    std::vector<std::string> planned;
    for (const auto& k : p.kernels) {
      if (k.packed_matmul) {
        for (std::int64_t i = 0; i < k.gemm.launches; ++i) {
          if (!k.gemm.direct) planned.push_back(k.label + " (pack B)");
          planned.push_back(k.label);
        }
      } else if (!k.inline_run) {  // one chunk on a host backend: folded without a launch
        planned.push_back(k.label);
      }
    }
    std::sort(seen.begin(), seen.end());
    std::sort(planned.begin(), planned.end());
    CHECK(seen == planned);
  };
  const auto ps = plan(reduction::sum, A);
  REQUIRE(ps.kernels.size() == 1);
  CHECK(ps.kernels[0].family == kernel_family::reduction);
  CHECK(ps.kernels[0].league_size ==
        (67 * 45 + ps.kernels[0].reduce_chunk - 1) / ps.kernels[0].reduce_chunk);
  CHECK(tt::has(explain(reduction::sum, A), "reduction: sum of 3015 float elements"));
  check(ps, [&] { (void)sum(A); });
  // Several chunks launch, except on a host backend with one thread, which folds them inline
  // in one run; one chunk folds inline on host backends only.
  const auto t = backends::backend<execution_space>::make_target();
  const bool one_thread_host = !t.thread_per_logical && t.concurrency == 1;
  array<float, 2> big(300, 300);
  const auto pb = plan(reduction::sum, big);
  CHECK(pb.kernels.at(0).inline_run == one_thread_host);
  CHECK(tt::has(pb.kernels.at(0).mapping, "in one run") == one_thread_host);
  bool says_no_launch = false;
  for (const auto& note : pb.kernels.at(0).notes) says_no_launch |= tt::has(note, "no launch");
  CHECK(says_no_launch == one_thread_host);
  CHECK(pb.kernels.at(0).league_size > 1);
  check(pb, [&] { (void)sum(big); });
  const auto pr = plan(reduction::sum, A, reproducible);
  CHECK(tt::has(pr.kernels.at(0).policy, "partials"));
  check(pr, [&] { (void)sum(A, reproducible); });
  const auto pm = plan(reduction::max_value, A * 2.f);
  REQUIRE(pm.kernels.size() == 1);
  CHECK(tt::has(pm.kernels[0].name, "*(A, scalar)"));
  check(pm, [&] { (void)max_value(A * 2.f); });
  const auto pe = plan(reduction::sum, matmul(A, B) + 1.f);
  REQUIRE(pe.kernels.size() == 2);  // the matmul into a temporary, then the sum reading it
  CHECK(pe.kernels[0].family == kernel_family::matmul);
  CHECK(pe.kernels[1].family == kernel_family::reduction);
  check(pe, [&] { (void)sum(matmul(A, B) + 1.f); });
  CHECK(plan(reduction::reduce, A, ops::max{}).kernels.at(0).label == "tessera::reduce");
  CHECK(plan(reduction::sum, array<float, 1>(0)).kernels.empty());
}

}  // namespace

namespace {
std::vector<std::string>& region_labels() {
  static std::vector<std::string> v;
  return v;
}
void on_push_region(const char* name) {
  region_labels().emplace_back(name);
}
}  // namespace

TEST_CASE("small element-wise kernels on host backends run on the calling thread") {
  // Up to target::elementwise_inline_elements elements (host backends; 0 under the GPU
  // mapping): no Kokkos launch, the values of the launched kernel. One element more launches.
  const auto t = backends::backend<execution_space>::make_target();
  const index_type limit = t.elementwise_inline_elements;
  CHECK((limit > 0) == !t.thread_per_logical);
  std::vector<index_type> sizes = {1, 7, 100, 1000};
  if (limit > 0) {
    sizes.push_back(limit);
    sizes.push_back(limit + 1);
  }
  for (const index_type n : sizes) {
    CAPTURE(n);
    const auto ea = tt::random_matrix<float>(n, 1), eb = tt::random_matrix<float>(n, 1);
    array<float, 1> A(extent<1>(n), ea.data()), B(extent<1>(n), eb.data()), D(n);
    const auto e = A - B * 2.f;
    const auto mem = D.describe_memory();
    const auto p = backends::exec::plan_of(execution_space(), e, &mem).plan;
    REQUIRE(p.kernels.size() == 1);
    const auto& k = p.kernels[0];
    CHECK(k.inline_run == (limit > 0 && n <= limit));
    bool says_no_launch = false;
    for (const auto& note : k.notes) says_no_launch |= tt::has(note, "no launch");
    CHECK(says_no_launch == k.inline_run);
    CHECK(tt::has(explain(D, e), "calling thread") == k.inline_run);
    region_labels().clear();
    Kokkos::Tools::Experimental::set_push_region_callback(&on_push_region);
    check_assignment(D, e);  // no launch when inline, one otherwise
    Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
    // Launched or not, Kokkos Tools see the assignment's region, named by the kernel's label.
    CHECK(std::count(region_labels().begin(), region_labels().end(), k.label) == 1);
    const auto got = D.to_vector();
    for (index_type i = 0; i < n; ++i) CHECK(got[std::size_t(i)] == ea(i, 0) - eb(i, 0) * 2.f);
  }
  // Rows of sections (not one flat loop) alike: 40 rows of 30.
  const auto es = tt::random_matrix<float>(42, 33);
  array<float, 2> S = from_eigen(es), R(40, 30);
  const auto inner = extent<2>(40, 30);
  const auto rows =
      S.section(tessera::index<2>(1, 2), inner) + S.section(tessera::index<2>(2, 3), inner);
  const auto mem = R.describe_memory();
  CHECK(backends::exec::plan_of(execution_space(), rows, &mem).plan.kernels.at(0).inline_run ==
        (limit > 0));
  check_assignment(R, rows);
  const auto got = R.to_vector();
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 30; ++j)
      CHECK(got[std::size_t(i * 30 + j)] == es(i + 1, j + 2) + es(i + 2, j + 3));
}

TEST_CASE("small tile_reduce kernels on host backends run on the calling thread") {
  // Inputs of up to twice target::elementwise_inline_elements elements: no Kokkos launch, the
  // values of the launched kernel (tile means against Eigen's, maxima exact). Larger inputs
  // launch.
  const auto t = backends::backend<execution_space>::make_target();
  const index_type limit = t.elementwise_inline_elements;
  for (const auto& shape : std::vector<std::pair<index_type, index_type>>{
           {4, 8}, {36, 24}, {64, 64}, {128, 256}, {128, 264}, {256, 256}}) {
    const index_type rows = shape.first, cols = shape.second;  // captured below: not a binding
    CAPTURE(rows);
    CAPTURE(cols);
    const auto ex = tt::random_matrix<float>(rows, cols);
    array<float, 2> X = from_eigen(ex), Y(rows / 4, cols / 4), Z(rows / 2, cols / 8);
    const auto mean = tile_mean<4, 4>(X) * 2.f;
    const auto mx = tile_reduce<2, 8>(X, ops::max{}) + 1.f;
    const auto mem = Y.describe_memory();
    const auto p = backends::exec::plan_of(execution_space(), mean, &mem).plan;
    REQUIRE(p.kernels.size() == 1);
    CHECK(p.kernels[0].family == kernel_family::tile_reduce);
    CHECK(p.kernels[0].inline_run == (limit > 0 && rows * cols <= 2 * limit));
    CHECK(tt::has(explain(Y, mean), "calling thread") == p.kernels[0].inline_run);
    check_assignment(Y, mean);  // no launch when inline, one otherwise
    check_assignment(Z, mx);
    const auto y = Y.to_vector(), z = Z.to_vector();
    for (index_type i = 0; i < rows / 4; ++i)
      for (index_type j = 0; j < cols / 4; ++j) {
        const double want = 2.0 * ex.block(4 * i, 4 * j, 4, 4).cast<double>().mean();
        CHECK(std::abs(y[std::size_t(i * (cols / 4) + j)] - want) <= 1e-5 * (1 + std::abs(want)));
      }
    for (index_type i = 0; i < rows / 2; ++i)
      for (index_type j = 0; j < cols / 8; ++j)
        CHECK(z[std::size_t(i * (cols / 8) + j)] == ex.block(2 * i, 8 * j, 2, 8).maxCoeff() + 1.f);
  }
}

TEST_CASE("small staged transposes on host backends run on the calling thread") {
  // Outputs of up to target::elementwise_inline_elements elements: no Kokkos launch (teams in
  // order in one scratch buffer), the values of the launched kernel; one row more launches.
  const auto t = backends::backend<execution_space>::make_target();
  const index_type limit = t.elementwise_inline_elements;
  for (const auto& shape : std::vector<std::pair<index_type, index_type>>{
           {1, 1}, {7, 13}, {33, 65}, {100, 163}, {101, 163}, {128, 128}, {129, 128}}) {
    const index_type rows = shape.first, cols = shape.second;  // captured below: not a binding
    CAPTURE(rows);
    CAPTURE(cols);
    const auto ea = tt::random_matrix<float>(cols, rows);
    const auto eb = tt::random_matrix<double>(rows, cols);
    array<float, 2> A = from_eigen(ea), D(rows, cols);
    array<double, 2> B = from_eigen(eb), E(rows, cols);
    const auto fused = transpose(A) * 2.f + B;  // mixed element types, a double destination
    const auto mem = E.describe_memory();
    const auto p = backends::exec::plan_of(execution_space(), fused, &mem).plan;
    REQUIRE(p.kernels.size() == 1);
    if (p.kernels[0].family != kernel_family::staged_transpose) continue;  // GPU mapping: tiles
    CHECK(p.kernels[0].inline_run == (limit > 0 && rows * cols <= limit));
    CHECK(tt::has(explain(E, fused), "calling thread") == p.kernels[0].inline_run);
    check_assignment(D, transpose(A));  // no launch when inline, one otherwise
    check_assignment(E, fused);
    const auto d = D.to_vector();
    const auto e = E.to_vector();
    for (index_type i = 0; i < rows; ++i)
      for (index_type j = 0; j < cols; ++j) {
        const auto q = std::size_t(i * cols + j);
        CHECK(d[q] == ea(j, i));
        CHECK(e[q] == double(ea(j, i) * 2.f) + eb(i, j));
      }
  }
}
