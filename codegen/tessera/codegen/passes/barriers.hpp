/// \file passes/barriers.hpp
/// \brief Pass 3: barrier insertion on a kernel's phase program.
///
/// A phase is the code between two potential barriers, run by every logical thread of a tile.
/// A barrier is needed before a phase that reads a scratch buffer written since the last barrier
/// (read-after-write), or writes a scratch buffer read or written since then (write-after-read,
/// write-after-write) — unless both accesses are owner-consistent (each element touched by the
/// same logical thread). Loops are handled by walking the body twice: hazards found at the start
/// of the second copy are loop-carried and get a barrier at the end of every iteration.
/// Same rule as TileLang's thread_storage_sync and GridTools' need_sync.
#pragma once

#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/dsl/hazards.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace tessera::codegen {

using tessera::impl::hazard;
using tessera::impl::hazard_tracker;
using tessera::impl::to_string;

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
  std::map<std::string, int> bit;  // buffer name -> bit of the hazard tracker
  auto mask = [&](const phase_desc& ph, bool write, bool owner) {
    std::uint32_t m = 0;
    for (const auto& a : ph.accesses)
      if (a.owner_consistent == owner && a.write == write) {
        if (!bit.count(a.buffer)) bit[a.buffer] = static_cast<int>(bit.size());
        m |= std::uint32_t{1} << (bit[a.buffer] % 32);
      }
    return m;
  };
  auto names = [&](std::uint32_t m) {
    std::string s;
    for (const auto& [name, b] : bit)
      if (m & (std::uint32_t{1} << (b % 32))) s += (s.empty() ? "" : ", ") + name;
    return s;
  };
  hazard_tracker h;
  std::vector<barrier_plan> out;
  for (int s = 0; s < static_cast<int>(seq.size()); ++s) {
    const std::uint32_t r = mask(*seq[s], false, false), w = mask(*seq[s], true, false);
    const std::uint32_t orr = mask(*seq[s], false, true), ow = mask(*seq[s], true, true);
    const hazard hz = h.check(r, w, orr, ow);
    if (hz != hazard::none) {
      const std::string what =
          std::string(to_string(hz)) + " on " + names(h.culprits(r, w, orr, ow));
      h.clear();
      const bool in_first_copy = s >= np && s < np + nl;
      const bool in_second_copy = s >= np + nl && s < np + 2 * nl;
      if (in_first_copy) {
        // Interior barriers of the body are reported once, from the second (steady) copy.
        if (s == np) out.push_back({np - 1, "all memory", what + " (entering the loop)", false});
      } else if (in_second_copy) {
        const int pos = s - np - nl;  // 0: loop-carried, at the end of every iteration
        if (pos == 0)
          out.push_back(
              {np + nl - 1, "tile_static memory", what + " across iterations", true, true});
        else
          out.push_back({np + pos - 1, "tile_static memory", what, true});
      } else {
        const int phase = s < np ? s - 1 : s - nl - 1;  // the epilogue follows one loop copy
        out.push_back({phase, "tile_static memory", what, false});
      }
    }
    h.apply(r, w, orr, ow);
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
