/// \file kernels/plan_check.hpp
/// \brief The launcher's check that the plan it reads is the kernel it runs. Each kernel
///        family states what its code does in the plan's terms — team size, tile, scratch
///        buffers (in plan order, with the bytes the code touches), barriers (after which phase,
///        inside the loop or not) — and `check_plan` compares that with the plan before the
///        launch: a plan the kernel was not written for is a `plan_error` naming the kernel, the
///        plan and every difference, never a silent wrong answer or a deadlock.
#pragma once

#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/errors.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::backends::impl {

/// One barrier as a kernel's code runs it: it ends phase `after_phase` of the plan and runs once
/// per iteration of the kernel's loop (`in_loop`) or once.
struct barrier_shape {
  int after_phase = 0;
  bool in_loop = false;
};

/// What a kernel's code runs, in the plan's terms. Members left at their defaults are not
/// compared.
struct kernel_shape {
  std::string kernel;                      ///< the kernel, as messages name it
  int team_size = 0;                       ///< team members the code assumes (0: not compared)
  std::vector<std::int64_t> tile;          ///< output tile the code computes (empty: not compared)
  bool compare_scratch = false;            ///< compare the scratch buffers with `scratch_bytes`
  std::vector<std::size_t> scratch_bytes;  ///< each scratch buffer, in plan order: bytes the
                                           ///< code touches (the plan may give more, not less)
  bool compare_barriers = false;           ///< compare the plan's barriers with `barriers`
  std::vector<barrier_shape> barriers;
};

/// The plan's scratch buffers (scratch level 0 or 1), in plan order.
inline std::vector<const codegen::buffer_plan*> scratch_buffers(const codegen::kernel_plan& k) {
  std::vector<const codegen::buffer_plan*> v;
  for (const auto& b : k.buffers)
    if (b.space == codegen::memory_space_kind::scratch_level0 ||
        b.space == codegen::memory_space_kind::scratch_level1)
      v.push_back(&b);
  return v;
}

/// \throws plan_error when plan `k` differs from what the kernel runs (`s`)
inline void check_plan(const codegen::kernel_plan& k, const kernel_shape& s) {
  std::string diff;
  auto add = [&](const std::string& d) {
    diff += (diff.empty() ? "" : "; ") + d;
  };
  if (s.team_size > 0 && k.team_size != s.team_size)
    add("team size " + std::to_string(k.team_size) + " planned, " + std::to_string(s.team_size) +
        " run");
  if (!s.tile.empty() && k.tile != s.tile)
    add("tile " + codegen::list_dims(k.tile) + " planned, " + codegen::list_dims(s.tile) + " run");
  if (s.compare_scratch) {
    const auto planned = scratch_buffers(k);
    if (planned.size() != s.scratch_bytes.size()) {
      add(std::to_string(planned.size()) + " scratch buffers planned, " +
          std::to_string(s.scratch_bytes.size()) + " used");
    } else {
      for (std::size_t i = 0; i < planned.size(); ++i) {
        const auto& b = *planned[i];
        if (b.bytes < s.scratch_bytes[i])
          add("scratch buffer " + b.name + ": " + std::to_string(b.bytes) + " B planned, " +
              std::to_string(s.scratch_bytes[i]) + " B used");
        if (b.offset + b.bytes > k.scratch_bytes[k.scratch_level])
          add("scratch buffer " + b.name + " ends at byte " + std::to_string(b.offset + b.bytes) +
              ", past the " + std::to_string(k.scratch_bytes[k.scratch_level]) +
              " B the plan requests");
      }
    }
  }
  if (s.compare_barriers) {
    bool same = k.barriers.size() == s.barriers.size();
    for (std::size_t i = 0; same && i < k.barriers.size(); ++i)
      same = k.barriers[i].after_phase == s.barriers[i].after_phase &&
             k.barriers[i].in_loop == s.barriers[i].in_loop;
    if (!same) {
      auto text = [](auto const& list) {
        std::string t;
        for (const auto& b : list)
          t += (t.empty() ? "" : ", ") + std::string("after phase ") +
               std::to_string(b.after_phase) + (b.in_loop ? " (per iteration)" : "");
        return std::to_string(list.size()) + (t.empty() ? "" : " [" + t + "]");
      };
      add("barriers: " + text(k.barriers) + " planned, " + text(s.barriers) + " run");
    }
  }
  if (!diff.empty())
    throw plan_error("tessera: the " + s.kernel + " kernel cannot run plan '" + k.name + "' (" +
                     k.backend + "): " + diff);
}

}  // namespace tessera::backends::impl
