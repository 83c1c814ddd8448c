// Block-wide radix sort over cub::BlockRadixSort (see block_reduce.cuh for how these are
// instantiated).
#pragma once

#include <cub/block/block_radix_sort.cuh>

#include "common.cuh"

namespace numba_tiles {

// CUB's radix sort as numba_tiles instantiates it (V = cub::NullType: keys only).
template <typename K, typename V, int BX, int BY, int BZ, int IPT>
using radix_sort = cub::BlockRadixSort<K, BX, IPT, V, 4, true, cub::BLOCK_SCAN_WARP_SCANS,
                                       cudaSharedMemBankSizeFourByte, BY, BZ>;
// The shared temp storage (numba_tiles.shared_memory and temp_bytes report its size).
template <typename K, typename V, int BX, int BY, int BZ, int IPT>
using block_radix_sort_storage = typename radix_sort<K, V, BX, BY, BZ, IPT>::TempStorage;

// Sort the tile of keys (IPT per thread, blocked arrangement) by bits [begin_bit, end_bit),
// ascending or Descending; the sorted tile is blocked again (thread t gets ranks t*IPT ...),
// or striped with Striped (thread t gets ranks t, t+threads, ...: coalesced stores).
// V is cub::NullType here (keys only). `temp`: see common.cuh.
template <typename K, typename V, int BX, int BY, int BZ, int IPT, bool Descending, bool Striped, typename Temp>
__device__ __forceinline__ void block_radix_sort(array_ref<K> keys, int begin_bit, int end_bit, Temp temp) {
  check_launch<BX, BY, BZ>("block_radix_sort");
  using Sort = radix_sort<K, V, BX, BY, BZ, IPT>;
  auto& storage = storage_of<block_radix_sort_storage<K, V, BX, BY, BZ, IPT>>(temp, "block_radix_sort");
  K (&k)[IPT] = tile_of<IPT>(keys, "block_radix_sort");
  if constexpr (Descending && Striped) {
    Sort(storage).SortDescendingBlockedToStriped(k, begin_bit, end_bit);
  } else if constexpr (Descending) {
    Sort(storage).SortDescending(k, begin_bit, end_bit);
  } else if constexpr (Striped) {
    Sort(storage).SortBlockedToStriped(k, begin_bit, end_bit);
  } else {
    Sort(storage).Sort(k, begin_bit, end_bit);
  }
  __syncthreads();  // the next call that uses this storage must wait for every thread
}

// The same, carrying a value along with each key.
template <typename K, typename V, int BX, int BY, int BZ, int IPT, bool Descending, bool Striped, typename Temp>
__device__ __forceinline__ void block_radix_sort(array_ref<K> keys, array_ref<V> values, int begin_bit, int end_bit,
                                                 Temp temp) {
  check_launch<BX, BY, BZ>("block_radix_sort");
  using Sort = radix_sort<K, V, BX, BY, BZ, IPT>;
  auto& storage = storage_of<block_radix_sort_storage<K, V, BX, BY, BZ, IPT>>(temp, "block_radix_sort");
  K (&k)[IPT] = tile_of<IPT>(keys, "block_radix_sort");
  V (&v)[IPT] = tile_of<IPT>(values, "block_radix_sort");
  if constexpr (Descending && Striped) {
    Sort(storage).SortDescendingBlockedToStriped(k, v, begin_bit, end_bit);
  } else if constexpr (Descending) {
    Sort(storage).SortDescending(k, v, begin_bit, end_bit);
  } else if constexpr (Striped) {
    Sort(storage).SortBlockedToStriped(k, v, begin_bit, end_bit);
  } else {
    Sort(storage).Sort(k, v, begin_bit, end_bit);
  }
  __syncthreads();
}

}  // namespace numba_tiles
