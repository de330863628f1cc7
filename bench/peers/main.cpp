// tessera-peers: Tessera's Tier 1 kernels against the strongest peers on this CPU, in one run,
// with the machine's limits measured alongside:
//   matmul            Tessera | Eigen | OpenBLAS sgemm                       | FMA peak
//   fused epilogue    Tessera relu(A B a + b C) | OpenBLAS sgemm + an epilogue loop
//   transpose         Tessera | Eigen | OpenBLAS somatcopy | Halide          | memcpy bandwidth
//                     (8192^2, and seed 003's 999 x 666 with the seed's tile kernels shown)
//   tile_mean SxS     Tessera | Eigen | Halide                               | read bandwidth
//   2A + 3B - C       Tessera | Eigen | a vectorized C loop                  | memcpy bandwidth
//   sum (f32, f64)    Tessera | Eigen | OpenBLAS sasum / dasum (data >= 0)  | read bandwidth
//   sum 2-D (f32)     Tessera | Eigen (1000 x 1000, 100 x 100, 1000 x 10)  | read bandwidth
//   PRK stencil R=2   Tessera sections | Kokkos MDRangePolicy | a C loop   | memcpy bandwidth
//                     (also shown: Tessera's Tier 0 forms, interior launch and load_halo)
//   PRK nstream       Tessera A += B + sC | Kokkos RangePolicy | a C loop   | memcpy bandwidth
//   PRK dgemm beta=1  Tessera C += A B | Eigen | OpenBLAS dgemm            | FMA peak (f32)
// Every contender's result is checked against Eigen's (or an exact reference) before its time
// counts. Contenders take turns run by run (best of --reps each), in one process with
// --threads 1 (default); with --threads T > 1 each contender runs in its own child process, so
// one library's spinning worker threads do not slow another's measurement. A run is one call,
// or, for workloads whose fastest call is shorter than --min-run-us (20 us), as many calls
// back to back as make it that long (the same count for every contender in one process),
// timed together: the time per call is reported.
//
//   tessera-peers [--threads T] [--reps N] [--scale F] [--min-run-us U] [--only WORKLOAD]
//
// Tessera's thread count is its execution space's (OMP_NUM_THREADS on the openmp preset):
// --threads sets OpenBLAS's and Halide's to match. OpenBLAS reads OPENBLAS_CORETYPE from the
// environment; the kernel set it chose is printed. Where those kernels use wider vectors than
// this build can (an x86-64-v3 build on an AVX-512 core), each OpenBLAS contender is also timed
// with the OPENBLAS_CORETYPE of this build's ISA, in a child process where Tessera is timed
// again beside it (interleaved, on one thread), and a second table gives that process's ratio
// (the first table lists it, but its best peer and ratio are of the main process's times).
#include "tour/tour.hpp"

#include <Halide.h>
#include <cblas.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

extern "C" {
char* openblas_get_config(void);
char* openblas_get_corename(void);
void openblas_set_num_threads(int);
}
extern char** environ;

namespace peers {

using tour::best_times;
using tour::random_matrix;
using tour::scaled_side;

struct options {
  int threads = 1, reps = 5;
  double scale = 1.0;
  double min_run_us = 20;            // a timed run lasts at least this long (calls_per_run)
  std::string only, contender;       // contender: run one contender only (child process mode)
  bool tune = true;                  // time Tessera's CPU choices first (run_cpu_tunings)
  std::string prefetch;              // child process mode: the parent's choices (prefetch_arg)
  std::string unaligned;             // child process mode: the parent's transpose blocks (strips,
                                     // quads, halves, halves-prefetched), outputs in cache
  std::string unaligned_memory;      // and larger outputs
  std::string staging;               // child process mode: the parent's transpose staging
  std::size_t memory_threshold = 0;  // child process mode: the parent's (0: the derived one)
  std::string matmul_float;          // child process mode: the parent's matmul blockings
  std::string matmul_double;         // (blocking_arg)
};

/// The prefetch choices as one command-line word for a child process: a 0/1 per tile_reduce
/// height class, a comma, the fold's bytes, a comma, each class's line halvings (0-3), then
/// the row loops' and the stencils' ways (codegen::to_string), each after a comma
/// ("1101,-1,1002,plain,prefetch").
inline std::string prefetch_arg(const tessera::prefetch_tuning& p) {
  std::string s, halvings;
  for (bool on : p.tile_reduce) s += on ? '1' : '0';
  for (int h : p.tile_reduce_line_halvings) halvings += char('0' + h);
  return s + "," + std::to_string(p.reduce_bytes) + "," + halvings + "," +
         tessera::codegen::to_string(p.row_loops) + "," +
         tessera::codegen::to_string(p.stencil_row_loops);
}
inline tessera::prefetch_tuning parse_prefetch_arg(const std::string& s) {
  tessera::prefetch_tuning p;
  const std::size_t classes = p.tile_reduce.size();
  std::vector<std::string> f;
  for (std::size_t at = 0;;) {
    const auto comma = s.find(',', at);
    f.push_back(s.substr(at, comma - at));
    if (comma == s.npos) break;
    at = comma + 1;
  }
  // The way named f[i], or none (end()).
  constexpr auto& ways = tessera::codegen::row_loop_memories;
  auto way = [&](std::size_t i) {
    return f.size() == 5
               ? std::find_if(ways.begin(), ways.end(),
                              [&](auto m) { return f[i] == tessera::codegen::to_string(m); })
               : ways.end();
  };
  const auto rows = way(3), stencils = way(4);
  if (rows == ways.end() || stencils == ways.end() || f[0].size() != classes ||
      f[2].size() != classes || f[0].find_first_not_of("01") != f[0].npos ||
      f[2].find_first_not_of("0123") != f[2].npos || f[1].empty() ||
      f[1].find_first_not_of("-0123456789") != f[1].npos)
    throw std::runtime_error("tessera-peers: bad --prefetch '" + s + "'");
  for (std::size_t c = 0; c < classes; ++c) {
    p.tile_reduce[c] = f[0][c] == '1';
    p.tile_reduce_line_halvings[c] = f[2][c] - '0';
  }
  p.reduce_bytes = std::stoi(f[1]);
  p.row_loops = *rows;
  p.stencil_row_loops = *stencils;
  return p;
}

/// A matmul blocking as one command-line word for a child process: "mc,kc,nc,mr,nr,a_prefetch".
inline std::string blocking_arg(const tessera::matmul_blocking& b) {
  return std::to_string(b.mc) + "," + std::to_string(b.kc) + "," + std::to_string(b.nc) + "," +
         std::to_string(b.mr) + "," + std::to_string(b.nr) + "," + std::to_string(b.a_prefetch);
}
inline tessera::matmul_blocking parse_blocking_arg(const std::string& s) {
  tessera::matmul_blocking b;
  int used = 0;
  if (std::sscanf(s.c_str(), "%d,%d,%d,%d,%d,%d%n", &b.mc, &b.kc, &b.nc, &b.mr, &b.nr,
                  &b.a_prefetch, &used) != 6 ||
      std::size_t(used) != s.size())
    throw std::runtime_error("tessera-peers: bad matmul blocking '" + s + "'");
  return b;
}

/// One contender of a workload: a name, a run (the timed call) and a check of its result.
struct contender {
  std::string name;
  std::function<void()> run;
  std::function<double()> error;  // max |result - reference| after run()
};

/// One row: rates of every contender in `unit` (GFLOP/s or GB/s), and the machine limit.
struct row {
  std::string workload, size, unit, limit_name;
  double work = 0;  // flops or bytes per run
  double limit = 0;
  double tolerance = 0;
  std::map<std::string, double> rate;   // contender -> rate
  std::map<std::string, double> error;  // contender -> max error
};

// --- OpenBLAS at this build's ISA ------------------------------------------------------------

/// The widest vectors an OpenBLAS core name's kernels use (OpenBLAS's DYNAMIC_ARCH names, any
/// case): 4 AVX-512, 3 AVX2 with FMA, 2 AVX, 1 SSE; 0 a name not listed (no comparison made).
inline int openblas_core_level(std::string core) {
  for (auto& ch : core) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* n : {"skylakex", "cooperlake", "sapphirerapids"})
    if (core == n) return 4;
  for (const char* n : {"haswell", "zen", "excavator"})
    if (core == n) return 3;
  for (const char* n : {"sandybridge", "bulldozer", "piledriver", "steamroller"})
    if (core == n) return 2;
  for (const char* n : {"nehalem", "core2", "penryn", "dunnington", "barcelona", "opteron_sse3",
                        "prescott", "atom"})
    if (core == n) return 1;
  return 0;
}

