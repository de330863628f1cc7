/// \file distributed_array.hpp
/// \brief `distributed_array<T, N>`: one partition's local part per process, an ordinary
///        Tessera array with optional halo widths; gather and scatter; halo exchange (blocking
///        and split: begin, compute the interior, wait) and its reverse, folding ghost
///        contributions back into their owners with a combine operator.
#pragma once

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // MPIX_Query_cuda_support (Open MPI)
#endif

#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <tessera/dsl/array.hpp>
#include <tessera/dsl/array_view.hpp>
#include <tessera/dsl/boundary.hpp>
#include <tessera/mpi/partition.hpp>

namespace tessera::mpi {

/// How fold_halo combines a ghost contribution with the owner's element (Cabana's
/// ScatterReduce, Tpetra's CombineMode).
enum class combine { sum, max, min, replace };

/// True when device buffers may be handed to MPI directly (GPU-aware MPI). The environment
/// variable TESSERA_MPI_GPU_AWARE=1 or =0 overrides the detection; otherwise Open MPI's
/// MPIX_Query_cuda_support() (CUDA builds) or MPIX_Query_rocm_support() (HIP builds, Open MPI
/// 5) decides where the MPI has it, and any other MPI is
/// taken as not GPU-aware: device buffers are then staged through host memory. Host backends
/// never need either.
inline bool gpu_aware() {
  if (const char* e = std::getenv("TESSERA_MPI_GPU_AWARE")) return std::string(e) != "0";
#if defined(KOKKOS_ENABLE_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#elif defined(KOKKOS_ENABLE_HIP) && defined(MPIX_ROCM_AWARE_SUPPORT) && MPIX_ROCM_AWARE_SUPPORT
  return MPIX_Query_rocm_support() == 1;
#else
  return false;
#endif
}

namespace impl {

/// A box of a local storage (lower corner and extent).
template <int N>
struct box {
  index<N> lo;
  extent<N> ext;
};

/// MPI datatype of `bytes` contiguous bytes (one element of any trivially copyable type),
/// committed once per size.
inline MPI_Datatype bytes_type(std::size_t bytes) {
  static std::vector<std::pair<std::size_t, MPI_Datatype>> types;
  for (const auto& t : types)
    if (t.first == bytes) return t.second;
  MPI_Datatype t;
  check(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &t),
        "tessera::mpi (MPI_Type_contiguous)");
  check(MPI_Type_commit(&t), "tessera::mpi (MPI_Type_commit)");
  types.emplace_back(bytes, t);
  return t;
}

/// What box_copy does with each element of the box and the flat buffer.
enum class copy_mode { pack, unpack, add, max, min };

/// Copies a box of a local storage to or from a flat buffer, row-major (one Kokkos kernel, one
/// iteration per row of the box: the row is contiguous on both sides and vectorizes); the
/// unpacking modes other than `unpack` combine the buffer into the box (fold_halo).
template <class T, int N>
struct box_copy {
  tessera::impl::strided_ref<T, N> r;
  Kokkos::View<T*, memory_space> buf;
  index<N> lo;
  extent<N> ext;
  copy_mode mode;
  KOKKOS_INLINE_FUNCTION void operator()(index_type row) const {
    index<N> i = lo;
    index_type q = row;
    for (int d = N - 2; d >= 0; --d) {
      i[d] = lo[d] + q % ext[d];
      q /= ext[d];
    }
    T* p = &r.at(i);
    const index_type w = ext[N - 1];
    T* b = buf.data() + row * w;
    switch (mode) {
      case copy_mode::pack:
        for (index_type j = 0; j < w; ++j) b[j] = p[j];
        break;
      case copy_mode::unpack:
        for (index_type j = 0; j < w; ++j) p[j] = b[j];
        break;
      case copy_mode::add:
        for (index_type j = 0; j < w; ++j) p[j] += b[j];
        break;
      case copy_mode::max:
        for (index_type j = 0; j < w; ++j) p[j] = b[j] > p[j] ? b[j] : p[j];
        break;
      case copy_mode::min:
        for (index_type j = 0; j < w; ++j) p[j] = b[j] < p[j] ? b[j] : p[j];
        break;
    }
  }
};

template <class T, int N>
void run_box_copy(const execution_space& exec, const array<T, N>& storage,
                  const Kokkos::View<T*, memory_space>& buf, const box<N>& b, copy_mode mode) {
  if (b.ext.size() == 0) return;
  index_type rows = 1;
  for (int d = 0; d < N - 1; ++d) rows *= b.ext[d];
  Kokkos::parallel_for(
      "tessera::mpi::box_copy",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<index_type>>(exec, 0, rows),
      box_copy<T, N>{storage.ref(), buf, b.lo, b.ext, mode});
}

/// Fills halo cells outside the global extent by a boundary policy (zero, constant, clamp,
/// mirror: periodic halos come from messages). Storage index s along d is global index
/// origin[d] + s - halo[d].
template <class T, int N>
struct boundary_fill {
  tessera::impl::strided_ref<T, N> r;
  index<N> lo;
  extent<N> ext;
  index<N> origin, halo;
  extent<N> global;
  boundary::policy b;
  KOKKOS_INLINE_FUNCTION void operator()(index_type k) const {
    index<N> s, src;
    for (int d = N - 1; d >= 0; --d) {
      s[d] = lo[d] + k % ext[d];
      k /= ext[d];
    }
    for (int d = 0; d < N; ++d) {
      const index_type g = origin[d] + s[d] - halo[d];
      if (g >= 0 && g < global[d]) {
        src[d] = s[d];
      } else if (b.k == boundary::kind::zero || b.k == boundary::kind::constant) {
        r.at(s) = b.k == boundary::kind::zero ? T(0) : static_cast<T>(b.value);
        return;
      } else {
        src[d] = boundary::inside(b.k, g, global[d]) - origin[d] + halo[d];
      }
    }
    r.at(s) = r.at(src);
  }
};

/// A flat buffer in the memory arrays live in, with a host mirror where MPI cannot take
/// device pointers.
template <class T>
struct message_buffer {
  Kokkos::View<T*, memory_space> dev;
  typename Kokkos::View<T*, memory_space>::HostMirror host;
  bool staged = false;
  void allocate(index_type n, bool stage) {
    dev = Kokkos::View<T*, memory_space>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "tessera::mpi::message"),
        static_cast<std::size_t>(n));
    staged = stage;
    if (stage) host = Kokkos::create_mirror_view(dev);
  }
  /// The pointer MPI reads or writes.
  T* mpi_data() const { return staged ? host.data() : dev.data(); }
  void to_host() const {
    if (staged) Kokkos::deep_copy(host, dev);
  }
  void to_device() const {
    if (staged) Kokkos::deep_copy(dev, host);
  }
};

