// Block-wide prefix scans over cub::BlockScan (see block_reduce.cuh for how these are
// instantiated). Items are in blocked arrangement: thread t holds items t*IPT ... t*IPT+IPT-1.
#pragma once

#include <cub/block/block_scan.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage of a scan (numba_tiles.shared_memory and temp_bytes report its size).
template <typename T, int BX, int BY, int BZ, cub::BlockScanAlgorithm Algo>
using block_scan_storage = typename cub::BlockScan<T, BX, Algo, BY, BZ>::TempStorage;

// Scan `in` into `out` (which may alias it), and return the block's aggregate (of the inputs,
// without `initial`) when Aggregate. An exclusive scan always has an initial value (the op's
// identity unless the user gives one), so that every output is defined; an inclusive one
// seeds with it only when HasInitial. `temp`: see common.cuh.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial, bool Aggregate, typename Temp>
__device__ __forceinline__ T scan_tile(T (&in)[IPT], T (&out)[IPT], T initial, Temp temp) {
  check_launch<BX, BY, BZ>("block_scan");
  using Scan = cub::BlockScan<T, BX, Algo, BY, BZ>;
  auto& storage = storage_of<block_scan_storage<T, BX, BY, BZ, Algo>>(temp, "block_scan");
  T aggregate{};
  cub_scan<Exclusive, HasInitial, Aggregate>(Scan(storage), in, out, initial, Op{}, aggregate);
  __syncthreads();  // the next call that uses this storage must wait for every thread
  return aggregate;
}

// One value per thread: returns its scanned value.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial, typename Temp>
__device__ __forceinline__ T block_scan(T value, T initial, Temp temp) {
  T item[1] = {value};
  scan_tile<T, Op, BX, BY, BZ, 1, Algo, Exclusive, HasInitial, false>(item, item, initial, temp);
  return item[0];
}

// One value per thread: returns (its scanned value, the block's aggregate).
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial, typename Temp>
__device__ __forceinline__ ::cuda::std::tuple<T, T> block_scan_aggregate(T value, T initial, Temp temp) {
  T item[1] = {value};
  T aggregate = scan_tile<T, Op, BX, BY, BZ, 1, Algo, Exclusive, HasInitial, true>(item, item, initial, temp);
  return {item[0], aggregate};
}

// A thread-local array, scanned in place; returns the block's aggregate.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial, typename Temp>
__device__ __forceinline__ T block_scan_aggregate(array_ref<T> items, T initial, Temp temp) {
  T (&tile)[IPT] = tile_of<IPT>(items, "block_scan");
  return scan_tile<T, Op, BX, BY, BZ, IPT, Algo, Exclusive, HasInitial, true>(tile, tile, initial, temp);
}

template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial, typename Temp>
__device__ __forceinline__ void block_scan(array_ref<T> items, T initial, Temp temp) {
  T (&tile)[IPT] = tile_of<IPT>(items, "block_scan");
  scan_tile<T, Op, BX, BY, BZ, IPT, Algo, Exclusive, HasInitial, false>(tile, tile, initial, temp);
}

// The running-prefix form, for a segment longer than one tile: prefix[0] (the same in every
// thread) seeds the scan and becomes op(prefix, aggregate) for the next tile.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo, bool Exclusive,
          typename Temp>
__device__ __forceinline__ void block_scan_prefix(array_ref<T> items, array_ref<T> prefix, Temp temp) {
  T (&tile)[IPT] = tile_of<IPT>(items, "block_scan");
  T& running = items_of<1>(prefix, "block_scan")[0];
  T aggregate = scan_tile<T, Op, BX, BY, BZ, IPT, Algo, Exclusive, true, true>(tile, tile, running, temp);
  running = Op{}(running, aggregate);
}

template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo, bool Exclusive,
          typename Temp>
__device__ __forceinline__ T block_scan_prefix(T value, array_ref<T> prefix, Temp temp) {
  T item[1] = {value};
  T& running = items_of<1>(prefix, "block_scan")[0];
  T aggregate = scan_tile<T, Op, BX, BY, BZ, 1, Algo, Exclusive, true, true>(item, item, running, temp);
  running = Op{}(running, aggregate);
  return item[0];
}

}  // namespace numba_tiles
