/// \file plan_cache.hpp
/// \brief Plans are built once and reused: a cache per expression type, keyed by the
///        expression's fingerprint (build_graph.hpp) and the target's generation. A repeated
///        assignment costs a key computation and one lookup, not a lowering; a repeat of the
///        thread's last one on the same memory, a raw key and one comparison.
#pragma once

#include <tessera/codegen/build_graph.hpp>
#include <tessera/codegen/lower.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace tessera::codegen {

/// Changes whenever something every plan depends on changes (the target's blocking after
/// tuning, ...): cached plans of older generations are not used again.
inline std::atomic<std::uint64_t>& target_generation() {
  static std::atomic<std::uint64_t> g{0};
  return g;
}

template <class Key>
struct key_hash {
  std::size_t operator()(const Key& k) const {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the 64-bit entries
    for (auto v : k) {
      h ^= static_cast<std::uint64_t>(v);
      h *= 1099511628211ull;
    }
    return static_cast<std::size_t>(h);
  }
};

/// The cache of plans of expression type E (one per type, process-wide, thread-safe).
template <class E>
class plan_cache {
 public:
  using key_type = std::array<std::int64_t, fingerprint_size<E> + 2>;
  using raw_key_type = std::array<std::int64_t, raw_key_size<E> + 2>;

  /// The plan of `e` assigned to `dst` (nullptr: a fresh array) for target `t()`, built by
  /// lowering on first use. `t` is called only when the plan must be built. The reference stays
  /// valid until this thread's next call for the same expression type (plans evicted from the
  /// shared map live on while a thread still holds them).
  template <class TargetFn>
  static const lowered& get(const E& e, const tessera::impl::captured_buffer* dst,
                            std::uint64_t target_key, TargetFn&& t) {
    const auto generation =
        static_cast<std::int64_t>(target_generation().load(std::memory_order_relaxed));
    // This thread's last plan of type E: a repeat with the same memory, extents, strides and
    // schedules (raw_key_into) takes it without a fingerprint, one of the same shape with
    // other memory after the fingerprint; neither takes a lock.
    static thread_local last_hit last;
    raw_key_type raw;
    raw_key_into(e, dst, raw.data());
    raw[raw_key_size<E>] = static_cast<std::int64_t>(target_key);
    raw[raw_key_size<E> + 1] = generation;
    if (last.plan && last.raw == raw) return *last.plan;
    key_type key;
    fingerprint_into(e, dst, key.data());  // in place: a copy would stall (fingerprint_into)
    key[fingerprint_size<E>] = static_cast<std::int64_t>(target_key);
    key[fingerprint_size<E> + 1] = generation;
    if (last.plan && last.key == key) {
      last.raw = raw;
      return *last.plan;
    }
    auto& c = instance();
    std::shared_ptr<const lowered> plan;
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      auto it = c.map.find(key);
      if (it != c.map.end()) plan = it->second;
    }
    if (!plan) {
      plan = std::make_shared<const lowered>(lower(build_graph(e, dst), t()));
      std::lock_guard<std::mutex> lock(c.mutex);
      if (c.map.size() > 4096) c.map.clear();  // bounded: many distinct shapes of one type
      plan = c.map.emplace(key, std::move(plan)).first->second;
    }
    last.key = key;
    last.raw = raw;
    last.plan = std::move(plan);
    return *last.plan;
  }

 private:
  struct last_hit {
    key_type key{};
    raw_key_type raw{};
    std::shared_ptr<const lowered> plan;
  };
  struct state {
    std::mutex mutex;
    std::unordered_map<key_type, std::shared_ptr<const lowered>, key_hash<key_type>> map;
  };
  static state& instance() {
    static state s;
    return s;
  }
};

}  // namespace tessera::codegen
