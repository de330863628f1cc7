/// \file partition.hpp
/// \brief `partition<N>`: a global extent cut into blocks over a process grid, block or
///        block-cyclic along each dimension (ScaLAPACK's distribution), block sizes multiples
///        of a tile.
#pragma once

#include <string>

#include <tessera/dsl/index.hpp>
#include <tessera/mpi/grid.hpp>

namespace tessera::mpi {

/// How a partition assigns blocks to the processes of a grid dimension.
enum class distribution {
  /// One block per process, as equal as the tile allows: block size ceil(n / P) rounded up to
  /// a multiple of the tile (the last processes may hold a shorter block, or none).
  block,
  /// Blocks of a given size dealt round-robin: block k to grid coordinate k mod P (ScaLAPACK's
  /// 2-D block-cyclic distribution along each dimension).
  block_cyclic
};

/// A global extent distributed over a process_grid<N>: along dimension d the global indices
/// are cut into blocks of b_d (the last one shorter), block k held by the process with grid
/// coordinate k mod P_d. Each process holds the blocks it is dealt, concatenated in global
/// order, as one dense local extent (ScaLAPACK's local layout, row-major). With the `block`
/// distribution every process holds at most one block along each dimension and its local part
/// starts at a global origin.
///
/// Every block size is a multiple of the partition's tile, so a tile of the global index space
/// never straddles two processes: tile kernels, `tile_mean` and `tile_reduce` over tiles of
/// that size run on local parts unchanged, and the reproducible distributed sum uses the tiles
/// as its fixed chunk grid.
template <int N>
class partition {
 public:
  partition() = default;
  /// Block distribution of `global` over `grid` with tiles of `tile` (default 1 in every
  /// dimension). \throws shape_error for a negative extent or a tile size < 1
  partition(const extent<N>& global, const process_grid<N>& grid, extent<N> tile = ones())
      : global_(global), grid_(grid), tile_(tile), kind_(distribution::block) {
    check_args("tessera::mpi::partition");
    for (int d = 0; d < N; ++d) {
      const index_type p = grid.dims()[d];
      index_type b = (global[d] + p - 1) / p;
      b = (b + tile[d] - 1) / tile[d] * tile[d];
      block_[d] = b < tile[d] ? tile[d] : b;
    }
  }
  /// Block-cyclic distribution with blocks of `block` (each a multiple of `tile`).
  /// \throws shape_error when a block size is < 1 or not a multiple of the tile size, or for a
  ///         negative extent (before anything is allocated)
  static partition block_cyclic(const extent<N>& global, const process_grid<N>& grid,
                                const extent<N>& block, extent<N> tile = ones()) {
    partition p;
    p.global_ = global;
    p.grid_ = grid;
    p.tile_ = tile;
    p.kind_ = distribution::block_cyclic;
    p.check_args("tessera::mpi::partition::block_cyclic");
    for (int d = 0; d < N; ++d)
      if (block[d] < 1 || block[d] % tile[d] != 0)
        throw shape_error("tessera::mpi::partition::block_cyclic: block " + to_string(block) +
                          " is not a positive multiple of the tile " + to_string(tile));
    p.block_ = block;
    return p;
  }

  const extent<N>& global_extent() const { return global_; }
  const process_grid<N>& grid() const { return grid_; }
  const extent<N>& tile() const { return tile_; }
  /// Block sizes (the last block along a dimension may be shorter).
  const extent<N>& block() const { return block_; }
  distribution kind() const { return kind_; }

