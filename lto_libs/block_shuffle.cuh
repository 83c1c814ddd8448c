// Moving values between a block's threads, over cub::BlockShuffle (see block_reduce.cuh for how
// these are instantiated). Ranks are row-major: rank = x + y*BX + z*BX*BY; arrays are in blocked
// arrangement (thread t holds items t*IPT ... t*IPT+IPT-1 of the tile).
#pragma once

#include <cub/block/block_shuffle.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage (numba_tiles.shared_memory and temp_bytes report its size): one item
// per thread, whatever IPT is.
template <typename T, int BX, int BY, int BZ>
using block_shuffle_storage = typename cub::BlockShuffle<T, BX, BY, BZ>::TempStorage;

enum class shuffle { offset, rotate, up, down };

// One value per thread (offset, rotate): returns the value of thread rank + distance.
//  - offset: when rank + distance lies outside [0, threads), the thread gets its own value back
//    (CUB leaves the output alone then, so it starts as the input).
//  - rotate: the value of thread (rank + distance) mod threads, for any int distance, negative
//    ones included. CUB's Rotate takes an unsigned distance and wraps by subtracting the block
//    size once, so it reads past the storage for a distance over the block size or a negative
//    one; the distance is reduced into [0, threads) here first.
// `temp`: see common.cuh.
template <typename T, int BX, int BY, int BZ, int IPT, shuffle Kind, typename Temp>
__device__ __forceinline__ T block_shuffle(T value, int distance, Temp temp) {
  static_assert(Kind == shuffle::offset || Kind == shuffle::rotate,
                "numba_tiles: up and down shuffle a thread-local array");
  check_launch<BX, BY, BZ>("block_shuffle");
  using Shuffle = cub::BlockShuffle<T, BX, BY, BZ>;
  auto& storage = storage_of<block_shuffle_storage<T, BX, BY, BZ>>(temp, "block_shuffle");
  constexpr int threads = BX * BY * BZ;
  T out = value;
  if constexpr (Kind == shuffle::offset) {
    // Any |distance| >= threads lands outside the block from every rank; clamping keeps
    // CUB's rank + distance from overflowing an int.
    const int d = distance < -threads ? -threads : (distance > threads ? threads : distance);
    Shuffle(storage).Offset(value, out, d);
  } else {
    int d = distance % threads;  // C++ keeps the dividend's sign: (-threads, threads)
    if (d < 0) {
      d += threads;
    }
    Shuffle(storage).Rotate(value, out, static_cast<unsigned int>(d));
  }
  __syncthreads();  // the next call that uses this storage must wait for every thread
  return out;
}

// A thread-local array of IPT items (up, down), shifted by one item across the whole tile, in
// place; `distance` is ignored.
//  - up: item i becomes item i-1; the tile's item 0 keeps its value. Returns the tile's last
//    (input) item, the one shifted out, to every thread (CUB's block_suffix).
//  - down: item i becomes item i+1; the tile's last item keeps its value. Returns the tile's
//    first (input) item to every thread (CUB's block_prefix).
// CUB's Up/Down do shift in place correctly (they walk the items in a safe order, and read
// block_suffix/prefix from storage that nothing overwrites within the call), but they leave the
// edge item unwritten rather than copying it: the input is copied first so that the in-place
// result does not hang on CUB's loop order, and the edge item keeps its value by not being
// written. The copy lives in registers.
template <typename T, int BX, int BY, int BZ, int IPT, shuffle Kind, typename Temp>
__device__ __forceinline__ T block_shuffle(array_ref<T> items, int /*distance*/, Temp temp) {
  static_assert(Kind == shuffle::up || Kind == shuffle::down,
                "numba_tiles: offset and rotate shuffle one value per thread");
  check_launch<BX, BY, BZ>("block_shuffle");
  using Shuffle = cub::BlockShuffle<T, BX, BY, BZ>;
  auto& storage = storage_of<block_shuffle_storage<T, BX, BY, BZ>>(temp, "block_shuffle");
  T (&tile)[IPT] = tile_of<IPT>(items, "block_shuffle");
  T input[IPT];
#pragma unroll
  for (int i = 0; i < IPT; ++i) {
    input[i] = tile[i];
  }
  T edge;
  if constexpr (Kind == shuffle::up) {
    Shuffle(storage).Up(input, tile, edge);
  } else {
    Shuffle(storage).Down(input, tile, edge);
  }
  __syncthreads();  // the next call that uses this storage must wait for every thread
  return edge;
}

}  // namespace numba_tiles
