// Block-wide reduction over cub::BlockReduce, instantiated by numba_tiles.
//
// numba_tiles renders, per instantiation, a one-line `extern "C" __device__` entry point that
// calls one of these templates; NVRTC turns it into LTO-IR and nvJitLink inlines it into the
// Numba kernel. Keep these thin: the algorithms are CUB's.
#pragma once

#include <cub/block/block_reduce.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage of a reduction (numba_tiles.shared_memory and temp_bytes report its size).
template <typename T, int BX, int BY, int BZ, cub::BlockReduceAlgorithm Algo, bool Broadcast>
struct block_reduce_storage {
  typename cub::BlockReduce<T, BX, Algo, BY, BZ>::TempStorage reduce;
};
// With Broadcast, thread 0 hands the result to the others through `aggregate`: CUB's storage may
// still be read by other threads when thread 0 has the result, so it cannot carry it.
template <typename T, int BX, int BY, int BZ, cub::BlockReduceAlgorithm Algo>
struct block_reduce_storage<T, BX, BY, BZ, Algo, true> : block_reduce_storage<T, BX, BY, BZ, Algo, false> {
  cub::Uninitialized<T> aggregate;
};

// Reduce IPT items per thread (blocked: thread t holds items t*IPT ... t*IPT+IPT-1) over the
// block with CUB's algorithm Algo. The result is valid in thread 0 (as in CUB), or in every
// thread with Broadcast. With Partial, only the first num_valid items of the tile count: the
// others become the op's identity, so the whole block takes CUB's full-tile path (full-mask
// shuffles, REDUX where CUB uses it) rather than the bounds-checked one, whose variable-mask
// shuffles compile to a called helper. num_valid <= 0 gives the identity (numba_tiles passes
// the op's). `temp` is own_storage or the user's buffer (see common.cuh).
template <typename T, typename Op, int BX, int BY, int BZ, int IPT,
          cub::BlockReduceAlgorithm Algo, bool Partial, bool Broadcast, typename Temp>
__device__ __forceinline__ T block_reduce(const T* items, int num_valid, T identity, Temp temp) {
  check_launch<BX, BY, BZ>("block_reduce");
  using Reduce = cub::BlockReduce<T, BX, Algo, BY, BZ>;
  auto& storage = storage_of<block_reduce_storage<T, BX, BY, BZ, Algo, Broadcast>>(temp, "block_reduce");
  const int tid = cub::RowMajorTid(BX, BY, BZ);
  T local[IPT];
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    if constexpr (Partial) {  // (a user's op has no identity; it never takes num_valid)
      local[j] = tid * IPT + j < num_valid ? items[j] : identity;
    } else {
      local[j] = items[j];
    }
  }
  T result = Reduce(storage.reduce).Reduce(local, Op{});
  if constexpr (Broadcast) {
    if (tid == 0) {
      storage.aggregate.Alias() = result;
    }
    __syncthreads();
    result = storage.aggregate.Alias();
  }
  // The next call that uses this storage must wait until every thread is done with it.
  __syncthreads();
  return result;
}

template <typename T, typename Op, int BX, int BY, int BZ, int IPT,
          cub::BlockReduceAlgorithm Algo, bool Partial, bool Broadcast, typename Temp>
__device__ __forceinline__ T block_reduce(array_ref<T> items, int num_valid, T identity, Temp temp) {
  return block_reduce<T, Op, BX, BY, BZ, IPT, Algo, Partial, Broadcast>(
    items_of<IPT>(items, "block_reduce"), num_valid, identity, temp);
}

template <typename T, typename Op, int BX, int BY, int BZ, int IPT,
          cub::BlockReduceAlgorithm Algo, bool Partial, bool Broadcast, typename Temp>
__device__ __forceinline__ T block_reduce(T value, int num_valid, T identity, Temp temp) {
  static_assert(IPT == 1, "a scalar input is one item per thread");
  return block_reduce<T, Op, BX, BY, BZ, 1, Algo, Partial, Broadcast>(&value, num_valid, identity, temp);
}

}  // namespace numba_tiles
