/// \file array.hpp
/// \brief `array<T,N>`: N-dimensional data owned in the default Kokkos memory space (a
///        Kokkos::View, LayoutRight). Kernels capture it by value; its copy constructor is how a
///        launch sees what a kernel captures (host_context.hpp).
#pragma once

#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/host_context.hpp>
#include <tessera/dsl/index.hpp>
#include <tessera/dsl/runtime.hpp>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera {

template <class T, int N>
class array_view;

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

/// Number of elements of `e`, checked: throws shape_error on a negative extent and
/// resource_error when e.size() * elem_bytes overflows. `fn` names the caller.
template <int N>
index_type checked_size(const char* fn, const extent<N>& e, std::size_t elem_bytes) {
  for (int d = 0; d < N; ++d)
    if (e[d] < 0) throw shape_error(std::string(fn) + ": negative extent " + to_string(e));
  index_type n = 1;
  bool overflow = false;
  for (int d = 0; d < N; ++d) overflow |= __builtin_mul_overflow(n, e[d], &n);
  index_type bytes = 0;
  overflow |= __builtin_mul_overflow(n, static_cast<index_type>(elem_bytes), &bytes);
  if (overflow)
    throw resource_error(std::string(fn) + ": extent " + to_string(e) + " of " +
                         std::to_string(elem_bytes) +
                         "-byte elements overflows a 64-bit size; no such allocation can exist");
  return n;
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
template <class V, int N>
V make_view_uninitialized(const std::string& label, const extent<N>& e) {
  const auto a = Kokkos::view_alloc(Kokkos::WithoutInitializing, label);
  if constexpr (N == 1) return V(a, e[0]);
  if constexpr (N == 2) return V(a, e[0], e[1]);
  if constexpr (N == 3) return V(a, e[0], e[1], e[2]);
}
/// The host memory policy: called with every new host allocation of an array before its
/// first touch (nullptr: none). The host backends install the operating system's policy
/// (transparent huge pages for large arrays: backends/host/memory_policy.hpp); this layer
/// knows nothing of it.
using host_allocation_advice = void (*)(void* p, std::size_t bytes);
inline host_allocation_advice& host_memory_policy() {
  static host_allocation_advice advice = nullptr;
  return advice;
}

/// A View of extent e in V's memory space, zero-filled or not; host allocations go through the
/// host memory policy before their first touch.
template <class V, int N>
V allocate_view(const std::string& label, const extent<N>& e, bool zero) {
  if constexpr (std::is_same_v<typename V::memory_space, Kokkos::HostSpace>) {
    V v = make_view_uninitialized<V>(label, e);
    if (const host_allocation_advice advice = host_memory_policy())
      advice(v.data(), v.span() * sizeof(typename V::value_type));
    if (zero && v.span() > 0) Kokkos::deep_copy(v, typename V::value_type{});
    return v;
  } else {
    return zero ? make_view<V>(label, e) : make_view_uninitialized<V>(label, e);
  }
}

template <class V, class P, int N>
V wrap_view(P* p, const extent<N>& e) {
  if constexpr (N == 1) return V(p, e[0]);
  if constexpr (N == 2) return V(p, e[0], e[1]);
  if constexpr (N == 3) return V(p, e[0], e[1], e[2]);
}

/// Device-callable access to a rank-N buffer whose last dimension is contiguous: element
/// (i0, .., iN-1) is p[i0 * s[0] + ... + iN-1] (s[N-1] == 1). Used by every Tessera buffer.
template <class T, int N>
struct strided_ref {
  T* p = nullptr;
  index_type s[N] = {};
  TESSERA_FORCEINLINE T& at(const index<N>& i) const {
    index_type off = i[N - 1];
    for (int d = 0; d < N - 1; ++d) off += i[d] * s[d];
    return p[off];
  }
  template <class... I>
  TESSERA_FORCEINLINE T& operator()(I... i) const {
    return at(index<N>(i...));
  }
  /// First element of row i (rank 2).
  TESSERA_FORCEINLINE T* row(index_type i) const { return p + i * s[0]; }
};

/// Strides (elements) of a LayoutRight extent.
template <int N>
TESSERA_INLINE constexpr void contiguous_strides(const extent<N>& e, index_type* s) {
  s[N - 1] = 1;
  for (int d = N - 2; d >= 0; --d) s[d] = s[d + 1] * e[d + 1];
}

/// True when strides s (elements, the last dimension's 1) lay extent e out in row-major order
/// without gaps; dimensions of extent 0 or 1 may have any stride (no element is addressed
/// through it).
template <int N>
TESSERA_INLINE constexpr bool row_major_contiguous(const extent<N>& e, const index_type* s) {
  index_type span = e[N - 1];
  for (int d = N - 2; d >= 0; --d) {
    if (e[d] > 1 && s[d] != span) return false;
    span *= e[d];
  }
  return true;
}

/// Throws the error for host code touching an element of device memory directly.
[[noreturn]] inline void device_memory_on_host(const char* what) {
  throw usage_error(std::string("tessera::") + what +
                    ": element access on the host, but the data lives in " + memory_space::name() +
                    " memory; copy it to the host first (to_vector(), copy(), to_eigen) or "
                    "access it through an array_view");
}
}  // namespace impl

