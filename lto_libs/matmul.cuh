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
#include <cuda/std/bit>
#include <cuda/std/utility>
#include <cutlass/arch/barrier.h>

#include "common.cuh"
#include "mma.cuh"  // (check_tile)
#include "register_loops.cuh"
#include "stage.cuh"
#include "tma.cuh"

namespace numba_tiles {

// The cuBLASDx description: PA and PB are the precisions of A and B, which their storage may
// only carry (tfloat32_t in float, __nv_bfloat16 in 16-bit integers: same size and alignment,
// as cuBLASDx allows). SM is the arch NVRTC compiles for, so that the instance's C++ text (and
// the symbol) is the same for every arch; the cache key holds the arch.
// Align: the tiles' alignment in bytes that cuBLASDx may assume (16: it reads A and B with
// ldmatrix and writes C with stmatrix); 0 for each element type's own, cuBLASDx's default.
template <int Align, typename T>
inline constexpr unsigned aligned_to = Align > 0 ? Align : alignof(T);

// A complex type (numba's complex64/128 arrive as ::cuda::std::complex) is cuBLASDx's complex of its
// real precision: the same two values, the same size and alignment.
template <typename T>
struct real_of {
  using type = T;
  static constexpr bool complex = false;
};
template <typename T>
struct real_of<::cuda::std::complex<T>> {
  using type = T;
  static constexpr bool complex = true;
};

template <typename V, typename T>
__device__ __forceinline__ V dx_value(T x) {
  if constexpr (real_of<T>::complex) {
    return V{x.real(), x.imag()};
  } else {
    return V(x);
  }
}

template <int M, int N, int K, typename PA, typename PB, typename TC, bool RowA, bool RowB, bool RowC, int LDA,
          int LDB, int LDC, int Align, int BX, int BY, int BZ>
using gemm = decltype(cublasdx::Size<M, N, K>() +
                      cublasdx::Precision<typename real_of<PA>::type, typename real_of<PB>::type,
                                          typename real_of<TC>::type>() +
                      cublasdx::LeadingDimension<LDA, LDB, LDC>() +
                      cublasdx::Alignment<aligned_to<Align, PA>, aligned_to<Align, PB>, aligned_to<Align, TC>>() +
                      cublasdx::Type<real_of<TC>::complex ? cublasdx::type::complex : cublasdx::type::real>() +
                      cublasdx::Function<cublasdx::function::MM>() +
                      cublasdx::Arrangement<RowA ? cublasdx::row_major : cublasdx::col_major,
                                            RowB ? cublasdx::row_major : cublasdx::col_major,
                                            RowC ? cublasdx::row_major : cublasdx::col_major>() +
                      cublasdx::Block() + cublasdx::BlockDim<BX, BY, BZ>() + cublasdx::SM<__CUDA_ARCH__>());

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
    using G = gemm<N, M, K, PB, PA, TC, !RowB, !RowA, false, LDB, LDA, LDC, Align, BX, BY, BZ>;
    using V = typename G::c_value_type;
    G().execute(dx_value<V>(alpha), reinterpret_cast<typename G::a_value_type*>(b.data),
                reinterpret_cast<typename G::b_value_type*>(a.data), dx_value<V>(beta), reinterpret_cast<V*>(c.data));
  } else {
    using G = gemm<M, N, K, PA, PB, TC, RowA, RowB, RowC, LDA, LDB, LDC, Align, BX, BY, BZ>;
    using V = typename G::c_value_type;
    G().execute(dx_value<V>(alpha), reinterpret_cast<typename G::a_value_type*>(a.data),
                reinterpret_cast<typename G::b_value_type*>(b.data), dx_value<V>(beta), reinterpret_cast<V*>(c.data));
  }
  __syncthreads();
}

}  // namespace numba_tiles

// ---- The register form (tiles.Matmul): A and B in shared memory in cuBLASDx's suggested
// (swizzled) layouts, the accumulator in each thread's registers (cuBLASDx's partitioner), C
// stored straight from them. A description is (M, N, K, precisions, A's and B's arrangement,
// block shape); AItems, BItems and CItems are the sizes numba_tiles computed on the host for
// the shared tiles and the accumulator, checked here against cuBLASDx's own.

