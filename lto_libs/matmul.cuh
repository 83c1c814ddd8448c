// Block-wide tile matrix product over cuBLASDx (MathDx), instantiated by numba_tiles.
//
// C = alpha * A * B + beta * C for shared-memory tiles A (M x K), B (K x N), C (M x N), each
// row- or column-major with a compile-time leading dimension (a padded tile too), by the whole
// block with cuBLASDx's block execution (tensor cores where the precision has them). The tiles'
// run-time shapes and strides are checked against them (for cuda.shared.array tiles the check
// folds away). Compile-time leading dimensions are cuBLASDx's own form, and a third less NVRTC
// time than run-time ones. The call ends with a barrier, so C is ready when it returns.
#pragma once

#include <cublasdx.hpp>

#include "common.cuh"

namespace numba_tiles {

// The cuBLASDx description: PA and PB are the precisions of A and B, which their storage may
// only carry (tfloat32_t in float, __nv_bfloat16 in 16-bit integers: same size and alignment,
// as cuBLASDx allows). SM is the arch NVRTC compiles for, so that the instance's C++ text (and
// the symbol) is the same for every arch; the cache key holds the arch.
// Align: the tiles' alignment in bytes that cuBLASDx may assume (16: it reads A and B with
// ldmatrix and writes C with stmatrix); 0 for each element type's own, cuBLASDx's default.
template <int Align, typename T>
inline constexpr unsigned aligned_to = Align > 0 ? Align : alignof(T);

template <int M, int N, int K, typename PA, typename PB, typename TC, bool RowA, bool RowB, bool RowC, int LDA,
          int LDB, int LDC, int Align, int BX, int BY, int BZ>
using gemm = decltype(cublasdx::Size<M, N, K>() + cublasdx::Precision<PA, PB, TC>() +
                      cublasdx::LeadingDimension<LDA, LDB, LDC>() +
                      cublasdx::Alignment<aligned_to<Align, PA>, aligned_to<Align, PB>, aligned_to<Align, TC>>() +
                      cublasdx::Type<cublasdx::type::real>() + cublasdx::Function<cublasdx::function::MM>() +
                      cublasdx::Arrangement<RowA ? cublasdx::row_major : cublasdx::col_major,
                                            RowB ? cublasdx::row_major : cublasdx::col_major,
                                            RowC ? cublasdx::row_major : cublasdx::col_major>() +
                      cublasdx::Block() + cublasdx::BlockDim<BX, BY, BZ>() + cublasdx::SM<__CUDA_ARCH__>());

// Stop the kernel unless `tile` is rows x cols, stored row-major (Row) or column-major with
// leading dimension LD.
template <bool Row, int LD, int Align, typename T>
__device__ __forceinline__ void check_tile(const matrix_ref<T>& tile, long long rows, long long cols, char name) {
  const bool ok = tile.rows == rows && tile.cols == cols &&
                  (Row ? (tile.col_stride == 1 && tile.row_stride == LD) : (tile.row_stride == 1 && tile.col_stride == LD));
  if (Align > 0 && reinterpret_cast<unsigned long long>(tile.data) % (Align > 0 ? Align : 1) != 0) {
    if (first_thread()) {
      // (no arguments: they would take a local-memory buffer on every path)
      printf("tiles.matmul: a tile is not aligned as alignment= promises; allocate the tiles with "
             "cuda.shared.array(shape, dtype, alignment=16)\n");
    }
    fail();
  }
  if (!ok) {
    if (first_thread()) {
      printf("tiles.matmul: %c is %lld x %lld with strides (%lld, %lld) items; it must be %lld x %lld, %s with leading "
             "dimension %d (ld=)\n", name, tile.rows, tile.cols, tile.row_stride, tile.col_stride, rows, cols,
             Row ? "row-major" : "column-major", LD);
    }
    fail();
  }
}

template <int M, int N, int K, typename TA, typename TB, typename TC, typename PA, typename PB, bool RowA, bool RowB,
          bool RowC, int LDA, int LDB, int LDC, int Align, int BX, int BY, int BZ>
__device__ __forceinline__ void matmul(matrix_ref<TA> a, matrix_ref<TB> b, matrix_ref<TC> c, TC alpha, TC beta) {
  static_assert(sizeof(TA) == sizeof(PA) && alignof(TA) == alignof(PA), "A's storage must match its precision");
  static_assert(sizeof(TB) == sizeof(PB) && alignof(TB) == alignof(PB), "B's storage must match its precision");
  check_launch<BX, BY, BZ>("matmul");
  check_tile<RowA, LDA, Align>(a, M, K, 'A');
  check_tile<RowB, LDB, Align>(b, K, N, 'B');
  check_tile<RowC, LDC, Align>(c, M, N, 'C');
  if constexpr (RowC) {
    // cuBLASDx 0.4 checks a row-major C's leading dimension against M (its static_assert
    // rejects ldc = N < M, a valid tile), so a row-major C is computed as the column-major
    // C^T = B^T A^T: the same memory, A and B swapped, each read in the other order.
    gemm<N, M, K, PB, PA, TC, !RowB, !RowA, false, LDB, LDA, LDC, Align, BX, BY, BZ>().execute(
        alpha, reinterpret_cast<PB*>(b.data), reinterpret_cast<PA*>(a.data), beta, c.data);
  } else {
    gemm<M, N, K, PA, PB, TC, RowA, RowB, RowC, LDA, LDB, LDC, Align, BX, BY, BZ>().execute(
        alpha, reinterpret_cast<PA*>(a.data), reinterpret_cast<PB*>(b.data), beta, c.data);
  }
  __syncthreads();
}

}  // namespace numba_tiles
