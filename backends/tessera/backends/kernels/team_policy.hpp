/// \file kernels/team_policy.hpp
/// \brief The Kokkos TeamPolicy of a planned kernel, built only after the plan's team size has
///        been checked against what the backend allows for that kernel. Kokkos itself aborts
///        the process (host backends: "Requested Team Size is too large!") or throws
///        std::runtime_error (CUDA) from the policy's constructor; Tessera reports a
///        resource_error naming the kernel, its tile, the team size and the limit instead. A
///        team that Kokkos would silently run with a single member (a launch on Kokkos::OpenMP
///        from inside an enclosing OpenMP parallel region) is a usage_error when the plan needs
///        more than one member.
#pragma once

#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/config.hpp>
#include <tessera/dsl/errors.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace tessera::backends::impl {

/// True when Kokkos would run a team launch on `exec` with one member per team whatever the
/// policy says: Kokkos::OpenMP called from inside an OpenMP parallel region it does not nest
/// into (Kokkos then runs the whole league on the calling thread).
template <class Space>
bool teams_run_serially(const Space& exec) {
#ifdef KOKKOS_ENABLE_OPENMP
  if constexpr (std::is_same_v<Space, Kokkos::OpenMP>) {
#if KOKKOS_VERSION >= 30700
    return Kokkos::Impl::execute_in_serial(exec);  // Kokkos' own test before each launch
#else
    return Kokkos::OpenMP::in_parallel(exec);
#endif
  }
#endif
  (void)exec;
  return false;
}

/// The most members a team of `exec` may have for functor `f` with `request` bytes of scratch
/// at `level` (Kokkos' team_size_max, asked on a policy of team size 1, which every backend
/// accepts).
template <class Space, class F>
int team_size_limit(const Space& exec, const F& f, int level, std::size_t request) {
  Kokkos::TeamPolicy<Space> probe(exec, 1, 1);
  if (request) probe.set_scratch_size(level, Kokkos::PerTeam(request));
  return probe.team_size_max(f, Kokkos::ParallelForTag());
}

/// The TeamPolicy of plan `k` on `exec` for functor `f`: league, team and vector sizes from the
/// plan, `request` bytes of team scratch at `level` (0 bytes: none).
/// \throws resource_error when the plan's team is larger than the backend allows for `f`;
///         usage_error when a multi-member team would run with one member (nested OpenMP)
template <class Space, class F>
Kokkos::TeamPolicy<Space> planned_team_policy(const Space& exec, const codegen::kernel_plan& k,
                                              const F& f, int level, std::size_t request) {
  if (k.team_size > 1) {
    if (teams_run_serially(exec))
      throw usage_error(k.name +
                        ": launched from inside an OpenMP parallel region, where Kokkos "
                        "runs every team with one member, but this kernel needs teams of " +
                        std::to_string(k.team_size) +
                        " members (one per logical thread); launch it outside the parallel region");
    const int max = team_size_limit(exec, f, level, request);
    if (k.team_size > max) {
      const bool host = Kokkos::SpaceAccessibility<Space, Kokkos::HostSpace>::accessible;
      throw resource_error(
          k.name + ": " + (k.tile.empty() ? "" : "tile " + codegen::list_dims(k.tile) + ", ") +
          "a team of " + std::to_string(k.team_size) + " members (one per logical thread); the " +
          k.backend + " backend's teams hold at most " + std::to_string(max) + " for this kernel" +
          (host ? " (a host team holds at most the thread pool's threads: raise OMP_NUM_THREADS)"
                : "") +
          "; use a smaller tile");
    }
  }
  Kokkos::TeamPolicy<Space> p(exec, static_cast<int>(k.league_size), k.team_size, k.vector_length);
  if (request) p.set_scratch_size(level, Kokkos::PerTeam(request));
  return p;
}

}  // namespace tessera::backends::impl
