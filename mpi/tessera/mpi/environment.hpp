/// \file environment.hpp
/// \brief The MPI environment of a distributed Tessera program: MPI, then the Kokkos runtime,
///        finalized in reverse order; MPI return codes turned into Tessera errors.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/runtime.hpp>

namespace tessera::mpi {

/// Throws tessera::error "<fn>: <MPI's error string>" unless rc is MPI_SUCCESS. Tessera's
/// communicators return errors (MPI_ERRORS_RETURN) so that they reach this check.
inline void check(int rc, const char* fn) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw error(std::string(fn) + ": MPI error: " + std::string(msg, static_cast<std::size_t>(len)));
}

/// The MPI environment: `int main(int argc, char** argv) { tessera::mpi::environment env(argc,
/// argv); ... }` calls MPI_Init_thread (unless MPI is already initialized) and then starts the
/// Kokkos runtime (a tessera::scope_guard: Kokkos arguments are honoured, and on GPU backends
/// Kokkos maps ranks to devices by their node-local rank). The destructor ends them in reverse
/// order: Kokkos first (arrays must be gone by then), then MPI_Finalize if this object called
/// MPI_Init_thread.
///
/// \param required thread support asked of MPI (default MPI_THREAD_FUNNELED: only the thread
///        that launches Tessera kernels calls MPI, which is how Tessera calls it)
/// \throws tessera::error when MPI provides less than `required`
class environment {
 public:
  environment(int& argc, char**& argv, int required = MPI_THREAD_FUNNELED) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      check(MPI_Init_thread(&argc, &argv, required, &provided_), "tessera::mpi::environment");
      owns_mpi_ = true;
    } else {
      MPI_Query_thread(&provided_);
    }
    if (provided_ < required) {
      finalize_mpi();
      throw error("tessera::mpi::environment: MPI provides thread level " +
                  std::to_string(provided_) + ", " + std::to_string(required) + " required");
    }
    guard_.emplace(argc, argv);
  }
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  ~environment() {
    guard_.reset();
    finalize_mpi();
  }
  /// The thread level MPI provides (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE).
  int thread_level() const { return provided_; }
  /// True when this object initialized MPI (and finalizes it).
  bool owns_mpi() const { return owns_mpi_; }

 private:
  void finalize_mpi() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
    owns_mpi_ = false;
  }
  bool owns_mpi_ = false;
  int provided_ = MPI_THREAD_SINGLE;
  std::optional<scope_guard> guard_;
};

/// This process's rank in `comm` (default MPI_COMM_WORLD).
inline int rank(MPI_Comm comm = MPI_COMM_WORLD) {
  int r = 0;
  check(MPI_Comm_rank(comm, &r), "tessera::mpi::rank");
  return r;
}
/// The number of processes in `comm` (default MPI_COMM_WORLD).
inline int size(MPI_Comm comm = MPI_COMM_WORLD) {
  int s = 1;
  check(MPI_Comm_size(comm, &s), "tessera::mpi::size");
  return s;
}

}  // namespace tessera::mpi
