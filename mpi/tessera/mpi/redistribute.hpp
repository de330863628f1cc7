/// \file redistribute.hpp
/// \brief Explicit data movement between partitions: `redistribute(dst, src)` (any partition to
///        any other of the same global extent: block to block-cyclic, another grid shape,
///        other tiles) and `transpose(dst, src)` (2-D: dst = src^T), one MPI_Alltoallv each.
#pragma once

#include <mpi.h>

#include <array>
#include <sstream>
#include <string>
#include <vector>

#include <tessera/mpi/distributed_array.hpp>

namespace tessera::mpi {

namespace impl {

/// The destination dimension of each source dimension (identity, or a transpose's swap).
template <int N>
using dim_perm = std::array<int, static_cast<std::size_t>(N)>;

/// Positions along source dim d (of the process at source coordinate cs) grouped by the
/// destination coordinate that owns them.
template <int N>
std::vector<std::vector<index_type>> group_positions(const partition<N>& src, int d, index_type cs,
                                                     const partition<N>& dst, int e) {
  const index_type P = dst.grid().dims()[e];
  std::vector<std::vector<index_type>> out(static_cast<std::size_t>(P));
  const index_type n = src.local_size(d, cs);
  for (index_type l = 0; l < n; ++l) {
    const index_type g = src.global_of(d, cs, l);
    out[static_cast<std::size_t>((g / dst.block()[e]) % P)].push_back(l);
  }
  return out;
}

/// Calls f(source local flat index, source local index, destination local index) for the
/// elements the source
/// process at coordinates cs sends to the destination process at coordinates cd, in the
/// source's row-major order.
template <int N, class F>
void for_each_moved(const partition<N>& src, const index<N>& cs, const partition<N>& dst,
                    const index<N>& cd, const dim_perm<N>& perm, F&& f) {
  std::array<std::vector<index_type>, N> lists;
  const extent<N> ls = src.local_extent(cs);
  for (int d = 0; d < N; ++d) {
    const int e = perm[static_cast<std::size_t>(d)];
    auto groups = group_positions(src, d, cs[d], dst, e);
    lists[static_cast<std::size_t>(d)] = std::move(groups[static_cast<std::size_t>(cd[e])]);
    if (lists[static_cast<std::size_t>(d)].empty()) return;
  }
  std::array<std::size_t, N> k{};
  while (true) {
    index_type flat = 0;
    index<N> sl, dl;
    for (int d = 0; d < N; ++d) {
      const index_type l = lists[static_cast<std::size_t>(d)][k[static_cast<std::size_t>(d)]];
      flat = flat * ls[d] + l;
      sl[d] = l;
      const int e = perm[static_cast<std::size_t>(d)];
      dl[e] = dst.local_of(e, src.global_of(d, cs[d], l));
    }
    f(flat, sl, dl);
    int d = N - 1;
    for (; d >= 0; --d) {
      if (++k[static_cast<std::size_t>(d)] < lists[static_cast<std::size_t>(d)].size()) break;
      k[static_cast<std::size_t>(d)] = 0;
    }
    if (d < 0) break;
  }
}

template <class T, class U, int N>
void move_elements(const char* fn, const distributed_array<T, N>& dst,
                   const distributed_array<U, N>& src, const dim_perm<N>& perm) {
  const auto& ps = src.layout();
  const auto& pd = dst.layout();
  for (int d = 0; d < N; ++d)
    if (pd.global_extent()[perm[static_cast<std::size_t>(d)]] != ps.global_extent()[d])
      throw shape_error(std::string(fn) + ": the destination " + pd.describe() +
                        " does not match the source " + ps.describe());
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(ps.grid().comm(), pd.grid().comm(), &cmp);
  if (cmp != MPI_IDENT && cmp != MPI_CONGRUENT)
    throw shape_error(std::string(fn) +
                      ": source and destination grids are not over the same "
                      "processes in the same order (" +
                      ps.describe() + ", " + pd.describe() + ")");
  const MPI_Comm comm = ps.grid().comm();
  const int P = ps.grid().size(), me = ps.grid().rank();
  const index<N> cs = ps.grid().coords();
  const index<N> cd = pd.grid().coords_of(me);
  // Pack: for each destination, the elements it owns, in this process's row-major order; on
  // host backends straight from the local part (packing fused with the read), elsewhere from
  // a host copy of it.
  std::vector<U> mine;
  if constexpr (!host_accessible_memory) mine = src.local_to_host();
  Kokkos::fence();
  const auto sv = src.storage().ref();
  const index<N> sh = src.halo();
  std::vector<int> scount(static_cast<std::size_t>(P)), sdispl(scount.size() + 1, 0);
  std::vector<T> sendbuf;
  sendbuf.reserve(static_cast<std::size_t>(src.local_extent().size()));
  for (int r = 0; r < P; ++r) {
    const std::size_t before = sendbuf.size();
    for_each_moved(ps, cs, pd, pd.grid().coords_of(r), perm,
                   [&](index_type flat, const index<N>& sl, const index<N>&) {
                     if constexpr (host_accessible_memory)
                       sendbuf.push_back(static_cast<T>(sv.at(sl + sh)));
                     else
                       sendbuf.push_back(static_cast<T>(mine[static_cast<std::size_t>(flat)]));
                   });
    scount[static_cast<std::size_t>(r)] = static_cast<int>(sendbuf.size() - before);
    sdispl[static_cast<std::size_t>(r) + 1] = static_cast<int>(sendbuf.size());
  }
  // Receive counts follow from the partitions alone (no counts exchanged).
  std::vector<int> rcount(static_cast<std::size_t>(P)), rdispl(rcount.size() + 1, 0);
  for (int r = 0; r < P; ++r) {
    int c = 0;
    for_each_moved(ps, ps.grid().coords_of(r), pd, cd, perm,
                   [&](index_type, const index<N>&, const index<N>&) { ++c; });
    rcount[static_cast<std::size_t>(r)] = c;
    rdispl[static_cast<std::size_t>(r) + 1] = rdispl[static_cast<std::size_t>(r)] + c;
  }
  std::vector<T> recvbuf(static_cast<std::size_t>(rdispl.back()));
  const MPI_Datatype t = bytes_type(sizeof(T));
  check(MPI_Alltoallv(sendbuf.data(), scount.data(), sdispl.data(), t, recvbuf.data(),
                      rcount.data(), rdispl.data(), t, comm),
        fn);
  // Unpack in each source's order: on host backends straight into the local part.
  const extent<N> le = dst.local_extent();
  const auto dv = dst.storage().ref();
  const index<N> dh = dst.halo();
  std::vector<T> out;
  if constexpr (!host_accessible_memory) out.resize(static_cast<std::size_t>(le.size()));
  for (int r = 0; r < P; ++r) {
    std::size_t k = static_cast<std::size_t>(rdispl[static_cast<std::size_t>(r)]);
    for_each_moved(ps, ps.grid().coords_of(r), pd, cd, perm,
                   [&](index_type, const index<N>&, const index<N>& dl) {
                     if constexpr (host_accessible_memory) {
                       dv.at(dl + dh) = recvbuf[k++];
                     } else {
                       index_type f = 0;
                       for (int d = 0; d < N; ++d) f = f * le[d] + dl[d];
                       out[static_cast<std::size_t>(f)] = recvbuf[k++];
                     }
                   });
  }
  if constexpr (!host_accessible_memory) dst.host_to_local(out);
}

template <int N>
dim_perm<N> identity_perm() {
  dim_perm<N> p{};
  for (int d = 0; d < N; ++d) p[static_cast<std::size_t>(d)] = d;
  return p;
}
}  // namespace impl

/// Copies src into dst, whose partition may differ in every respect but the global extent
/// (block to block-cyclic, another grid shape over the same processes, other tiles), converting
/// elements to dst's type. One MPI_Alltoallv; each process packs what every other process owns
/// of its local part, in row-major order (receive counts follow from the two partitions, so
/// nothing else is exchanged). Halos of dst are left as they are.
/// \throws shape_error, on every process before any message, when the global extents differ
///         or the grids are not over the same processes in the same order
/// Cost: on host backends each element is read once from the local part into the send buffer
/// and written once from the receive buffer; on GPU backends local parts pass through host
/// memory.
template <class T, class U, int N>
void redistribute(const distributed_array<T, N>& dst, const distributed_array<U, N>& src) {
  impl::move_elements("tessera::mpi::redistribute", dst, src, impl::identity_perm<N>());
}

/// dst = src^T for 2-D distributed arrays (dst's global extent is src's, swapped; any
/// partitions). One MPI_Alltoallv, as redistribute.
/// \throws shape_error as redistribute, naming both partitions
template <class T, class U>
void transpose(const distributed_array<T, 2>& dst, const distributed_array<U, 2>& src) {
  impl::move_elements("tessera::mpi::transpose", dst, src, impl::dim_perm<2>{1, 0});
}

/// What redistribute(dst, src) moves from this process: messages and bytes per destination
/// (MPI_Alltoallv). Runs nothing.
template <class T, class U, int N>
std::string explain_redistribute(const distributed_array<T, N>& dst,
                                 const distributed_array<U, N>& src) {
  const auto& ps = src.layout();
  const auto& pd = dst.layout();
  std::ostringstream os;
  os << "redistribute " << ps.describe() << " -> " << pd.describe()
     << ": one MPI_Alltoallv; this process " << to_string(ps.grid().coords()) << " sends";
  index_type total = 0;
  int messages = 0;
  for (int r = 0; r < ps.grid().size(); ++r) {
    index_type c = 0;
    impl::for_each_moved(ps, ps.grid().coords(), pd, pd.grid().coords_of(r),
                         impl::identity_perm<N>(),
                         [&](index_type, const index<N>&, const index<N>&) { ++c; });
    if (c > 0) {
      os << " " << c * static_cast<index_type>(sizeof(T)) << " bytes to rank " << r << ";";
      ++messages;
    }
    total += c * static_cast<index_type>(sizeof(T));
  }
  os << " " << messages << " messages, " << total << " bytes\n";
  return os.str();
}

}  // namespace tessera::mpi
