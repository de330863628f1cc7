/// \file launch.hpp
/// \brief The one place Tessera hands kernels to Kokkos. Every kernel of every backend is
///        launched through `backends::impl::launch(label, policy, functor)`, which reports what
///        Kokkos receives — label, league, team and vector sizes, scratch bytes per level, read
///        back from the Kokkos policy object — to an optional observer. Tests use it to check
///        that what runs is exactly what explain() printed (together with Kokkos Tools'
///        begin-kernel callbacks, which see the labels); tools can use it to log launches.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera::backends {

/// One kernel launch as Kokkos received it.
struct launch_record {
  std::string label;             ///< the Kokkos kernel label (what profiling tools show)
  std::string policy;            ///< "TeamPolicy" or "RangePolicy"
  std::int64_t league_size = 0;  ///< teams (TeamPolicy) or iterations (RangePolicy)
  int team_size = 1;
  int vector_length = 1;
  std::size_t scratch_bytes[2] = {0, 0};  ///< per team, scratch levels 0 and 1, as requested
};

/// Called before each launch with what Kokkos receives (nullptr: nobody listens).
using launch_observer = void (*)(const launch_record&);

/// The process-wide launch observer; set it to observe, reset it to nullptr to stop.
/// Not synchronised: set it while no launch is in flight.
inline launch_observer& current_launch_observer() {
  static launch_observer observer = nullptr;
  return observer;
}

namespace impl {

/// What `p` will launch, read back from the policy.
template <class Policy>
launch_record describe_launch(const std::string& label, const Policy& p) {
  launch_record r;
  r.label = label;
  if constexpr (requires { p.league_size(); }) {
    r.policy = "TeamPolicy";
    r.league_size = p.league_size();
    r.team_size = p.team_size();
    r.vector_length = p.impl_vector_length();
    r.scratch_bytes[0] = p.scratch_size(0, r.team_size);
    r.scratch_bytes[1] = p.scratch_size(1, r.team_size);
  } else {
    r.policy = "RangePolicy";
    r.league_size = static_cast<std::int64_t>(p.end() - p.begin());
  }
  return r;
}

/// Kokkos::parallel_for(label, policy, functor), reported to the launch observer first.
template <class Policy, class F>
void launch(const std::string& label, const Policy& policy, const F& functor) {
  if (launch_observer o = current_launch_observer()) o(describe_launch(label, policy));
  Kokkos::parallel_for(label, policy, functor);
}

/// A Kokkos Tools region named `name` (pushRegion at construction, popRegion at destruction,
/// so also when the code inside throws): what profiling tools show around a Tessera
/// operation's kernels, or around its work on the calling thread where it launches none.
class profiling_region {
 public:
  explicit profiling_region(const std::string& name) { Kokkos::Tools::pushRegion(name); }
  profiling_region(const profiling_region&) = delete;
  profiling_region& operator=(const profiling_region&) = delete;
  ~profiling_region() { Kokkos::Tools::popRegion(); }
};

}  // namespace impl
}  // namespace tessera::backends
