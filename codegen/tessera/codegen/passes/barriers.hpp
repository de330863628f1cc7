/// \file passes/barriers.hpp
/// \brief Pass 3: barrier insertion on a kernel's phase program.
///
/// A phase is the code between two potential barriers, run by every logical thread of a tile.
/// A barrier is needed before a phase that reads a scratch buffer written since the last barrier
/// (read-after-write), or writes a scratch buffer read or written since then (write-after-read,
/// write-after-write) — unless every such access is owner-consistent (each element touched by the
/// same logical thread). Loops are handled by walking the body twice: hazards found at the start
/// of the second copy are loop-carried and get a barrier at the end of every iteration.
/// Same rule as TileLang's thread_storage_sync and GridTools' need_sync.
#pragma once

#include <tessera/codegen/kernel_plan.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace tessera::codegen {

struct scratch_access {
  std::string buffer;
  bool write = false;
  bool owner_consistent = false;  ///< every element accessed only by its owning logical thread
};
struct phase_desc {
  std::string name;
  std::vector<scratch_access> accesses;
};
/// prologue, then `loop` repeated (loop_trips > 0 times), then epilogue.
struct phase_program {
  std::vector<phase_desc> prologue, loop, epilogue;
};

/// Returns the barriers of `p`, numbered by phase in the order prologue, loop body, epilogue
/// (the barrier ends phase `after_phase`).
inline std::vector<barrier_plan> insert_barriers(const phase_program& p) {
  std::vector<const phase_desc*> seq;
  for (const auto& ph : p.prologue) seq.push_back(&ph);
  for (int copy = 0; copy < (p.loop.empty() ? 0 : 2); ++copy)
    for (const auto& ph : p.loop) seq.push_back(&ph);
  for (const auto& ph : p.epilogue) seq.push_back(&ph);
  const int np = static_cast<int>(p.prologue.size()), nl = static_cast<int>(p.loop.size());
  std::set<std::string> written, read;
  std::vector<barrier_plan> out;
  for (int s = 0; s < static_cast<int>(seq.size()); ++s) {
    std::string hazard;
    for (const auto& a : seq[s]->accesses) {
      if (a.owner_consistent) continue;
      if (!a.write && written.count(a.buffer)) hazard = "read-after-write on " + a.buffer;
      if (a.write && read.count(a.buffer)) hazard = "write-after-read on " + a.buffer;
      if (a.write && written.count(a.buffer) && hazard.empty())
        hazard = "write-after-write on " + a.buffer;
      if (!hazard.empty()) break;
    }
    if (!hazard.empty()) {
      written.clear();
      read.clear();
      // Map position s to the program's phase numbering.
      const bool in_first_copy = s >= np && s < np + nl;
      const bool in_second_copy = s >= np + nl && s < np + 2 * nl;
      if (in_first_copy) {
        if (s - np > 0)  // barriers inside the body are taken from the second copy
          ;
        else
          out.push_back({np - 1, "all memory", hazard + " (entering the loop)", false});
      } else if (in_second_copy) {
        const int pos = s - np - nl;  // 0: loop-carried, at the end of every iteration
        if (pos == 0)
          out.push_back({np + nl - 1, "tile_static memory", hazard + " across iterations", true});
        else
          out.push_back({np + pos - 1, "tile_static memory", hazard, true});
      } else {
        const int phase = s < np ? s - 1 : s - nl - 1;  // epilogue follows one loop copy
        out.push_back({phase, "tile_static memory", hazard, false});
      }
    }
    for (const auto& a : seq[s]->accesses) {
      if (a.owner_consistent) continue;
      (a.write ? written : read).insert(a.buffer);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const barrier_plan& a, const barrier_plan& b) {
    return a.after_phase < b.after_phase;
  });
  return out;
}

/// Total phases of a program (prologue + body + epilogue).
inline int phase_count(const phase_program& p) {
  return static_cast<int>(p.prologue.size() + p.loop.size() + p.epilogue.size());
}

}  // namespace tessera::codegen
