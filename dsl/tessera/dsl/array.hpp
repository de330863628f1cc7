/// \file array.hpp
/// \brief `array<T,N>` (device-resident data, a Kokkos::View with LayoutRight) and
///        `array_view<T,N>` (caller-owned host memory with C++ AMP's lazy copies).
#pragma once

#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/index.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera {

/// Execution space every Tessera launch uses (Kokkos' default: Cuda, HIP, OpenMP or Serial).
using execution_space = Kokkos::DefaultExecutionSpace;
/// Memory space of array<T,N> (the execution space's memory).
using memory_space = execution_space::memory_space;

namespace impl {
template <class T, int N>
struct view_data;
template <class T>
struct view_data<T, 1> {
  using type = T*;
};
template <class T>
struct view_data<T, 2> {
  using type = T**;
};
template <class T>
struct view_data<T, 3> {
  using type = T***;
};
template <class T, int N, class Space>
using view_t = Kokkos::View<typename view_data<T, N>::type, Kokkos::LayoutRight, Space>;
template <class T, int N>
using unmanaged_host_view_t =
    Kokkos::View<typename view_data<T, N>::type, Kokkos::LayoutRight, Kokkos::HostSpace,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

template <int N, class V>
extent<N> extent_of_view(const V& v) {
  extent<N> e;
  for (int d = 0; d < N; ++d) e[d] = static_cast<index_type>(v.extent(d));
  return e;
}
template <int N>
void check_extent_nonnegative(const char* fn, const extent<N>& e) {
  for (int d = 0; d < N; ++d)
    if (e[d] < 0) throw shape_error(std::string(fn) + ": negative extent " + to_string(e));
}
template <class V, int N>
V make_view(const std::string& label, const extent<N>& e) {
  if constexpr (N == 1) return V(label, e[0]);
  if constexpr (N == 2) return V(label, e[0], e[1]);
  if constexpr (N == 3) return V(label, e[0], e[1], e[2]);
}
template <class V, class P, int N>
V wrap_view(P* p, const extent<N>& e) {
  if constexpr (N == 1) return V(p, e[0]);
  if constexpr (N == 2) return V(p, e[0], e[1]);
  if constexpr (N == 3) return V(p, e[0], e[1], e[2]);
}
template <class V, int N>
TESSERA_FORCEINLINE decltype(auto) view_at(const V& v, const index<N>& i) {
  if constexpr (N == 1) return v(i[0]);
  if constexpr (N == 2) return v(i[0], i[1]);
  if constexpr (N == 3) return v(i[0], i[1], i[2]);
}
}  // namespace impl

/// N-dimensional data in the default Kokkos memory space (device memory on GPU backends).
///
/// A handle like Kokkos::View: copies share the data, so kernels capture it by value
/// (`[=]`). `copy()` makes a deep copy. Elements are accessed with `a(i, j)` or `a[idx]`
/// inside kernels; on host backends also on the host. Layout is row-major (LayoutRight).
/// \tparam T element type (arithmetic)  \tparam N rank, 1..3
template <class T, int N>
class array {
 public:
  using value_type = T;
  static constexpr int rank = N;
  using view_type = impl::view_t<T, N, memory_space>;

  /// The shape (C++ AMP's `array::extent` property). Read-only by convention.
  tessera::extent<N> extent;

  array() = default;
  /// Allocates `e.size()` elements, zero-filled. \throws shape_error on a negative extent.
  explicit array(const tessera::extent<N>& e, const std::string& label = "tessera::array")
      : extent(e),
        v_((impl::check_extent_nonnegative("tessera::array", e),
            impl::make_view<view_type>(label, e))) {}
  template <class... I>
  requires(sizeof...(I) == N && (std::is_integral_v<I> && ...)) explicit array(I... e)
      : array(tessera::extent<N>(e...)) {}
  /// Allocates and copies [first, last) (row-major, at least e.size() elements) from the host.
  /// \throws shape_error when the range is shorter than e.size().
  template <class It>
  array(const tessera::extent<N>& e, It first, It last) : array(e) {
    if (std::distance(first, last) < e.size())
      throw shape_error("tessera::array(extent, first, last): range has " +
                        std::to_string(std::distance(first, last)) + " elements, extent " +
                        to_string(e) + " needs " + std::to_string(e.size()));
    auto h = Kokkos::create_mirror_view(v_);
    T* p = h.data();
    for (index_type k = 0; k < e.size(); ++k, ++first) p[k] = *first;
    Kokkos::deep_copy(v_, h);
  }
  /// Wraps an existing Kokkos::View (shares it, no copy).
  explicit array(const view_type& v) : extent(impl::extent_of_view<N>(v)), v_(v) {}

