// Block-wide histograms over cub::BlockHistogram (see block_reduce.cuh for how these are
// instantiated).
#pragma once

#include <cub/block/block_histogram.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage (numba_tiles.shared_memory and temp_bytes report its size).
template <typename T, int BX, int BY, int BZ, int IPT, int Bins, cub::BlockHistogramAlgorithm Algo>
using block_histogram_storage = typename cub::BlockHistogram<T, BX, IPT, Bins, Algo, BY, BZ>::TempStorage;

#ifdef NUMBA_TILES_DEBUG
// The items must be bin indices: compared as a wide integer (T(Bins) is 0 for uint8 items and 256 bins, which
// would fail every item).
template <int IPT, int Bins, typename T>
__device__ __forceinline__ void check_bins(const T (&samples)[IPT]) {
  for (int j = 0; j < IPT; ++j) {
    const long long bin = static_cast<long long>(samples[j]);
    if (!(bin >= 0 && bin < Bins)) {
      if (first_thread()) {
        printf("tiles.block_histogram: an item is not a bin index in [0, %d)\n", Bins);
      }
      fail();
    }
  }
}
#endif

// Count the tile's items (IPT per thread, each a bin index in [0, Bins)) into `histogram`
// (Bins counters, usually in shared memory): zeroed first, or added to when Accumulate.
// On return the counts are visible to every thread of the block. `temp`: see common.cuh.
template <typename T, typename Counter, int BX, int BY, int BZ, int IPT, int Bins,
          cub::BlockHistogramAlgorithm Algo, bool Accumulate, typename Temp>
__device__ __forceinline__ void block_histogram(array_ref<T> items, array_ref<Counter> histogram, Temp temp) {
  check_launch<BX, BY, BZ>("block_histogram");
  using Histogram = cub::BlockHistogram<T, BX, IPT, Bins, Algo, BY, BZ>;
  auto& storage = storage_of<block_histogram_storage<T, BX, BY, BZ, IPT, Bins, Algo>>(temp, "block_histogram");
  T (&samples)[IPT] = tile_of<IPT>(items, "block_histogram");
  Counter* bins = items_of<Bins>(histogram, "block_histogram");
#ifdef NUMBA_TILES_DEBUG
  check_bins<IPT, Bins>(samples);
#endif
  if constexpr (Accumulate) {
    Histogram(storage).Composite(samples, bins);
  } else {
    Histogram(storage).Histogram(samples, bins);
  }
  __syncthreads();  // the counts are complete, and the storage is free for the next call
}

// The "lanes" algorithm's storage: Copies copies of the Bins counters, lane l of every warp counting into copy
// l % Copies. Bin b's copies are the Copies words from b * Copies, so that the lanes of a warp, each adding to its
// own copy, touch Copies different banks whatever their bins: a shared-memory atomic without bank conflicts.
template <int Bins, int Copies>
struct lanes_storage {
  static_assert(Copies % 4 == 0 && 32 % Copies == 0, "copies in whole 16-byte words, and lanes in whole copies");
  alignas(16) unsigned counts[Bins * Copies];
};

// block_histogram with algorithm="lanes": each item one conflict-free shared atomic into the thread's lane copy,
// then each bin's copies summed (and zeroed for the next call) into `histogram`. Random bins make a warp's adds to
// one shared histogram collide in banks (CUB's "atomic"); on an H200 the copies counted bytes faster than CUB's
// DeviceHistogram. Each call adds at most BX*BY*BZ*IPT to a copy: 32-bit copies never overflow.
template <typename T, typename Counter, int BX, int BY, int BZ, int IPT, int Bins, int Copies, bool Accumulate,
          typename Temp>
__device__ __forceinline__ void block_histogram_lanes(array_ref<T> items, array_ref<Counter> histogram, Temp temp) {
  check_launch<BX, BY, BZ>("block_histogram");
  using Storage = lanes_storage<Bins, Copies>;
  constexpr int threads = BX * BY * BZ;
  constexpr int words = Copies / 4;  // a bin's copies, as uint4
  auto& storage = storage_of<Storage>(temp, "block_histogram");
  T (&samples)[IPT] = tile_of<IPT>(items, "block_histogram");
  Counter* bins = items_of<Bins>(histogram, "block_histogram");
#ifdef NUMBA_TILES_DEBUG
  check_bins<IPT, Bins>(samples);
#endif
  const int tid = thread_rank<BX, BY>();
  const unsigned lane = ::cuda::ptx::get_sreg_laneid();
  uint4* chunks = reinterpret_cast<uint4*>(storage.counts);
  // The copies start at zero: the storage may have served another call (temp= and the static buffer are shared),
  // and shared memory starts a kernel undefined.
  for (int i = tid; i < Bins * words; i += threads) {
    chunks[i] = make_uint4(0, 0, 0, 0);
  }
  __syncthreads();
  const unsigned copy = lane % Copies;
#pragma unroll
  for (int j = 0; j < IPT; ++j) {
    atomicAdd(&storage.counts[static_cast<unsigned>(samples[j]) * Copies + copy], 1u);
  }
  __syncthreads();
  for (int b = tid; b < Bins; b += threads) {
    unsigned sum = 0;
#pragma unroll
    for (int k = 0; k < words; ++k) {
      // Rotated by lane: the lanes of a quarter warp read different 16-byte words of their bins, in other banks.
      const uint4 c = chunks[b * words + (k + lane) % words];
      sum += c.x + c.y + c.z + c.w;
    }
    bins[b] = Accumulate ? static_cast<Counter>(bins[b] + sum) : static_cast<Counter>(sum);
  }
  __syncthreads();  // the counts are complete, and the storage is free for the next call
}

}  // namespace numba_tiles
