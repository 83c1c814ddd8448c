// Block-wide loads and stores between a global array and thread-local arrays, over
// cub::BlockLoad / cub::BlockStore (see block_reduce.cuh for how these are instantiated).
#pragma once

#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/iterator/cache_modified_input_iterator.cuh>
#include <cub/thread/thread_load.cuh>

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

// The vectorize algorithm: thread t's IPT items are data[t*IPT ...], read as 16-byte words
// (with cache modifier Mod) where the tile is aligned. Unlike CUB's, a partial tile stays
// vectorized: each thread reads whole words up to the end and only the last partial word item
// by item, so a segment that ends anywhere costs no more loads than a full tile. Full: every
// item exists (no compares at all).
template <int IPT, cub::CacheLoadModifier Mod, bool Full, bool HasDefault, typename T>
__device__ __forceinline__ void load_vectorized(int tid, const T* data, T (&dst)[IPT], long long valid, T oob_default) {
  const T* mine = data + static_cast<long long>(tid) * IPT;
  const long long left = valid - static_cast<long long>(tid) * IPT;  // how many of mine exist
  constexpr int V = sizeof(T) <= 16 && 16 % sizeof(T) == 0 ? 16 / sizeof(T) : 0;  // items per word
  if constexpr (V > 0 && IPT % V == 0) {
    if (reinterpret_cast<uintptr_t>(data) % 16 == 0) {
      const uint4* words = reinterpret_cast<const uint4*>(mine);
#pragma unroll
      for (int w = 0; w < IPT / V; ++w) {
        if (Full || left >= (w + 1) * V) {
          const uint4 word = cub::ThreadLoad<Mod>(words + w);
          memcpy(&dst[w * V], &word, 16);
        } else {
#pragma unroll
          for (int j = w * V; j < (w + 1) * V; ++j) {
            if (j < left) {
              dst[j] = cub::ThreadLoad<Mod>(mine + j);
            } else if constexpr (HasDefault) {
              dst[j] = oob_default;
            }
          }
        }
      }
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    if (Full || j < left) {
      dst[j] = cub::ThreadLoad<Mod>(mine + j);
    } else if constexpr (HasDefault) {
      dst[j] = oob_default;
    }
  }
}

// The vectorize algorithm's store, load_vectorized's twin: thread t's IPT items go to
// data[t*IPT ...] as 16-byte words where the tile is aligned, item by item otherwise. CUB's
// vectorized store writes words without looking at the address, so a dst that does not start on
// a 16-byte boundary (out[1:]) faulted. A partial tile writes whole words up to its end too.
template <int IPT, bool Full, typename T>
__device__ __forceinline__ void store_vectorized(int tid, T* data, const T (&src)[IPT], long long valid) {
  T* mine = data + static_cast<long long>(tid) * IPT;
  const long long left = valid - static_cast<long long>(tid) * IPT;  // how many of mine exist
  constexpr int V = sizeof(T) <= 16 && 16 % sizeof(T) == 0 ? 16 / sizeof(T) : 0;  // items per word
  if constexpr (V > 0 && IPT % V == 0) {
    if (reinterpret_cast<uintptr_t>(data) % 16 == 0) {
      uint4* words = reinterpret_cast<uint4*>(mine);
#pragma unroll
      for (int w = 0; w < IPT / V; ++w) {
        if (Full || left >= (w + 1) * V) {
          uint4 word;
          memcpy(&word, &src[w * V], 16);
          words[w] = word;
        } else {
#pragma unroll
          for (int j = w * V; j < (w + 1) * V; ++j) {
            if (j < left) {
              mine[j] = src[j];
            }
          }
        }
      }
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    if (Full || j < left) {
      mine[j] = src[j];
    }
  }
}

// Load the tile that starts at src[0] into each thread's IPT items (blocked arrangement) with
// CUB's algorithm Algo, each load with cache modifier Mod. A full tile takes CUB's unguarded
// path; a shorter one (the array ends, or num_valid) its guarded path, which reads nothing past
// the end and leaves the missing items as they were, or sets them to oob_default. `temp`: see
// common.cuh.
template <typename T, int BX, int BY, int BZ, int IPT, cub::BlockLoadAlgorithm Algo, bool Contiguous,
          bool HasNumValid, bool HasDefault, cub::CacheLoadModifier Mod, typename Temp>
__device__ __forceinline__ void block_load(array_ref<T> src, array_ref<T> items, long long num_valid, T oob_default,
                                           Temp temp) {
  check_launch<BX, BY, BZ>("block_load");
  using Load = cub::BlockLoad<T, BX, IPT, Algo, BY, BZ>;
  auto& storage = storage_of<block_load_storage<T, BX, BY, BZ, IPT, Algo>>(temp, "block_load");
  T* data = contiguous<Contiguous>(src, "block_load");
  T (&dst)[IPT] = tile_of<IPT>(items, "block_load");
  const long long valid = valid_items<HasNumValid>(src.size, num_valid);
  constexpr long long tile = static_cast<long long>(BX) * BY * BZ * IPT;
  if constexpr (Algo == cub::BLOCK_LOAD_VECTORIZE) {
    const int tid = thread_rank<BX, BY>();
    if (valid >= tile) {
      load_vectorized<IPT, Mod, true, false>(tid, data, dst, tile, oob_default);
    } else {
      load_vectorized<IPT, Mod, false, HasDefault>(tid, data, dst, valid, oob_default);
    }
  } else {
    cub::CacheModifiedInputIterator<Mod, T> in(data);
    if (valid >= tile) {
      Load(storage).Load(in, dst);
    } else if constexpr (HasDefault) {
      Load(storage).Load(in, dst, static_cast<int>(valid), oob_default);
    } else {
      Load(storage).Load(in, dst, static_cast<int>(valid));
    }
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
  constexpr long long tile = static_cast<long long>(BX) * BY * BZ * IPT;
  if constexpr (Algo == cub::BLOCK_STORE_VECTORIZE) {
    const int tid = thread_rank<BX, BY>();
    if (valid >= tile) {
      store_vectorized<IPT, true>(tid, data, src, tile);
    } else {
      store_vectorized<IPT, false>(tid, data, src, valid);
    }
  } else if (valid >= tile) {
    Store(storage).Store(data, src);
  } else {
    Store(storage).Store(data, src, static_cast<int>(valid));
  }
  if constexpr (sizeof(typename Store::TempStorage) > 1) {
    __syncthreads();
  }
}

}  // namespace numba_tiles