/// The same levels for this build's vectors (the -march it was compiled with).
constexpr int build_vector_level() {
#if defined(__AVX512F__)
  return 4;
#elif defined(__AVX2__) && defined(__FMA__)
  return 3;
#elif defined(__AVX__)
  return 2;
#elif defined(__SSE2__)
  return 1;
#else
  return 0;
#endif
}

/// The OPENBLAS_CORETYPE whose kernels use this build's vectors, where the kernels OpenBLAS
/// picked use wider ones (an x86-64-v3 build on an AVX-512 core: "Haswell"); empty otherwise.
/// Such a build cannot use the wider vectors, so its rows also show OpenBLAS held to the same
/// ISA, timed in a child process (OpenBLAS reads OPENBLAS_CORETYPE once, when it loads).
inline std::string same_isa_coretype() {
  const int b = build_vector_level(), c = openblas_core_level(openblas_get_corename());
  if (b == 0 || c <= b) return "";
  return b == 3 ? "Haswell" : b == 2 ? "Sandybridge" : "Nehalem";
}

// --- machine limits ------------------------------------------------------------------------

/// FMA peak of one core in GFLOP/s (f32): 12 independent chains of FMAs on Eigen's widest
/// float packet (pmadd: one fused multiply-add instruction where the target has one).
inline double fma_peak_gflops() {
  using P = Eigen::internal::packet_traits<float>::type;
  constexpr int lanes = Eigen::internal::packet_traits<float>::size;
  constexpr int chains = 12;
  P acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = Eigen::internal::pset1<P>(float(c) * 1e-3f);
  volatile float xv = 0.999999f, yv = 1e-7f;
  const float xs = xv, ys = yv;
  const P x = Eigen::internal::pset1<P>(xs), y = Eigen::internal::pset1<P>(ys);
  const long iters = 20'000'000;
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    Kokkos::Timer t;
    for (long i = 0; i < iters; ++i)
      for (int c = 0; c < chains; ++c) acc[c] = Eigen::internal::pmadd(acc[c], x, y);
    best = std::min(best, t.seconds());
  }
  float sink = 0;
  for (int c = 0; c < chains; ++c) sink += Eigen::internal::predux(acc[c]);
  if (sink == 42.f) std::puts("");
  return 2.0 * lanes * chains * iters / best * 1e-9;
}

/// Read bandwidth (GB/s): a sum of n floats with 8 vector accumulators, `threads` threads.
inline double read_gbs(long n, int reps, int threads) {
  typedef float v8 __attribute__((vector_size(32)));
  std::vector<float> a(std::size_t(n), 1.f);
  const auto body = [&] {
    float total = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : total) if (threads > 1)
    for (long chunk = 0; chunk < threads; ++chunk) {
      const long lo = n / threads * chunk, hi = chunk == threads - 1 ? n : lo + n / threads;
      v8 acc[8] = {};
      long i = lo;
      for (; i + 64 <= hi; i += 64)
        for (int k = 0; k < 8; ++k) {
          v8 v;
          std::memcpy(&v, &a[std::size_t(i + 8 * k)], sizeof v);
          acc[k] += v;
        }
      float s = 0;
      for (int k = 0; k < 8; ++k)
        for (int l = 0; l < 8; ++l) s += acc[k][l];
      for (; i < hi; ++i) s += a[std::size_t(i)];
      total += s;
    }
    if (total == -1.f) std::puts("");
  };
  const double t = tour::best_time(reps, body);
  return double(n) * sizeof(float) / t * 1e-9;
}

/// memcpy bandwidth (GB/s, bytes read + written) of n floats, `threads` threads.
inline double memcpy_gbs(long n, int reps, int threads) {
  std::vector<float> a(std::size_t(n), 1.f), b(std::size_t(n), 0.f);
  const double t = tour::best_time(reps, [&] {
#pragma omp parallel for num_threads(threads) if (threads > 1)
    for (long chunk = 0; chunk < threads; ++chunk) {
      const long lo = n / threads * chunk, hi = chunk == threads - 1 ? n : lo + n / threads;
      std::memcpy(&b[std::size_t(lo)], &a[std::size_t(lo)], std::size_t(hi - lo) * sizeof(float));
    }
  });
  return 2.0 * double(n) * sizeof(float) / t * 1e-9;
}

// --- Halide pipelines (JIT-compiled once per shape) ------------------------------------------

inline Halide::Target jit_target() {
  return Halide::get_jit_target_from_environment();
}

/// out(x, y) = in(y, x) of an n x n row-major matrix: 16 x 16 tiles, vector loads and stores.
struct halide_transpose {
  Halide::Buffer<float> in, out;
  Halide::Func f;
  /// dst (cols x rows) = transpose of src (rows x cols), both row-major.
  halide_transpose(float* src, float* dst, int rows, int cols, int threads)
      : in(src, cols, rows), out(dst, rows, cols) {
    Halide::Var x("x"), y("y"), xo, yo, xi, yi;
    f(x, y) = in(y, x);
    f.tile(x, y, xo, yo, xi, yi, 16, 16).vectorize(xi, 16).unroll(yi);
    if (threads > 1) f.parallel(yo);
    f.compile_jit(jit_target());
  }
  void run() { f.realize(out); }
};

/// Mean of every S x S tile of an n x n row-major matrix: the S * S terms summed in one
/// expression, vectorized over 16 output columns (rows in parallel with threads).
template <int S>
struct halide_tile_mean {
  Halide::Buffer<float> in, out;
  Halide::Func f;
  halide_tile_mean(float* src, float* dst, int n, int threads)
      : in(src, n, n), out(dst, n / S, n / S) {
    Halide::Var x("x"), y("y");
    Halide::Expr e = 0.f;
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < S; ++j) e += in(x * S + j, y * S + i);
    f(x, y) = e * (1.f / (S * S));
    if (n / S >= 16) f.vectorize(x, 16);
    if (threads > 1) f.parallel(y);
    f.compile_jit(jit_target());
  }
  void run() { f.realize(out); }
};

// --- workloads --------------------------------------------------------------------------------

using eigen_matrix = tessera::eigen_matrix<float>;

template <class A>
double max_err(const A& got, const eigen_matrix& want) {
  return want.size() ? double((got - want).cwiseAbs().maxCoeff()) : 0.0;
}

inline row matmul(const options& o, long base, std::vector<contender>& cs, std::string& name) {
  const long n = scaled_side(base, o.scale, 16);
  name = "matmul_" + std::to_string(base);
  auto ma = std::make_shared<eigen_matrix>(random_matrix(n, n, 2));
  auto mb = std::make_shared<eigen_matrix>(random_matrix(n, n, 3));
  auto ref = std::make_shared<eigen_matrix>(n, n);
  auto a = std::make_shared<tessera::array<float, 2>>(tessera::from_eigen(*ma));
  auto b = std::make_shared<tessera::array<float, 2>>(tessera::from_eigen(*mb));
  auto c = std::make_shared<tessera::array<float, 2>>(n, n);
  auto blas = std::make_shared<eigen_matrix>(n, n);
  *ref = *ma * *mb;
  cs.push_back({"Tessera", [=] { *c = tessera::matmul(*a, *b); },
                [=] {
                  return max_err(tessera::to_eigen(*c), *ref);
                }});
  auto e = std::make_shared<eigen_matrix>(n, n);
  cs.push_back({"Eigen", [=] { e->noalias() = *ma * *mb; },
                [=] {
                  return max_err(*e, *ref);
                }});
  cs.push_back({"OpenBLAS sgemm",
                [=] {
                  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n),
                              1.f, ma->data(), int(n), mb->data(), int(n), 0.f, blas->data(),
                              int(n));
                },
                [=] {
                  return max_err(*blas, *ref);
                }});
  row r;
  r.size = std::to_string(n) + "^2";
  r.unit = "GFLOP/s";
  r.work = 2.0 * n * n * n;
  r.limit_name = "FMA peak";
  r.tolerance = 2e-6 * double(n);
  return r;
}

