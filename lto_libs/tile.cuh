// Cooperative 2-D tile movement between a global matrix and a shared tile, instantiated by numba_tiles.
//
// Every thread of the block takes part. A tile that lies inside the matrix, stored in the same
// order with aligned 16-byte rows, moves 16 bytes per thread a step; otherwise items are
// walked in the tile's own storage order, so that consecutive threads touch consecutive
// shared-memory addresses (and consecutive global ones where the two layouts agree), with the
// edges checked against the global matrix's shape: a load fills what lies outside with `fill`,
// a store leaves it unwritten. Each call ends with a
// barrier, so the tile is ready for the block (and free to refill) when it returns.
#pragma once

#include "common.cuh"

#include <cuda_pipeline_primitives.h>

namespace numba_tiles {

template <int BX, int BY, int BZ, typename T, typename Visit>
__device__ __forceinline__ void for_each_item(const matrix_ref<T>& tile, Visit visit) {
  constexpr int threads = BX * BY * BZ;
  const int t = thread_rank<BX, BY>();
  const bool row_major = tile.row_stride >= tile.col_stride;
  const long long count = tile.rows * tile.cols;
  for (long long i = t; i < count; i += threads) {
    const long long r = row_major ? i / tile.cols : i % tile.rows;
    const long long c = row_major ? i % tile.cols : i / tile.rows;
    visit(r, c);
  }
}

template <typename T>
__device__ __forceinline__ matrix_ref<T> transposed(const matrix_ref<T>& m) {
  return {m.data, m.cols, m.rows, m.col_stride, m.row_stride};
}

// Whether the tile at (row0, col0) lies inside `matrix` and both store their rows contiguously
// in whole, 16-byte-aligned vectors: then a thread moves 16 bytes at a time. The same for every
// thread of the block, so the branch does not diverge.
template <typename T>
__device__ __forceinline__ bool whole_vectors(const matrix_ref<T>& tile, const matrix_ref<T>& matrix, long long row0,
                                              long long col0) {
  constexpr long long V = 16 / sizeof(T);
  if constexpr (sizeof(T) > 16 || 16 % sizeof(T) != 0) {
    return false;
  } else {
    return tile.col_stride == 1 && matrix.col_stride == 1 && tile.cols % V == 0 && tile.row_stride % V == 0 &&
           matrix.row_stride % V == 0 && col0 % V == 0 && row0 >= 0 && col0 >= 0 && row0 + tile.rows <= matrix.rows &&
           col0 + tile.cols <= matrix.cols && reinterpret_cast<unsigned long long>(tile.data) % 16 == 0 &&
           reinterpret_cast<unsigned long long>(matrix.data) % 16 == 0;
  }
}

// Copy the tile at (row0, col0) of `matrix` to `tile` (Load) or back, 16 bytes per thread a step:
// consecutive threads take consecutive vectors of a row. Only after whole_vectors said yes.
template <bool Load, bool Async, int BX, int BY, int BZ, typename T>
__device__ __forceinline__ void copy_vectors(const matrix_ref<T>& tile, const matrix_ref<T>& matrix, long long row0,
                                             long long col0) {
  constexpr int threads = BX * BY * BZ;
  constexpr long long V = 16 / sizeof(T);
  const int t = thread_rank<BX, BY>();
  const long long per_row = tile.cols / V, count = tile.rows * per_row;
  for (long long i = t; i < count; i += threads) {
    const long long r = i / per_row, c = i % per_row * V;
    uint4* shared = reinterpret_cast<uint4*>(&tile(r, c));
    uint4* global = reinterpret_cast<uint4*>(&matrix(row0 + r, col0 + c));
    if constexpr (Load && Async) {
      // sm_80's asynchronous copy (cp.async.cg, the CUDA headers' primitive): global to shared without
      // registers, completed by tile_wait.
      __pipeline_memcpy_async(shared, global, sizeof(uint4));
    } else if constexpr (Load) {
      *shared = *global;
    } else {
      *global = *shared;
    }
  }
}

// The vector path if the tile and the matrix allow it (row-major, or both column-major: then
// transposed), else one item at a time with the edge checks. Returns whether it took it.
template <bool Load, bool Async, int BX, int BY, int BZ, typename T>
__device__ __forceinline__ bool try_vectors(const matrix_ref<T>& tile, const matrix_ref<T>& matrix, long long row0,
                                            long long col0) {
  if (whole_vectors(tile, matrix, row0, col0)) {
    copy_vectors<Load, Async, BX, BY, BZ>(tile, matrix, row0, col0);
    return true;
  }
  if (whole_vectors(transposed(tile), transposed(matrix), col0, row0)) {
    copy_vectors<Load, Async, BX, BY, BZ>(transposed(tile), transposed(matrix), col0, row0);
    return true;
  }
  return false;
}

// Async: the vector path's copies are asynchronous (sm_80's cp.async, one commit group per
// call) and the call returns without a barrier; tile_wait completes them. The item path (tiles
// over an edge) copies as usual, which tile_wait's barrier also publishes.
template <typename T, int BX, int BY, int BZ, bool Async>
__device__ __forceinline__ void tile_load(matrix_ref<T> src, long long row0, long long col0, matrix_ref<T> tile,
                                          T fill) {
  check_launch<BX, BY, BZ>("tile_load");
  if (!try_vectors<true, Async, BX, BY, BZ>(tile, src, row0, col0)) {
    for_each_item<BX, BY, BZ>(tile, [&](long long r, long long c) {
      const long long gr = row0 + r, gc = col0 + c;
      tile(r, c) = (gr >= 0 && gr < src.rows && gc >= 0 && gc < src.cols) ? src(gr, gc) : fill;
    });
  }
  if constexpr (Async) {
    __pipeline_commit();
  } else {
    __syncthreads();
  }
}

// Wait until at most `pending` of this thread's asynchronous tile loads are still under way (0:
// all done), then a barrier: the tiles those loads filled are ready for the block. cp.async.wait_group
// takes an immediate: a constant `pending` folds to its case once nvJitLink inlines the call, a
// run-time one branches; over MostPending, it waits as for MostPending (for more loads, never fewer).
// (The CUDA headers' __pipeline_wait_prior switches over its count: each call here passes a constant.)
constexpr int MostPending = 7;

template <int N>
__device__ __forceinline__ void wait_group_at_most(int pending) {
  if constexpr (N > 0) {
    if (pending < N) {
      wait_group_at_most<N - 1>(pending);
      return;
    }
  }
  __pipeline_wait_prior(N);
}

template <int BX, int BY, int BZ>
__device__ __forceinline__ void tile_wait(int pending) {
  check_launch<BX, BY, BZ>("tile_wait");
  wait_group_at_most<MostPending>(pending);
  __syncthreads();
}

template <typename T, int BX, int BY, int BZ>
__device__ __forceinline__ void tile_store(matrix_ref<T> tile, matrix_ref<T> dst, long long row0, long long col0) {
  check_launch<BX, BY, BZ>("tile_store");
  if (!try_vectors<false, false, BX, BY, BZ>(tile, dst, row0, col0)) {
    for_each_item<BX, BY, BZ>(tile, [&](long long r, long long c) {
      const long long gr = row0 + r, gc = col0 + c;
      if (gr >= 0 && gr < dst.rows && gc >= 0 && gc < dst.cols) {
        dst(gr, gc) = tile(r, c);
      }
    });
  }
  __syncthreads();
}

}  // namespace numba_tiles