namespace impl {
/// Throws shape_error naming `fn` unless origin and e are non-negative and origin + e lies
/// inside `whole` (the sections of arrays and views).
template <int N>
void check_section(const char* fn, const index<N>& origin, const extent<N>& e,
                   const extent<N>& whole) {
  for (int d = 0; d < N; ++d)
    if (origin[d] < 0 || e[d] < 0 || origin[d] + e[d] > whole[d])
      throw shape_error(std::string(fn) + ": origin " + to_string(origin) + " and extent " +
                        to_string(e) + " exceed the extent " + to_string(whole));
}
/// Exchanges two Views of one type without touching their reference counts: their bytes are
/// swapped (a View is a reference-count handle and a pointer with its layout; neither refers
/// to the View object itself, so it may be relocated). Kokkos' View has no move of its count
/// (its tracker declares only copy operations), so std::swap would add an increment and a
/// decrement, each a call into Kokkos. Host code only.
template <class V>
inline void swap_views(V& a, V& b) noexcept {
  static_assert(Kokkos::is_view<V>::value && sizeof(V) % sizeof(std::uint64_t) == 0,
                "swap_views: Kokkos::View only");
  // Word by word, each word kept in a register (the empty asm): one wide copy would read
  // back fields that were just stored one by one, which cannot be forwarded from the stores.
  auto* pa = reinterpret_cast<unsigned char*>(&a);
  auto* pb = reinterpret_cast<unsigned char*>(&b);
  for (std::size_t i = 0; i < sizeof(V); i += sizeof(std::uint64_t)) {
    std::uint64_t x, y;
    std::memcpy(&x, pa + i, sizeof x);
    std::memcpy(&y, pb + i, sizeof y);
#if defined(__GNUC__) || defined(__clang__)
    asm("" : "+r"(x), "+r"(y));
#endif
    std::memcpy(pa + i, &y, sizeof y);
    std::memcpy(pb + i, &x, sizeof x);
  }
}
/// Selects the operation of `dst op= e` (array and array_view; nodes.hpp evaluates it).
template <char Op>
struct compound_tag {};
}  // namespace impl

/// N-dimensional data in the default Kokkos memory space (device memory on GPU backends).
///
/// A handle like Kokkos::View: copies share the data, so kernels capture it by value
/// (TESSERA_KERNEL). `copy()` makes a deep copy. Elements are accessed with `a(i, j)` or
/// `a[idx]` inside kernels; on host backends also on the host (on GPU backends host code gets a
/// usage_error: copy the data or use an array_view). Layout is row-major (LayoutRight).
/// A move hands the data over: the moved-from array is left empty (extent 0, no data), as
/// default constructed, and may be assigned again.
/// \tparam T element type (arithmetic or trivially copyable)  \tparam N rank, 1..3
template <class T, int N>
class array {
  static_assert(N >= 1 && N <= 3, "tessera::array<T,N>: rank N must be 1, 2 or 3");