  /// The underlying Kokkos::View (LayoutRight, default memory space).
  TESSERA_INLINE const view_type& view() const { return v_; }
  TESSERA_INLINE T* data() const { return v_.data(); }
  tessera::extent<N> get_extent() const { return extent; }
  index_type size() const { return extent.size(); }

  template <class... I>
  requires(sizeof...(I) == N) TESSERA_FORCEINLINE T& operator()(I... i) const { return v_(i...); }
  TESSERA_FORCEINLINE T& operator[](const index<N>& i) const { return impl::view_at(v_, i); }

  /// Evaluates a Tier 1 expression into this array (see expr_eval.hpp). An empty (default
  /// constructed) array is first allocated with the expression's extent.
  /// \throws shape_error when the extents differ
  template <class E>
  requires requires { typename E::tessera_expression_tag; }
  array& operator=(const E& e);
  array(const array&) = default;
  array& operator=(const array&) = default;
  array(array&&) = default;
  array& operator=(array&&) = default;
  /// Evaluates an expression into a new array: `tessera::array<float, 2> C = A + B;`.
  template <class E>
  requires requires { typename E::tessera_expression_tag; }
  array(const E& e) : array(e.get_extent()) { *this = e; }

  /// A deep copy.
  array copy() const {
    array r(extent);
    Kokkos::deep_copy(r.v_, v_);
    return r;
  }
  /// Copies the data to the host, row-major (C++ AMP's `std::vector<T> v = a;`).
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<std::size_t>(extent.size()));
    if (out.empty()) return out;
    auto h = impl::wrap_view<impl::unmanaged_host_view_t<T, N>>(out.data(), extent);
    Kokkos::deep_copy(h, v_);
    return out;
  }
  operator std::vector<T>() const { return to_vector(); }

 private:
  view_type v_;
};

/// A view of caller-owned, row-major host memory with C++ AMP's lazy-copy rules.
///
/// On host backends (Serial, OpenMP) kernels read and write the caller's memory directly and
/// no copy is ever made. On GPU backends a device copy is made the first time the view is
/// captured by a kernel launched from the host, and copied back by `synchronize()` or when the
/// last copy of the view is destroyed. `discard_data()` drops the current contents so the next
/// capture copies nothing (use it for outputs).
/// \tparam T element type; `const T` for read-only inputs  \tparam N rank, 1..3
template <class T, int N>
class array_view {
  using nc_t = std::remove_const_t<T>;

 public:
  using value_type = T;
  static constexpr int rank = N;
  using view_type = impl::view_t<T, N, memory_space>;
  using host_view_type = impl::unmanaged_host_view_t<T, N>;

  tessera::extent<N> extent;

  array_view() = default;
  /// Views `e.size()` elements starting at `data` (row-major). The memory must outlive the view.
  array_view(const tessera::extent<N>& e, T* data) : extent(e) { init(data); }
  /// AMP's `array_view<int,2> a(3, 2, ptr)`.
  array_view(index_type e0, T* data) requires(N == 1) : array_view(tessera::extent<N>(e0), data) {}
  array_view(index_type e0, index_type e1, T* data) requires(N == 2)
      : array_view(tessera::extent<N>(e0, e1), data) {}
  array_view(index_type e0, index_type e1, index_type e2, T* data) requires(N == 3)
      : array_view(tessera::extent<N>(e0, e1, e2), data) {}
  /// Views a std::vector's storage. \throws shape_error when it holds fewer than e.size().
  template <class V>
  requires requires(V& v) {
    v.data();
    v.size();
  }
  array_view(const tessera::extent<N>& e, V& container) : extent(e) {
    if (static_cast<index_type>(container.size()) < e.size())
      throw shape_error("tessera::array_view(extent, container): container has " +
                        std::to_string(container.size()) + " elements, extent " + to_string(e) +
                        " needs " + std::to_string(e.size()));
    init(container.data());
  }
  /// Views an array's data (no copy; always device-resident).
  array_view(const array<nc_t, N>& a) : extent(a.extent), dev_(a.view()) {}

  // Copies and destruction are host/device functions because kernels capture the view by
  // value. The shared bookkeeping (a host-only, reference-counted `state`) is touched only in
  // the host pass; a copy made on the host is how a kernel capture shows up.
  TESSERA_INLINE array_view(const array_view& o)
      : extent(o.extent), dev_(o.dev_), host_(o.host_), st_(o.st_) {
#ifndef TESSERA_DEVICE_PASS
    if (st_) ++st_->refs;
    capture_on_host();
#endif
  }
  TESSERA_INLINE array_view& operator=(const array_view& o) {
    if (this != &o) {
      array_view tmp(o);
      swap(tmp);
    }
    return *this;
  }
// GCC 12 reports a use-after-free here once several copies' destructors are inlined one after
// another: it cannot see that only the last decrement reaches zero (a known false positive for
// reference counts). ASan runs of the debug preset check the real behaviour.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
  TESSERA_INLINE ~array_view() {
#ifndef TESSERA_DEVICE_PASS
    if (st_ && --st_->refs == 0) delete st_;
#endif
  }
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif

  /// Device-side Kokkos::View used inside kernels.
  TESSERA_INLINE const view_type& view() const {
    return dev_;
  }
  tessera::extent<N> get_extent() const {
    return extent;
  }

  template <class... I>
  requires(sizeof...(I) == N) TESSERA_FORCEINLINE T& operator()(I... i) const {
    return dev_(i...);
  }
  TESSERA_FORCEINLINE T& operator[](const index<N>& i) const {
    return impl::view_at(dev_, i);
  }

  /// Copies device data back to the caller's memory if a kernel may have changed it.
  void synchronize() const {
    Kokkos::fence();
    if (st_) st_->sync_to_host();
  }
  /// Declares the current contents irrelevant: the next kernel capture copies nothing.
  void discard_data() const {
    if (st_) st_->discard();
  }

 private:
  struct state {
    long refs = 1;
    host_view_type host;
    view_type dev;
    bool device_valid = false;
    bool host_valid = true;
    bool separate = false;  // device memory is not the caller's memory
    void sync_to_host() {
      if (separate && !host_valid) {
        if constexpr (!std::is_const_v<T>) Kokkos::deep_copy(host, dev);
        host_valid = true;
      }
    }
    void discard() {
      device_valid = true;
      host_valid = !separate;
    }
    ~state() {
      try {
        sync_to_host();
      } catch (...) {
      }
    }
  };

  void init(T* data) {
    impl::check_extent_nonnegative("tessera::array_view", extent);
    host_ = impl::wrap_view<host_view_type>(data, extent);
    st_ = new state();
    st_->host = host_;
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible) {
      dev_ = host_;
      st_->dev = dev_;
      st_->device_valid = true;
    } else {
      st_->separate = true;
      dev_ = impl::make_view<view_type>("tessera::array_view", extent);
      st_->dev = dev_;
    }
  }
  // A copy made on the host is how a kernel capture shows up: make the device copy current,
  // and assume a non-const view will be written by the kernel.
  void capture_on_host() const {
    if (!st_ || !st_->separate) return;
    if (!st_->device_valid) {
      Kokkos::deep_copy(
          Kokkos::View<nc_t*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
              const_cast<nc_t*>(dev_.data()), dev_.span()),
          Kokkos::View<const nc_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
              host_.data(), host_.span()));
      st_->device_valid = true;
    }
    if constexpr (!std::is_const_v<T>) st_->host_valid = false;
  }

  view_type dev_;
  host_view_type host_;
  state* st_ = nullptr;
  TESSERA_INLINE void swap(array_view& o) {
    tessera::extent<N> e = extent;
    extent = o.extent;
    o.extent = e;
    view_type d = dev_;
    dev_ = o.dev_;
    o.dev_ = d;
    host_view_type h = host_;
    host_ = o.host_;
    o.host_ = h;
    state* s = st_;
    st_ = o.st_;
    o.st_ = s;
  }
};

/// Reads `v[idx]` if `idx` lies inside v's extent, else returns T() (C++ AMP's guarded read for
/// padded launches). Works with array, array_view, or any type with `.extent` and `operator[]`.
template <class A, int N>
TESSERA_INLINE auto guarded_read(const A& v, const index<N>& idx) {
  using T = std::remove_cvref_t<decltype(v[idx])>;
  const bool in = v.extent.contains(idx);
  if constexpr (requires {
                  v.view().data();
                  v.view().stride(0);
                }) {
    // The element's address is computed unconditionally, in integer arithmetic (no pointer
    // leaves the data, no bounds-checked View access), and only the load is conditional: a
    // loop of guarded reads then if-converts into masked vector loads.
    const auto& kv = v.view();
    std::uintptr_t addr = reinterpret_cast<std::uintptr_t>(kv.data());
    for (int d = 0; d < N; ++d)
      addr += static_cast<std::uintptr_t>(idx[d]) * static_cast<std::uintptr_t>(kv.stride(d)) *
              sizeof(T);
    return in ? *reinterpret_cast<const T*>(addr) : T();
  } else {
    return in ? T(v[idx]) : T();
  }
}
/// Writes `val` to `v[idx]` only if `idx` lies inside v's extent (padded launches).
template <class A, int N, class U>
TESSERA_INLINE void guarded_write(const A& v, const index<N>& idx, const U& val) {
  if (v.extent.contains(idx)) v[idx] = val;
}

}  // namespace tessera
