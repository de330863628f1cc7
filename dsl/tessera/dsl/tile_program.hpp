/// \file tile_program.hpp
/// \brief Tier 2: composed tile programs. The user writes loads into tile_static buffers,
///        tile-level compute and stores as phases that declare which buffers they read and
///        write; Tessera inserts the barriers (read-after-write, write-after-read,
///        write-after-write — including across loop iterations, because the rule is applied as
///        the program runs), sizes scratch and maps logical threads onto the team (Tier 0).
///
// clang-format off
/// \code
///   tessera::parallel_for_each(C.extent.tile<16, 16>().pad(), tessera::tile_program(
///     TESSERA_KERNEL(tessera::tile_program_context<16, 16>& p) {
///       auto a = p.tile_static<float[16][16]>("a_tile");
///       auto b = p.tile_static<float[16][16]>("b_tile");
///       auto acc = p.tile_local<float>(0.f, "acc");
///       for (tessera::index_type k0 = 0; k0 < K; k0 += 16) {
///         p.load(a, [&](const auto& t) {
///           return tessera::guarded_read(A, tessera::index<2>(t.global[0], k0 + t.local[1]));
///         });
///         p.load(b, [&](const auto& t) {
///           return tessera::guarded_read(B, tessera::index<2>(k0 + t.local[0], t.global[1]));
///         });
///         p.compute(tessera::reads(a, b), [&](const auto& t) {
///           float s = acc(t);
///           for (int k = 0; k < 16; ++k) s += a(t.local[0], k) * b(k, t.local[1]);
///           acc(t) = s;
///         });
///       }  // barriers: after the loads, and before the next iteration's loads
///       p.store(C, [&](const auto& t) { return acc(t); });
///     }));
/// \endcode
/// A barrier is placed before a phase exactly when impl::hazard_tracker reports a hazard
/// (hazards.hpp); explain() on such a launch shows each barrier with the hazard it resolves.
// clang-format on
#pragma once

#include <tessera/dsl/device_kernel.hpp>
#include <tessera/dsl/hazards.hpp>
#include <tessera/dsl/tile_group.hpp>

#include <string>
#include <string_view>

namespace tessera {

/// A tile_static buffer of a tile program: the Tier 0 handle plus its bit in the hazard set.
template <class U>
struct program_buffer : tile_static_ref<U> {
  TESSERA_INLINE program_buffer(const tile_static_ref<U>& r, std::uint32_t bit, const char* name)
      : tile_static_ref<U>(r), bit(bit), name(name) {}
  std::uint32_t bit;
  const char* name;
};

/// Buffers a phase reads / writes (`tessera::reads(a, b)`, `tessera::writes(c)`).
struct buffer_set {
  std::uint32_t bits = 0;
};
template <class... B>
TESSERA_INLINE buffer_set reads(const B&... b) {
  return buffer_set{(std::uint32_t{0} | ... | b.bit)};
}
struct write_set {
  std::uint32_t bits = 0;
};
template <class... B>
TESSERA_INLINE write_set writes(const B&... b) {
  return write_set{(std::uint32_t{0} | ... | b.bit)};
}

/// What a tile program's body receives: declares buffers and runs phases on one tile.
template <class Space, int... T>
class basic_tile_program_context {
 public:
  static constexpr int rank = sizeof...(T);
  using index_t = tiled_index<T...>;
  TESSERA_INLINE explicit basic_tile_program_context(basic_tile_group<Space, T...>& g) : g_(g) {}

  /// A tile_static buffer (scratch level 0/1 chosen by the launch). At most 32 per program.
  template <class U>
  TESSERA_INLINE program_buffer<U> tile_static(const char* name = nullptr) {
    const int k = nbuf_++ % 32;
    names_[k] = name ? name : "tile_static";
    return program_buffer<U>(g_.template tile_static<U>(name), std::uint32_t{1} << k, names_[k]);
  }
  /// Per-logical-thread state (never shared, so never a hazard).
  template <class U>
  TESSERA_INLINE auto tile_local(const U& init, const char* name = nullptr) {
    return g_.template tile_local<U>(init, name);
  }
  /// Load phase: buffer[t.local] = f(t) for every logical thread (the buffer has the tile's
  /// shape). Writes `buf`.
  template <class U, class F>
  TESSERA_INLINE void load(const program_buffer<U>& buf, const F& f) {
    static_assert(std::rank_v<U> == rank,
                  "tile_program::load: the buffer must have the tile's rank (one element per "
                  "logical thread)");
    phase(0, buf.bit, "load");
    g_.for_each([&](const index_t& t) { buf[t.local] = f(t); });
  }
  /// Compute phase: f(t) for every logical thread; it may read the buffers in `r`, write those
  /// in `w`, and update tile_local state.
  template <class F>
  TESSERA_INLINE void compute(buffer_set r, const F& f) {
    compute(r, write_set{}, f);
  }
  template <class F>
  TESSERA_INLINE void compute(buffer_set r, write_set w, const F& f) {
    phase(r.bits, w.bits, "compute");
    g_.for_each(f);
  }
  /// Store phase: dst[t.global] = f(t) for every logical thread whose global index lies inside
  /// dst's extent — f is not called for the others, so on padded tiles it never reads past its
  /// operands; f may read the buffers in `r`.
  template <class Dst, class F>
  TESSERA_INLINE void store(const Dst& dst, const F& f, buffer_set r = {}) {
    phase(r.bits, 0, "store");
    g_.for_each([&](const index_t& t) {
      if (dst.extent.contains(t.global)) dst[t.global] = f(t);
    });
  }
  /// The underlying Tier 0 tile.
  TESSERA_INLINE basic_tile_group<Space, T...>& group() { return g_; }

 private:
  TESSERA_INLINE void phase(std::uint32_t r, std::uint32_t w, const char* what) {
    const impl::hazard hz = h_.check(r, w);
    if (hz != impl::hazard::none) {
#ifndef TESSERA_DEVICE_PASS
      if (g_.host_context()) {
        const std::uint32_t c = h_.culprits(r, w);
        int b = 0;
        while (b < 31 && !(c & (std::uint32_t{1} << b))) ++b;
        g_.host_context()->barrier_reason(impl::to_string(hz), names_[b], what);
      }
#endif
      (void)what;  // only the host passes record why
      g_.barrier.wait_with_tile_static_memory_fence();
      h_.clear();
    }
    h_.apply(r, w);
  }
  basic_tile_group<Space, T...>& g_;
  impl::hazard_tracker h_;
  int nbuf_ = 0;
  const char* names_[32] = {};  ///< buffer names by hazard bit (static strings)
};

/// The context of tile programs on the default execution space.
template <int... T>
using tile_program_context = basic_tile_program_context<execution_space, T...>;

/// Wraps a Tier 2 body `body(tile_program_context<T...>& p)` as a Tier 0 kernel for
/// parallel_for_each / explain / checked mode.
template <class F>
struct composed_tile_program {
  F body;
  template <class Space, int... T>
  TESSERA_INLINE void operator()(basic_tile_group<Space, T...>& g) const {
    basic_tile_program_context<Space, T...> p(g);
    body(p);
  }
};
/// Makes a Tier 2 tile program from its body, written with TESSERA_KERNEL (see the file
/// comment) or as a functor with a TESSERA_INLINE call operator.
template <class F>
composed_tile_program<F> tile_program(const F& body) {
  impl::check_device_kernel<F>();
  return composed_tile_program<F>{body};
}

}  // namespace tessera
