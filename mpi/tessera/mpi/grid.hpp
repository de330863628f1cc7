/// \file grid.hpp
/// \brief `process_grid<N>`: the ranks of a communicator arranged as a P0 x ... x P(N-1)
///        Cartesian grid (MPI_Dims_create, MPI_Cart_create), with the communicators along each
///        dimension (a 2-D grid's row and column communicators).
#pragma once

#include <mpi.h>

#include <array>
#include <memory>
#include <string>

#include <tessera/dsl/index.hpp>
#include <tessera/mpi/environment.hpp>

namespace tessera::mpi {

namespace impl {
/// Frees a communicator Tessera created when the last grid sharing it goes.
struct comm_owner {
  MPI_Comm comm = MPI_COMM_NULL;
  explicit comm_owner(MPI_Comm c) : comm(c) {}
  comm_owner(const comm_owner&) = delete;
  comm_owner& operator=(const comm_owner&) = delete;
  ~comm_owner() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
  }
};
/// Tag of a process_grid that holds no communicator yet (a default-constructed partition's).
struct empty_grid_t {};
}  // namespace impl

/// The processes of a communicator as an N-dimensional Cartesian grid (row-major: rank =
/// ((c0 * P1) + c1) * P2 + c2, MPI_Cart_create without reordering).
///
/// \tparam N rank of the grid, 1..3 (that of the arrays distributed over it)
/// Copies share the communicators (freed with the last copy, before MPI_Finalize).
template <int N>
class process_grid {
  static_assert(N >= 1 && N <= 3, "tessera::mpi::process_grid<N>: N must be 1, 2 or 3");

 public:
  /// A grid without communicators (what a default-constructed partition holds).
  explicit process_grid(impl::empty_grid_t) {}
  /// A grid of every process of `comm`: dims[d] == 0 lets MPI_Dims_create choose that
  /// dimension (all zero: as square as the process count allows, larger dimensions first).
  /// \throws shape_error when the product of the given dims does not equal comm's size, or a
  ///         dim is negative (before any communicator is created)
  explicit process_grid(MPI_Comm comm = MPI_COMM_WORLD, extent<N> dims = extent<N>()) {
    const int p = mpi::size(comm);
    int d[N];
    for (int k = 0; k < N; ++k) {
      if (dims[k] < 0)
        throw shape_error("tessera::mpi::process_grid: negative dimension in " + to_string(dims));
      d[k] = static_cast<int>(dims[k]);
    }
    index_type fixed = 1;
    bool free_dim = false;
    for (int k = 0; k < N; ++k) {
      if (d[k] > 0)
        fixed *= d[k];
      else
        free_dim = true;
    }
    if ((free_dim && p % fixed != 0) || (!free_dim && fixed != p))
      throw shape_error("tessera::mpi::process_grid: dimensions " + to_string(dims) +
                        " do not fit " + std::to_string(p) + " processes");
    check(MPI_Dims_create(p, N, d), "tessera::mpi::process_grid (MPI_Dims_create)");
    int periods[N];
    for (int k = 0; k < N; ++k) {
      dims_[k] = d[k];
      periods[k] = 1;  // neighbours are computed explicitly; periodic lets Cart_rank wrap
    }
    MPI_Comm cart = MPI_COMM_NULL;
    check(MPI_Cart_create(comm, N, d, periods, /*reorder=*/0, &cart),
          "tessera::mpi::process_grid (MPI_Cart_create)");
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    cart_ = std::make_shared<impl::comm_owner>(cart);
    int c[N];
    check(MPI_Cart_coords(cart, mpi::rank(cart), N, c),
          "tessera::mpi::process_grid (MPI_Cart_coords)");
    for (int k = 0; k < N; ++k) coords_[k] = c[k];
    for (int k = 0; k < N; ++k) {
      int remain[N];
      for (int j = 0; j < N; ++j) remain[j] = (j == k);
      MPI_Comm sub = MPI_COMM_NULL;
      check(MPI_Cart_sub(cart, remain, &sub), "tessera::mpi::process_grid (MPI_Cart_sub)");
      MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
      along_[k] = std::make_shared<impl::comm_owner>(sub);
    }
  }

  /// The grid's extent (P0, ..., P(N-1)).
  extent<N> dims() const { return dims_; }
  /// This process's coordinates in the grid.
  index<N> coords() const { return coords_; }
  /// The Cartesian communicator (every process of the grid).
  MPI_Comm comm() const { return cart_ ? cart_->comm : MPI_COMM_NULL; }
  /// This process's rank in comm().
  int rank() const { return rank_of(coords_); }
  int size() const { return static_cast<int>(dims_.size()); }
  /// The communicator of the processes that differ from this one only in coordinate d (its
  /// rank there is coords()[d]). For a 2-D grid, along(1) is the row communicator and
  /// along(0) the column communicator.
  MPI_Comm along(int d) const {
    const auto& c = along_[static_cast<std::size_t>(d)];
    return c ? c->comm : MPI_COMM_NULL;
  }
  /// Row communicator of a 2-D grid: the processes with this one's row coordinate.
  MPI_Comm row_comm() const requires(N == 2) { return along(1); }
  /// Column communicator of a 2-D grid: the processes with this one's column coordinate.
  MPI_Comm col_comm() const requires(N == 2) { return along(0); }
  /// Rank (in comm()) of the process at coordinates c (each inside [0, P_d)).
  int rank_of(const index<N>& c) const {
    index_type r = 0;
    for (int k = 0; k < N; ++k) r = r * dims_[k] + c[k];
    return static_cast<int>(r);
  }
  /// Coordinates of the process of rank r in comm().
  index<N> coords_of(int r) const {
    index<N> c;
    for (int k = N - 1; k >= 0; --k) {
      c[k] = r % dims_[k];
      r = static_cast<int>(r / dims_[k]);
    }
    return c;
  }
  /// True when both name the same communicator and shape.
  friend bool operator==(const process_grid& a, const process_grid& b) {
    if (!(a.dims_ == b.dims_)) return false;
    if (a.cart_ == b.cart_) return true;
    if (!a.cart_ || !b.cart_) return false;
    int cmp = MPI_UNEQUAL;
    MPI_Comm_compare(a.comm(), b.comm(), &cmp);
    return cmp == MPI_IDENT || cmp == MPI_CONGRUENT;
  }

 private:
  extent<N> dims_;
  index<N> coords_;
  std::shared_ptr<impl::comm_owner> cart_;
  std::array<std::shared_ptr<impl::comm_owner>, N> along_;
};

}  // namespace tessera::mpi
