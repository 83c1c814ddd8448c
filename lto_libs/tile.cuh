// Cooperative 2-D tile movement between a global matrix and a shared tile, instantiated by numba_tiles.
//
// Every thread of the block takes part; items are walked in the tile's own storage order, so
// that consecutive threads touch consecutive shared-memory addresses (and consecutive global
// ones where the two layouts agree). Edges are checked against the global matrix's shape: a
// load fills what lies outside with `fill`, a store leaves it unwritten. Each call ends with a
// barrier, so the tile is ready for the block (and free to refill) when it returns.
#pragma once

#include "common.cuh"

namespace numba_tiles {

template <int BX, int BY, int BZ, typename T, typename Visit>
__device__ __forceinline__ void for_each_item(const matrix_ref<T>& tile, Visit visit) {
  constexpr int threads = BX * BY * BZ;
  const int t = threadIdx.x + BX * (threadIdx.y + BY * threadIdx.z);
  const bool row_major = tile.row_stride >= tile.col_stride;
  const long long count = tile.rows * tile.cols;
  for (long long i = t; i < count; i += threads) {
    const long long r = row_major ? i / tile.cols : i % tile.rows;
    const long long c = row_major ? i % tile.cols : i / tile.rows;
    visit(r, c);
  }
}

template <typename T, int BX, int BY, int BZ>
__device__ __forceinline__ void tile_load(matrix_ref<T> src, long long row0, long long col0, matrix_ref<T> tile,
                                          T fill) {
  check_launch<BX, BY, BZ>("tile_load");
  for_each_item<BX, BY, BZ>(tile, [&](long long r, long long c) {
    const long long gr = row0 + r, gc = col0 + c;
    tile(r, c) = (gr >= 0 && gr < src.rows && gc >= 0 && gc < src.cols) ? src(gr, gc) : fill;
  });
  __syncthreads();
}

template <typename T, int BX, int BY, int BZ>
__device__ __forceinline__ void tile_store(matrix_ref<T> tile, matrix_ref<T> dst, long long row0, long long col0) {
  check_launch<BX, BY, BZ>("tile_store");
  for_each_item<BX, BY, BZ>(tile, [&](long long r, long long c) {
    const long long gr = row0 + r, gc = col0 + c;
    if (gr >= 0 && gr < dst.rows && gc >= 0 && gc < dst.cols) {
      dst(gr, gc) = tile(r, c);
    }
  });
  __syncthreads();
}

}  // namespace numba_tiles