 public:
  using value_type = T;
  static constexpr int rank = N;
  using view_type = impl::view_t<T, N, memory_space>;

  /// The shape (C++ AMP's `array::extent` property). Read-only by convention.
  tessera::extent<N> extent;

  array() = default;
  /// Allocates `e.size()` elements, zero-filled.
  /// \throws shape_error negative extent; resource_error size overflow; usage_error Kokkos not
  ///         initialized
  explicit array(const tessera::extent<N>& e, const std::string& label = "tessera::array")
      : extent(e), v_(allocate("tessera::array", e, label, true)) {}
  template <class... I>
  requires(sizeof...(I) == N && (std::is_integral_v<I> && ...)) explicit array(I... e)
      : array(tessera::extent<N>(e...)) {}
  /// Allocates and copies [first, last) (row-major, at least e.size() elements) from the host.
  /// \throws shape_error when the range is shorter than e.size() (checked before anything is
  ///         allocated)
  template <class It>
  requires requires(It i) { *i; }
  array(const tessera::extent<N>& e, It first, It last)
      : extent(e), v_(allocate_from("tessera::array(extent, first, last)", e, first, last)) {}
  /// Allocates and copies `e.size()` elements from host memory at `src` (row-major).
  array(const tessera::extent<N>& e, const T* src) : array(e, src, src + checked(e)) {}
  /// Wraps an existing Kokkos::View (shares it, no copy).
  explicit array(const view_type& v) : extent(impl::extent_of_view<N>(v)), v_(v) {}

  // Copies share the data. The copy constructor is host/device code because kernels capture
  // arrays by value; on the host it reports the copy to the launch copying a kernel (if any).
  TESSERA_INLINE array(const array& o) : extent(o.extent), v_(o.v_), hook_(o.hook_) {
#ifndef TESSERA_DEVICE_PASS
    if (auto* obs = impl::current_capture_observer()) hook_ = obs->on_capture(describe());
#endif
  }
  TESSERA_INLINE array& operator=(const array& o) {
    extent = o.extent;
    v_ = o.v_;
    hook_ = o.hook_;
    return *this;
  }
  // A move hands the data over: `o` is left empty (no data, as default constructed). On the
  // host the View is relocated (impl::swap_views), not moved: Kokkos' View declares no move of
  // its reference count (3.4 and 4.6: its tracker has only copy operations), so a "move" costs
  // an increment and, when `o` dies, a decrement, each a call into Kokkos (about 10 ns a copy
  // and its destruction on Kokkos 3.4). An expression moves its operands into every node it is
  // built into (dsl/expr/nodes.hpp).
  TESSERA_INLINE array(array&& o) noexcept : extent(o.extent), hook_(o.hook_) {
#ifndef TESSERA_DEVICE_PASS
    impl::swap_views(v_, o.v_);
#else
    v_ = o.v_;
    o.v_ = view_type();
#endif
    o.extent = tessera::extent<N>();
    o.hook_ = nullptr;
  }
  TESSERA_INLINE array& operator=(array&& o) noexcept {
    if (this != &o) {
      extent = o.extent;
#ifndef TESSERA_DEVICE_PASS
      impl::swap_views(v_, o.v_);  // o takes this array's old reference, released below
#else
      v_ = o.v_;
#endif
      o.v_ = view_type();
      hook_ = o.hook_;
      o.extent = tessera::extent<N>();
      o.hook_ = nullptr;
    }
    return *this;
  }
  /// Releases this copy's share of the data. An array still holding memory after the Kokkos
  /// runtime ended (it outlived its scope_guard) leaves the memory to the operating system and
  /// says so once on stderr, rather than let Kokkos terminate the process.
  TESSERA_INLINE ~array() {
#ifndef TESSERA_DEVICE_PASS
    if (v_.data() != nullptr && !impl::runtime_running()) [[unlikely]]
      outlived_runtime();
#endif
  }

