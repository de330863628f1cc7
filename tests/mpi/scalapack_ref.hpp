// ScaLAPACK's psgemm/pdgemm on Tessera::mpi distributed arrays (the reference of test_mpi and
// bench-mpi). Row-major local parts are the column-major local parts of the transposes, so
// C = A B is computed as C^T = B^T A^T on the BLACS grid P1 x P0 ("C" order: BLACS rank
// q + p P1 is the Cartesian rank p P1 + q). Needs halo-free arrays with block or block-cyclic
// partitions on one grid (ScaLAPACK's own layout).
#pragma once

#include <tessera/mpi.hpp>

#include <algorithm>
#include <type_traits>

extern "C" {
void Cblacs_get(int context, int request, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridexit(int context);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
void psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const float* alpha, const float* a, const int* ia, const int* ja, const int* desca,
             const float* b, const int* ib, const int* jb, const int* descb, const float* beta,
             float* c, const int* ic, const int* jc, const int* descc);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
             const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
             double* c, const int* ic, const int* jc, const int* descc);
}

namespace scalapack_ref {

/// A BLACS context over a Tessera process grid (freed by the destructor).
class context {
 public:
  explicit context(const tessera::mpi::process_grid<2>& g) {
    Cblacs_get(-1, 0, &ctxt_);
    Cblacs_gridinit(&ctxt_, "C", static_cast<int>(g.dims()[1]), static_cast<int>(g.dims()[0]));
  }
  ~context() { Cblacs_gridexit(ctxt_); }
  context(const context&) = delete;
  context& operator=(const context&) = delete;
  /// The descriptor of X^T for a distributed X (info != 0 on a bad descriptor).
  template <class T>
  void describe(const tessera::mpi::distributed_array<T, 2>& x, int (&desc)[9], int& info) const {
    const auto& p = x.layout();
    const int m = static_cast<int>(p.global_extent()[1]),
              n = static_cast<int>(p.global_extent()[0]);
    const int mb = static_cast<int>(p.block()[1]), nb = static_cast<int>(p.block()[0]), zero = 0;
    const int lld = std::max<int>(1, static_cast<int>(x.local_extent()[1]));
    descinit_(desc, &m, &n, &mb, &nb, &zero, &zero, &ctxt_, &lld, &info);
  }

 private:
  int ctxt_ = 0;
};

/// C = alpha A B + beta C with ScaLAPACK; returns ScaLAPACK's info (0: success).
template <class T>
int gemm(const context& ctx, const tessera::mpi::distributed_array<T, 2>& C,
         const tessera::mpi::distributed_array<T, 2>& A,
         const tessera::mpi::distributed_array<T, 2>& B, T alpha, T beta) {
  int da[9], db[9], dc[9], info = 0;
  ctx.describe(A, da, info);
  if (info != 0) return info;
  ctx.describe(B, db, info);
  if (info != 0) return info;
  ctx.describe(C, dc, info);
  if (info != 0) return info;
  const int m = static_cast<int>(C.global_extent()[0]), n = static_cast<int>(C.global_extent()[1]),
            k = static_cast<int>(A.global_extent()[1]), one = 1;
  Kokkos::fence();
  if constexpr (std::is_same_v<T, float>)
    psgemm_("N", "N", &n, &m, &k, &alpha, B.storage().view().data(), &one, &one, db,
            A.storage().view().data(), &one, &one, da, &beta, C.storage().view().data(), &one, &one,
            dc);
  else
    pdgemm_("N", "N", &n, &m, &k, &alpha, B.storage().view().data(), &one, &one, db,
            A.storage().view().data(), &one, &one, da, &beta, C.storage().view().data(), &one, &one,
            dc);
  return 0;
}

}  // namespace scalapack_ref
