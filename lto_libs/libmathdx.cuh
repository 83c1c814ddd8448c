// cuBLASDx's pipelined GEMM (TMA loads of A and B into a ring of shared-memory stages, wgmma products,
// sm_90a), whose device functions libmathdx generates (numba_tiles/_libmathdx.py): the entry points
// that call them with Numba's arrays. The functions arrive as template arguments: their symbols are
// declared by the instance's prelude, from libmathdx's traits, as are the sizes of the objects they
// work on.
#pragma once

#include "common.cuh"

namespace numba_tiles {
namespace lmdx {  // libmathdx's argument types: a pipeline or register tensor is its storage, a global
                  // tensor its data with its run-time extents and leading dimension
struct storage { void* ptr; };
struct matrix { void* ptr; long long shape[2]; long long ld[1]; };
struct rows { void* ptr; long long ld[1]; };
}  // namespace lmdx

// A 2-D array's leading dimension in the arrangement the pipeline was made for, or -1 if it is not so laid out.
template <bool Row, typename T>
__device__ __forceinline__ long long leading_dimension(const matrix_ref<T>& m) {
  return Row ? (m.col_stride == 1 ? m.row_stride : -1) : (m.row_stride == 1 ? m.col_stride : -1);
}

// One thread: fill the device-pipeline object `pipe` (DeviceBytes, aligned to DeviceAlign) for A (M x K)
// and B (K x N): the TMA descriptors of both, which every block of the GEMM kernel then loads from.
template <int DeviceBytes, int DeviceAlign, bool RowA, bool RowB, auto DeviceCreate, typename T>
__device__ __forceinline__ void libmathdx_prepare(array_ref<unsigned char> pipe, matrix_ref<T> a, matrix_ref<T> b) {
  const long long lda = leading_dimension<RowA>(a), ldb = leading_dimension<RowB>(b);
  const bool aligned = (reinterpret_cast<unsigned long long>(pipe.data) % DeviceAlign) == 0;
  if (pipe.size < DeviceBytes || pipe.stride != 1 || !aligned || lda < 0 || ldb < 0 || a.cols != b.rows) {
    printf("tiles.Matmul.operands: pipe has %lld bytes (needs %d, %d-byte aligned), A is %lld x %lld with "
           "strides (%lld, %lld), B %lld x %lld with strides (%lld, %lld): not what this Matmul was made for\n",
           pipe.size, DeviceBytes, DeviceAlign, a.rows, a.cols, a.row_stride, a.col_stride, b.rows, b.cols,
           b.row_stride, b.col_stride);
    fail();
  }
  DeviceCreate(lmdx::storage{pipe.data}, lmdx::matrix{a.data, {a.rows, a.cols}, {lda}},
               lmdx::matrix{b.data, {b.rows, b.cols}, {ldb}});
}

template <typename P, typename T>
__device__ __forceinline__ float load_float(const T& slot) {
  return static_cast<float>(*reinterpret_cast<const P*>(&slot));
}

template <typename P, typename T>
__device__ __forceinline__ void store_float(T& slot, float value) {
  *reinterpret_cast<P*>(&slot) = static_cast<P>(value);
}

// Stop the kernel unless it was launched with the pipeline's threads and dynamic shared memory (`call`: the Matmul
// call's name).
template <int Threads, int BufferBytes>
__device__ __forceinline__ void libmathdx_check_launch(const char* call) {
  stop_without_calls(block_threads() != Threads || dynamic_shared_bytes() < BufferBytes,
                     "tiles.Matmul.%s: launched with %u threads and %u bytes of dynamic shared memory; it needs %d "
                     "threads and %d bytes (launch it with mm.launch)\n",
                     call, block_threads(), dynamic_shared_bytes(), Threads, BufferBytes);
}

// The block computes C's tile (i, j), of M x N items at C[i * M, j * N]: the whole K loop of A's row of tiles
// times B's column, then C = alpha * (A @ B) + beta * C for the items inside C, through shared memory (the
// pipeline's buffer, free once the loop is done) and out in 16-byte vectors where C's rows allow. (libmathdx's
// copy of a 16-bit C from the registers straight to C writes 4 bytes a thread, rows apart: on an H100, bf16
// 8192^3 ran at 0.74x cuBLAS so, 0.79x through shared memory.)
// P: C's precision (float, __half or __nv_bfloat16), T: the type C's array holds it in. epi(value, row,
// col): the epilogue, applied to each item inside C before it is rounded (through shared memory, then).
template <int M, int N, int Threads, int BufferBytes, int TileBytes, int TileAlign, int AccBytes, int AccAlign,
          auto TileCreate, auto TileDestroy, auto AccCreate, auto AccDestroy, auto Execute, auto Finish,
          auto CopyF32, typename P, typename T, typename Epi = no_epilogue>
__device__ __forceinline__ void libmathdx_product_tile(array_ref<unsigned char> pipe, matrix_ref<T> c, long long i,
                                                      long long j, float alpha, float beta, Epi epi) {
  extern __shared__ __align__(1024) unsigned char buffer[];
  alignas(TileAlign < 8 ? 8 : TileAlign) unsigned char tile[TileBytes];
  alignas(AccAlign < 16 ? 16 : AccAlign) unsigned char acc[AccBytes];
  int row = static_cast<int>(i), col = static_cast<int>(j);
  TileCreate(lmdx::storage{pipe.data}, lmdx::storage{tile}, buffer, &row, &col);
  AccCreate(lmdx::storage{tile}, lmdx::storage{acc});
  Execute(lmdx::storage{tile}, lmdx::storage{acc});
  Finish(lmdx::storage{acc});
  const long long r0 = i * M, c0 = j * N;
  if constexpr (sizeof(T) == 4 && !has_epilogue<Epi>) {
    // A float C inside C, with alpha 1 and beta 0, from the registers straight to C: on an H100, tf32
    // 8192^3 ran at 0.99x cuBLAS so, 0.95x through shared memory (16-bit C: the other way round).
    T* const origin = &c(r0, c0);
    if (alpha == 1.0f && beta == 0.0f && r0 + M <= c.rows && c0 + N <= c.cols && c.col_stride == 1 &&
        c.row_stride % 4 == 0 && reinterpret_cast<unsigned long long>(origin) % 16 == 0) {
      CopyF32(lmdx::storage{acc}, lmdx::rows{reinterpret_cast<float*>(origin), {c.row_stride}});
      AccDestroy(lmdx::storage{acc});
      TileDestroy(lmdx::storage{tile});
      __syncthreads();  // the buffer is free for the block's next tile
      return;
    }
  }
  TileDestroy(lmdx::storage{tile});
  __syncthreads();  // every warp is done with the stages: the buffer holds C's tile now
  float* staged = reinterpret_cast<float*>(buffer);
  CopyF32(lmdx::storage{acc}, lmdx::rows{staged, {N}});
  AccDestroy(lmdx::storage{acc});
  __syncthreads();
  const int t = block_rank();
  const auto finish = [&](float staged_item, T& out, long long r, long long q) {
    float value = alpha * staged_item;
    if (beta != 0.0f) value += beta * load_float<P>(out);
    store_float<P>(out, epi(value, r, q));
  };
  constexpr int V = 16 / sizeof(T);  // items of a 16-byte vector of C
  if (N % V == 0 && c.col_stride == 1 && c.row_stride % V == 0 && c0 % V == 0 &&
      reinterpret_cast<unsigned long long>(c.data) % 16 == 0) {
    struct alignas(16) vector { T item[V]; };
    for (int k = t; k < M * N / V; k += Threads) {
      const int rr = k / (N / V), qq = k % (N / V) * V;
      const long long r = r0 + rr, q = c0 + qq;
      if (r >= c.rows) continue;
      if (q + V <= c.cols) {
        vector* const out = reinterpret_cast<vector*>(&c(r, q));
        vector items = beta != 0.0f ? *out : vector{};
        unrolled<V>([&](int e) { finish(staged[rr * N + qq + e], items.item[e], r, q + e); });
        *out = items;
      } else {
        for (int e = 0; q + e < c.cols; ++e) {  // (C's edge)
          finish(staged[rr * N + qq + e], c(r, q + e), r, q + e);
        }
      }
    }
  } else {
    for (int k = t; k < M * N; k += Threads) {
      const long long r = r0 + k / N, q = c0 + k % N;
      if (r < c.rows && q < c.cols) {
        finish(staged[k], c(r, q), r, q);
      }
    }
  }
  __syncthreads();  // the buffer is free for the block's next tile
}

// Matmul.tile(ops, i, j, ...) by libmathdx's pipeline: its launch checked, then libmathdx_product_tile.
template <int M, int N, int Threads, int BufferBytes, int TileBytes, int TileAlign, int AccBytes, int AccAlign,
          auto TileCreate, auto TileDestroy, auto AccCreate, auto AccDestroy, auto Execute, auto Finish,
          auto CopyF32, typename P, typename T, typename Epi = no_epilogue>
__device__ __forceinline__ void libmathdx_tile(array_ref<unsigned char> pipe, matrix_ref<T> c, long long i, long long j,
                                              float alpha, float beta, Epi epi = {}) {
  libmathdx_check_launch<Threads, BufferBytes>("tile");
  libmathdx_product_tile<M, N, Threads, BufferBytes, TileBytes, TileAlign, AccBytes, AccAlign, TileCreate, TileDestroy,
                         AccCreate, AccDestroy, Execute, Finish, CopyF32, P>(pipe, c, i, j, alpha, beta, epi);
}

// Matmul.gemm(ops, ...) by libmathdx's pipeline: its launch checked once, then all of C, this block's tiles in
// each_gemm_tile's order, each by libmathdx_product_tile.
template <int M, int N, int Threads, int BufferBytes, int TileBytes, int TileAlign, int AccBytes, int AccAlign,
          auto TileCreate, auto TileDestroy, auto AccCreate, auto AccDestroy, auto Execute, auto Finish,
          auto CopyF32, typename P, typename T, typename Epi = no_epilogue>
__device__ __forceinline__ void libmathdx_gemm(array_ref<unsigned char> pipe, matrix_ref<T> c, float alpha,
                                              float beta, Epi epi = {}) {
  libmathdx_check_launch<Threads, BufferBytes>("gemm");
  each_gemm_tile<M, N>(c.rows, c.cols, [&](int i, int j) {
    libmathdx_product_tile<M, N, Threads, BufferBytes, TileBytes, TileAlign, AccBytes, AccAlign, TileCreate,
                           TileDestroy, AccCreate, AccDestroy, Execute, Finish, CopyF32, P>(pipe, c, i, j, alpha,
                                                                                            beta, epi);
  });
}

}  // namespace numba_tiles