  /// The underlying Kokkos::View (LayoutRight, default memory space).
  TESSERA_INLINE const view_type& view() const {
    return v_;
  }
  TESSERA_INLINE T* data() const {
    return v_.data();
  }
  TESSERA_INLINE tessera::extent<N> get_extent() const {
    return extent;
  }
  TESSERA_INLINE index_type size() const {
    return extent.size();
  }
  /// Element access for kernels (device-callable) and, on host backends, host code.
  template <class... I>
  requires(sizeof...(I) == N && (std::is_integral_v<I> && ...)) TESSERA_FORCEINLINE T& operator()(
      I... i) const {
    return (*this)[index<N>(i...)];
  }
  TESSERA_FORCEINLINE T& operator[](const index<N>& i) const {
#ifndef TESSERA_DEVICE_PASS
    if (impl::hooked_run_active() && hook_) [[unlikely]]
      return impl::hooked_element<T, N>(hook_, i);
    if constexpr (!host_accessible_memory) impl::device_memory_on_host("array");
#endif
    if constexpr (N == 1)
      return v_(i[0]);
    else if constexpr (N == 2)
      return v_(i[0], i[1]);
    else
      return v_(i[0], i[1], i[2]);
  }
  /// C++ AMP projection of a rank-1 array: `a[i]` is element i.
  TESSERA_FORCEINLINE T& operator[](index_type i) const requires(N == 1) {
    return (*this)[index<1>(i)];
  }
  /// C++ AMP's `a(idx)`: the element at index idx, as `a[idx]`.
  TESSERA_FORCEINLINE T& operator()(const index<N>& i) const {
    return (*this)[i];
  }

  /// Evaluates a Tier 1 expression into this array. An empty (default constructed) array is
  /// first allocated with the expression's extent. The customization point is `assign(array,
  /// expression)`, found by argument-dependent lookup where the assignment is instantiated:
  /// the backends layer provides it (backends/execute.hpp, included by <tessera/tessera.hpp>),
  /// which this layer never includes.
  /// \throws shape_error when the extents differ
  template <class E>
  requires requires {
    typename E::tessera_expression_tag;
  }
  array& operator=(const E& e) {
    if (v_.data() == nullptr && extent.size() == 0 && !(extent == e.get_extent()))
      *this = array(e.get_extent());
    assign(*this, e);
    return *this;
  }
  /// Fills every element with `v` converted to T (`A = 2.0f`); the same as tessera::fill(A, v),
  /// one kernel writing the array.
  template <class U>
  requires std::is_arithmetic_v<U> array& operator=(const U& v) {
    fill(*this, v);
    return *this;
  }
  /// In-place updates from an expression, an array or a scalar: `A += e` evaluates `A + e`
  /// into A (elementwise; likewise -=, *=, /=). Without a temporary wherever the kernel reads
  /// A only at the index it writes (aliasing is decided on memory ranges, as for `A = e`).
  /// \throws shape_error when e's extent differs from A's (A untouched)
  template <class E>
  array& operator+=(const E& e) {
    compound_assign(*this, e, impl::compound_tag<'+'>{});
    return *this;
  }
  template <class E>
  array& operator-=(const E& e) {
    compound_assign(*this, e, impl::compound_tag<'-'>{});
    return *this;
  }
  template <class E>
  array& operator*=(const E& e) {
    compound_assign(*this, e, impl::compound_tag<'*'>{});
    return *this;
  }
  template <class E>
  array& operator/=(const E& e) {
    compound_assign(*this, e, impl::compound_tag<'/'>{});
    return *this;
  }

