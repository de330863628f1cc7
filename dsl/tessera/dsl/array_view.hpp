/// \file array_view.hpp
/// \brief `array_view<T,N>`: a view of caller-owned row-major host memory (or of an array) with
///        C++ AMP's lazy copies (the copy state: view_state.hpp), sections, projections,
///        reshapes and reinterpretation.
#pragma once

#include <tessera/dsl/array.hpp>
#include <tessera/dsl/view_state.hpp>

#include <atomic>
#include <cstring>
#include <memory>

namespace tessera {

namespace impl {
/// A host container whose storage an array_view can view (std::vector, std::array, Eigen
/// matrices, ...), but not a Tessera buffer.
template <class V>
concept host_container = requires(V& v) {
  v.data();
  v.size();
}
&&!requires(V & v) {
  v.describe();
};

}  // namespace impl

/// A view of N-dimensional data with C++ AMP's lazy-copy rules.
///
/// Over caller-owned, row-major host memory: on host backends (Serial, OpenMP) kernels read and
/// write the caller's memory directly and no copy is ever made. On GPU backends the data is
/// copied to the device when a kernel that captures the view is launched (and not before), and
/// back by `synchronize()`, by host element access, or when the last view is destroyed.
/// `discard_data()` declares the contents irrelevant so the next launch copies nothing (use it
/// for outputs); `refresh()` declares that the caller changed the host memory behind the view.
/// Over an array (`array_view<T,N> v(a)`): no copy; host access on GPU backends reads a host
/// copy made on demand.
///
/// Sections (`section`), projections (`v[i]` of a rank >= 2 view), reshapes (`view_as`) and
/// reinterpretations (`reinterpret_as`) share the data and the copy state; the last dimension
/// of every view is contiguous. Element access `v(i, j)`, `v[idx]` works in kernels of every
/// backend and in host code.
/// \tparam T element type; `const T` for read-only data  \tparam N rank, 1..3
template <class T, int N>
class array_view {
  static_assert(N >= 1 && N <= 3, "tessera::array_view<T,N>: rank N must be 1, 2 or 3");
  using nc_t = std::remove_const_t<T>;
  template <class, int>
  friend class array_view;

 public:
  using value_type = T;
  static constexpr int rank = N;
  /// The Kokkos::View of the device data (strided: sections need not be contiguous).
  using view_type = Kokkos::View<typename impl::view_data<T, N>::type, Kokkos::LayoutStride,
                                 memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  /// The shape (C++ AMP's `array_view::extent` property). Read-only by convention.
  tessera::extent<N> extent;

  array_view() = default;
  /// Views `e.size()` elements starting at `data` (row-major). The memory must outlive the view.
  /// \throws shape_error negative extent; resource_error size overflow
  array_view(const tessera::extent<N>& e, T* data) : extent(e) { init_host(data); }
  /// AMP's `array_view<int,2> a(3, 2, ptr)`.
  array_view(index_type e0, T* data) requires(N == 1) : array_view(tessera::extent<N>(e0), data) {}
  array_view(index_type e0, index_type e1, T* data) requires(N == 2)
      : array_view(tessera::extent<N>(e0, e1), data) {}
  array_view(index_type e0, index_type e1, index_type e2, T* data) requires(N == 3)
      : array_view(tessera::extent<N>(e0, e1, e2), data) {}
  /// Views a container's storage (std::vector, std::array, ...).
  /// \throws shape_error when it holds fewer than e.size() elements
  template <class V>
  requires(impl::host_container<V>) array_view(const tessera::extent<N>& e, V& container)
      : extent(e) {
    const index_type n = impl::checked_size("tessera::array_view", e, sizeof(T));
    if (static_cast<index_type>(container.size()) < n)
      throw shape_error("tessera::array_view(extent, container): container has " +
                        std::to_string(container.size()) + " elements, extent " + to_string(e) +
                        " needs " + std::to_string(n));
    init_host(container.data());
  }
  /// AMP's `array_view<int, 2> a(3, 2, vec)`: extents as integers, then the container.
  template <class V>
  requires(N == 1 && impl::host_container<V>) array_view(index_type e0, V& container)
      : array_view(tessera::extent<1>(e0), container) {}
  template <class V>
  requires(N == 2 && impl::host_container<V>) array_view(index_type e0, index_type e1, V& container)
      : array_view(tessera::extent<2>(e0, e1), container) {}
  template <class V>
  requires(N == 3 && impl::host_container<V>)
      array_view(index_type e0, index_type e1, index_type e2, V& container)
      : array_view(tessera::extent<3>(e0, e1, e2), container) {}
  /// Views a whole rank-1 container.
  template <class V>
  requires(N == 1 && impl::host_container<V>) explicit array_view(V& container)
      : array_view(tessera::extent<1>(index_type(container.size())), container) {}
  /// Views an array's data (no copy; the view keeps the array's memory alive).
  array_view(const array<nc_t, N>& a) : extent(a.extent) { init_array(a); }
  /// array_view<T> -> array_view<const T> (C++ AMP's conversion to a read-only view).
  template <class U>
  requires(std::is_const_v<T>&& std::is_same_v<U, nc_t>) TESSERA_INLINE
      array_view(const array_view<U, N>& o)
      : extent(o.extent), dev_(o.dev_), offset_(o.offset_), st_(o.st_), hook_(o.hook_) {
    for (int d = 0; d < N; ++d) stride_[d] = o.stride_[d];
    retain();
  }

