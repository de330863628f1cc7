/// \file tile_launch/functor.hpp
/// \brief The Kokkos side of Tier 0 launches: the kernel copy the device runs (array_views made
///        current on it), the team functor of a tile launch and its planned TeamPolicy, the
///        functor of the element-parallel launch, and the profiling region around a launch.
#pragma once

#include <tessera/backends/kernels/team_policy.hpp>
#include <tessera/backends/launch.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/host_context.hpp>
#include <tessera/dsl/tile_group.hpp>

#include <cstdint>
#include <string>

namespace tessera::backends::impl {

/// While a fast launch copies its kernel: array_views it captures are made current on the
/// device (GPU backends; host backends share the caller's memory).
class device_capture final : public tessera::impl::capture_observer {
 public:
  tessera::impl::global_hook* on_capture(const tessera::impl::captured_buffer& b) override {
    if (b.sync) b.sync->to_device(!b.read_only);
    return nullptr;
  }
};
/// A copy of `kernel` as the device will run it (array_views synchronized to the device).
template <class F>
F device_copy(const F& kernel) {
  if constexpr (host_accessible_memory) {
    return kernel;
  } else {
    device_capture obs;
    tessera::impl::capture_scope scope(&obs);
    return F(kernel);
  }
}

/// The Kokkos functor of a tile launch: one call per team = per tile.
template <class F, class Space, int... T>
struct tile_functor {
  static constexpr int rank = sizeof...(T);
  using member_type = typename Kokkos::TeamPolicy<Space>::member_type;
  F kernel;
  extent<rank> tiles;  // tiles per dimension
  index<rank> first;   // global index of tile 0's first logical thread (sub-domain origin)
  int level;
  std::size_t bytes;

  // flatten: the kernel body and everything it calls are inlined here, where the group's host
  // context is visibly null, so every checked-mode hook folds away and the phases vectorize.
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    constexpr index_type dims[rank] = {T...};
    index_type r = team.league_rank();
    index<rank> tile, origin;
    for (int d = rank - 1; d >= 0; --d) {
      tile[d] = r % tiles[d];
      r /= tiles[d];
      origin[d] = first[d] + tile[d] * dims[d];
    }
    char* scratch = nullptr;
    if (bytes) {
      // Over-allocated by 64 bytes so the base can be aligned for vector loads.
      auto raw = reinterpret_cast<std::uintptr_t>(team.team_scratch(level).get_shmem(bytes + 64));
      scratch = reinterpret_cast<char*>((raw + 63) & ~std::uintptr_t{63});
    }
    // The GPU mapping runs logical thread l on member l (tile_local is the member's register):
    // a team of another size would compute a wrong answer, so it stops here instead.
    if constexpr (tessera::impl::tile_mapping<Space>::thread_per_logical)
      if (team.team_size() != (T * ...))
        tessera::impl::misuse_in_kernel(
            "tessera: a tile launch under the GPU mapping whose team size differs from the "
            "tile's logical threads");
    basic_tile_group<Space, T...> g(team, scratch, bytes, tile, origin);
    kernel(g);
  }
};

/// Launches `kernel` on `te` exactly as `plan` says (league, team size, scratch level and
/// bytes). \throws resource_error when the team size exceeds what the backend allows for it;
/// usage_error when the backend would run the plan's team with fewer members (nested OpenMP)
template <class Space, int... T, class F>
void launch_planned(const Space& exec, const tiled_extent<T...>& te, const F& kernel,
                    const codegen::kernel_plan& plan) {
  const int level = plan.scratch_level;
  const std::size_t bytes = plan.scratch_bytes[level];
  using functor = tile_functor<F, Space, T...>;
  functor fn{device_copy(kernel), te.tile_counts(), te.get_origin(), level, bytes};
  const auto policy = planned_team_policy(exec, plan, fn, level, bytes ? bytes + 64 : 0);
  launch(plan.label, policy, fn);
}

/// Functor of the element-parallel launch: kernel(index<N>) per point.
template <class F, int N>
struct element_functor {
  F kernel;
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(index_type i) const requires(N == 1) {
    kernel(index<1>(i));
  }
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(index_type i, index_type j) const
      requires(N == 2) {
    kernel(index<2>(i, j));
  }
  TESSERA_FLATTEN KOKKOS_INLINE_FUNCTION void operator()(index_type i, index_type j,
                                                         index_type k) const requires(N == 3) {
    kernel(index<3>(i, j, k));
  }
};

/// Functor of the element-parallel launch on CPU backends: iteration r is row r of the
/// sub-domain (origin o, extent x; rank 1: chunk r of `cols` points), one loop over its last
/// dimension in two copies, as tile kernels' phases: outside the host executors no buffer has
/// a hook, the compiler knows it, and the loop vectorizes. Flattened so that the kernel body is
/// inlined into the loop whatever its size (a call per point stays scalar).
template <class F, int N>
struct element_rows_functor {
  F kernel;
  extent<N> x;
  index<N> o;
  index_type cols;
  TESSERA_FLATTEN void operator()(index_type r) const {
    index_type j0 = 0, j1 = cols;
    index<N> i;
    if constexpr (N == 1) {
      j0 = r * cols;
      j1 = j0 + cols < x[0] ? j0 + cols : x[0];
    } else {
      i = tessera::impl::unflatten(x, r * cols) + o;
    }
    j0 += o[N - 1];
    j1 += o[N - 1];
    auto at = [&](index_type j) {
      index<N> k = i;
      k[N - 1] = j;
      return k;
    };
    if (tessera::impl::hooked_run_active()) {
      for (index_type j = j0; j < j1; ++j) kernel(at(j));
    } else {
      TESSERA_IVDEP
      for (index_type j = j0; j < j1; ++j) {
        TESSERA_HOST_ASSUME(!tessera::impl::hooked_run_active());
        kernel(at(j));
      }
    }
  }
};

}  // namespace tessera::backends::impl
