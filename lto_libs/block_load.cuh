// Block-wide loads and stores between a global array and thread-local arrays, over
// cub::BlockLoad / cub::BlockStore (see block_reduce.cuh for how these are instantiated).
#pragma once

#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage of each (numba_tiles.shared_memory and temp_bytes report its size).
template <typename T, int BX, int BY, int BZ, int IPT, cub::BlockLoadAlgorithm Algo>
using block_load_storage = typename cub::BlockLoad<T, BX, IPT, Algo, BY, BZ>::TempStorage;
template <typename T, int BX, int BY, int BZ, int IPT, cub::BlockStoreAlgorithm Algo>
using block_store_storage = typename cub::BlockStore<T, BX, IPT, Algo, BY, BZ>::TempStorage;

// How many of the tile's items exist: num_valid if given, never more than the array holds.
template <bool HasNumValid>
__device__ __forceinline__ long long valid_items(long long size, long long num_valid) {
  const long long valid = HasNumValid && num_valid < size ? num_valid : size;
  return valid < 0 ? 0 : valid;
}

// Load the tile that starts at src[0] into each thread's IPT items (blocked arrangement) with
// CUB's algorithm Algo. A full tile takes CUB's unguarded path; a shorter one (the array ends,
// or num_valid) its guarded path, which reads nothing past the end and leaves the missing items
// as they were, or sets them to oob_default. `temp`: see common.cuh.
template <typename T, int BX, int BY, int BZ, int IPT, cub::BlockLoadAlgorithm Algo,
          bool Contiguous, bool HasNumValid, bool HasDefault, typename Temp>
__device__ __forceinline__ void block_load(array_ref<T> src, array_ref<T> items, long long num_valid, T oob_default,
                                           Temp temp) {
  check_launch<BX, BY, BZ>("block_load");
  using Load = cub::BlockLoad<T, BX, IPT, Algo, BY, BZ>;
  auto& storage = storage_of<block_load_storage<T, BX, BY, BZ, IPT, Algo>>(temp, "block_load");
  T* data = contiguous<Contiguous>(src, "block_load");
  T (&dst)[IPT] = tile_of<IPT>(items, "block_load");
  const long long valid = valid_items<HasNumValid>(src.size, num_valid);
  if (valid >= static_cast<long long>(BX) * BY * BZ * IPT) {
    Load(storage).Load(data, dst);
  } else if constexpr (HasDefault) {
    Load(storage).Load(data, dst, static_cast<int>(valid), oob_default);
  } else {
    Load(storage).Load(data, dst, static_cast<int>(valid));
  }
  if constexpr (sizeof(typename Load::TempStorage) > 1) {
    __syncthreads();  // the transposing algorithms' storage is reused by the next call
  }
}

// Store each thread's IPT items (blocked arrangement) to the tile that starts at dst[0];
// items past the end of the array (or past num_valid) are not written. CUB's transposing
// stores rearrange the items they are given in place, so they get a copy: the caller's items
// stay as they were (in registers the copy costs nothing).
template <typename T, int BX, int BY, int BZ, int IPT, cub::BlockStoreAlgorithm Algo,
          bool Contiguous, bool HasNumValid, typename Temp>
__device__ __forceinline__ void block_store(array_ref<T> dst, array_ref<T> items, long long num_valid, Temp temp) {
  check_launch<BX, BY, BZ>("block_store");
  using Store = cub::BlockStore<T, BX, IPT, Algo, BY, BZ>;
  auto& storage = storage_of<block_store_storage<T, BX, BY, BZ, IPT, Algo>>(temp, "block_store");
  T* data = contiguous<Contiguous>(dst, "block_store");
  T src[IPT];
  const T* given = items_of<IPT>(items, "block_store");
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    src[j] = given[j];
  }
  const long long valid = valid_items<HasNumValid>(dst.size, num_valid);
  if (valid >= static_cast<long long>(BX) * BY * BZ * IPT) {
    Store(storage).Store(data, src);
  } else {
    Store(storage).Store(data, src, static_cast<int>(valid));
  }
  if constexpr (sizeof(typename Store::TempStorage) > 1) {
    __syncthreads();
  }
}

}  // namespace numba_tiles