inline bool must_stage() {
  return !host_accessible_memory && !gpu_aware();
}

}  // namespace impl

template <class T, int N>
class distributed_array;

/// One halo exchange in flight: made by distributed_array::begin_exchange_halo() (receives
/// posted, the edges packed and sent), finished by wait() (each halo unpacked as its message
/// arrives, then the global boundary filled). Compute on the interior in between: that is the
/// overlap. The destructor waits if wait() was not called (never leaves messages pending).
template <class T, int N>
class halo_exchange {
 public:
  halo_exchange(const halo_exchange&) = delete;
  halo_exchange& operator=(const halo_exchange&) = delete;
  halo_exchange(halo_exchange&& o) noexcept
      : a_(o.a_),
        exec_(o.exec_),
        msgs_(std::move(o.msgs_)),
        reqs_(std::move(o.reqs_)),
        done_(o.done_) {
    o.done_ = true;
  }
  ~halo_exchange() {
    if (!done_) {
      try {
        wait();
      } catch (...) {
      }
    }
  }
  /// Completes the exchange: every halo element then holds its neighbour's value (or the
  /// boundary policy's, outside the global extent).
  void wait();

 private:
  friend class distributed_array<T, N>;
  struct message {
    impl::box<N> send_box, recv_box;
    int peer = MPI_PROC_NULL;
    impl::message_buffer<T> send, recv;
  };
  halo_exchange(const distributed_array<T, N>* a, const execution_space& exec)
      : a_(a), exec_(exec) {}
  const distributed_array<T, N>* a_;
  execution_space exec_;
  std::vector<message> msgs_;
  std::vector<MPI_Request> reqs_;  // receives [0, m), sends [m, 2m)
  bool done_ = false;
};

