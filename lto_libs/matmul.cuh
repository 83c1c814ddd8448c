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
template <int M, int N, int K, typename PA, typename PB, typename TC, bool RowA, bool RowB, bool RowC, int LDA,
          int LDB, int LDC, int BX, int BY, int BZ>
using gemm = decltype(cublasdx::Size<M, N, K>() + cublasdx::Precision<PA, PB, TC>() +
                      cublasdx::LeadingDimension<LDA, LDB, LDC>() +
                      cublasdx::Type<cublasdx::type::real>() + cublasdx::Function<cublasdx::function::MM>() +
                      cublasdx::Arrangement<RowA ? cublasdx::row_major : cublasdx::col_major,
                                            RowB ? cublasdx::row_major : cublasdx::col_major,
                                            RowC ? cublasdx::row_major : cublasdx::col_major>() +
                      cublasdx::Block() + cublasdx::BlockDim<BX, BY, BZ>() + cublasdx::SM<__CUDA_ARCH__>());

// Stop the kernel unless `tile` is rows x cols, stored row-major (Row) or column-major with
// leading dimension LD.
template <bool Row, int LD, typename T>
__device__ __forceinline__ void check_tile(const matrix_ref<T>& tile, long long rows, long long cols, char name) {
  const bool ok = tile.rows == rows && tile.cols == cols &&
                  (Row ? (tile.col_stride == 1 && tile.row_stride == LD) : (tile.row_stride == 1 && tile.col_stride == LD));
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
          bool RowC, int LDA, int LDB, int LDC, int BX, int BY, int BZ>
__device__ __forceinline__ void matmul(matrix_ref<TA> a, matrix_ref<TB> b, matrix_ref<TC> c, TC alpha, TC beta) {
  static_assert(sizeof(TA) == sizeof(PA) && alignof(TA) == alignof(PA), "A's storage must match its precision");
  static_assert(sizeof(TB) == sizeof(PB) && alignof(TB) == alignof(PB), "B's storage must match its precision");
  check_launch<BX, BY, BZ>("matmul");
  check_tile<RowA, LDA>(a, M, K, 'A');
  check_tile<RowB, LDB>(b, K, N, 'B');
  check_tile<RowC, LDC>(c, M, N, 'C');
  if constexpr (RowC) {
    // cuBLASDx 0.4 checks a row-major C's leading dimension against M (its static_assert
    // rejects ldc = N < M, a valid tile), so a row-major C is computed as the column-major
    // C^T = B^T A^T: the same memory, A and B swapped, each read in the other order.
    gemm<N, M, K, PB, PA, TC, !RowB, !RowA, false, LDB, LDA, LDC, BX, BY, BZ>().execute(
        alpha, reinterpret_cast<PB*>(b.data), reinterpret_cast<PA*>(a.data), beta, c.data);
  } else {
    gemm<M, N, K, PA, PB, TC, RowA, RowB, RowC, LDA, LDB, LDC, BX, BY, BZ>().execute(
        alpha, reinterpret_cast<PA*>(a.data), reinterpret_cast<PB*>(b.data), beta, c.data);
  }
  __syncthreads();
}

}  // namespace numba_tiles