  /// The array_view of `e` elements starting at `origin` (C++ AMP's array::section): shares the
  /// data. \throws shape_error when origin + e exceeds the extent or anything is negative
  array_view<T, N> section(const index<N>& origin, const tessera::extent<N>& e) const;
  /// From `origin` to the end of every dimension.
  array_view<T, N> section(const index<N>& origin) const;
  /// The first `e` elements of every dimension.
  array_view<T, N> section(const tessera::extent<N>& e) const;
  /// C++ AMP's array::view_as: the first e.size() elements in row-major order seen with extent
  /// e (any rank 1-3), an array_view sharing the data.
  /// \throws shape_error when e has more elements than the array or a negative extent
  template <int M>
  array_view<T, M> view_as(const tessera::extent<M>& e) const;
  /// C++ AMP's array::reinterpret_as: the array's bytes as a rank-1 array_view of U (sharing the
  /// data; e.g. the float bits of an array<float, 2> as unsigned).
  /// \throws shape_error when the bytes are not a whole number of U
  template <class U>
  array_view<U, 1> reinterpret_as() const;

  /// Evaluates an expression into a new array: `tessera::array<float, 2> C = A + B;` (through
  /// the same customization point).
  template <class E>
  requires requires {
    typename E::tessera_expression_tag;
  }
  array(const E& e) : array(e.get_extent()) {
    assign(*this, e);
  }

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
    Kokkos::deep_copy(impl::wrap_view<impl::unmanaged_host_view_t<T, N>>(out.data(), extent), v_);
    return out;
  }
  operator std::vector<T>() const {
    return to_vector();
  }

  /// The memory of the buffer (pointer, extents, strides, element size): what aliasing checks
  /// compare. Allocates nothing.
  impl::captured_buffer describe_memory() const {
    impl::captured_buffer b;
    fill_layout(b);
    b.type_name = &impl::scalar_type_name<std::remove_const_t<T>>;
    return b;
  }
  /// Writes the layout alone (pointer, extents, strides, element size: what plan-cache keys
  /// and overlap checks read) into b's fields, in place: a layout built apart and then copied
  /// is copied with wide loads of the fields just stored one by one, which the stores cannot
  /// forward (a stall of tens of cycles on the path of every assignment).
  void fill_layout(impl::buffer_layout& b) const {
    b.data = const_cast<std::remove_const_t<T>*>(v_.data());
    b.rank = N;
    for (int d = 0; d < N; ++d) {
      b.extent[d] = extent[d];
      b.stride[d] = static_cast<index_type>(v_.stride(d));
    }
    for (int d = N; d < 3; ++d) b.extent[d] = b.stride[d] = 0;
    b.elem_bytes = sizeof(T);
  }
  /// The buffer as a launch sees it (host side).
  impl::captured_buffer describe() const {
    impl::captured_buffer b = describe_memory();
    b.label = v_.label();
    b.read_only = std::is_const_v<T>;
    b.host_accessible = host_accessible_memory;
    b.fill_one = &impl::fill_one<std::remove_const_t<T>>;
    return b;
  }
  /// True when element accesses of this copy go through a host hook (checked mode, dry run).
  TESSERA_INLINE bool has_hook() const {
    return impl::hooked_run_active() && hook_ != nullptr;
  }
  /// Element access as strided_ref (device-callable; no host hook).
  TESSERA_INLINE impl::strided_ref<T, N> ref() const {
    impl::strided_ref<T, N> r;
    r.p = v_.data();
    for (int d = 0; d < N; ++d) r.s[d] = static_cast<index_type>(v_.stride(d));
    return r;
  }

 private:
  static index_type checked(const tessera::extent<N>& e) {
    return impl::checked_size("tessera::array", e, sizeof(T));
  }
  static view_type allocate(const char* fn, const tessera::extent<N>& e, const std::string& label,
                            bool zero) {
    impl::checked_size(fn, e, sizeof(T));
    impl::require_runtime(fn);
    return impl::allocate_view<view_type>(label, e, zero);
  }
  template <class It>
  static view_type allocate_from(const char* fn, const tessera::extent<N>& e, It first, It last) {
    const index_type n = impl::checked_size(fn, e, sizeof(T));
    const auto have = static_cast<index_type>(std::distance(first, last));
    if (have < n)
      throw shape_error(std::string(fn) + ": range has " + std::to_string(have) +
                        " elements, extent " + to_string(e) + " needs " + std::to_string(n));
    view_type v = allocate(fn, e, "tessera::array", false);
    auto h = Kokkos::create_mirror_view(v);
    auto* p = h.data();
    for (index_type k = 0; k < n; ++k, ++first) p[k] = static_cast<T>(*first);
    Kokkos::deep_copy(v, h);
    return v;
  }

  /// The destructor's rare path, out of line (the message's strings kept a large frame on
  /// every array's destruction): reports the array once, and keeps its View from freeing
  /// memory after Kokkos::finalize (never destroyed).
  [[gnu::noinline, gnu::cold]] void outlived_runtime() {
    impl::report_outlived_runtime("tessera::array<" +
                                  impl::scalar_type_name<std::remove_const_t<T>>() + ", " +
                                  std::to_string(N) + "> of extent " + to_string(extent));
    (void)new view_type(std::move(v_));
  }

  view_type v_;
  impl::global_hook* hook_ = nullptr;
};