inline row fused(const options& o, std::vector<contender>& cs, std::string& name) {
  const long n = scaled_side(2048, o.scale, 16);
  name = "fused_epilogue";
  const float alpha = 0.5f, beta = 2.f;
  auto ma = std::make_shared<eigen_matrix>(random_matrix(n, n, 2));
  auto mb = std::make_shared<eigen_matrix>(random_matrix(n, n, 3));
  auto mc = std::make_shared<eigen_matrix>(random_matrix(n, n, 4));
  auto ref = std::make_shared<eigen_matrix>(n, n);
  *ref = ((*ma * *mb) * alpha + beta * *mc).cwiseMax(0.f);
  auto a = std::make_shared<tessera::array<float, 2>>(tessera::from_eigen(*ma));
  auto b = std::make_shared<tessera::array<float, 2>>(tessera::from_eigen(*mb));
  auto c = std::make_shared<tessera::array<float, 2>>(tessera::from_eigen(*mc));
  auto d = std::make_shared<tessera::array<float, 2>>(n, n);
  cs.push_back({"Tessera", [=] { *d = tessera::relu(tessera::matmul(*a, *b) * alpha + beta * *c); },
                [=] {
                  return max_err(tessera::to_eigen(*d), *ref);
                }});
  auto out = std::make_shared<eigen_matrix>(n, n);
  cs.push_back({"OpenBLAS sgemm + epilogue",
                [=] {
                  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n),
                              alpha, ma->data(), int(n), mb->data(), int(n), 0.f, out->data(),
                              int(n));
                  float* p = out->data();
                  const float* q = mc->data();
                  const long m = n * n;
#pragma omp parallel for simd num_threads(o.threads) if (o.threads > 1)
                  for (long i = 0; i < m; ++i) {
                    const float v = p[i] + beta * q[i];
                    p[i] = v > 0.f ? v : 0.f;
                  }
                },
                [=] {
                  return max_err(*out, *ref);
                }});
  row r;
  r.size = std::to_string(n) + "^2";
  r.unit = "GFLOP/s";
  r.work = 2.0 * n * n * n;
  r.limit_name = "FMA peak";
  r.tolerance = 2e-6 * double(n);
  return r;
}

/// The contenders of a transpose of a random r x c float matrix: Tessera's Tier 1 transpose,
/// then what `more(cs, a, ref)` adds (other Tessera forms, given the operand and the reference),
/// Eigen, OpenBLAS somatcopy and Halide; every result checked exactly. Every contender reads the
/// same operand (the Tessera array's memory; each writes its own output), so each runs right
/// after one that read it: with the peers reading a copy of their own, three of them ran in a
/// row on theirs while Tessera always followed them, and on data near the cache sizes a run's
/// speed depends on what the run before left in cache. Returns the row, in GB/s (read + write)
/// against memcpy.
template <class More>
row transpose_row(const options& o, std::vector<contender>& cs, long r, long c, unsigned seed,
                  More more) {
  auto m = std::make_shared<eigen_matrix>(random_matrix(r, c, seed));
  auto ref = std::make_shared<eigen_matrix>(m->transpose());
  auto a = std::make_shared<tessera::array<float, 2>>(tessera::from_eigen(*m));
  auto t = std::make_shared<tessera::array<float, 2>>(c, r);
  cs.push_back({"Tessera", [=] { *t = tessera::transpose(*a); },
                [=] {
                  return max_err(tessera::to_eigen(*t), *ref);
                }});
  more(cs, a, ref);
  // `a` (captured by every contender that reads it): row-major, r x c, row stride c.
  auto e = std::make_shared<eigen_matrix>(c, r);
  cs.push_back({"Eigen",
                [=] { e->noalias() = Eigen::Map<const eigen_matrix>(a->data(), r, c).transpose(); },
                [=] {
                  return max_err(*e, *ref);
                }});
  auto blas = std::make_shared<eigen_matrix>(c, r);
  cs.push_back({"OpenBLAS somatcopy",
                [=] {
                  cblas_somatcopy(CblasRowMajor, CblasTrans, int(r), int(c), 1.f, a->data(), int(c),
                                  blas->data(), int(r));
                },
                [=] {
                  return max_err(*blas, *ref);
                }});
  auto hout = std::make_shared<eigen_matrix>(c, r);
  auto h = std::make_shared<halide_transpose>(a->data(), hout->data(), int(r), int(c), o.threads);
  cs.push_back({"Halide",
                [=] {
                  (void)a;
                  h->run();
                },
                [=] {
                  return max_err(*hout, *ref);
                }});
  row w;
  w.size = std::to_string(r) + "x" + std::to_string(c);
  w.unit = "GB/s";
  w.work = 2.0 * double(r) * double(c) * sizeof(float);
  w.limit_name = "memcpy";
  w.tolerance = 0;
  return w;
}

inline row transpose(const options& o, std::vector<contender>& cs, std::string& name) {
  const long n = scaled_side(8192, o.scale, 16);
  name = "transpose";
  row w = transpose_row(o, cs, n, n, 4, [](auto&, const auto&, const auto&) {});
  w.size = std::to_string(n) + "^2";
  return w;
}

/// Seed 003's shape: 999 x 666 floats (2.7 MB, in cache), no side a multiple of a tile. Tessera
/// is the Tier 1 transpose; the seed's own tile kernels (16 x 16 tiles through tile_static,
/// padded with guarded reads and writes, or truncated with an element-parallel remainder) are
/// shown beside it.
inline row transpose_uneven(const options& o, std::vector<contender>& cs, std::string& name) {
  const long r = scaled_side(999, o.scale, 1), c = scaled_side(666, o.scale, 1);
  name = "transpose_999x666";
  return transpose_row(o, cs, r, c, 5, [r, c](auto& list, const auto& a, const auto& ref) {
    auto tp = std::make_shared<tessera::array<float, 2>>(c, r);
    list.push_back({"Tessera seed 003 padded", [=] { workloads::transpose_padded<16>(*a, *tp); },
                    [=] {
                      return max_err(tessera::to_eigen(*tp), *ref);
                    }});
    auto tt = std::make_shared<tessera::array<float, 2>>(c, r);
    list.push_back({"Tessera seed 003 truncated",
                    [=] { workloads::transpose_truncated<16>(*a, *tt); },
                    [=] {
                      return max_err(tessera::to_eigen(*tt), *ref);
                    }});
  });
}

/// A transpose larger than the caches whose output rows do not start on a line: 8193 x 8197
/// floats (269 MB each way), no side a multiple of a block or a line.
inline row transpose_large_uneven(const options& o, std::vector<contender>& cs, std::string& name) {
  const long r = scaled_side(8193, o.scale, 1), c = scaled_side(8197, o.scale, 1);
  name = "transpose_8193x8197";
  row w = transpose_row(o, cs, r, c, 6, [](auto&, const auto&, const auto&) {});
  w.size = std::to_string(r) + "x" + std::to_string(c);
  return w;
}

