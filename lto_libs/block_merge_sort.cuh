// Block-wide merge sort with any comparison, over cub::BlockMergeSort (see block_reduce.cuh
// for how these are instantiated).
#pragma once

#include <cub/block/block_merge_sort.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage (numba_tiles.shared_memory and temp_bytes report its size; V =
// cub::NullType: keys only).
template <typename K, typename V, int BX, int BY, int BZ, int IPT>
using block_merge_sort_storage = typename cub::BlockMergeSort<K, BX, IPT, V, BY, BZ>::TempStorage;

// Sort the tile of keys (IPT per thread, blocked arrangement) by Less (a strict weak order),
// stably; the result is blocked again. V is cub::NullType here (keys only). `temp`: see common.cuh.
template <typename K, typename V, int BX, int BY, int BZ, int IPT, typename Less, typename Temp>
__device__ __forceinline__ void block_merge_sort(array_ref<K> keys, Temp temp) {
  check_launch<BX, BY, BZ>("block_merge_sort");
  using Sort = cub::BlockMergeSort<K, BX, IPT, V, BY, BZ>;
  auto& storage = storage_of<block_merge_sort_storage<K, V, BX, BY, BZ, IPT>>(temp, "block_merge_sort");
  Sort(storage).StableSort(tile_of<IPT>(keys, "block_merge_sort"), Less{});
  __syncthreads();  // the next call that uses this storage must wait for every thread
}

// The same, carrying a value along with each key.
template <typename K, typename V, int BX, int BY, int BZ, int IPT, typename Less, typename Temp>
__device__ __forceinline__ void block_merge_sort(array_ref<K> keys, array_ref<V> values, Temp temp) {
  check_launch<BX, BY, BZ>("block_merge_sort");
  using Sort = cub::BlockMergeSort<K, BX, IPT, V, BY, BZ>;
  auto& storage = storage_of<block_merge_sort_storage<K, V, BX, BY, BZ, IPT>>(temp, "block_merge_sort");
  Sort(storage).StableSort(tile_of<IPT>(keys, "block_merge_sort"), tile_of<IPT>(values, "block_merge_sort"), Less{});
  __syncthreads();
}

}  // namespace numba_tiles