  // Copies share the data and the copy state. Copy constructor and destructor are host/device
  // code because kernels capture views by value; the reference count is touched only on the
  // host, atomically. A copy made while a launch copies its kernel reports to that launch.
  TESSERA_INLINE array_view(const array_view& o)
      : extent(o.extent), dev_(o.dev_), offset_(o.offset_), st_(o.st_), hook_(o.hook_) {
    for (int d = 0; d < N; ++d) stride_[d] = o.stride_[d];
    retain();
  }
  /// A move takes over `o`'s share of the data (no reference count touched); `o` is left an
  /// empty view (extent 0, no data).
  TESSERA_INLINE array_view(array_view&& o) noexcept
      : extent(o.extent), dev_(o.dev_), offset_(o.offset_), st_(o.st_), hook_(o.hook_) {
    for (int d = 0; d < N; ++d) stride_[d] = o.stride_[d];
    o.extent = tessera::extent<N>();
    o.dev_ = nullptr;
    o.offset_ = 0;
    o.st_ = nullptr;
    o.hook_ = nullptr;
  }
  TESSERA_INLINE array_view& operator=(array_view&& o) noexcept {
    if (this != &o) {
      array_view tmp(std::move(o));
      swap(tmp);
    }
    return *this;
  }
  TESSERA_INLINE array_view& operator=(const array_view& o) {
    if (this != &o) {
      array_view tmp(o);
      swap(tmp);
    }
    return *this;
  }
  TESSERA_INLINE ~array_view() { release(); }

  /// Device-side Kokkos::View of this view's elements (strided).
  view_type view() const {
    Kokkos::LayoutStride l;
    for (int d = 0; d < N; ++d) {
      l.dimension[d] = static_cast<std::size_t>(extent[d]);
      l.stride[d] = static_cast<std::size_t>(stride_[d]);
    }
    return view_type(dev_, l);
  }
  /// Device pointer of the first element (host backends: the caller's memory).
  TESSERA_INLINE T* data() const { return dev_; }
  TESSERA_INLINE tessera::extent<N> get_extent() const { return extent; }
  TESSERA_INLINE index_type size() const { return extent.size(); }

  /// Element access: in kernels on every backend; in host code it first makes the host copy
  /// current (GPU backends).
  template <class... I>
  requires(sizeof...(I) == N && (std::is_integral_v<I> && ...)) TESSERA_FORCEINLINE T& operator()(
      I... i) const {
    return (*this)[index<N>(i...)];
  }
  TESSERA_FORCEINLINE T& operator[](const index<N>& i) const {
#ifndef TESSERA_DEVICE_PASS
    if (impl::hooked_run_active() && hook_) [[unlikely]]
      return impl::hooked_element<T, N>(hook_, i);
    if constexpr (!host_accessible_memory) return host_element(i);
#endif
    return ref().at(i);
  }
  /// Rank 1: element i. Rank >= 2: the projection on the first index, an
  /// array_view<T, N-1> of row i (C++ AMP's `v[i]`).
  TESSERA_FORCEINLINE decltype(auto) operator[](index_type i) const {
    if constexpr (N == 1)
      return (*this)[index<1>(i)];
    else
      return project(i);
  }
  /// Rank >= 2: the projection on the first index (same as `v[i]`).
  TESSERA_INLINE array_view<T, N - 1> operator()(index_type i) const requires(N >= 2) {
    return project(i);
  }
  /// C++ AMP's `v(idx)`: the element at index idx, as `v[idx]`.
  TESSERA_FORCEINLINE T& operator()(const index<N>& i) const {
    return (*this)[i];
  }