template <int S>
row tile_mean(const options& o, std::vector<contender>& cs, std::string& name) {
  const long n = scaled_side(8192, o.scale, 16);
  name = "tile_mean_" + std::to_string(S) + "x" + std::to_string(S);
  auto m = std::make_shared<eigen_matrix>(random_matrix(n, n, 1));
  auto ref = std::make_shared<eigen_matrix>(n / S, n / S);
  for (long i = 0; i < n / S; ++i)
    for (long j = 0; j < n / S; ++j)
      (*ref)(i, j) = float(m->block(S * i, S * j, S, S).cast<double>().mean());
  // Every contender reads the Tessera array's memory (each writes its own output), as in
  // transpose_row: with the peers sharing one copy and Tessera reading another, an input that
  // fits the last-level cache once but not twice was warm for whichever peer ran after the
  // other, and for Tessera only after a run of its own.
  auto a = std::make_shared<tessera::array<float, 2>>(tessera::from_eigen(*m));
  m.reset();
  auto t = std::make_shared<tessera::array<float, 2>>(n / S, n / S);
  cs.push_back({"Tessera", [=] { *t = tessera::tile_mean<S, S>(*a); },
                [=] {
                  return max_err(tessera::to_eigen(*t), *ref);
                }});
  auto e = std::make_shared<eigen_matrix>(n / S, n / S);
  cs.push_back({"Eigen",
                [=] {
                  const Eigen::Map<const eigen_matrix> in(a->data(), n, n);
                  for (long i = 0; i < n / S; ++i)
                    for (long j = 0; j < n / S; ++j)
                      (*e)(i, j) = in.template block<S, S>(S * i, S * j).mean();
                },
                [=] {
                  return max_err(*e, *ref);
                }});
  auto hout = std::make_shared<eigen_matrix>(n / S, n / S);
  auto h = std::make_shared<halide_tile_mean<S>>(a->data(), hout->data(), int(n), o.threads);
  cs.push_back({"Halide",
                [=] {
                  (void)a;
                  h->run();
                },
                [=] {
                  return max_err(*hout, *ref);
                }});
  row r;
  r.size = std::to_string(n) + "^2";
  r.unit = "GB/s";
  r.work = double(n) * n * sizeof(float);
  r.limit_name = "read";
  r.tolerance = 1e-6;
  return r;
}

inline row elementwise(const options& o, std::vector<contender>& cs, std::string& name) {
  const long n = std::max(1024L, static_cast<long>((1L << 24) * o.scale));
  name = "2A+3B-C";
  using vec = Eigen::VectorXf;
  auto ea = std::make_shared<vec>(random_matrix(n, 1, 6));
  auto eb = std::make_shared<vec>(random_matrix(n, 1, 7));
  auto ec = std::make_shared<vec>(random_matrix(n, 1, 8));
  auto ref = std::make_shared<vec>(2.f * *ea + 3.f * *eb - *ec);
  const auto arr = [n](const vec& v) {
    return std::make_shared<tessera::array<float, 1>>(tessera::extent<1>(n), v.data(),
                                                      v.data() + n);
  };
  // Every contender reads the Tessera arrays' memory (each writes its own output), as in
  // tile_mean and transpose_row: no contender finds warm operands another one left.
  auto a = arr(*ea), b = arr(*eb), c = arr(*ec);
  ea.reset(), eb.reset(), ec.reset();
  auto d = std::make_shared<tessera::array<float, 1>>(n);
  const auto err = [ref](const vec& got) {
    return double((got - *ref).cwiseAbs().maxCoeff());
  };
  cs.push_back({"Tessera", [=] { *d = 2.f * *a + 3.f * *b - *c; },
                [=] {
                  return err(tessera::to_eigen(*d));
                }});
  auto e = std::make_shared<vec>(n);
  cs.push_back({"Eigen",
                [=] {
                  using map = Eigen::Map<const vec>;
                  e->noalias() =
                      2.f * map(a->data(), n) + 3.f * map(b->data(), n) - map(c->data(), n);
                },
                [=] {
                  return err(*e);
                }});
  auto l = std::make_shared<vec>(n);
  cs.push_back({"C loop",
                [=] {
                  const float *pa = a->data(), *pb = b->data(), *pc = c->data();
                  float* pd = l->data();
#pragma omp parallel for simd num_threads(o.threads) if (o.threads > 1)
                  for (long i = 0; i < n; ++i) pd[i] = 2.f * pa[i] + 3.f * pb[i] - pc[i];
                },
                [=] {
                  return err(*l);
                }});
  row r;
  r.size = std::to_string(n);
  r.unit = "GB/s";
  r.work = 4.0 * n * sizeof(float);
  r.limit_name = "memcpy";
  r.tolerance = 1e-6;
  return r;
}

/// cblas_sasum or cblas_dasum: OpenBLAS's sum of |x| of T.
template <class T>
T openblas_asum(int n, const T* x) {
  if constexpr (std::is_same_v<T, float>)
    return cblas_sasum(n, x, 1);
  else
    return cblas_dasum(n, x, 1);
}

/// Sum of 2^log2n elements of T (float: sum_2^S; double: sum_f64_2^S).
template <class T>
row sum(const options& o, int log2n, std::vector<contender>& cs, std::string& name) {
  constexpr bool f32 = std::is_same_v<T, float>;
  const long n = std::max(1024L, static_cast<long>(double(1L << log2n) * std::min(1.0, o.scale)));
  name = std::string(f32 ? "sum_2^" : "sum_f64_2^") + std::to_string(log2n);
  // Non-negative data, so that ?asum (the sum of |x|) is the same sum.
  using vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  auto v = std::make_shared<vector>(n);
  std::mt19937 g(9);
  std::uniform_real_distribution<T> dist(T(0.5), T(1.5));
  for (long i = 0; i < n; ++i) (*v)[i] = dist(g);
  const double want = v->template cast<double>().sum();
  // Every contender reads the same memory (a view of v on host backends): arrays near the L3
  // size would otherwise favour whichever contender reads the data the previous one left in
  // cache.
  auto a = std::make_shared<tessera::array_view<const T, 1>>(tessera::extent<1>(n), v->data());
  auto rel = [want](T x) {
    return std::abs(double(x) - want) / want;
  };
  auto st = std::make_shared<T>(0), se = std::make_shared<T>(0), sb = std::make_shared<T>(0);
  cs.push_back({"Tessera", [=] { *st = tessera::sum(*a); },
                [=] {
                  return rel(*st);
                }});
  cs.push_back({"Eigen", [=] { *se = v->sum(); },
                [=] {
                  return rel(*se);
                }});
  cs.push_back({f32 ? "OpenBLAS sasum" : "OpenBLAS dasum",
                [=] { *sb = openblas_asum(int(n), v->data()); },
                [=] {
                  return rel(*sb);
                }});
  row r;
  r.size = std::to_string(n);
  r.unit = "GB/s";
  r.work = double(n) * sizeof(T);
  r.limit_name = "read";
  r.tolerance = f32 ? 1e-4 : 1e-12;  // relative: accumulation in T over up to 2^28 terms
  return r;
}

/// Sum of a rows x cols float matrix (row-major): Tessera's rank-2 fold, whose association
/// (each row's elements into the first lanes) keeps sums of arrays, sections and expressions
/// bitwise equal, against Eigen's sum of the contiguous data.
row sum_2d(const options& o, long rows, long cols, std::vector<contender>& cs, std::string& name) {
  (void)o;
  name = "sum_2d_" + std::to_string(rows) + "x" + std::to_string(cols);
  using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  auto m = std::make_shared<matrix>(rows, cols);
  std::mt19937 g(11);
  std::uniform_real_distribution<float> dist(0.5f, 1.5f);
  for (long i = 0; i < m->size(); ++i) m->data()[i] = dist(g);
  const double want = m->cast<double>().sum();
  auto a = std::make_shared<tessera::array_view<const float, 2>>(tessera::extent<2>(rows, cols),
                                                                 m->data());
  auto rel = [want](float x) {
    return std::abs(double(x) - want) / want;
  };
  auto st = std::make_shared<float>(0), se = std::make_shared<float>(0);
  cs.push_back({"Tessera", [=] { *st = tessera::sum(*a); },
                [=] {
                  return rel(*st);
                }});
  cs.push_back({"Eigen", [=] { *se = m->sum(); },
                [=] {
                  return rel(*se);
                }});
  row r;
  r.size = std::to_string(rows) + "x" + std::to_string(cols);
  r.unit = "GB/s";
  r.work = double(rows) * double(cols) * sizeof(float);
  r.limit_name = "read";
  r.tolerance = 1e-4;
  return r;
}

// --- the Parallel Research Kernels' loops (double), as PRK writes them -----------------------

using dmatrix = tessera::eigen_matrix<double>;
using host_space = Kokkos::DefaultHostExecutionSpace;