  /// Elements along dimension d held by the process with grid coordinate p (ScaLAPACK's
  /// NUMROC).
  index_type local_size(int d, index_type p) const {
    const index_type n = global_[d], b = block_[d], P = grid_.dims()[d];
    const index_type nblocks = n / b;  // whole blocks
    index_type s = (nblocks / P) * b;
    const index_type extra = nblocks % P;
    if (p < extra)
      s += b;
    else if (p == extra)
      s += n % b;
    return s;
  }
  /// Local extent of the process at grid coordinates c (default: this process).
  extent<N> local_extent(const index<N>& c) const {
    extent<N> e;
    for (int d = 0; d < N; ++d) e[d] = local_size(d, c[d]);
    return e;
  }
  extent<N> local_extent() const { return local_extent(grid_.coords()); }
  /// Grid coordinates of the process that holds global index g.
  index<N> owner_coords(const index<N>& g) const {
    index<N> c;
    for (int d = 0; d < N; ++d) c[d] = (g[d] / block_[d]) % grid_.dims()[d];
    return c;
  }
  /// Rank (in grid().comm()) of the process that holds global index g.
  /// \throws shape_error when g lies outside the global extent
  int owner(const index<N>& g) const {
    if (!global_.contains(g))
      throw shape_error("tessera::mpi::partition::owner: index " + to_string(g) +
                        " outside the global extent " + to_string(global_));
    return grid_.rank_of(owner_coords(g));
  }
  /// Local index (on its owner) of global index g.
  index<N> to_local(const index<N>& g) const {
    index<N> l;
    for (int d = 0; d < N; ++d) l[d] = local_of(d, g[d]);
    return l;
  }
  /// Global index of local index l on the process at grid coordinates c (default: this one).
  index<N> to_global(const index<N>& l, const index<N>& c) const {
    index<N> g;
    for (int d = 0; d < N; ++d) g[d] = global_of(d, c[d], l[d]);
    return g;
  }
  index<N> to_global(const index<N>& l) const { return to_global(l, grid_.coords()); }
  /// Along dimension d: local position of global position g on its owner.
  index_type local_of(int d, index_type g) const {
    const index_type b = block_[d], P = grid_.dims()[d];
    return (g / b / P) * b + g % b;
  }
  /// Along dimension d: global position of local position l on grid coordinate p.
  index_type global_of(int d, index_type p, index_type l) const {
    const index_type b = block_[d], P = grid_.dims()[d];
    return ((l / b) * P + p) * b + l % b;
  }
  /// Global origin of the process at grid coordinates c (its first element): with the block
  /// distribution the local part is the global box [origin, origin + local_extent).
  index<N> origin(const index<N>& c) const {
    index<N> o;
    for (int d = 0; d < N; ++d) {
      const index_type g = c[d] * block_[d];
      o[d] = g < global_[d] ? g : global_[d];
    }
    return o;
  }
  index<N> origin() const { return origin(grid_.coords()); }
  /// True when every process holds at most one block along every dimension (the block
  /// distribution, or block-cyclic blocks that happen to be that large).
  bool contiguous() const {
    for (int d = 0; d < N; ++d)
      if (block_[d] * grid_.dims()[d] < global_[d]) return false;
    return true;
  }
  /// "block 1000x1000 over 2x2 (blocks 500x500, tiles 1x1)".
  std::string describe() const {
    return std::string(kind_ == distribution::block ? "block" : "block-cyclic") + " " +
           to_string(global_) + " over " + to_string(grid_.dims()) + " (blocks " +
           to_string(block_) + ", tiles " + to_string(tile_) + ")";
  }
  /// Same global extent, grid, blocks and tiles (the distribution kind aside: equal blocks
  /// place every element alike).
  friend bool operator==(const partition& a, const partition& b) {
    return a.global_ == b.global_ && a.block_ == b.block_ && a.tile_ == b.tile_ &&
           a.grid_ == b.grid_;
  }
  /// The partition of the tile means of this one (tile_mean, tile_reduce): every extent,
  /// block and tile divided by `factor`, which must divide the tile.
  /// \throws shape_error when `factor` does not divide the tile or the global extent
  partition coarsened(const extent<N>& factor) const {
    partition p = *this;
    for (int d = 0; d < N; ++d) {
      if (factor[d] < 1 || tile_[d] % factor[d] != 0 || global_[d] % factor[d] != 0)
        throw shape_error("tessera::mpi::partition::coarsened: " + to_string(factor) +
                          " does not divide the tile " + to_string(tile_) +
                          " and the global extent " + to_string(global_));
      p.global_[d] /= factor[d];
      p.block_[d] /= factor[d];
      p.tile_[d] /= factor[d];
    }
    return p;
  }

 private:
  static extent<N> ones() {
    extent<N> e;
    for (int d = 0; d < N; ++d) e[d] = 1;
    return e;
  }
  void check_args(const char* fn) const {
    for (int d = 0; d < N; ++d) {
      if (global_[d] < 0)
        throw shape_error(std::string(fn) + ": negative global extent " + to_string(global_));
      if (tile_[d] < 1)
        throw shape_error(std::string(fn) + ": tile " + to_string(tile_) + " has a size below 1");
    }
  }

  extent<N> global_;
  process_grid<N> grid_{impl::empty_grid_t{}};
  extent<N> tile_ = ones();
  extent<N> block_ = ones();
  distribution kind_ = distribution::block;
};

}  // namespace tessera::mpi