/// An N-dimensional array distributed over a process grid by a partition<N>. Each process
/// holds its local part in an ordinary tessera::array (device memory on GPU backends), with
/// `halo[d]` ghost elements on both sides of dimension d around it.
///
/// `local()` is an array_view of the local part: Tier 0 kernels and Tier 1 expressions run on
/// it unchanged (`assign(B.local(), 2.f * A.local() + 1.f)`, `B.local() += A.local()`);
/// `shifted(d)` is the section of the halo-padded storage at offset d (|d_k| <= halo_k), so a
/// stencil over local parts is one Tier 1 line after exchange_halo() — overlapping sections of one
/// buffer, one stencil operand to the code generator.
///
/// \tparam T trivially copyable element type; N rank 1..3
/// Halos need the block distribution (one block per process along each dimension) and halo
/// widths no larger than any non-empty block. Errors are thrown on every process alike (they
/// depend only on the partition), before anything is allocated or sent.
template <class T, int N>
class distributed_array {
  static_assert(std::is_trivially_copyable_v<T>,
                "tessera::mpi::distributed_array<T, N>: T must be trivially copyable");

 public:
  using value_type = T;
  static constexpr int rank = N;

  /// Allocates this process's local part (zero-filled, halos included).
  /// \param p the partition (global extent, grid, blocks, tiles)
  /// \param halo ghost widths per dimension (default none)
  /// \param b what halos outside the global extent hold after exchange_halo: a Tier 1
  ///        boundary policy (zero, constant(v), clamp, mirror, or periodic: the other side's
  ///        elements, by messages)
  /// \throws shape_error for a negative halo, halos on a block-cyclic partition, or a halo
  ///         wider than a non-empty block
  explicit distributed_array(const partition<N>& p, index<N> halo = index<N>(),
                             boundary::policy b = boundary::zero,
                             const std::string& label = "tessera::mpi::distributed_array")
      : part_(p), halo_(halo), boundary_(b) {
    bool any = false;
    for (int d = 0; d < N; ++d) {
      if (halo[d] < 0)
        throw shape_error("tessera::mpi::distributed_array: negative halo " + to_string(halo));
      any = any || halo[d] > 0;
    }
    if (any && !p.contiguous())
      throw shape_error("tessera::mpi::distributed_array: halos " + to_string(halo) +
                        " need one block per process along each dimension; the partition is " +
                        p.describe());
    for (int d = 0; d < N && any; ++d) {
      const index_type n = p.global_extent()[d], bd = p.block()[d];
      if (n == 0 || halo[d] == 0) continue;
      const index_type last = n - (active(d) - 1) * bd;
      const index_type smallest = last < bd ? last : bd;
      if (halo[d] > smallest)
        throw shape_error("tessera::mpi::distributed_array: halo " + to_string(halo) +
                          " is wider than the smallest block along dimension " + std::to_string(d) +
                          " (" + std::to_string(smallest) + ") of " + p.describe());
    }
    local_ = p.local_extent();
    extent<N> padded = local_;
    if (local_.size() > 0)
      for (int d = 0; d < N; ++d) padded[d] += 2 * halo[d];
    storage_ = array<T, N>(padded, label);
  }

