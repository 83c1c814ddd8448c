// tiles_extras: a downstream package's own block collectives over CUB, instantiated through
// numba_tiles.extending (the templates here; the entry points numba_tiles renders).
#pragma once

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

#include "common.cuh"

namespace tiles_extras {

template <typename T, int BX, int BY, int BZ>
using argmax_reduce = cub::BlockReduce<cub::KeyValuePair<int, T>, BX, cub::BLOCK_REDUCE_WARP_REDUCTIONS, BY, BZ>;

template <typename T, int BX, int BY, int BZ>
struct argmax_storage {
  typename argmax_reduce<T, BX, BY, BZ>::TempStorage reduce;
  cub::Uninitialized<cub::KeyValuePair<int, T>> best;  // thread 0 hands the result to the block here
};

// The block's largest value and the index given with it, in every thread; of equal values, the
// one with the smallest index wins (cub::ArgMax).
template <typename T, int BX, int BY, int BZ, typename Temp>
__device__ __forceinline__ ::cuda::std::tuple<T, int> block_argmax(T value, int index, Temp temp) {
  numba_tiles::check_launch<BX, BY, BZ>("block_argmax");
  auto& storage = numba_tiles::storage_of<argmax_storage<T, BX, BY, BZ>>(temp, "block_argmax");
  cub::KeyValuePair<int, T> best =
    argmax_reduce<T, BX, BY, BZ>(storage.reduce).Reduce(cub::KeyValuePair<int, T>{index, value}, cub::ArgMax{});
  if (numba_tiles::thread_rank<BX, BY>() == 0) {
    storage.best.Alias() = best;
  }
  __syncthreads();
  best = storage.best.Alias();
  __syncthreads();  // the next call that uses this storage waits for every thread's read
  return {best.value, best.key};
}

// The largest value of each logical warp of Warp lanes and the index given with it, valid in the
// warp's lane 0 (as CUB's warp reductions); of equal values, the smallest index.
template <typename T, int Warp>
__device__ __forceinline__ ::cuda::std::tuple<T, int> warp_argmax(T value, int index) {
  using Reduce = cub::WarpReduce<cub::KeyValuePair<int, T>, Warp>;
  typename Reduce::TempStorage temp;  // an empty placeholder for the shuffle specialization
  const cub::KeyValuePair<int, T> best = Reduce(temp).Reduce(cub::KeyValuePair<int, T>{index, value}, cub::ArgMax{});
  return {best.value, best.key};
}

template <typename T, int BX, int BY, int BZ, int IPT>
using topk_sort = cub::BlockRadixSort<T, BX, IPT, cub::NullType, 4, true, cub::BLOCK_SCAN_WARP_SCANS,
                                      cudaSharedMemBankSizeFourByte, BY, BZ>;

template <typename T, int BX, int BY, int BZ, int IPT, int K>
union topk_storage {
  typename topk_sort<T, BX, BY, BZ, IPT>::TempStorage sort;
  cub::Uninitialized<T> best[K];  // the block's K largest, once the sort is done with its storage
};

// The block's K largest items (of IPT per thread), in descending order, into `out` in every thread.
template <typename T, int BX, int BY, int BZ, int IPT, int K, typename Temp>
__device__ __forceinline__ void block_topk(numba_tiles::array_ref<T> items, numba_tiles::array_ref<T> out,
                                           Temp temp) {
  static_assert(K <= BX * BY * BZ * IPT, "k is at most the block's items");
  numba_tiles::check_launch<BX, BY, BZ>("block_topk");
  const T* in = numba_tiles::items_of<IPT>(items, "block_topk");
  T* best = numba_tiles::items_of<K>(out, "block_topk");
  auto& storage = numba_tiles::storage_of<topk_storage<T, BX, BY, BZ, IPT, K>>(temp, "block_topk");
  T keys[IPT];
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    keys[j] = in[j];
  }
  topk_sort<T, BX, BY, BZ, IPT>(storage.sort).SortDescending(keys);  // blocked: rank r*IPT+j in thread r
  __syncthreads();  // the sort's storage becomes `best`
  const int first = numba_tiles::thread_rank<BX, BY>() * IPT;
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    if (first + j < K) {
      storage.best[first + j].Alias() = keys[j];
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < K; ++j) {
    best[j] = storage.best[j].Alias();
  }
  __syncthreads();
}

}  // namespace tiles_extras