/// PRK stencil: B[i][j] = sum over the star of radius 2 of w * A (PRK accumulates into B; here
/// each run overwrites the interior, so every contender's result is checkable after any number
/// of runs). Interior only, [2, n-2)^2; Tessera's form is one line of sections.
inline row prk_stencil(const options& o, std::vector<contender>& cs, std::string& name) {
  constexpr long R = 2;
  const long n = scaled_side(8000, o.scale, 16);
  name = "prk_stencil_R2";
  const double w1 = 1.0 / (2 * 1 * R), w2 = 1.0 / (2 * 2 * R);
  auto ea = std::make_shared<dmatrix>(random_matrix(n, n, 21).cast<double>());
  auto ref = std::make_shared<dmatrix>(dmatrix::Zero(n, n));
  {
    const double* a = ea->data();
    double* b = ref->data();
    for (long i = R; i < n - R; ++i)
      for (long j = R; j < n - R; ++j)
        b[i * n + j] =
            w1 * (a[i * n + j + 1] - a[i * n + j - 1] + a[(i + 1) * n + j] - a[(i - 1) * n + j]) +
            w2 * (a[i * n + j + 2] - a[i * n + j - 2] + a[(i + 2) * n + j] - a[(i - 2) * n + j]);
  }
  auto err = [ref](const dmatrix& got) {
    return double((got - *ref).cwiseAbs().maxCoeff());
  };
  auto a = std::make_shared<tessera::array<double, 2>>(tessera::from_eigen(*ea));
  auto b = std::make_shared<tessera::array<double, 2>>(n, n);
  cs.push_back({"Tessera",
                [=] {
                  using ix = tessera::index<2>;
                  const tessera::extent<2> in(n - 2 * R, n - 2 * R);
                  auto S = [&](long di, long dj) {
                    return a->section(ix(R + di, R + dj), in);
                  };
                  tessera::assign(b->section(ix(R, R), in),
                                  w1 * (S(0, 1) - S(0, -1) + S(1, 0) - S(-1, 0)) +
                                      w2 * (S(0, 2) - S(0, -2) + S(2, 0) - S(-2, 0)));
                },
                [=] {
                  return err(tessera::to_eigen(*b));
                }});
  // The same stencil written as Tier 0 kernels: an untiled launch over the interior (no
  // bounds tests), and a tiled one that stages each tile plus its halo in tile_static memory
  // (load_halo; the form that pays on GPUs), both reading the array directly by index.
  auto b0 = std::make_shared<tessera::array<double, 2>>(n, n);
  cs.push_back({"Tessera Tier 0 interior",
                [=] {
                  const tessera::array_view<const double, 2> A(*a);
                  const tessera::array_view<double, 2> B(*b0);
                  tessera::parallel_for_each(
                      tessera::interior(A.extent, R), TESSERA_KERNEL(const tessera::index<2>& p) {
                        const long i = p[0], j = p[1];
                        B[p] = w1 * (A(i, j + 1) - A(i, j - 1) + A(i + 1, j) - A(i - 1, j)) +
                               w2 * (A(i, j + 2) - A(i, j - 2) + A(i + 2, j) - A(i - 2, j));
                      });
                  Kokkos::fence();
                },
                [=] {
                  return err(tessera::to_eigen(*b0));
                }});
  auto b1 = std::make_shared<tessera::array<double, 2>>(n, n);
  cs.push_back({"Tessera Tier 0 halo",
                [=] {
                  const tessera::array_view<const double, 2> A(*a);
                  const tessera::array_view<double, 2> B(*b1);
                  const auto dom = tessera::interior(A.extent, R);
                  tessera::parallel_for_each(
                      dom.tile<16, 128>().pad(), TESSERA_KERNEL(tessera::tile_group<16, 128> & g) {
                        auto h = g.load_halo<R>(A, tessera::boundary::zero, "a");
                        g.for_each(dom, [&](const tessera::tiled_index<16, 128>& t) {
                          const long i = t.local[0], j = t.local[1];
                          B[t.global] =
                              w1 * (h(i, j + 1) - h(i, j - 1) + h(i + 1, j) - h(i - 1, j)) +
                              w2 * (h(i, j + 2) - h(i, j - 2) + h(i + 2, j) - h(i - 2, j));
                        });
                      });
                  Kokkos::fence();
                },
                [=] {
                  return err(tessera::to_eigen(*b1));
                }});
  auto kb = std::make_shared<dmatrix>(dmatrix::Zero(n, n));
  cs.push_back({"Kokkos MDRange",
                [=] {
                  const double* pa = ea->data();
                  double* pb = kb->data();
                  Kokkos::parallel_for(
                      "prk stencil",
                      Kokkos::MDRangePolicy<host_space, Kokkos::Rank<2>>({R, R}, {n - R, n - R}),
                      KOKKOS_LAMBDA(long i, long j) {
                        pb[i * n + j] = w1 * (pa[i * n + j + 1] - pa[i * n + j - 1] +
                                              pa[(i + 1) * n + j] - pa[(i - 1) * n + j]) +
                                        w2 * (pa[i * n + j + 2] - pa[i * n + j - 2] +
                                              pa[(i + 2) * n + j] - pa[(i - 2) * n + j]);
                      });
                  Kokkos::fence();
                },
                [=] {
                  return err(*kb);
                }});
  auto cb = std::make_shared<dmatrix>(dmatrix::Zero(n, n));
  cs.push_back({"C loop",
                [=] {
                  const double* pa = ea->data();
                  double* pb = cb->data();
#pragma omp parallel for num_threads(o.threads) if (o.threads > 1)
                  for (long i = R; i < n - R; ++i)
#pragma omp simd
                    for (long j = R; j < n - R; ++j)
                      pb[i * n + j] = w1 * (pa[i * n + j + 1] - pa[i * n + j - 1] +
                                            pa[(i + 1) * n + j] - pa[(i - 1) * n + j]) +
                                      w2 * (pa[i * n + j + 2] - pa[i * n + j - 2] +
                                            pa[(i + 2) * n + j] - pa[(i - 2) * n + j]);
                },
                [=] {
                  return err(*cb);
                }});
  row r;
  r.size = std::to_string(n) + "^2";
  r.unit = "GB/s";
  r.work = 2.0 * double(n - 2 * R) * double(n - 2 * R) * sizeof(double);  // A read, B written
  r.limit_name = "memcpy";
  r.tolerance = 1e-12;
  return r;
}

/// PRK nstream: A += B + s C (2^25 doubles), in place. Each contender keeps a run count, so its
/// result A0 + k (B + s C) is checkable after any number of runs.
inline row prk_nstream(const options& o, std::vector<contender>& cs, std::string& name) {
  const long n = std::max(1024L, static_cast<long>((1L << 25) * o.scale));
  name = "prk_nstream";
  const double s = 3.0;
  using vec = Eigen::VectorXd;
  auto a0 = std::make_shared<vec>(vec::Constant(n, 0.0));
  auto eb = std::make_shared<vec>(random_matrix(n, 1, 22).cast<double>());
  auto ec = std::make_shared<vec>(random_matrix(n, 1, 23).cast<double>());
  auto step = std::make_shared<vec>(*eb + s * *ec);
  auto err = [=](const vec& got, long runs) {
    return double((got - double(runs) * *step).cwiseAbs().maxCoeff()) / double(runs > 0 ? runs : 1);
  };
  const auto arr = [n](const vec& v) {
    return std::make_shared<tessera::array<double, 1>>(tessera::extent<1>(n), v.data(),
                                                       v.data() + n);
  };
  auto a = arr(*a0), b = arr(*eb), c = arr(*ec);
  auto ta = std::make_shared<long>(0), tk = std::make_shared<long>(0),
       tc = std::make_shared<long>(0);
  cs.push_back({"Tessera",
                [=] {
                  *a += *b + s * *c;
                  ++*ta;
                },
                [=] {
                  return err(tessera::to_eigen(*a), *ta);
                }});
  auto ka = std::make_shared<vec>(*a0);
  cs.push_back({"Kokkos RangePolicy",
                [=] {
                  double* pa = ka->data();
                  const double *pb = eb->data(), *pc = ec->data();
                  Kokkos::parallel_for(
                      "prk nstream", Kokkos::RangePolicy<host_space>(0, n),
                      KOKKOS_LAMBDA(long i) { pa[i] += pb[i] + s * pc[i]; });
                  Kokkos::fence();
                  ++*tk;
                },
                [=] {
                  return err(*ka, *tk);
                }});
  auto ca = std::make_shared<vec>(*a0);
  cs.push_back({"C loop",
                [=] {
                  double* pa = ca->data();
                  const double *pb = eb->data(), *pc = ec->data();
#pragma omp parallel for simd num_threads(o.threads) if (o.threads > 1)
                  for (long i = 0; i < n; ++i) pa[i] += pb[i] + s * pc[i];
                  ++*tc;
                },
                [=] {
                  return err(*ca, *tc);
                }});
  row r;
  r.size = std::to_string(n);
  r.unit = "GB/s";
  r.work = 4.0 * n * sizeof(double);  // PRK's count: A read and written, B and C read
  r.limit_name = "memcpy";
  r.tolerance = 1e-12;
  return r;
}