  /// The partition (global extent, grid, blocks, tiles).
  const partition<N>& layout() const { return part_; }
  const process_grid<N>& grid() const { return part_.grid(); }
  extent<N> global_extent() const { return part_.global_extent(); }
  /// This process's local extent (without halos).
  extent<N> local_extent() const { return local_; }
  /// Global index of this process's first local element (block distribution).
  index<N> origin() const { return part_.origin(); }
  index<N> halo() const { return halo_; }
  boundary::policy boundary_policy() const { return boundary_; }

  /// The local part (halos excluded), an array_view sharing the storage.
  array_view<T, N> local() const {
    if (local_.size() == 0) return array_view<T, N>(storage_);
    return storage_.section(halo_, local_);
  }
  /// The local part read at offset d: element i is the local element i + d, which lies in the
  /// halo where i + d leaves the local part (|d_k| <= halo_k).
  /// \throws shape_error when |d_k| > halo_k
  array_view<T, N> shifted(const index<N>& d) const {
    for (int k = 0; k < N; ++k)
      if (d[k] > halo_[k] || d[k] < -halo_[k])
        throw shape_error("tessera::mpi::distributed_array::shifted: offset " + to_string(d) +
                          " exceeds the halo " + to_string(halo_));
    if (local_.size() == 0) return array_view<T, N>(storage_);
    return storage_.section(halo_ + d, local_);
  }
  /// The local storage with its halos (extent local + 2 * halo, empty when the local part is).
  const array<T, N>& storage() const { return storage_; }

  /// Exchanges halos and waits: after it every halo element holds the element of the global
  /// array it stands for (or the boundary policy's value outside the global extent).
  /// Messages: one per neighbour (up to 3^N - 1: faces, edges and corners), each the edge box
  /// it needs, packed by a Kokkos kernel; collective over the grid (every process calls it).
  void exchange_halo() const { begin_exchange_halo(execution_space()).wait(); }
  /// On an execution-space instance (e.g. a CUDA stream): packing, unpacking and boundary
  /// kernels run there, and only that instance is fenced before MPI reads a buffer.
  void exchange_halo(const execution_space& exec) const { begin_exchange_halo(exec).wait(); }
  /// Starts an exchange (receives posted, edges packed and sent) and returns it: compute on
  /// the interior, then call wait() on the result before reading halos.
  halo_exchange<T, N> begin_exchange_halo() const { return begin_exchange_halo(execution_space()); }
  halo_exchange<T, N> begin_exchange_halo(const execution_space& exec) const {
    halo_exchange<T, N> x(this, exec);
    if (!has_halo() || local_.size() == 0) return x;
    const bool stage = impl::must_stage();
    for_each_neighbour([&](const index<N>& o, int peer, int) {
      typename halo_exchange<T, N>::message m;
      m.peer = peer;
      m.send_box = edge_box(o);
      m.recv_box = halo_box(o);
      m.send.allocate(m.send_box.ext.size(), stage);
      m.recv.allocate(m.recv_box.ext.size(), stage);
      x.msgs_.push_back(std::move(m));
    });
    const int m = static_cast<int>(x.msgs_.size());
    x.reqs_.assign(static_cast<std::size_t>(2 * m), MPI_REQUEST_NULL);
    const MPI_Datatype t = impl::bytes_type(sizeof(T));
    int k = 0;
    for_each_neighbour([&](const index<N>& o, int, int) {
      auto& msg = x.msgs_[static_cast<std::size_t>(k)];
      check(MPI_Irecv(msg.recv.mpi_data(), static_cast<int>(msg.recv_box.ext.size()), t, msg.peer,
                      tag(-o), grid().comm(), &x.reqs_[static_cast<std::size_t>(k)]),
            "tessera::mpi::distributed_array::begin_exchange_halo (MPI_Irecv)");
      ++k;
    });
    for (auto& msg : x.msgs_)
      impl::run_box_copy(exec, storage_, msg.send.dev, msg.send_box, impl::copy_mode::pack);
    exec.fence();  // packed before MPI reads the buffers
    k = 0;
    for_each_neighbour([&](const index<N>& o, int, int) {
      auto& msg = x.msgs_[static_cast<std::size_t>(k)];
      msg.send.to_host();
      check(MPI_Isend(msg.send.mpi_data(), static_cast<int>(msg.send_box.ext.size()), t, msg.peer,
                      tag(o), grid().comm(), &x.reqs_[static_cast<std::size_t>(m + k)]),
            "tessera::mpi::distributed_array::begin_exchange_halo (MPI_Isend)");
      ++k;
    });
    return x;
  }