  /// In-place updates of the viewed elements from an expression, an array or a scalar:
  /// `v += e` evaluates `v + e` into v (likewise -=, *=, /=), as `A += e` does for an array;
  /// sections of one buffer may appear on both sides (a temporary is used where a kernel
  /// would read what it already wrote). Views of const T cannot be updated.
  /// \throws shape_error when e's extent differs from v's (v untouched)
  template <class E>
  const array_view& operator+=(const E& e) const {
    compound_assign(*this, e, impl::compound_tag<'+'>{});
    return *this;
  }
  template <class E>
  const array_view& operator-=(const E& e) const {
    compound_assign(*this, e, impl::compound_tag<'-'>{});
    return *this;
  }
  template <class E>
  const array_view& operator*=(const E& e) const {
    compound_assign(*this, e, impl::compound_tag<'*'>{});
    return *this;
  }
  template <class E>
  const array_view& operator/=(const E& e) const {
    compound_assign(*this, e, impl::compound_tag<'/'>{});
    return *this;
  }

  /// The sub-view of `e` elements starting at `origin`.
  /// \throws shape_error when origin + e exceeds the extent or anything is negative
  array_view section(const index<N>& origin, const tessera::extent<N>& e) const {
    impl::check_section("tessera::array_view::section", origin, e, extent);
    array_view r(*this);
    r.extent = e;
    index_type off = 0;
    for (int d = 0; d < N; ++d) off += origin[d] * stride_[d];
    if (e.size() > 0) {
      r.dev_ = dev_ + off;
      r.offset_ = offset_ + std::size_t(off) * sizeof(T);
    }
    return r;
  }
  /// From `origin` to the end of every dimension.
  array_view section(const index<N>& origin) const {
    return section(origin, extent - origin);
  }
  /// The first `e` elements of every dimension.
  array_view section(const tessera::extent<N>& e) const {
    return section(index<N>(), e);
  }
  array_view section(index_type i0, index_type e0) const requires(N == 1) {
    return section(index<1>(i0), tessera::extent<1>(e0));
  }
  array_view section(index_type i0, index_type i1, index_type e0, index_type e1) const
      requires(N == 2) {
    return section(index<2>(i0, i1), tessera::extent<2>(e0, e1));
  }
  array_view section(index_type i0, index_type i1, index_type i2, index_type e0, index_type e1,
                     index_type e2) const requires(N == 3) {
    return section(index<3>(i0, i1, i2), tessera::extent<3>(e0, e1, e2));
  }
  /// The same elements seen with another extent (row-major order kept).
  /// \throws shape_error when this view is not contiguous or `e` has more elements
  template <int M>
  array_view<T, M> view_as(const tessera::extent<M>& e) const {
    impl::check_extent_nonnegative("tessera::array_view::view_as", e);
    if (!contiguous() || e.size() > size())
      throw shape_error("tessera::array_view::view_as: extent " + to_string(e) + " from a " +
                        std::string(contiguous() ? "" : "non-contiguous ") + "view of extent " +
                        to_string(extent));
    array_view<T, M> r;
    r.extent = e;
    r.dev_ = dev_;
    r.offset_ = offset_;
    impl::contiguous_strides(e, r.stride_);
    r.st_ = st_;
    r.hook_ = nullptr;
    r.retain();
    return r;
  }
  /// The same bytes seen as a rank-1 view of U (C++ AMP's reinterpret_as).
  /// \throws shape_error when this view is not contiguous or its bytes are not a multiple of
  ///         sizeof(U)
  template <class U>
  array_view<U, 1> reinterpret_as() const {
    static_assert(std::is_const_v<U> || !std::is_const_v<T>,
                  "tessera::array_view::reinterpret_as<U>: a view of const T can only be "
                  "reinterpreted as a view of const U");
    const std::size_t bytes = std::size_t(size()) * sizeof(T);
    if (!contiguous() || bytes % sizeof(U) != 0)
      throw shape_error("tessera::array_view::reinterpret_as: " + std::to_string(bytes) +
                        " bytes of a " + std::string(contiguous() ? "" : "non-contiguous ") +
                        "view are not a whole number of " + std::to_string(sizeof(U)) +
                        "-byte elements");
    array_view<U, 1> r;
    r.extent = tessera::extent<1>(index_type(bytes / sizeof(U)));
    r.dev_ = reinterpret_cast<U*>(dev_);
    r.offset_ = offset_;
    r.stride_[0] = 1;
    r.st_ = st_;
    r.hook_ = nullptr;
    r.retain();
    return r;
  }