namespace numba_tiles {

template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ>
using blas = decltype(cublasdx::Size<M, N, K>() + cublasdx::Precision<PA, PB, PC>() +
                      cublasdx::Type<cublasdx::type::real>() + cublasdx::Function<cublasdx::function::MM>() +
                      cublasdx::Arrangement<RowA ? cublasdx::row_major : cublasdx::col_major,
                                            RowB ? cublasdx::row_major : cublasdx::col_major, cublasdx::col_major>() +
                      cublasdx::Alignment<16, 16, 16>() + cublasdx::Block() + cublasdx::BlockDim<BX, BY, BZ>() +
                      cublasdx::experimental::StaticBlockDim() + cublasdx::SM<__CUDA_ARCH__>());

// cuBLASDx's suggested block shape for a product (no BlockDim given), packed as x | y << 16 |
// z << 32 for tiles.Matmul.suggested_block_dim, which reads it from a compiled constant.
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB>
__host__ __device__ constexpr unsigned long long suggested_block_dim() {
  using Description = decltype(cublasdx::Size<M, N, K>() + cublasdx::Precision<PA, PB, PC>() +
                               cublasdx::Type<cublasdx::type::real>() + cublasdx::Function<cublasdx::function::MM>() +
                               cublasdx::Arrangement<RowA ? cublasdx::row_major : cublasdx::col_major,
                                                     RowB ? cublasdx::row_major : cublasdx::col_major,
                                                     cublasdx::col_major>() +
                               cublasdx::Alignment<16, 16, 16>() + cublasdx::Block() + cublasdx::SM<__CUDA_ARCH__>());
  constexpr dim3 block = Description::suggested_block_dim;
  return block.x | (static_cast<unsigned long long>(block.y) << 16) | (static_cast<unsigned long long>(block.z) << 32);
}

// Operand 0 is A (M x K), 1 is B (K x N): its shared layout, shape and arrangement.
template <class BLAS, int Operand>
__device__ __forceinline__ constexpr auto operand_layout() {
  if constexpr (Operand == 0) {
    return BLAS::suggest_layout_smem_a();
  } else {
    return BLAS::suggest_layout_smem_b();
  }
}

// The accumulator fragment as a view of the thread's local array (registers once inlined).
template <class BLAS, typename TC>
__device__ __forceinline__ auto accumulator(const array_ref<TC>& acc, int items) {
  const auto partitioner = BLAS::suggest_partitioner();
  using Frag = decltype(partitioner.make_accumulator_fragment());
  using PC = typename BLAS::c_value_type;
  static_assert(sizeof(PC) == sizeof(TC), "the accumulator's storage must match its precision");
  if (acc.size < items || acc.stride != 1) {
    if (first_thread()) {
      printf("tiles.Matmul: the accumulator holds %lld items (stride %lld); it must be a "
             "cuda.local.array(mm.accumulator_items) of %d\n", acc.size, acc.stride, items);
    }
    fail();
  }
  return cute::make_tensor(cute::make_rmem_ptr(reinterpret_cast<PC*>(acc.data)), typename Frag::layout_type{});
}

// Copy the Rows x Cols tile of `src` at (row0, col0) into the shared `tile` (16-byte aligned)
// in the operand's suggested layout. Inside the matrix, with rows (or columns) of whole aligned
// 16-byte vectors, cuBLASDx's cooperative copy moves it (cp.async on sm_80 and later, not yet
// committed); otherwise item by item, `fill` outside the matrix.
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int Operand, typename P, typename T>
__device__ __forceinline__ void operand_copy(const matrix_ref<T>& src, long long row0, long long col0, P* tile,
                                             T fill) {
  using BLAS = blas<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ>;
  static_assert(sizeof(P) == sizeof(T) && alignof(P) == alignof(T), "the tile's storage must match its precision");
  constexpr int rows = Operand == 0 ? M : K, cols = Operand == 0 ? K : N;
  auto shared = cublasdx::make_tensor(tile, operand_layout<BLAS, Operand>());
  constexpr long long V = 16 / sizeof(T);
  const bool inside = row0 >= 0 && col0 >= 0 && row0 + rows <= src.rows && col0 + cols <= src.cols;
  const bool aligned = reinterpret_cast<unsigned long long>(src.data) % 16 == 0 && row0 >= 0 && col0 >= 0;
  P* origin = reinterpret_cast<P*>(&src(row0, col0));
  // Offsets within the tile in 32 bits (half the address arithmetic of 64-bit ones), when they fit.
  constexpr long long within = 0x7fffffffLL / (rows > cols ? rows : cols);
  if (inside && aligned && src.col_stride == 1 && src.row_stride % V == 0 && col0 % V == 0 &&
      src.row_stride <= within) {
    const auto global = cute::make_tensor(cute::make_gmem_ptr(origin),
                                          cute::make_layout(cute::Shape<cute::Int<rows>, cute::Int<cols>>{},
                                                            cute::make_stride(static_cast<int>(src.row_stride),
                                                                              cute::_1{})));
    cublasdx::copy<BLAS, 16>(global, shared);
  } else if (inside && aligned && src.row_stride == 1 && src.col_stride % V == 0 && row0 % V == 0 &&
             src.col_stride <= within) {
    const auto global = cute::make_tensor(cute::make_gmem_ptr(origin),
                                          cute::make_layout(cute::Shape<cute::Int<rows>, cute::Int<cols>>{},
                                                            cute::make_stride(cute::_1{},
                                                                              static_cast<int>(src.col_stride))));
    cublasdx::copy<BLAS, 16>(global, shared);
  } else {
    constexpr int threads = BX * BY * BZ;
    const int t = thread_rank<BX, BY>();
    constexpr bool row_major = Operand == 0 ? RowA : RowB;
#pragma unroll 1  // (the edge path: unrolled, its loads held the registers of more resident blocks)
    for (int i = t; i < rows * cols; i += threads) {
      const int r = row_major ? i / cols : i % rows, c = row_major ? i % cols : i / rows;
      const long long gr = row0 + r, gc = col0 + c;
      const T value = (gr >= 0 && gr < src.rows && gc >= 0 && gc < src.cols) ? src(gr, gc) : fill;
      shared(r, c) = *reinterpret_cast<const P*>(&value);
    }
  }
}

// operand_copy into a tile of the kernel's, as one commit group. Async: no barrier (tile_wait
// completes it).
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems, int Operand, bool Async, typename T>
__device__ __forceinline__ void matmul_load(matrix_ref<T> src, long long row0, long long col0, array_ref<T> tile,
                                            T fill) {
  using BLAS = blas<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ>;
  using P = cuda::std::conditional_t<Operand == 0, PA, PB>;
  constexpr int items = Operand == 0 ? AItems : BItems;
  static_assert(cute::cosize(operand_layout<BLAS, Operand>().layout) == items,
                "numba_tiles' shared tile size differs from cuBLASDx's");
  check_launch<BX, BY, BZ>("Matmul.load");
  operand_copy<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ, Operand>(
      src, row0, col0, reinterpret_cast<P*>(shared_tile<items>(tile)), fill);
  copies_issued<Async>();
}

// acc += A B over the block's shared tiles; ends with a barrier, so the tiles may be refilled.
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems, typename TA, typename TB, typename TC>
__device__ __forceinline__ void matmul_multiply(array_ref<TA> a, array_ref<TB> b, array_ref<TC> acc) {
  using BLAS = blas<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ>;
  check_launch<BX, BY, BZ>("Matmul.multiply");
  auto c = accumulator<BLAS>(acc, CItems);
  static_assert(decltype(cute::size(c))::value == CItems, "numba_tiles' accumulator size differs from cuBLASDx's");
  const auto sa = cublasdx::make_tensor(reinterpret_cast<PA*>(shared_tile<AItems>(a)), BLAS::suggest_layout_smem_a());
  const auto sb = cublasdx::make_tensor(reinterpret_cast<PB*>(shared_tile<BItems>(b)), BLAS::suggest_layout_smem_b());
  BLAS().execute(sa, sb, c);
  __syncthreads();
}

// dst's M x N tile at (row0, col0) = epi(alpha acc + beta dst, row, col) (beta == 0: dst is not
// read), the items outside dst dropped. dst holds the accumulator's type, or PD (A's precision: the
// result rounded to half precision) in storage TD. Each thread stores its own items: no barrier,
// no shared memory.
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems, typename TC, typename PD, typename TD, typename Epi = no_epilogue>
__device__ __forceinline__ void matmul_store(array_ref<TC> acc, matrix_ref<TD> dst, long long row0, long long col0,
                                             TC alpha, TC beta, Epi epi = {}) {
  using BLAS = blas<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ>;
  static_assert(sizeof(PD) == sizeof(TD), "the result's storage must match its precision");
  check_launch<BX, BY, BZ>("Matmul.store");
  const auto partitioner = BLAS::suggest_partitioner();
  auto c = accumulator<BLAS>(acc, CItems);
  unrolled<CItems>([&](int i) {
    if (partitioner.is_index_in_bounds(i)) {
      const auto rc = partitioner.map_fragment_index(i);
      const long long r = row0 + cute::get<0>(rc), col = col0 + cute::get<1>(rc);
      if (r >= 0 && r < dst.rows && col >= 0 && col < dst.cols) {
        TD& out = dst(r, col);
        out = blend<PD>(alpha * static_cast<TC>(c(i)), beta, out, [&](TC v) { return epi(v, r, col); });
      }
    }
  });
}


// The same through `stage`, a shared array of the stage's items TS: the block writes alpha acc
// into it (rows of staged_pitch items, so that a warp's writes do not collide in banks), then moves
// it to dst in 16-byte vectors of the stage (rows of dst contiguous and aligned, the tile inside
// dst), reading dst only when beta != 0; item by item otherwise. TS is the accumulator's type TC,
// or dst's TD when narrower (Matmul.batched): each thread then finishes its own items (alpha acc +
// beta dst, rounded once to PD) before staging them, and the move is a copy. A float stage of
// Matmul.batched on sm_90 (bulk_out) is unpadded, and a whole product with beta 0 goes out by one
// bulk copy. Ends with a barrier, so the stage may be refilled (Reused = false: none; the caller's
// next barrier comes first). `epi(value, row, col)`, the epilogue, finishes each item before it is
// rounded: in registers for a rounded stage, in the move otherwise (with no bulk copy then).
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems, typename TC, typename PD, typename TD, bool Reused = true,
          typename TS = TC, typename Epi = no_epilogue>
__device__ __forceinline__ void matmul_store_staged(array_ref<TC> acc, matrix_ref<TD> dst, long long row0,
                                                    long long col0, TC alpha, TC beta, array_ref<TS> stage,
                                                    Epi epi = {}) {
  using BLAS = blas<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ>;
  static_assert(sizeof(PD) == sizeof(TD), "the result's storage must match its precision");
  constexpr bool rounded = !cuda::std::is_same_v<TS, TC>;
  static_assert(!rounded || cuda::std::is_same_v<TS, TD>, "a stage holds the accumulator's items or dst's");
  // Matmul.batched's float stage on sm_90 is unpadded: its tile is then the block of C it copies to.
  constexpr bool Bulk = !Reused && bulk_out<TS, TD> && !has_epilogue<Epi>;
  constexpr int LD = Bulk ? N : staged_pitch<N, TC, TS>;
  check_launch<BX, BY, BZ>("Matmul.store");
  TS* const staged = shared_tile<M * LD>(stage);
  const auto partitioner = BLAS::suggest_partitioner();
  auto c = accumulator<BLAS>(acc, CItems);
  // A static layout, so that cuBLASDx's copy knows which items are adjacent (vector stores).
  const auto stage_layout = cute::make_layout(cute::Shape<cute::Int<M>, cute::Int<N>>{},
                                              cute::Stride<cute::Int<LD>, cute::_1>{});
  const bool inside = row0 >= 0 && col0 >= 0 && row0 + M <= dst.rows && col0 + N <= dst.cols;
  if constexpr (rounded) {
    auto stage_tensor = cublasdx::make_tensor(cute::make_smem_ptr(reinterpret_cast<PD*>(staged)), stage_layout);
    if (beta != TC(0)) {
      // dst's old tile into the stage (coalesced), to be blended in registers: the result is rounded
      // once, and a loop of per-item global reads would hold each item's address in registers.
      staged_tile_in<M, N, BX, BY, BZ, LD>(dst, row0, col0, staged);
      __syncthreads();
    }
    if (has_epilogue<Epi> && !inside) {
      // A tile across dst's edge, with an epilogue: item by item in a loop the compiler keeps rolled (the
      // items from local memory), so that the epilogue is called only inside dst (it may index arrays of
      // dst's rows or columns). Unrolled, its edge tests took the fp16 64^3 batched kernel from 70 to 116
      // registers a thread, every loop of it, and a fifth of its speed on an H200 (two blocks an SM less).
      TC items[CItems];
      unrolled<CItems>([&](int i) { items[i] = c(i); });
#pragma unroll 1
      for (int i = 0; i < CItems; ++i) {
        if (partitioner.is_index_in_bounds(i)) {
          const auto rc = partitioner.map_fragment_index(i);
          const int r = cute::get<0>(rc), col = cute::get<1>(rc);
          PD& out = reinterpret_cast<PD*>(staged)[r * LD + col];  // (stage_layout's item)
          TC value = alpha * items[i];
          if (beta != TC(0)) {
            value += beta * static_cast<TC>(out);
          }
          const long long gr = row0 + r, gc = col0 + col;
          if (gr >= 0 && gr < dst.rows && gc >= 0 && gc < dst.cols) {
            value = epi(value, gr, gc);
          }
          out = static_cast<PD>(value);
        }
      }
    } else {
      auto result = cute::make_fragment_like<PD>(c);
      if (beta != TC(0)) {
        cublasdx::copy_fragment<16>(stage_tensor, result, partitioner);
      }
      unrolled<CItems>([&](int i) {
        TC value = alpha * static_cast<TC>(c(i));
        if (beta != TC(0)) {
          value += beta * static_cast<TC>(result(i));
        }
        if constexpr (has_epilogue<Epi>) {
          if (partitioner.is_index_in_bounds(i)) {
            const auto rc = partitioner.map_fragment_index(i);
            value = epi(value, row0 + cute::get<0>(rc), col0 + cute::get<1>(rc));
          }
        }
        result(i) = static_cast<PD>(value);
      });
      // (each thread writes the stage's items it read: no barrier between)
      cublasdx::copy_fragment<16>(result, stage_tensor, partitioner);
    }
  } else if constexpr (sizeof(TC) >= 4) {
    auto scaled = cute::make_fragment_like(c);
#pragma unroll
    for (int i = 0; i < CItems; ++i) {
      scaled(i) = alpha * c(i);
    }
    auto stage_tensor = cublasdx::make_tensor(
        cute::make_smem_ptr(reinterpret_cast<typename BLAS::c_value_type*>(staged)), stage_layout);
    cublasdx::copy_fragment<16>(scaled, stage_tensor, partitioner);
  } else {
    // A half-precision accumulator item by item: with cuBLASDx 0.4's copy_fragment of a half-precision
    // fragment into this stage the fp16-accumulator GPU tests fail on an H200, for a cause not known
    // (fp32 and fp64 fragments copy right).
#pragma unroll
    for (int i = 0; i < CItems; ++i) {
      if (partitioner.is_index_in_bounds(i)) {
        const auto rc = partitioner.map_fragment_index(i);
        staged[cute::get<0>(rc) * LD + cute::get<1>(rc)] = alpha * static_cast<TC>(c(i));
      }
    }
  }
  stage_out<M, N, BX, BY, BZ, LD, Bulk, Reused, PD>(staged, dst, row0, col0, beta, inside, epi);
}

// cuBLASDx as register_loops.cuh's product engine: its suggested layouts (and the TMA loop's as CuTe layouts), its
// copy into them, its block execute, and matmul_store_staged.
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems>
struct dx_engine {
  using BLAS = blas<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ>;
  template <typename T>
  using layout_a = decltype(BLAS::suggest_layout_smem_a().layout);
  template <typename T>
  using layout_b = decltype(BLAS::suggest_layout_smem_b().layout);
  template <class Tile>
  using tma_layout = typename Tile::layout_type;
  template <int Operand, typename T>
  static __device__ __forceinline__ void copy(const matrix_ref<T>& src, long long row0, long long col0, T* tile,
                                              T fill) {
    using P = cuda::std::conditional_t<Operand == 0, PA, PB>;
    operand_copy<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ, Operand>(src, row0, col0, reinterpret_cast<P*>(tile),
                                                                       fill);
  }
  template <class LayoutA, class LayoutB, typename T, typename TC>
  static __device__ __forceinline__ void multiply(T* a, T* b, TC* items) {
    auto fragment = accumulator<BLAS>(array_ref<TC>{items, CItems, 1}, CItems);
    BLAS().execute(cublasdx::make_tensor(cute::make_smem_ptr(reinterpret_cast<PA*>(a)), LayoutA{}),
                   cublasdx::make_tensor(cute::make_smem_ptr(reinterpret_cast<PB*>(b)), LayoutB{}), fragment);
  }
  template <typename PD, bool Reused, typename TC, typename TD, typename TS, typename Epi>
  static __device__ __forceinline__ void store_staged(const array_ref<TC>& acc, const matrix_ref<TD>& dst, TC alpha,
                                                      TC beta, const array_ref<TS>& stage, Epi epi) {
    matmul_store_staged<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems, TC, PD, TD, Reused, TS>(
        acc, dst, 0, 0, alpha, beta, stage, epi);
  }
};

// Matmul.batched(ops, ...) by cp.async (any GPU), cuBLASDx multiplying.
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems, int Stages, long long SharedBytes, typename T, typename TC,
          typename PD, typename TD, typename TS, typename Epi = no_epilogue>
__device__ __forceinline__ void matmul_batched(batch_ref<T> a, batch_ref<T> b, batch_ref<TD> c, array_ref<TS> shared,
                                               TC alpha, TC beta, Epi epi = {}) {
  using E = dx_engine<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems>;
  copied_batched<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(
      a, b, c, shared, alpha, beta, epi);
}

// Matmul.tile(ops, i, j, ...) by cp.async (any GPU), cuBLASDx multiplying: C's tile (i, j).
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems, int Stages, long long SharedBytes, typename T, typename TC,
          typename PD, typename TD, typename TS, typename Epi = no_epilogue>
__device__ __forceinline__ void matmul_tile(matrix_ref<T> a, matrix_ref<T> b, matrix_ref<TD> c, long long i,
                                            long long j, array_ref<TS> shared, TC alpha, TC beta, Epi epi = {}) {
  using E = dx_engine<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems>;
  copied_tile_call<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(
      a, b, c, i, j, shared, alpha, beta, epi);
}

// Matmul.gemm(ops, ...) by cp.async (any GPU), cuBLASDx multiplying: all of C.
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems, int Stages, long long SharedBytes, typename T, typename TC,
          typename PD, typename TD, typename TS, typename Epi = no_epilogue>
__device__ __forceinline__ void matmul_gemm(matrix_ref<T> a, matrix_ref<T> b, matrix_ref<TD> c, array_ref<TS> shared,
                                            TC alpha, TC beta, Epi epi = {}) {
  using E = dx_engine<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems>;
  copied_gemm<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(
      a, b, c, shared, alpha, beta, epi);
}

// Matmul.batched(pipe, c, ...) by TMA (sm_90 and later), cuBLASDx multiplying.
template <int M, int N, int K, typename PA, typename PB, typename PC, bool RowA, bool RowB, int BX, int BY, int BZ,
          int AItems, int BItems, int CItems, int Stages, long long SharedBytes, typename TC, typename PD,
          typename TD, typename TS, typename Epi = no_epilogue>
__device__ __forceinline__ void matmul_batched_tma(array_ref<unsigned char> maps, batch_ref<TD> c,
                                                   array_ref<TS> shared, TC alpha, TC beta, Epi epi = {}) {
  using E = dx_engine<M, N, K, PA, PB, PC, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems>;
  tma_batched<E, M, N, K, RowA, RowB, BX, BY, BZ, CItems, Stages, SharedBytes, PA, PD>(maps, c, shared, alpha, beta,
                                                                                       epi);
}

}  // namespace numba_tiles
