// Differences of neighbouring items across a block's tile, over cub::BlockAdjacentDifference
// (see block_reduce.cuh for how these are instantiated). Items are in blocked arrangement:
// thread t holds items t*IPT ... t*IPT+IPT-1 of the tile.
#pragma once

#include <cub/block/block_adjacent_difference.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage (numba_tiles.shared_memory and temp_bytes report its size): one item
// per thread for each direction, whatever IPT is.
template <typename T, int BX, int BY, int BZ>
using block_adjacent_difference_storage = typename cub::BlockAdjacentDifference<T, BX, BY, BZ>::TempStorage;

// Replace each item of the tile, in place, by Op{}(item, neighbour):
//  - left (Right=false, CUB's SubtractLeft): item i becomes Op{}(x[i], x[i-1]). Item 0 of the
//    tile has no neighbour and stays as it is, unless HasNeighbor: then it becomes
//    Op{}(x[0], neighbor) (CUB's tile_predecessor_item).
//  - Right (SubtractRight): item i becomes Op{}(x[i], x[i+1]). The tile's last item stays,
//    unless HasNeighbor: then it becomes Op{}(x[last], neighbor) (tile_successor_item).
// Every difference is taken from the inputs (CUB saves each thread's edge item in shared memory
// before anything is written, and walks the thread's own items in the order that keeps in-place
// updates correct). `neighbor` matters in thread 0 (left) or the last thread (right) only.
//
// Partial: only the first n = num_valid items (clamped to [0, tile size]) take part:
//  - left (SubtractLeftPartialTile): items 1 ... n-1 become differences as above; item 0 becomes
//    Op{}(x[0], neighbor) with HasNeighbor and n > 0, and stays otherwise. Items n ... keep their
//    values.
//  - right (SubtractRightPartialTile): items 0 ... n-2 become differences; item n-1, the last
//    valid one, stays (it has no valid successor), and so do items n ... .
// So a partial tile with n = tile size is the full tile without a neighbour, in both directions.
// CUB (this CCCL) has no partial right difference with a tile_successor_item: that combination
// is refused at compile time. The clamp matters: SubtractRightPartialTile reads one item past the
// storage in the last thread when num_valid exceeds the tile.
// `temp`: see common.cuh.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, bool Right, bool HasNeighbor, bool Partial,
          typename Temp>
__device__ __forceinline__ void block_adjacent_difference(array_ref<T> items, T neighbor, int num_valid, Temp temp) {
  static_assert(!(Right && HasNeighbor && Partial),
                "numba_tiles: CUB has no partial-tile right difference with a successor item");
  check_launch<BX, BY, BZ>("block_adjacent_difference");
  using Difference = cub::BlockAdjacentDifference<T, BX, BY, BZ>;
  auto& storage = storage_of<block_adjacent_difference_storage<T, BX, BY, BZ>>(temp, "block_adjacent_difference");
  T (&tile)[IPT] = tile_of<IPT>(items, "block_adjacent_difference");
  constexpr int tile_items = BX * BY * BZ * IPT;
  const int valid = num_valid < 0 ? 0 : (num_valid > tile_items ? tile_items : num_valid);
  if constexpr (!Right && Partial && HasNeighbor) {
    Difference(storage).SubtractLeftPartialTile(tile, tile, Op{}, valid, neighbor);
  } else if constexpr (!Right && Partial) {
    Difference(storage).SubtractLeftPartialTile(tile, tile, Op{}, valid);
  } else if constexpr (!Right && HasNeighbor) {
    Difference(storage).SubtractLeft(tile, tile, Op{}, neighbor);
  } else if constexpr (!Right) {
    Difference(storage).SubtractLeft(tile, tile, Op{});
  } else if constexpr (Partial) {
    Difference(storage).SubtractRightPartialTile(tile, tile, Op{}, valid);
  } else if constexpr (HasNeighbor) {
    Difference(storage).SubtractRight(tile, tile, Op{}, neighbor);
  } else {
    Difference(storage).SubtractRight(tile, tile, Op{});
  }
  __syncthreads();  // the next call that uses this storage must wait for every thread
}

}  // namespace numba_tiles