  /// Makes the host copy current (waits for kernels still running): the caller's memory then
  /// holds every change made by kernels (C++ AMP's synchronize()).
  void synchronize() const {
    Kokkos::fence();
    if (st_) st_->to_host(false);
  }
  /// Declares the current contents irrelevant: the next kernel launch copies nothing.
  void discard_data() const {
    if (st_) {
      st_->device_valid = true;
      st_->host_valid = !st_->separate;
    }
  }
  /// Declares that the caller changed the viewed host memory: the next launch copies it again.
  void refresh() const {
    if (separate() && !st_->owns_host) {
      st_->host_valid = true;
      st_->device_valid = false;
    }
  }
  /// The elements as a row-major std::vector (host copy; waits for kernels).
  std::vector<nc_t> to_vector() const {
    std::vector<nc_t> out(static_cast<std::size_t>(size()));
    index_type k = 0;
    for_each_index([&](const index<N>& i) { out[std::size_t(k++)] = (*this)[i]; });
    return out;
  }

  /// True when the elements are contiguous in row-major order.
  bool contiguous() const {
    return impl::row_major_contiguous(extent, stride_);
  }
  /// The memory of the view (device pointer, extents, strides, element size): what aliasing
  /// checks compare. Allocates nothing.
  impl::captured_buffer describe_memory() const {
    impl::captured_buffer b;
    fill_layout(b);
    b.type_name = &impl::scalar_type_name<nc_t>;
    return b;
  }
  /// Writes the layout alone (pointer, extents, strides, element size: what plan-cache keys
  /// and overlap checks read) into b's fields, in place: a layout built apart and then copied
  /// is copied with wide loads of the fields just stored one by one, which the stores cannot
  /// forward (a stall of tens of cycles on the path of every assignment).
  void fill_layout(impl::buffer_layout& b) const {
    b.data = const_cast<nc_t*>(dev_);
    b.rank = N;
    for (int d = 0; d < N; ++d) {
      b.extent[d] = extent[d];
      b.stride[d] = stride_[d];
    }
    for (int d = N; d < 3; ++d) b.extent[d] = b.stride[d] = 0;
    b.elem_bytes = sizeof(T);
  }
  /// The lazy-copy state a kernel reading or writing this view must bring to the device
  /// (nullptr when host and device share the memory).
  impl::view_sync* sync_state() const {
    return separate() ? st_ : nullptr;
  }
  /// The buffer as a launch sees it (host side).
  impl::captured_buffer describe() const {
    impl::captured_buffer b = describe_memory();
    b.label = "array_view";
    b.read_only = std::is_const_v<T>;
    b.host_accessible = host_accessible_memory;
    b.sync = separate() ? st_ : nullptr;
    b.fill_one = &impl::fill_one<nc_t>;
    if (separate()) {
      b.self = this;
      b.host_data = [](const void* self) -> void* {
        const auto* v = static_cast<const array_view*>(self);
        return v->st_->host ? v->st_->host + v->offset_ : nullptr;
      };
    }
    return b;
  }
  TESSERA_INLINE bool has_hook() const {
    return impl::hooked_run_active() && hook_ != nullptr;
  }
  /// Element access of the device data as strided_ref (device-callable; no host hook).
  TESSERA_INLINE impl::strided_ref<T, N> ref() const {
    impl::strided_ref<T, N> r;
    r.p = dev_;
    for (int d = 0; d < N; ++d) r.s[d] = stride_[d];
    return r;
  }