/// PRK dgemm with beta = 1: C += A B (double). Each contender keeps a run count (C0 + k A B).
inline row prk_dgemm(const options& o, std::vector<contender>& cs, std::string& name) {
  const long n = scaled_side(1024, o.scale, 16);
  name = "prk_dgemm_beta1";
  auto ma = std::make_shared<dmatrix>(random_matrix(n, n, 24).cast<double>());
  auto mb = std::make_shared<dmatrix>(random_matrix(n, n, 25).cast<double>());
  auto ab = std::make_shared<dmatrix>(*ma * *mb);
  auto err = [=](const dmatrix& got, long runs) {
    return double((got - double(runs) * *ab).cwiseAbs().maxCoeff()) / double(runs > 0 ? runs : 1);
  };
  auto a = std::make_shared<tessera::array<double, 2>>(tessera::from_eigen(*ma));
  auto b = std::make_shared<tessera::array<double, 2>>(tessera::from_eigen(*mb));
  auto c = std::make_shared<tessera::array<double, 2>>(n, n);
  auto ta = std::make_shared<long>(0), te = std::make_shared<long>(0),
       tb = std::make_shared<long>(0);
  cs.push_back({"Tessera",
                [=] {
                  *c += tessera::matmul(*a, *b);
                  ++*ta;
                },
                [=] {
                  return err(tessera::to_eigen(*c), *ta);
                }});
  auto ec = std::make_shared<dmatrix>(dmatrix::Zero(n, n));
  cs.push_back({"Eigen",
                [=] {
                  ec->noalias() += *ma * *mb;
                  ++*te;
                },
                [=] {
                  return err(*ec, *te);
                }});
  auto bc = std::make_shared<dmatrix>(dmatrix::Zero(n, n));
  cs.push_back({"OpenBLAS dgemm",
                [=] {
                  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n),
                              1.0, ma->data(), int(n), mb->data(), int(n), 1.0, bc->data(), int(n));
                  ++*tb;
                },
                [=] {
                  return err(*bc, *tb);
                }});
  row r;
  r.size = std::to_string(n) + "^2";
  r.unit = "GFLOP/s";
  r.work = 2.0 * n * n * n;
  r.limit_name = "FMA peak";
  r.tolerance = 1e-12 * double(n);
  return r;
}

using workload_fn = std::function<row(const options&, std::vector<contender>&, std::string&)>;
inline std::vector<std::pair<std::string, workload_fn>> workloads() {
  std::vector<std::pair<std::string, workload_fn>> w = {
      {"matmul_1024",
       [](auto& o, auto& c, auto& n) {
         return matmul(o, 1024, c, n);
       }},
      {"matmul_2048",
       [](auto& o, auto& c, auto& n) {
         return matmul(o, 2048, c, n);
       }},
      {"matmul_4096",
       [](auto& o, auto& c, auto& n) {
         return matmul(o, 4096, c, n);
       }},
      {"fused_epilogue", fused},
      {"transpose", transpose},
      {"transpose_999x666", transpose_uneven},
      {"transpose_8193x8197", transpose_large_uneven},
      {"tile_mean_2x2", tile_mean<2>},
      {"tile_mean_4x4", tile_mean<4>},
      {"tile_mean_16x16", tile_mean<16>},
      {"2A+3B-C", elementwise},
      {"prk_stencil_R2", prk_stencil},
      {"prk_nstream", prk_nstream},
      {"prk_dgemm_beta1", prk_dgemm},
  };
  for (int l : {16, 20, 24, 28})
    w.push_back({"sum_2^" + std::to_string(l), [l](auto& o, auto& c, auto& n) {
                   return sum<float>(o, l, c, n);
                 }});
  for (int l : {12, 16, 20})  // in L1, L2 and L3 on most CPUs: where the lanes' arithmetic shows
    w.push_back({"sum_f64_2^" + std::to_string(l), [l](auto& o, auto& c, auto& n) {
                   return sum<double>(o, l, c, n);
                 }});
  for (const auto& shape :
       {std::pair{1000L, 1000L}, std::pair{100L, 100L}, std::pair{1000L, 10L}}) {
    const long r = shape.first, c = shape.second;
    w.push_back({"sum_2d_" + std::to_string(r) + "x" + std::to_string(c),
                 [r, c](auto& o, auto& cs, auto& n) {
                   return sum_2d(o, r, c, cs, n);
                 }});
  }
  return w;
}

/// Wall time per call of `calls` back-to-back runs of f (then one Kokkos fence).
template <class F>
double time_calls(F&& f, int calls) {
  Kokkos::Timer t;
  for (int i = 0; i < calls; ++i) f();
  Kokkos::fence();
  return t.seconds() / calls;
}

/// Calls per timed run for the contenders `run` (warmed up): 1 where the fastest one call
/// takes at least `min_run` seconds; otherwise enough that a run of the fastest takes that
/// long (at most 2^16), the same count for every contender. Timing one call of a few hundred
/// ns on its own adds the timer's reads and a fence, tens of ns, to every contender alike.
inline int calls_per_run(const std::vector<contender*>& run, double min_run) {
  double fastest = 1e300;
  for (auto* c : run) fastest = std::min(fastest, tour::time_once(c->run));
  if (!(fastest < min_run)) return 1;
  return int(std::min(65536.0, std::ceil(min_run / std::max(fastest, 1e-9))));
}

