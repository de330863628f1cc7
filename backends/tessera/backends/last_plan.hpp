/// \file last_plan.hpp
/// \brief This thread's last plan of an operation that has no expression type of its own
///        (whole-array reductions, scans, histograms, sorts): a repeated call with the same key
///        takes it without planning again. Planning builds the plan's strings and vectors and
///        the backend's target, about 0.65 us per call, which a small scan or histogram would
///        otherwise pay every time. Expressions have their own cache (codegen/plan_cache.hpp).
#pragma once

#include <tessera/codegen/plan_cache.hpp>
#include <tessera/dsl/config.hpp>

#include <array>
#include <atomic>
#include <cstdint>

namespace tessera::backends::impl {

/// One thread's last plan of one operation and the key it was made for.
template <class Plan, std::size_t K>
struct last_plan_entry {
  bool valid = false;
  std::uint64_t generation = 0;  ///< codegen::target_generation() when it was made
  std::array<std::int64_t, K> key{};
  Plan plan{};
};

/// Makes entry e's plan with make() for key and generation gen (out of line: the caller keeps
/// only the comparison). If make() throws, e holds no plan.
template <class Plan, std::size_t K, class Make>
TESSERA_HOST_NOINLINE void remake_last_plan(last_plan_entry<Plan, K>& e,
                                            const std::array<std::int64_t, K>& key,
                                            std::uint64_t gen, Make& make) {
  e.valid = false;
  e.plan = make();
  e.key = key;
  e.generation = gen;
  e.valid = true;
}

/// This thread's plan for `key`, made by make() (which returns a Plan) only when the last call
/// with the same Tag on this thread had another key, or the target has changed since
/// (codegen::target_generation: tuning, set_matmul_blocking, ...).
/// \tparam Tag a type naming the operation and every template argument its plan depends on
///         (one entry per Tag and thread)
/// \param key [in] everything else the plan depends on: sizes, flags, the execution space's
///        concurrency (the target is made for it)
/// \return the plan; the reference stays valid until this thread's next call with the same Tag
///         (a caller that plans again while using it, e.g. a nested scan, plans directly).
/// Inlined: the comparison is all a repeated call costs (called, it took a one-element sum
/// from 17.6 to 20.3 ns on a Zen 4 core).
template <class Tag, class Plan, std::size_t K, class Make>
TESSERA_HOST_FORCEINLINE const Plan& last_plan(const std::array<std::int64_t, K>& key,
                                               Make&& make) {
  static thread_local last_plan_entry<Plan, K> last;
  const std::uint64_t gen = codegen::target_generation().load(std::memory_order_relaxed);
  if (!last.valid || last.generation != gen || last.key != key) [[unlikely]]
    remake_last_plan(last, key, gen, make);
  return last.plan;
}

}  // namespace tessera::backends::impl