namespace impl {
/// The address of element idx of a strided buffer, in integer arithmetic: formed for any idx
/// (inside the buffer or not) without a pointer leaving the data or a bounds-checked View
/// access, so guarded accesses can compute it unconditionally and make only the load or store
/// conditional.
template <class T, int N>
TESSERA_FORCEINLINE std::uintptr_t element_address(const strided_ref<T, N>& r,
                                                   const index<N>& idx) {
  std::uintptr_t off = static_cast<std::uintptr_t>(idx[N - 1]);
  for (int d = 0; d < N - 1; ++d)
    off += static_cast<std::uintptr_t>(idx[d]) * static_cast<std::uintptr_t>(r.s[d]);
  return reinterpret_cast<std::uintptr_t>(r.p) + off * sizeof(T);
}
}  // namespace impl

/// Reads `v[idx]` if `idx` lies inside v's extent, else returns T() (C++ AMP's guarded read for
/// padded launches). Works with array, array_view, or any type with `.extent` and `operator[]`.
template <class A, int N>
TESSERA_INLINE auto guarded_read(const A& v, const index<N>& idx) {
  using T = std::remove_cvref_t<decltype(v[idx])>;
  const bool in = v.extent.contains(idx);
  if constexpr (requires { v.ref(); }) {
#ifndef TESSERA_DEVICE_PASS
    if constexpr (!host_accessible_memory) return in ? T(v[idx]) : T();
    if (v.has_hook()) [[unlikely]]
      return in ? T(v[idx]) : T();
#endif
    // The element's address is computed unconditionally, in integer arithmetic (no pointer
    // leaves the data, no bounds-checked View access), and only the load is conditional: a
    // loop of guarded reads then if-converts into masked vector loads.
    const std::uintptr_t addr = impl::element_address(v.ref(), idx);
    return in ? *reinterpret_cast<const T*>(addr) : T();
  } else {
    return in ? T(v[idx]) : T();
  }
}
/// Writes `val` to `v[idx]` only if `idx` lies inside v's extent (padded launches).
template <class A, int N, class U>
TESSERA_INLINE void guarded_write(const A& v, const index<N>& idx, const U& val) {
  const bool in = v.extent.contains(idx);
  if constexpr (requires { v.ref(); }) {
#ifndef TESSERA_DEVICE_PASS
    if constexpr (!host_accessible_memory) {
      if (in) v[idx] = val;
      return;
    }
    if (v.has_hook()) [[unlikely]] {
      if (in) v[idx] = val;
      return;
    }
#endif
    // As in guarded_read: the address in integer arithmetic, only the store conditional, so
    // a loop of guarded writes if-converts into masked vector stores (AVX-512, AVX2, SVE)
    // instead of a compare and branch per element (seed 003's padded transpose on a Zen 4
    // core, 999x666 floats: 0.52x -> 1.05x Eigen's transpose).
    using T = std::remove_reference_t<decltype(v[idx])>;
    const std::uintptr_t addr = impl::element_address(v.ref(), idx);
    if (in) *reinterpret_cast<T*>(addr) = val;
  } else {
    if (in) v[idx] = val;
  }
}

}  // namespace tessera
