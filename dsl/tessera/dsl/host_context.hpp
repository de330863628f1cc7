/// \file host_context.hpp
/// \brief The hooks through which a tile kernel runs on the host instead of on a Kokkos team —
///        the planning pass, the validation dry run and checked mode — and through which a
///        launch sees the Tessera buffers (arrays, array_views) that a kernel captures.
///        Host-only: nothing here is compiled into GPU device passes.
#pragma once

#include <tessera/dsl/config.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace tessera::impl {

/// The kind of fence a tile barrier or a free-standing fence carries (C++ AMP's variants).
enum class fence_kind { all_memory, global_memory, tile_static_memory };

inline const char* to_string(fence_kind f) {
  switch (f) {
    case fence_kind::all_memory:
      return "all memory";
    case fence_kind::global_memory:
      return "global memory";
    case fence_kind::tile_static_memory:
      return "tile_static memory";
  }
  return "?";
}
/// True when fence `f` orders tile_static (scratch) or global memory.
TESSERA_INLINE constexpr bool fences_tile_static(fence_kind f) {
  return f != fence_kind::global_memory;
}
TESSERA_INLINE constexpr bool fences_global(fence_kind f) {
  return f != fence_kind::tile_static_memory;
}

/// Shape of a tile_static / tile_local buffer as seen by the host passes. Built from the type
/// only (no strings), so the per-launch planning pass allocates nothing.
struct buffer_desc {
  const char* name = nullptr;            ///< user-given name, or nullptr ("tile_static#k")
  std::string (*type_name)() = nullptr;  ///< e.g. "float[16][16]"
  int rank = 0;                          ///< 0 for a scalar
  index_type dims[3] = {1, 1, 1};
  std::size_t elem_bytes = 0;
  std::size_t bytes = 0;  ///< per tile (tile_static) or per logical thread (tile_local)
  std::size_t align = 0;
  index_type elements() const { return dims[0] * dims[1] * dims[2]; }
};

/// The element type's name for plans and messages: "float", "int", ... or "T(8 bytes)".
template <class E>
std::string scalar_type_name() {
  if constexpr (std::is_same_v<E, float>)
    return "float";
  else if constexpr (std::is_same_v<E, double>)
    return "double";
  else if constexpr (std::is_same_v<E, int>)
    return "int";
  else if constexpr (std::is_same_v<E, unsigned>)
    return "unsigned";
  else if constexpr (std::is_same_v<E, long>)
    return "long";
  else if constexpr (std::is_same_v<E, long long>)
    return "long long";
  else if constexpr (std::is_same_v<E, unsigned long>)
    return "unsigned long";
  else if constexpr (std::is_same_v<E, short>)
    return "short";
  else if constexpr (std::is_same_v<E, char>)
    return "char";
  else if constexpr (std::is_same_v<E, bool>)
    return "bool";
  else
    return "T(" + std::to_string(sizeof(E)) + " bytes)";
}

/// "float[16][16]" for U = float[16][16].
template <class U>
std::string array_type_name() {
  std::string s = scalar_type_name<std::remove_all_extents_t<U>>();
  const std::size_t dims[3] = {std::extent_v<U, 0>, std::extent_v<U, 1>, std::extent_v<U, 2>};
  for (int d = 0; d < int(std::rank_v<U>) && d < 3; ++d) {
    s += '[';
    s.append(std::to_string(dims[d]));
    s += ']';
  }
  return s;
}

template <class U>
constexpr buffer_desc describe_buffer(const char* name) {
  using E = std::remove_all_extents_t<U>;
  buffer_desc d;
  d.name = name;
  d.type_name = &array_type_name<U>;
  d.rank = static_cast<int>(std::rank_v<U>);
  if constexpr (std::rank_v<U> >= 1) d.dims[0] = std::extent_v<U, 0>;
  if constexpr (std::rank_v<U> >= 2) d.dims[1] = std::extent_v<U, 1>;
  if constexpr (std::rank_v<U> >= 3) d.dims[2] = std::extent_v<U, 2>;
  d.elem_bytes = sizeof(E);
  d.bytes = sizeof(U);
  d.align = alignof(E);
  return d;
}