 private:
  /// Whether the host and device copies are different memory: never where the memory space is
  /// the host's (only init_host and init_array set view_state::separate, and only where it is
  /// not), so host code never reads the shared state for it. A reduction of a view in L2 read it
  /// after its stream had evicted it: 10 ns of a float sum of 10^4 elements (336 -> 346 ns on
  /// a Zen 4 core).
  TESSERA_INLINE bool separate() const {
    if constexpr (host_accessible_memory)
      return false;
    else
      return st_ && st_->separate;
  }
  void init_host(T* data) {
    const index_type n = impl::checked_size("tessera::array_view", extent, sizeof(T));
    impl::require_runtime("tessera::array_view");
    impl::contiguous_strides(extent, stride_);
    auto* st = new impl::view_state();
    st->bytes = std::size_t(n) * sizeof(T);
    st->host = reinterpret_cast<char*>(const_cast<nc_t*>(data));
    if constexpr (host_accessible_memory) {
      st->dev = st->host;
    } else {
      st->separate = true;
      st->device_valid = false;
      st->dev_alloc = Kokkos::View<char*, memory_space>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "tessera::array_view device copy"),
          st->bytes);
      st->dev = st->dev_alloc.data();
    }
    st_ = st;
    dev_ = reinterpret_cast<T*>(st->dev);
  }
  void init_array(const array<nc_t, N>& a) {
    impl::contiguous_strides(extent, stride_);
    auto* st = new impl::view_state();
    st->bytes = std::size_t(a.size()) * sizeof(T);
    st->dev = reinterpret_cast<char*>(a.data());
    st->keep = std::make_shared<typename array<nc_t, N>::view_type>(a.view());
    if constexpr (host_accessible_memory) {
      st->host = st->dev;
    } else {
      st->separate = true;
      st->host_valid = false;
      st->owns_host = true;
    }
    st_ = st;
    dev_ = reinterpret_cast<T*>(st->dev);
  }
  TESSERA_INLINE void retain() {
#ifndef TESSERA_DEVICE_PASS
    if (st_) st_->refs.fetch_add(1, std::memory_order_relaxed);
    if (auto* obs = impl::current_capture_observer()) hook_ = obs->on_capture(describe());
#endif
  }
  TESSERA_INLINE void release() {
#ifndef TESSERA_DEVICE_PASS
    if (st_ && st_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete st_;
#endif
  }
  /// Projection on the first index; called by `v[i]` in host code and in kernels.
  TESSERA_INLINE array_view<T, N - 1> project(index_type i) const requires(N >= 2) {
#ifndef TESSERA_DEVICE_PASS
    if (i < 0 || i >= extent[0])
      throw shape_error("tessera::array_view: projection index " + std::to_string(i) +
                        " outside extent " + to_string(extent));
#else
    if (i < 0 || i >= extent[0])
      Kokkos::abort("tessera::array_view: projection index outside extent");
#endif
    array_view<T, N - 1> r;
    for (int d = 1; d < N; ++d) {
      r.extent[d - 1] = extent[d];
      r.stride_[d - 1] = stride_[d];
    }
    r.dev_ = dev_ + i * stride_[0];
    r.offset_ = offset_ + std::size_t(i * stride_[0]) * sizeof(T);
    r.st_ = st_;
    r.hook_ = nullptr;
    r.retain();
    return r;
  }
  T& host_element(const index<N>& i) const {
    st_->to_host(!std::is_const_v<T>);
    index_type off = i[N - 1];
    for (int d = 0; d < N - 1; ++d) off += i[d] * stride_[d];
    return reinterpret_cast<T*>(st_->host + offset_)[off];
  }
  template <class F>
  void for_each_index(F&& f) const {
    if (size() == 0) return;
    for (index_type k = 0; k < size(); ++k) f(impl::unflatten(extent, k));
  }
  TESSERA_INLINE void swap(array_view& o) {
    const tessera::extent<N> e = extent;
    extent = o.extent;
    o.extent = e;
    T* const d = dev_;
    dev_ = o.dev_;
    o.dev_ = d;
    const std::size_t off = offset_;
    offset_ = o.offset_;
    o.offset_ = off;
    for (int k = 0; k < N; ++k) {
      const index_type s = stride_[k];
      stride_[k] = o.stride_[k];
      o.stride_[k] = s;
    }
    impl::view_state* const st = st_;
    st_ = o.st_;
    o.st_ = st;
    impl::global_hook* const h = hook_;
    hook_ = o.hook_;
    o.hook_ = h;
  }

  T* dev_ = nullptr;
  std::size_t offset_ = 0;  ///< bytes from the buffer's start to this view's first element
  index_type stride_[N] = {};
  impl::view_state* st_ = nullptr;
  impl::global_hook* hook_ = nullptr;
};

template <class T, int N>
array_view<T, N> array<T, N>::section(const index<N>& origin, const tessera::extent<N>& e) const {
  impl::check_section("tessera::array::section", origin, e, extent);
  return array_view<T, N>(*this).section(origin, e);
}
template <class T, int N>
array_view<T, N> array<T, N>::section(const index<N>& origin) const {
  return section(origin, extent - origin);
}
template <class T, int N>
array_view<T, N> array<T, N>::section(const tessera::extent<N>& e) const {
  return section(index<N>(), e);
}
template <class T, int N>
template <int M>
array_view<T, M> array<T, N>::view_as(const tessera::extent<M>& e) const {
  return array_view<T, N>(*this).view_as(e);
}
template <class T, int N>
template <class U>
array_view<U, 1> array<T, N>::reinterpret_as() const {
  return array_view<T, N>(*this).template reinterpret_as<U>();
}

}  // namespace tessera