  /// The reverse of exchange_halo (Cabana's scatter, Tpetra's Export): every halo element is
  /// sent to the process owning the global element it stands for and combined into that
  /// element with `op` (sum: ghost contributions added, e.g. particle deposits or a transposed
  /// stencil). Contributions are combined in a fixed neighbour order, so results are the same
  /// bits on every run; halo elements outside the global extent are dropped, except that a
  /// periodic boundary folds them into the other side. Halos keep their values.
  void fold_halo(combine op = combine::sum) const { fold_halo(execution_space(), op); }
  /// fold_halo on an execution-space instance (kernels there, that instance fenced).
  void fold_halo(const execution_space& exec, combine op = combine::sum) const {
    if (!has_halo() || local_.size() == 0) return;
    const bool stage = impl::must_stage();
    struct msg_t {
      impl::box<N> halo_box, edge_box;
      int peer;
      impl::message_buffer<T> send, recv;
    };
    std::vector<msg_t> msgs;
    for_each_neighbour([&](const index<N>& o, int peer, int) {
      msg_t m;
      m.peer = peer;
      m.halo_box = halo_box(o);
      m.edge_box = edge_box(o);
      m.send.allocate(m.halo_box.ext.size(), stage);
      m.recv.allocate(m.edge_box.ext.size(), stage);
      msgs.push_back(std::move(m));
    });
    const int m = static_cast<int>(msgs.size());
    std::vector<MPI_Request> reqs(static_cast<std::size_t>(2 * m), MPI_REQUEST_NULL);
    const MPI_Datatype t = impl::bytes_type(sizeof(T));
    int k = 0;
    for_each_neighbour([&](const index<N>& o, int, int) {
      auto& g = msgs[static_cast<std::size_t>(k)];
      check(MPI_Irecv(g.recv.mpi_data(), static_cast<int>(g.edge_box.ext.size()), t, g.peer,
                      tag(-o), grid().comm(), &reqs[static_cast<std::size_t>(k)]),
            "tessera::mpi::distributed_array::fold_halo (MPI_Irecv)");
      ++k;
    });
    for (auto& g : msgs)
      impl::run_box_copy(exec, storage_, g.send.dev, g.halo_box, impl::copy_mode::pack);
    exec.fence();
    k = 0;
    for_each_neighbour([&](const index<N>& o, int, int) {
      auto& g = msgs[static_cast<std::size_t>(k)];
      g.send.to_host();
      check(MPI_Isend(g.send.mpi_data(), static_cast<int>(g.halo_box.ext.size()), t, g.peer, tag(o),
                      grid().comm(), &reqs[static_cast<std::size_t>(m + k)]),
            "tessera::mpi::distributed_array::fold_halo (MPI_Isend)");
      ++k;
    });
    check(MPI_Waitall(2 * m, reqs.data(), MPI_STATUSES_IGNORE),
          "tessera::mpi::distributed_array::fold_halo (MPI_Waitall)");
    for (auto& g : msgs) {  // fixed order: the same bits on every run
      g.recv.to_device();
      const impl::copy_mode mode = op == combine::sum   ? impl::copy_mode::add
                                   : op == combine::max ? impl::copy_mode::max
                                   : op == combine::min ? impl::copy_mode::min
                                                        : impl::copy_mode::unpack;
      impl::run_box_copy(exec, storage_, g.recv.dev, g.edge_box, mode);
    }
    exec.fence();
  }