template <class T>
void fill_one(void* p) {
  if constexpr (std::is_arithmetic_v<T>)
    *static_cast<T*>(p) = T(1);
  else
    *static_cast<T*>(p) = T{};
}

/// How an access to an element of memory happened, for checked mode.
enum class access_kind { read, write, atomic };

/// A Tessera buffer (array / array_view) captured by a kernel that runs on the host (validation
/// dry run, checked mode): every element access of the kernel's copy goes through it.
class global_hook {
 public:
  virtual ~global_hook() = default;
  /// Storage for element `idx` (rank entries) as the kernel should see it. Throws bounds_error
  /// for an index outside the buffer's extent.
  virtual void* element(const index_type* idx, int rank) = 0;
};

/// True on this host thread while a host executor runs a kernel copy whose buffers route
/// their element accesses through hooks (the validation dry run and checked mode, both run on
/// the launching thread). Everywhere else no hook exists, and element access tests this
/// thread-local flag before the buffer's hook pointer: a CPU backend's for_each loop branches
/// on the flag once, so in its hook-free copy the compiler knows every access is direct and
/// vectorizes the loop (a test of each captured buffer's own hook pointer kept it scalar).
inline bool& hooked_run_flag() {
  static thread_local bool active = false;
  return active;
}
/// hooked_run_flag() on the host; false in device code (kernels on GPUs never see hooks).
TESSERA_FORCEINLINE bool hooked_run_active() {
#ifdef TESSERA_DEVICE_PASS
  return false;
#else
  return hooked_run_flag();
#endif
}
/// Marks this thread as running hooked kernel copies for the scope's lifetime.
class hooked_run_scope {
 public:
  hooked_run_scope() : prev_(hooked_run_flag()) { hooked_run_flag() = true; }
  hooked_run_scope(const hooked_run_scope&) = delete;
  hooked_run_scope& operator=(const hooked_run_scope&) = delete;
  ~hooked_run_scope() { hooked_run_flag() = prev_; }

 private:
  bool prev_;
};

/// Element `idx` of a hooked buffer, out of line: the index is passed by value so that the
/// caller's index never has its address taken (which would keep it in memory and stop the
/// fast path's loops from vectorizing).
template <class T, int N, class Index>
[[gnu::noinline, gnu::cold]] T& hooked_element(global_hook* h, const Index idx) {
  index_type c[N];
  for (int d = 0; d < N; ++d) c[d] = idx[d];
  return *static_cast<T*>(h->element(c, N));
}

/// Lazy copies of an array_view between the caller's host memory and device memory.
class view_sync {
 public:
  virtual ~view_sync() = default;
  /// Makes the device copy current before a kernel; `write`: the kernel may change it (the
  /// host copy becomes stale).
  virtual void to_device(bool write) = 0;
  /// Makes the host copy current before host code reads (or, with `write`, changes) it.
  virtual void to_host(bool write) = 0;
};

/// Where a buffer's elements are: its first element, extents and strides. What aliasing checks
/// and the plan cache's key compare (no allocation: copied per terminal on every assignment).
struct buffer_layout {
  void* data = nullptr;  ///< first element, in the buffer's memory space
  int rank = 0;
  index_type extent[3] = {0, 0, 0};
  index_type stride[3] = {0, 0, 0};  ///< elements; stride[rank - 1] == 1
  std::size_t elem_bytes = 0;
  /// Bytes from data to one past the last element.
  std::size_t span_bytes() const {
    if (rank == 0) return 0;
    index_type last = 0;
    for (int d = 0; d < rank; ++d) {
      if (extent[d] == 0) return 0;
      last += (extent[d] - 1) * stride[d];
    }
    return std::size_t(last + 1) * elem_bytes;
  }
};

/// What a launch learns about a Tessera buffer when the kernel that captures it is copied: its
/// layout, and how to name, read and prepare it.
struct captured_buffer : buffer_layout {
  std::string (*type_name)() = nullptr;
  std::string label;            ///< e.g. the array's Kokkos label
  bool read_only = false;       ///< array_view<const T> / array<const T>
  bool host_accessible = true;  ///< data can be dereferenced on the host
  view_sync* sync = nullptr;    ///< array_view state (lazy copies), else nullptr
  /// Host copy of the first element when the data lives in device memory and a host copy
  /// exists (array_view over host memory, after sync->to_host()); else nullptr.
  void* (*host_data)(const void* self) = nullptr;
  const void* self = nullptr;  ///< argument of host_data
  /// Writes the element type's 1 to p (values a dry run reads from device-only memory).
  void (*fill_one)(void* p) = nullptr;
};

