// Block-wide histograms over cub::BlockHistogram (see block_reduce.cuh for how these are
// instantiated).
#pragma once

#include <cub/block/block_histogram.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage (numba_tiles.shared_memory and temp_bytes report its size).
template <typename T, int BX, int BY, int BZ, int IPT, int Bins, cub::BlockHistogramAlgorithm Algo>
using block_histogram_storage = typename cub::BlockHistogram<T, BX, IPT, Bins, Algo, BY, BZ>::TempStorage;

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
  for (int j = 0; j < IPT; ++j) {
    // Compared as a wide integer: T(Bins) is 0 for uint8 items and 256 bins, which would fail every item.
    const long long bin = static_cast<long long>(samples[j]);
    if (!(bin >= 0 && bin < Bins)) {
      if (first_thread()) {
        printf("tiles.block_histogram: an item is not a bin index in [0, %d)\n", Bins);
      }
      fail();
    }
  }
#endif
  if constexpr (Accumulate) {
    Histogram(storage).Composite(samples, bins);
  } else {
    Histogram(storage).Histogram(samples, bins);
  }
  __syncthreads();  // the counts are complete, and the storage is free for the next call
}

}  // namespace numba_tiles