/// Times the contenders of one workload in this process (interleaved, best of reps; runs of
/// calls_per_run calls), those named in `only` (empty: all), and checks each; returns name ->
/// {seconds per call, error}.
inline std::map<std::string, std::pair<double, double>> time_here(
    std::vector<contender>& cs, int reps, double min_run, const std::vector<std::string>& only) {
  std::vector<contender*> run;
  for (auto& c : cs)
    if (only.empty() || std::find(only.begin(), only.end(), c.name) != only.end())
      run.push_back(&c);
  std::vector<double> best(run.size(), 1e300);
  for (auto* c : run) c->run();  // warm-up: page faults, JIT, the matmul autotuner
  const int calls = calls_per_run(run, min_run);
  // Each round runs the contenders in a new order (shuffled with a fixed seed: the same orders
  // in every run of the program), so that each runs right after every other in some rounds: on
  // data near the last-level cache's size a run's speed depends on what the run before it left
  // in cache (a sum of 2^24 floats read 18-28 GB/s between runs on a Zen 4). Rounds that only
  // started from the next contender (r, r + 1, ...) had each run right after the same other in
  // all rounds but those it started: seed 003's transpose timed Tessera after Halide and
  // OpenBLAS after Eigen in every round. No contender runs twice in a row (the last of a round
  // never starts the next): a run right after its own leaves its output in cache, a state that
  // only the contenders the shuffle happened to repeat would see.
  std::vector<std::size_t> order(run.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937 shuffle(20261205);
  for (int r = 0; r < reps; ++r) {
    if (r > 0) {
      const std::size_t last = order.back();
      std::shuffle(order.begin(), order.end(), shuffle);
      if (order.size() > 1 && order.front() == last) std::swap(order.front(), order.back());
    }
    for (const std::size_t k : order) best[k] = std::min(best[k], time_calls(run[k]->run, calls));
  }
  std::map<std::string, std::pair<double, double>> out;
  for (std::size_t k = 0; k < run.size(); ++k) out[run[k]->name] = {best[k], run[k]->error()};
  return out;
}

/// Allows the calling thread on every online CPU (undoes an OpenMP runtime's binding of it).
inline void unbind_this_thread() {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
  (void)sched_setaffinity(0, sizeof all, &all);
}

/// Runs this program again as a child (`--only W --contender C1;C2...`: the contenders `who`,
/// interleaved there), its environment this one's with `env` (NAME=VALUE; empty: none) put in
/// place of any NAME=..., and reads its result lines: name -> {seconds per call, error}.
inline std::map<std::string, std::pair<double, double>> time_in_child(
    const options& o, const std::string& workload, const std::vector<std::string>& who,
    const std::string& env = "") {
  std::string names;
  for (const auto& w : who) names += (names.empty() ? "" : ";") + w;
  std::vector<std::string> args = {
      "/proc/self/exe",
      "--reps",
      std::to_string(o.reps),
      "--scale",
      std::to_string(o.scale),
      "--min-run-us",
      std::to_string(o.min_run_us),
      "--only",
      workload,
      "--contender",
      names,
      "--prefetch",
      prefetch_arg(tessera::prefetch_tuning_in_use()),
      "--unaligned",
      tessera::backends::host::short_name(tessera::transpose_unaligned_in_use().cache),
      "--unaligned-memory",
      tessera::backends::host::short_name(tessera::transpose_unaligned_in_use().memory),
      "--staging",
      to_string(tessera::transpose_staging_in_use()),
      "--memory-threshold",
      std::to_string(tessera::memory_threshold_in_use()),
      "--matmul-float",
      blocking_arg(tessera::matmul_blocking_in_use<float>()),
      "--matmul-double",
      blocking_arg(tessera::matmul_blocking_in_use<double>())};
  // --threads only where it is not the default: Kokkos 3.4 (Debian's) reads `--threads` as its
  // own argument, wants `=INT` and aborts the program without it.
  if (o.threads != 1) args.insert(args.begin() + 1, {"--threads", std::to_string(o.threads)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string env_entry = env;
  std::vector<char*> envp;
  const std::string env_name = env.substr(0, env.find('=') + 1);
  for (char** e = environ; *e; ++e)
    if (env.empty() || std::string_view(*e).substr(0, env_name.size()) != env_name)
      envp.push_back(*e);
  if (!env.empty()) envp.push_back(env_entry.data());
  envp.push_back(nullptr);
  int fd[2];
  if (pipe(fd) != 0) throw std::runtime_error("tessera-peers: pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  // A child inherits the spawning thread's CPU affinity, and an OpenMP runtime bound by
  // OMP_PROC_BIND pins this (master) thread to one CPU: every child, all its threads, would
  // then share that CPU. Spawn from a thread allowed on every CPU of the process.
  cpu_set_t bound;
  const bool have_mask = sched_getaffinity(0, sizeof bound, &bound) == 0;
  if (have_mask) unbind_this_thread();
  pid_t pid;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), envp.data());
  if (have_mask) (void)sched_setaffinity(0, sizeof bound, &bound);
  if (spawned != 0) throw std::runtime_error("tessera-peers: cannot start a child process");
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  std::string text;
  char buf[4096];
  for (ssize_t k; (k = read(fd[0], buf, sizeof buf)) > 0;) text.append(buf, std::size_t(k));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  // One line per contender, in the order asked: "RESULT seconds error".
  std::map<std::string, std::pair<double, double>> out;
  std::size_t at = 0;
  for (const auto& w : who) {
    at = text.find("RESULT ", at);
    if (at == std::string::npos) break;
    std::istringstream in(text.substr(at += 7));
    in >> out[w].first >> out[w].second;
  }
  if (out.size() != who.size() || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("tessera-peers: the child process for " + workload + " / " + names +
                             " failed (wait status " + std::to_string(status) + "):\n" + text);
  return out;
}

inline std::string fmt(double v, const char* f = "%.1f") {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

inline int run(const options& o) {
  const bool child = !o.contender.empty();
  if (!child) {
    std::printf(
        "tessera-peers: %s, %d thread(s) (Tessera: %d), best of %d, interleaved, runs "
        "of >= %g us%s\n",
        tessera::backend_name().c_str(), o.threads, Kokkos::DefaultExecutionSpace().concurrency(),
        o.reps, o.min_run_us, o.threads > 1 ? ", one process per contender" : "");
    const char* ct = std::getenv("OPENBLAS_CORETYPE");
    std::printf("OpenBLAS: %s; kernels: %s; OPENBLAS_CORETYPE=%s\n", openblas_get_config(),
                openblas_get_corename(), ct ? ct : "(unset: detected from the CPU)");
    if (ct)
      std::printf(
          "  note: OPENBLAS_CORETYPE overrides OpenBLAS's CPU detection; unset it to "
          "measure the kernels OpenBLAS picks for this CPU\n");
    if (const std::string same = same_isa_coretype(); !same.empty())
      std::printf(
          "  this build's vectors are narrower than those kernels': each OpenBLAS contender "
          "is also timed with OPENBLAS_CORETYPE=%s (the same ISA), in a child process with "
          "Tessera beside it, and compared in a second table\n",
          same.c_str());
    std::printf("Halide: %s, JIT target %s\n", TESSERA_HALIDE_LIBRARY_NAME,
                jit_target().to_string().c_str());
    std::printf("Eigen: %d.%d.%d (SIMD: %s; gemm threads: %d)\n", EIGEN_WORLD_VERSION,
                EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse(),
                o.threads);
  }
  if (child && o.memory_threshold > 0) tessera::set_memory_threshold(o.memory_threshold);
  if (child && !o.matmul_float.empty())
    tessera::set_matmul_blocking<float>(parse_blocking_arg(o.matmul_float));
  if (child && !o.matmul_double.empty())
    tessera::set_matmul_blocking<double>(parse_blocking_arg(o.matmul_double));
  if (child && !o.prefetch.empty()) tessera::set_prefetch_tuning(parse_prefetch_arg(o.prefetch));
  if (child) {
    tessera::transpose_unaligned_choice u = tessera::transpose_unaligned_in_use();
    for (const auto k : tessera::backends::host::unaligned_block_stores) {
      if (o.unaligned == tessera::backends::host::short_name(k)) u.cache = k;
      if (o.unaligned_memory == tessera::backends::host::short_name(k)) u.memory = k;
    }
    tessera::set_transpose_unaligned(u);
  }
  if (child && !o.staging.empty()) {
    for (const auto s : tessera::codegen::tile_stagings)
      if (o.staging == to_string(s)) tessera::set_transpose_staging(s);
  }
  // Tessera's CPU kernel choices that no cache size tells (where memory starts, software
  // prefetches, transpose writes, matmul blocking), timed on this machine first, explicitly, as
  // the tour does (--no-tune: the derived rules); child processes get them from the parent.
  if (!child && o.tune) tour::run_cpu_tunings("Tessera ");
  openblas_set_num_threads(o.threads);
  // This program is built with OpenMP (for the threaded limits and C loops), so Eigen's gemm
  // would use every OpenMP thread unless told otherwise.
  Eigen::setNbThreads(o.threads);
  if (o.threads > 1) setenv("HL_NUM_THREADS", std::to_string(o.threads).c_str(), 1);

  double peak = 0, rd = 0, mc = 0;
  if (!child) {
    peak = fma_peak_gflops() * o.threads;
    const long bw_n = std::max(1L << 20, static_cast<long>((1L << 26) * o.scale));
    rd = read_gbs(bw_n, o.reps, o.threads);
    mc = memcpy_gbs(bw_n, o.reps, o.threads);
    std::printf("limits: FMA peak %.0f GFLOP/s (%d core(s)), read %.1f GB/s, memcpy %.1f GB/s\n\n",
                peak, o.threads, rd, mc);
    std::printf(
        "| workload | size | unit | Tessera | best peer | Tessera / best peer | "
        "Tessera %% of limit | other contenders |\n|---|---|---|---|---|---|---|---|\n");
  }
  bool ok = true, any = false;
  std::string same_isa;  // the second table's rows
  for (auto& [wname, fn] : workloads()) {
    if (!o.only.empty() && o.only != wname) continue;
    any = true;
    std::vector<contender> cs;
    std::string name;
    row r = fn(o, cs, name);
    // OpenBLAS's contenders held to this build's ISA: each timed in a child process with
    // OPENBLAS_CORETYPE set, under the name "<contender> (<core> kernels)".
    const std::string same = child ? std::string() : same_isa_coretype();
    std::map<std::string, std::string> held;  // "<contender> (<core> kernels)" -> contender
    for (const auto& c : cs)
      if (!same.empty() && c.name.rfind("OpenBLAS", 0) == 0)
        held[c.name + " (" + same + " kernels)"] = c.name;
    std::map<std::string, std::pair<double, double>> t;
    if (child) {
      std::vector<std::string> names;
      for (std::size_t a = 0, b; a <= o.contender.size(); a = b + 1) {
        b = std::min(o.contender.find(';', a), o.contender.size());
        names.push_back(o.contender.substr(a, b - a));
      }
      // Tessera runs on its execution space's threads (bound as OMP_PROC_BIND says); another
      // library's threads, started from this thread, would inherit the OpenMP binding of it.
      if (names[0].rfind("Tessera", 0) != 0) unbind_this_thread();
      t = time_here(cs, o.reps, o.min_run_us * 1e-6, names);
      for (const auto& n : names) {
        if (!t.count(n)) throw std::runtime_error("tessera-peers: no contender " + n);
        std::printf("RESULT %.9g %.9g\n", t[n].first, t[n].second);
      }
      return 0;
    }
    if (o.threads > 1) {
      for (auto& c : cs) t[c.name] = time_in_child(o, wname, {c.name})[c.name];
    } else {
      t = time_here(cs, o.reps, o.min_run_us * 1e-6, {});
    }
    // Each held contender with Tessera in its child process, interleaved there as here, on one
    // thread (on several, alone: another library's threads would inherit Tessera's binding);
    // the second table's ratio is of that process's times.
    std::map<std::string, double> held_tessera;  // the child's Tessera seconds
    for (const auto& [who, h] : held) {
      const std::string env = "OPENBLAS_CORETYPE=" + same;
      auto m = o.threads > 1 ? time_in_child(o, wname, {h}, env)
                             : time_in_child(o, wname, {"Tessera", h}, env);
      t[who] = m[h];
      held_tessera[who] = m.count("Tessera") ? m["Tessera"].first : t["Tessera"].first;
    }
    std::string best_peer, others, failed;
    double best_rate = 0, tess = 0;
    for (auto& [who, se] : t) {
      const double rate = r.work / se.first * 1e-9;
      const bool pass = se.second <= r.tolerance;
      if (!pass) {
        failed += " " + who + " (error " + fmt(se.second, "%.2g") + ")";
        ok = ok && who.rfind("Tessera", 0) != 0;
      }
      if (who == "Tessera") {
        tess = rate;
        continue;
      }
      others += who + " " + fmt(rate) + (pass ? "" : " (wrong)") + "; ";
      // "Tessera <form>": the same workload in another of Tessera's forms, shown, not a peer.
      // A held contender, timed in another process, is compared in the second table (with
      // Tessera's time from that process), not here.
      if (pass && rate > best_rate && who.rfind("Tessera", 0) != 0 && !held.count(who)) {
        best_rate = rate;
        best_peer = who;
      }
    }
    const double limit = r.limit_name == "FMA peak" ? peak : r.limit_name == "read" ? rd : mc;
    std::printf("| %s | %s | %s | %s | %s %s | %s | %s %% of %s | %s|\n", name.c_str(),
                r.size.c_str(), r.unit.c_str(), fmt(tess).c_str(), best_peer.c_str(),
                fmt(best_rate).c_str(), fmt(best_rate > 0 ? tess / best_rate : 0, "%.2f×").c_str(),
                fmt(limit > 0 ? 100 * tess / limit : 0, "%.0f").c_str(), r.limit_name.c_str(),
                others.c_str());
    if (!failed.empty()) std::printf("  verification failed:%s\n", failed.c_str());
    std::fflush(stdout);
    for (const auto& entry : held) {
      const std::string& who = entry.first;
      const auto& [sec, err] = t[who];
      if (err > r.tolerance) continue;  // shown as failed above
      const double rate = r.work / sec * 1e-9, tess_there = r.work / held_tessera[who] * 1e-9;
      same_isa += "| " + name + " | " + r.size + " | " + r.unit + " | " + fmt(tess_there) + " | " +
                  who + " " + fmt(rate) + " | " + fmt(tess_there / rate, "%.2f×") + " |\n";
    }
  }
  if (!same_isa.empty())
    std::printf(
        "\nAgainst OpenBLAS held to this build's ISA (%s):\n\n"
        "| workload | size | unit | Tessera (%s) | OpenBLAS | Tessera / OpenBLAS |\n"
        "|---|---|---|---|---|---|\n%s",
        same_isa_coretype().c_str(),
        o.threads > 1 ? "its own process: two processes' times" : "OpenBLAS's process",
        same_isa.c_str());
  if (!any) throw std::runtime_error("tessera-peers: no workload named '" + o.only + "'");
  return ok ? 0 : 1;
}

}  // namespace peers

int main(int argc, char** argv) {
  tessera::scope_guard guard(argc, argv);
  CLI::App app{"tessera-peers: Tessera against Eigen, OpenBLAS and Halide, with machine limits"};
  peers::options o;
  std::string names;
  for (auto& [n, f] : peers::workloads()) names += " " + n;
  app.add_option("--threads", o.threads, "threads of OpenBLAS and Halide (match Tessera's)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--reps", o.reps, "timed runs per contender (best kept)")
      ->check(CLI::PositiveNumber);
  app.add_option("--scale", o.scale, "multiplies every element count (0, 4]")
      ->check(CLI::Range(1e-9, 4.0));
  app.add_option("--min-run-us", o.min_run_us,
                 "a timed run repeats a workload's calls until the fastest contender's run "
                 "lasts this long (microseconds; 0: one call per run)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--only", o.only, "run one workload:" + names);
  app.add_option("--contender", o.contender, "(internal) time one contender and print it");
  app.add_option("--prefetch", o.prefetch, "(internal) Tessera's prefetch choices, as tuned");
  std::vector<std::string> unaligned_kinds;
  for (const auto k : tessera::backends::host::unaligned_block_stores)
    unaligned_kinds.push_back(tessera::backends::host::short_name(k));
  app.add_option("--unaligned", o.unaligned,
                 "(internal) Tessera's unaligned transpose blocks for outputs in cache, as tuned")
      ->check(CLI::IsMember(unaligned_kinds));
  app.add_option("--unaligned-memory", o.unaligned_memory,
                 "(internal) Tessera's unaligned transpose blocks for larger outputs, as tuned")
      ->check(CLI::IsMember(unaligned_kinds));
  std::vector<std::string> stagings;
  for (const auto s : tessera::codegen::tile_stagings) stagings.push_back(to_string(s));
  app.add_option("--staging", o.staging, "(internal) Tessera's transpose staging, as tuned")
      ->check(CLI::IsMember(stagings));
  app.add_option("--memory-threshold", o.memory_threshold,
                 "(internal) Tessera's memory threshold in bytes, as tuned");
  app.add_option(
      "--matmul-float", o.matmul_float,
      "(internal) Tessera's float matmul blocking (mc,kc,nc,mr,nr,a_prefetch), as tuned");
  app.add_option(
      "--matmul-double", o.matmul_double,
      "(internal) Tessera's double matmul blocking (mc,kc,nc,mr,nr,a_prefetch), as tuned");
  app.add_flag("!--no-tune", o.tune,
               "keep Tessera's default memory threshold, prefetch, transpose and matmul choices "
               "(by default they are first timed on this machine with "
               "tessera::tune_memory_threshold, tessera::tune_prefetch, "
               "tessera::tune_transpose_unaligned, tessera::tune_transpose and "
               "tessera::tune_matmul, 5-30 s)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return peers::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