/// Sees every Tessera buffer a kernel captures while a launch copies the kernel (the copy
/// constructors of array and array_view report to the current observer of this thread).
class capture_observer {
 public:
  virtual ~capture_observer() = default;
  /// Returns the hook the captured copy should route its element accesses through (nullptr:
  /// direct access).
  virtual global_hook* on_capture(const captured_buffer& b) = 0;
};

/// This host thread's capture observer (nullptr outside a launch's kernel copy).
inline capture_observer*& current_capture_observer() {
  static thread_local capture_observer* current = nullptr;
  return current;
}
/// Installs `o` as this thread's capture observer for the scope's lifetime.
class capture_scope {
 public:
  explicit capture_scope(capture_observer* o) : prev_(current_capture_observer()) {
    current_capture_observer() = o;
  }
  capture_scope(const capture_scope&) = delete;
  capture_scope& operator=(const capture_scope&) = delete;
  ~capture_scope() { current_capture_observer() = prev_; }

 private:
  capture_observer* prev_;
};

/// Runs a tile kernel's body on the host: the planning pass (sizing: for_each bodies are
/// skipped), the validation dry run and checked mode (every logical thread runs, one after
/// another). Implemented in backends/checked.hpp.
class host_context {
 public:
  virtual ~host_context() = default;
  /// True in the planning pass: for_each bodies are skipped, only allocations and barriers
  /// are recorded.
  virtual bool sizing() const = 0;
  /// A tile_static allocation; returns host storage (zero-filled when sizing, so tile-uniform
  /// reads are defined) and the buffer id used by access().
  virtual void* allocate_static(const buffer_desc& d, int& id) = 0;
  /// A tile_local declaration: returns host storage for one U per logical thread (nullptr when
  /// sizing) and the id used by local_access().
  virtual void* allocate_local(const buffer_desc& d, int& id) = 0;
  /// An access to logical thread `slot`'s copy of tile_local `id` (by the running logical
  /// thread, or by tile-uniform code): tile_local is private to its logical thread.
  virtual void local_access(int /*id*/, int /*slot*/) {}
  /// A tile_static element access.
  virtual void access(int id, index_type linear, access_kind k) = 0;
  /// An index outside buffer `id`'s extent: throws bounds_error.
  virtual void out_of_bounds(int id, const index_type* idx, int rank) = 0;
  /// A tile barrier (from tile-uniform code, or — a misuse — from inside for_each).
  virtual void barrier(fence_kind f) = 0;
  /// A free-standing fence (tile_static_memory_fence, ...).
  virtual void fence(fence_kind f) = 0;
  /// Why the next barrier is there (Tier 2 programs say which hazard it resolves): the hazard
  /// ("read-after-write", ...), the buffer it is on and the phase it comes before ("load",
  /// "compute", "store"). All three are static strings (the planning pass keeps the pointers).
  virtual void barrier_reason(const char* /*hazard*/, const char* /*buffer*/,
                              const char* /*phase*/) {}
  /// A tile collective (reduce_over_tile, ...) begins, called from `what` (its name): every
  /// logical thread must reach it together, so from tile-uniform code (checked mode reports one
  /// inside for_each).
  virtual void collective(const char* /*what*/) {}
  /// A for_each phase begins (true) or ends (false).
  virtual void phase_scope(bool begin) = 0;
  /// The logical thread now running (row-major local rank), or -1 for code outside for_each.
  virtual void set_thread(int linear) = 0;
  /// An atomic operation on `p` (global memory seen through a global_hook).
  virtual void atomic_global(void*) {}
};

/// The host context running a kernel on this thread (checked mode, dry run), for code that
/// receives a plain pointer (atomics on global memory).
inline host_context*& current_host_context() {
  static thread_local host_context* current = nullptr;
  return current;
}

}  // namespace tessera::impl