  /// Gathers the whole array to `root`: there a row-major std::vector of the global extent,
  /// elsewhere an empty one. Collective over the grid.
  std::vector<T> gather(int root = 0) const {
    const auto counts = part_counts();
    std::vector<int> displs(counts.size(), 0);
    for (std::size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
    const int me = grid().rank();
    std::vector<T> mine = local_to_host();
    std::vector<T> all;
    if (me == root) all.resize(static_cast<std::size_t>(displs.back() + counts.back()));
    const MPI_Datatype t = impl::bytes_type(sizeof(T));
    check(MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), t, all.data(), counts.data(),
                      displs.data(), t, root, grid().comm()),
          "tessera::mpi::distributed_array::gather (MPI_Gatherv)");
    if (me != root) return {};
    std::vector<T> out(static_cast<std::size_t>(global_extent().size()));
    for (int r = 0; r < grid().size(); ++r)
      place(grid().coords_of(r), all.data() + displs[static_cast<std::size_t>(r)], out.data(),
            true);
    return out;
  }
  /// Scatters a row-major array of the global extent held by `root` (`data` is read there
  /// only; elsewhere it may be null) into the local parts. Collective over the grid.
  /// \throws shape_error on root when `size` differs from the global extent's size; the other
  ///         processes are told and throw too (nothing is written anywhere)
  void scatter(const T* data, index_type size, int root = 0) const {
    const int me = grid().rank();
    int ok = me != root || size == global_extent().size();
    check(MPI_Bcast(&ok, 1, MPI_INT, root, grid().comm()),
          "tessera::mpi::distributed_array::scatter (MPI_Bcast)");
    if (!ok)
      throw shape_error("tessera::mpi::distributed_array::scatter: the root's data has " +
                        (me == root ? std::to_string(size) : std::string("another number of")) +
                        " elements, the global extent " + to_string(global_extent()) + " " +
                        std::to_string(global_extent().size()));
    const auto counts = part_counts();
    std::vector<int> displs(counts.size(), 0);
    for (std::size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
    std::vector<T> all;
    if (me == root) {
      all.resize(static_cast<std::size_t>(displs.back() + counts.back()));
      for (int r = 0; r < grid().size(); ++r)
        place(grid().coords_of(r), all.data() + displs[static_cast<std::size_t>(r)],
              const_cast<T*>(data), false);
    }
    std::vector<T> mine(static_cast<std::size_t>(local_.size()));
    const MPI_Datatype t = impl::bytes_type(sizeof(T));
    check(MPI_Scatterv(all.data(), counts.data(), displs.data(), t, mine.data(),
                       static_cast<int>(mine.size()), t, root, grid().comm()),
          "tessera::mpi::distributed_array::scatter (MPI_Scatterv)");
    host_to_local(mine);
  }
  void scatter(const std::vector<T>& data, int root = 0) const {
    scatter(data.data(), static_cast<index_type>(data.size()), root);
  }

  /// The local part copied to the host, row-major (no communication).
  std::vector<T> local_to_host() const {
    std::vector<T> out(static_cast<std::size_t>(local_.size()));
    if (out.empty()) return out;
    impl::message_buffer<T> b;
    b.allocate(local_.size(), !host_accessible_memory);
    const execution_space exec;
    impl::run_box_copy(exec, storage_, b.dev, interior_box(), impl::copy_mode::pack);
    Kokkos::fence();
    b.to_host();
    const T* p = b.mpi_data();
    std::copy(p, p + out.size(), out.begin());
    return out;
  }
  /// Writes a row-major host vector of the local extent into the local part.
  void host_to_local(const std::vector<T>& v) const {
    if (local_.size() == 0) return;
    impl::message_buffer<T> b;
    b.allocate(local_.size(), !host_accessible_memory);
    std::copy(v.begin(), v.end(), b.mpi_data());
    b.to_device();
    const execution_space exec;
    impl::run_box_copy(exec, storage_, b.dev, interior_box(), impl::copy_mode::unpack);
    Kokkos::fence();
  }

  /// Messages and bytes of one exchange_halo on this process (for explain).
  struct traffic {
    int messages = 0;
    index_type bytes = 0;
  };
  traffic halo_traffic() const {
    traffic t;
    if (!has_halo() || local_.size() == 0) return t;
    for_each_neighbour([&](const index<N>& o, int, int) {
      ++t.messages;
      t.bytes += edge_box(o).ext.size() * static_cast<index_type>(sizeof(T));
    });
    return t;
  }

 private:
  friend class halo_exchange<T, N>;
  bool has_halo() const {
    for (int d = 0; d < N; ++d)
      if (halo_[d] > 0) return true;
    return false;
  }
  /// Grid coordinates along d that hold elements.
  index_type active(int d) const {
    const index_type n = part_.global_extent()[d], b = part_.block()[d];
    const index_type a = (n + b - 1) / b;
    const index_type P = part_.grid().dims()[d];
    return a < P ? a : P;
  }
  static int tag(const index<N>& o) {
    int t = 0;
    for (int d = N - 1; d >= 0; --d) t = t * 3 + static_cast<int>(o[d] + 1);
    return 1000 + t;
  }
  impl::box<N> interior_box() const { return {halo_, local_}; }
  /// The edge of the local part that the neighbour at offset o needs.
  impl::box<N> edge_box(const index<N>& o) const {
    impl::box<N> b;
    for (int d = 0; d < N; ++d) {
      const index_type h = halo_[d], n = local_[d];
      b.lo[d] = o[d] < 0 ? h : o[d] > 0 ? n : h;
      b.ext[d] = o[d] == 0 ? n : h;
    }
    return b;
  }
  /// The halo box toward offset o.
  impl::box<N> halo_box(const index<N>& o) const {
    impl::box<N> b;
    for (int d = 0; d < N; ++d) {
      const index_type h = halo_[d], n = local_[d];
      b.lo[d] = o[d] < 0 ? 0 : o[d] > 0 ? h + n : h;
      b.ext[d] = o[d] == 0 ? n : h;
    }
    return b;
  }
  /// The offsets o in {-1, 0, 1}^N \ {0} toward which this array has a halo box (o_d != 0
  /// only where halo_d > 0), in a fixed order.
  std::vector<index<N>> halo_offsets() const {
    std::vector<index<N>> out;
    int total = 1;
    for (int d = 0; d < N; ++d) total *= 3;
    for (int code = 0; code < total; ++code) {
      index<N> o;
      int r = code;
      bool zero = true, skip = false;
      for (int d = 0; d < N; ++d) {
        o[d] = r % 3 - 1;
        r /= 3;
        zero = zero && o[d] == 0;
        skip = skip || (o[d] != 0 && halo_[d] == 0);
      }
      if (!zero && !skip) out.push_back(o);
    }
    return out;
  }
  /// Calls f(offset, peer rank, 0) for every halo offset whose neighbour exists (periodic
  /// boundaries wrap; a process whose local part is empty is nobody's neighbour).
  template <class F>
  void for_each_neighbour(F&& f) const {
    const index<N> c = grid().coords();
    for (const index<N>& o : halo_offsets()) {
      index<N> nc;
      bool skip = false;
      for (int d = 0; d < N && !skip; ++d) {
        const index_type a = active(d);
        index_type x = c[d] + o[d];
        if (x < 0 || x >= a) {
          if (boundary_.k != boundary::kind::periodic) skip = true;
          x = (x % a + a) % a;
        }
        nc[d] = x;
      }
      if (!skip) f(o, grid().rank_of(nc), 0);
    }
  }
  /// Fills the halo boxes that lie outside the global extent (non-periodic boundaries).
  void fill_boundary(const execution_space& exec) const {
    if (boundary_.k == boundary::kind::periodic || local_.size() == 0) return;
    const index<N> c = grid().coords();
    for (const index<N>& o : halo_offsets()) {
      bool outside = false;
      for (int d = 0; d < N; ++d)
        outside = outside || (o[d] < 0 && c[d] == 0) || (o[d] > 0 && c[d] == active(d) - 1);
      if (!outside) continue;
      const impl::box<N> b = halo_box(o);
      const index_type n = b.ext.size();
      if (n == 0) continue;
      Kokkos::parallel_for(
          "tessera::mpi::boundary_fill",
          Kokkos::RangePolicy<execution_space, Kokkos::IndexType<index_type>>(exec, 0, n),
          impl::boundary_fill<T, N>{storage_.ref(), b.lo, b.ext, part_.origin(), halo_,
                                    part_.global_extent(), boundary_});
    }
    exec.fence();
  }
  /// Element counts of every process's local part (in comm() rank order).
  std::vector<int> part_counts() const {
    std::vector<int> counts(static_cast<std::size_t>(grid().size()));
    for (int r = 0; r < grid().size(); ++r) {
      const index_type n = part_.local_extent(grid().coords_of(r)).size();
      if (n > index_type(1 << 30) * 2 - 1)
        throw resource_error("tessera::mpi::distributed_array: a local part of " +
                             std::to_string(n) + " elements exceeds MPI's int counts");
      counts[static_cast<std::size_t>(r)] = static_cast<int>(n);
    }
    return counts;
  }
  /// Copies the local part of the process at coordinates c between its row-major packed form
  /// and the global row-major array (to_global: packed -> global).
  void place(const index<N>& c, T* packed, T* global, bool to_global) const {
    const extent<N> le = part_.local_extent(c);
    const extent<N> ge = part_.global_extent();
    if (le.size() == 0) return;
    index_type rows = 1;
    for (int d = 0; d < N - 1; ++d) rows *= le[d];
    const index_type w = le[N - 1];
    for (index_type row = 0; row < rows; ++row) {
      index<N> l;
      index_type q = row;
      for (int d = N - 2; d >= 0; --d) {
        l[d] = q % le[d];
        q /= le[d];
      }
      index_type base = 0;
      for (int d = 0; d < N - 1; ++d) base = base * ge[d] + part_.global_of(d, c[d], l[d]);
      base *= ge[N - 1];
      T* src = packed + row * w;
      for (index_type j = 0; j < w; ++j) {
        T* g = global + base + part_.global_of(N - 1, c[N - 1], j);
        if (to_global)
          *g = src[j];
        else
          src[j] = *g;
      }
    }
  }

  partition<N> part_;
  index<N> halo_;
  boundary::policy boundary_;
  extent<N> local_;
  array<T, N> storage_;
};

template <class T, int N>
void halo_exchange<T, N>::wait() {
  if (done_) return;
  done_ = true;
  const int m = static_cast<int>(msgs_.size());
  for (int left = m; left > 0; --left) {  // unpack each halo as its message arrives
    int i = MPI_UNDEFINED;
    check(MPI_Waitany(m, reqs_.data(), &i, MPI_STATUS_IGNORE),
          "tessera::mpi::halo_exchange::wait (MPI_Waitany)");
    if (i == MPI_UNDEFINED) break;
    auto& msg = msgs_[static_cast<std::size_t>(i)];
    msg.recv.to_device();
    impl::run_box_copy(exec_, a_->storage_, msg.recv.dev, msg.recv_box, impl::copy_mode::unpack);
  }
  if (m > 0)
    check(MPI_Waitall(m, reqs_.data() + m, MPI_STATUSES_IGNORE),
          "tessera::mpi::halo_exchange::wait (MPI_Waitall)");
  a_->fill_boundary(exec_);
  exec_.fence();  // halos unpacked before anyone reads them
}

}  // namespace tessera::mpi
