// C's way out of the register form's accumulators, whatever multiplied them (cuBLASDx in matmul.cuh, the MMA
// atoms in mma_steps.cuh): the checks of the shared tiles, an item's blend, and the shared stage through which
// C goes out in 16-byte vectors (rows padded so that the fragments' writes do not collide in banks).
#pragma once

#include <cuda/std/bit>

#include "common.cuh"
#include "tma.cuh"

namespace numba_tiles {

// Stop the kernel unless `tile` is a contiguous, 16-byte-aligned shared array of at least Items
// items; returns its data, which the compiler may then take as aligned (vector accesses). The
// messages take no arguments: those would need a local-memory buffer.
template <int Items, typename T>
__device__ __forceinline__ T* shared_tile(const array_ref<T>& tile) {
  if (tile.size < Items || tile.stride != 1) {  // folds away for a cuda.shared.array
    if (first_thread()) {
      printf(
          "tiles.Matmul: a shared tile is smaller than the description needs, or strided; allocate "
          "cuda.shared.array(mm.a_items, mm.b_items or mm.c_items, dtype, alignment=16), or slice that many "
          "items of a dynamic one\n");
    }
    fail();
  }
  if (reinterpret_cast<unsigned long long>(tile.data) % 16 != 0) {
    if (first_thread()) {
      printf(
          "tiles.Matmul: a shared tile is not 16-byte aligned; allocate it with "
          "cuda.shared.array(items, dtype, alignment=16), or slice a dynamic one at a multiple of 16 bytes\n");
    }
    fail();
  }
  return static_cast<T*>(__builtin_assume_aligned(tile.data, 16));
}

// One item of C as dst stores it: `scaled` (alpha acc) + beta old (old not read when beta == 0),
// then the epilogue `fin` (the user's, given the item's coordinates), rounded to PD in dst's storage TD.
template <typename PD, typename TD, typename TC, typename Fin>
__device__ __forceinline__ TD blend(TC scaled, TC beta, const TD& old, Fin fin) {
  if (beta != TC(0)) {
    scaled += beta * static_cast<TC>(cuda::std::bit_cast<PD>(old));
  }
  return cuda::std::bit_cast<TD>(static_cast<PD>(fin(scaled)));
}

// ---- The bulk copy (sm_90's copy engine) of a float C's stage to global memory in one instruction,
// asynchronous: Matmul.batched goes on to its next product while the engine moves the tile. On an
// H200, fp32 64^3 products took 3% less time so; a 16-bit C did not gain (its stage, unpadded,
// takes bank conflicts: bf16 128^3 was a third slower), so it keeps the threads' copy.

// Whether Matmul.batched's stage of TS items goes out by bulk copy to a C of TD items.
template <typename TS, typename TD>
inline constexpr bool bulk_out =
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cuda::std::is_same_v<TS, TD> && sizeof(TD) == 4;
#else
    false;
#endif

// The row pitch of C's shared stage (items of TC): rows padded by 32 bytes, so that a float
// fragment's 64-bit writes (4 lanes a row) of the 4 rows one access serves fall in distinct banks
// (16 bytes gave 2-way conflicts). (A double's 64 bytes would too, but its 64^3 tiles of 3 stages
// would no longer fit a block's 227 KiB.) numba_tiles' Matmul.c_items is M times it.
template <int N, typename TC>
inline constexpr int stage_pitch = N + 32 / sizeof(TC);

// Matmul.batched's stage holds C's own items (TD) when they are narrower than the accumulator's:
// the block rounds its results before staging them, and the stage takes half the bytes (a fifth
// block an SM for fp16 64^3 tiles). Its rows are then padded by 16 bytes (32-bit writes of 8 rows
// an access in distinct banks). numba_tiles.Matmul._batched_stage_bytes mirrors both.
template <typename TC, typename TD>
using batched_stage = cuda::std::conditional_t<(sizeof(TD) < sizeof(TC)), TD, TC>;
template <int N, typename TC, typename TS>
inline constexpr int staged_pitch =
    sizeof(TS) < sizeof(TC) ? N + 16 / static_cast<int>(sizeof(TS)) : stage_pitch<N, TC>;
template <int M, int N, typename TC, typename TD>
inline constexpr int batched_stage_items = M * staged_pitch<N, TC, batched_stage<TC, TD>>;

// The M x N tile of dst at (row0, col0) into the shared `staged` (rows of LD items, 16-byte
// aligned) by the block's threads, zeros outside dst: in 16-byte vectors where the tile
// lies inside dst in aligned rows, item by item otherwise. (tile.cuh's tile_load does the same,
// but its vector loop unrolls: with the accumulator live, the batched fp16 kernel took 227
// registers a thread instead of 124.)
template <int M, int N, int BX, int BY, int BZ, int LD, typename TD>
__device__ __forceinline__ void staged_tile_in(const matrix_ref<TD>& dst, long long row0, long long col0, TD* staged) {
  constexpr int W = 16 / sizeof(TD), Threads = BX * BY * BZ;
  const int t = thread_rank<BX, BY>();
  if (N % W == 0 && LD % W == 0 && row0 >= 0 && col0 >= 0 && row0 + M <= dst.rows && col0 + N <= dst.cols &&
      dst.col_stride == 1 && dst.row_stride % W == 0 && col0 % W == 0 &&
      reinterpret_cast<unsigned long long>(dst.data) % 16 == 0) {
    struct alignas(16) vector {
      TD item[W];
    };
    const TD* const corner = &dst(row0, col0);
#pragma unroll 1  // (the accumulator is live here: one vector in flight at a time keeps registers for it)
    for (int i = t; i < M * N / W; i += Threads) {
      const int r = i / (N / W), col = i % (N / W) * W;
      *reinterpret_cast<vector*>(staged + r * LD + col) =
          *reinterpret_cast<const vector*>(corner + r * dst.row_stride + col);
    }
  } else {
#pragma unroll 1
    for (int i = t; i < M * N; i += Threads) {
      const long long r = row0 + i / N, col = col0 + i % N;
      staged[i / N * LD + i % N] = r >= 0 && r < dst.rows && col >= 0 && col < dst.cols ? dst(r, col) : TD{};
    }
  }
}

// The second half of a staged store: the block's items are in the shared `staged` (rows of LD items of TS, the
// accumulator's type TC or dst's TD when narrower, then already finished and rounded: `rounded`); this moves
// them to dst's M x N tile at (row0, col0) in 16-byte vectors of the stage (rows of dst contiguous and aligned,
// the tile `inside` dst), reading dst only when beta != 0 (blended here, with the epilogue `epi`, when the stage
// is not rounded); item by item otherwise. Bulk: a whole product with beta 0 goes out by one bulk copy (the
// stage unpadded). Ends with a barrier when Reused (else the caller's next barrier comes first).
template <int M, int N, int BX, int BY, int BZ, int LD, bool Bulk, bool Reused, typename PD, typename TS, typename TD,
          typename TC, typename Epi>
__device__ __forceinline__ void stage_out(TS* staged, const matrix_ref<TD>& dst, long long row0, long long col0,
                                          TC beta, bool inside, Epi epi) {
  constexpr bool rounded = !cuda::std::is_same_v<TS, TC>;
  constexpr int V = 16 / sizeof(TS);
  if constexpr (Bulk) {
    bulk_fence();
  }
  __syncthreads();
  constexpr int threads = BX * BY * BZ;
  const int t = thread_rank<BX, BY>();
  if constexpr (Bulk) {
    // A whole product whose C is one contiguous block, with beta 0 (a blend reads C): one bulk copy,
    // which batched_loop waits for before the stage is written again.
    if (beta == TC(0) && row0 == 0 && col0 == 0 && dst.rows == M && dst.cols == N && dst.col_stride == 1 &&
        dst.row_stride == N && reinterpret_cast<unsigned long long>(dst.data) % 16 == 0) {
      if (t == 0) {
        bulk_store(dst.data, staged, M * N * sizeof(TD));
      }
      return;
    }
  }
  // W items a store: 16 bytes of dst (two chunks of the stage for a 16-bit C of a 32-bit accumulator).
  constexpr int W = 16 / sizeof(TD) > V ? 16 / sizeof(TD) : V;
  // The stage's item at (r, col) of dst as dst stores it; `old` read only when Blend (beta != 0 with
  // an unrounded stage).
  const auto finish = [&](auto with_old, TS item, const TD& old, long long r, long long col) {
    if constexpr (rounded) {
      return item;
    } else {
      return blend<PD>(item, decltype(with_old)::value ? beta : TC(0), old, [&](TC v) { return epi(v, r, col); });
    }
  };
  // (Each loop twice, with and without dst's old items: a loop for beta == 0 carries no predicated
  // reads and conversions of them.)
  const auto move = [&](auto with_old) {
    constexpr bool Blend = decltype(with_old)::value;
    if (N % W == 0 && inside && dst.col_stride == 1 && dst.row_stride % W == 0 && col0 % W == 0 &&
        reinterpret_cast<unsigned long long>(dst.data) % (W * sizeof(TD)) == 0) {
      struct alignas(W * sizeof(TD)) vector {
        TD item[W];
      };
      struct alignas(16) chunk {
        TS item[V];
      };
      TD* const corner = &dst(row0, col0);
      for (int i = t; i < M * N / W; i += threads) {
        const int r = i / (N / W), col = i % (N / W) * W;
        vector* out = reinterpret_cast<vector*>(corner + r * dst.row_stride + col);
        vector old{};
        if constexpr (Blend) {
          old = *out;
        }
        chunk in[W / V];
        const bool swapped = W / V == 2 && (i >> 2) & 1;
#pragma unroll
        for (int h = 0; h < W / V; ++h) {
          // Of two chunks, threads 4-7 of each 8 read their second first: a quarter warp's 16-byte reads
          // then fall in distinct banks. (Swapped back below: a run-time index would put `in` in local memory.)
          in[h] = *reinterpret_cast<const chunk*>(staged + r * LD + col + (swapped ? 1 - h : h) * V);
        }
        if (swapped) {
          cuda::std::swap(in[0], in[W / V - 1]);
        }
        vector result;
        unrolled<W>([&](int j) {
          result.item[j] = finish(with_old, in[j / V].item[j % V], old.item[j], row0 + r, col0 + col + j);
        });
        *out = result;
      }
    } else {
#pragma unroll 1
      for (int i = t; i < M * N; i += threads) {
        const int r = i / N, col = i % N;
        const long long gr = row0 + r, gc = col0 + col;
        if (gr >= 0 && gr < dst.rows && gc >= 0 && gc < dst.cols) {
          TD& out = dst(gr, gc);
          out = finish(with_old, staged[r * LD + col], Blend ? out : TD{}, gr, gc);
        }
      }
    }
  };
  if (!rounded && beta != TC(0)) {
    move(cuda::std::true_type{});
  } else {
    move(cuda::std::false_type{});
  }
  if constexpr (Reused) {
    __syncthreads();
  }
}

}  // namespace numba_tiles
