// Block-wide prefix scans over cub::BlockScan (see block_reduce.cuh for how these are
// instantiated). Items are in blocked arrangement: thread t holds items t*IPT ... t*IPT+IPT-1.
#pragma once

#include <cub/block/block_scan.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared memory of one instantiation (numba_tiles.shared_memory reports its size).
template <typename T, int BX, int BY, int BZ, cub::BlockScanAlgorithm Algo>
using block_scan_storage = typename cub::BlockScan<T, BX, Algo, BY, BZ>::TempStorage;

// Scan `in` into `out` (which may alias it), and return the block's aggregate (of the inputs,
// without `initial`) when Aggregate. An exclusive scan always has an initial value (the op's
// identity unless the user gives one), so that every output is defined; an inclusive one
// seeds with it only when HasInitial.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial, bool Aggregate>
__device__ __forceinline__ T scan_tile(T (&in)[IPT], T (&out)[IPT], T initial) {
  check_launch<BX, BY, BZ>("block_scan");
  using Scan = cub::BlockScan<T, BX, Algo, BY, BZ>;
  __shared__ block_scan_storage<T, BX, BY, BZ, Algo> temp;
  T aggregate{};
  if constexpr (Exclusive && Aggregate) {
    Scan(temp).ExclusiveScan(in, out, initial, Op{}, aggregate);
  } else if constexpr (Exclusive) {
    Scan(temp).ExclusiveScan(in, out, initial, Op{});
  } else if constexpr (HasInitial && Aggregate) {
    Scan(temp).InclusiveScan(in, out, initial, Op{}, aggregate);
  } else if constexpr (HasInitial) {
    Scan(temp).InclusiveScan(in, out, initial, Op{});
  } else if constexpr (Aggregate) {
    Scan(temp).InclusiveScan(in, out, Op{}, aggregate);
  } else {
    Scan(temp).InclusiveScan(in, out, Op{});
  }
  __syncthreads();  // the next call of this instantiation reuses `temp`
  return aggregate;
}

// One value per thread: returns its scanned value.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial>
__device__ __forceinline__ T block_scan(T value, T initial) {
  T item[1] = {value};
  scan_tile<T, Op, BX, BY, BZ, 1, Algo, Exclusive, HasInitial, false>(item, item, initial);
  return item[0];
}

// One value per thread: returns (its scanned value, the block's aggregate).
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial>
__device__ __forceinline__ ::cuda::std::tuple<T, T> block_scan_aggregate(T value, T initial) {
  T item[1] = {value};
  T aggregate = scan_tile<T, Op, BX, BY, BZ, 1, Algo, Exclusive, HasInitial, true>(item, item, initial);
  return {item[0], aggregate};
}

// A thread-local array, scanned in place; returns the block's aggregate.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial>
__device__ __forceinline__ T block_scan_aggregate(array_ref<T> items, T initial) {
  T (&tile)[IPT] = tile_of<IPT>(items, "block_scan");
  return scan_tile<T, Op, BX, BY, BZ, IPT, Algo, Exclusive, HasInitial, true>(tile, tile, initial);
}

template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo,
          bool Exclusive, bool HasInitial>
__device__ __forceinline__ void block_scan(array_ref<T> items, T initial) {
  T (&tile)[IPT] = tile_of<IPT>(items, "block_scan");
  scan_tile<T, Op, BX, BY, BZ, IPT, Algo, Exclusive, HasInitial, false>(tile, tile, initial);
}

// The running-prefix form, for a segment longer than one tile: prefix[0] (the same in every
// thread) seeds the scan and becomes op(prefix, aggregate) for the next tile.
template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo, bool Exclusive>
__device__ __forceinline__ void block_scan_prefix(array_ref<T> items, array_ref<T> prefix) {
  T (&tile)[IPT] = tile_of<IPT>(items, "block_scan");
  T& running = items_of<1>(prefix, "block_scan")[0];
  T aggregate = scan_tile<T, Op, BX, BY, BZ, IPT, Algo, Exclusive, true, true>(tile, tile, running);
  running = Op{}(running, aggregate);
}

template <typename T, typename Op, int BX, int BY, int BZ, int IPT, cub::BlockScanAlgorithm Algo, bool Exclusive>
__device__ __forceinline__ T block_scan_prefix(T value, array_ref<T> prefix) {
  T item[1] = {value};
  T& running = items_of<1>(prefix, "block_scan")[0];
  T aggregate = scan_tile<T, Op, BX, BY, BZ, 1, Algo, Exclusive, true, true>(item, item, running);
  running = Op{}(running, aggregate);
  return item[0];
}

}  // namespace numba_tiles
