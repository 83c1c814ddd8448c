// TMA and bulk copies (sm_90's copy engine), for Matmul.batched's TMA loop (matmul.cuh) and the wgmma block
// (wgmma.cuh): no cuBLASDx here, so that a program of the wgmma block compiles in seconds.
#pragma once

#include <cute/layout.hpp>
#include <cute/swizzle.hpp>
#include <cute/swizzle_layout.hpp>
#include <cutlass/arch/barrier.h>

#include "common.cuh"

namespace numba_tiles {

// A shared pointer as the 32-bit shared-window address that the copy engine's instructions take.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The block's writes to shared memory made visible to the copy engine (before the barrier that
// precedes the copy).
__device__ __forceinline__ void bulk_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
#endif
}

// `bytes` (a multiple of 16) of shared `src` to global `dst`, both 16-byte aligned, as a bulk group of this thread.
__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Inline PTX: cuda::ptx::cp_async_bulk converts dst by cvta.to.global, after which ptxas recomputed the address
  // from the kernel's parameter and allocated registers anew (fp16 64^3 with a float C: 76 -> 81 registers);
  // CuTe's SM90_BULK_COPY_S2G passes the address as this does, but is empty unless CuTe enables TMA (sm_90 and
  // the arch-specific targets; bulk_out also serves a plain sm_100 or sm_120).
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n cp.async.bulk.commit_group;" ::"l"(dst),
               "r"(shared_address(src)), "r"(bytes)
               : "memory");
#endif
}

// Wait until this thread's bulk copies have read their shared memory (Read), or are done.
template <bool Read>
__device__ __forceinline__ void bulk_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (Read) {
    cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
  } else {
    cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
  }
#endif
}

// ---- TMA (sm_90's copy engine): a box of a tensor, described by a CUtensorMap the host made
// (numba_tiles.Matmul.tensor_maps), copied into shared memory by one instruction, zeros past the
// tensor's edges, its completion counted in bytes on an mbarrier.

// The mbarrier `bar` completes a phase when one thread has arrived and the bytes it expects have landed.
__device__ __forceinline__ void tma_barrier_init(unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::mbarrier_init(bar, 1);
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
#endif
}

// (cuda::ptx of CCCL 3.0 has no mbarrier.inval; CUTLASS's ClusterBarrier has, for sm_90 and later.)
__device__ __forceinline__ void tma_barrier_inval(unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cutlass::arch::ClusterBarrier::invalidate(bar);
#endif
}

// The one arrival of a phase, which then waits for `bytes` more to land.
__device__ __forceinline__ void tma_expect(unsigned long long* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       bytes);
#endif
}

// The box of the 3-D tensor `map` at (x, y, z) (x the contiguous dimension) into `dst`, counted on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const void* map, int x, int y, int z, unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const cuda::std::int32_t at[3] = {x, y, z};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, at, bar);
#endif
}

// `src` in shared memory to the box of the 3-D tensor `map` at (x, y, z), as part of this thread's bulk group
// (boxes past the tensor's edges are dropped); bulk_wait waits for it.
__device__ __forceinline__ void tma_store(const void* map, int x, int y, int z, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const cuda::std::int32_t at[3] = {x, y, z};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, at, src);
#endif
}

// Wait until `bar` has completed the phase of parity `phase`.
__device__ __forceinline__ void tma_wait(unsigned long long* bar, unsigned phase) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Inline PTX: the loop must be inside the asm. Around cuda::ptx::mbarrier_try_wait_parity it is a loop the
  // compiler sees, and the wgmma loop of Matmul.batched then stayed rolled (its SASS halved, 14 wgmma copies to 2);
  // CUTLASS's ClusterBarrier::wait gives try_wait a time limit (a NANOSLEEP in each retry).
  asm volatile(
      "{\n .reg .pred done;\n wait:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra wait;\n}" ::"r"(shared_address(bar)),
      "r"(phase)
      : "memory");
#endif
}

// An operand's tile in Matmul.batched: Rows x Cols items, row-major (Row) or column-major as the
// operand is, laid out as TMA writes it: in boxes of `Box` items along the contiguous lines (a
// line's bytes, at most 128) by all the lines, each box's lines swizzled by TMA's pattern of its
// width (16-byte units of a line XOR the line's index mod 8, 4 or 2), which spreads ldmatrix's
// eight 16-byte reads over the banks as cuBLASDx's suggested layouts do. `tma` is whether TMA
// can write it: lines of 32, 64 or a multiple of 128 bytes. numba_tiles.Matmul mirrors `bytes` and
// the box (_tma_tile).
template <int Rows, int Cols, bool Row, typename T>
struct tma_tile {
  static constexpr bool row = Row;
  static constexpr int lines = Row ? Rows : Cols, line = Row ? Cols : Rows;
  static constexpr int line_bytes = line * static_cast<int>(sizeof(T));
  static constexpr bool tma = (line_bytes == 32 || line_bytes == 64 || line_bytes % 128 == 0) && lines <= 256;
  static constexpr int box_bytes = line_bytes >= 128 ? 128 : line_bytes;
  static constexpr int box = box_bytes / static_cast<int>(sizeof(T)), boxes = line / box;
  // The bytes TMA writes; a buffer's bytes (a whole number of KiB, so that the next stays aligned) and items.
  static constexpr int loaded = line_bytes * lines;
  static constexpr int bytes = (loaded + 1023) / 1024 * 1024;
  static constexpr int items = bytes / static_cast<int>(sizeof(T));
  // log2 of the swizzle's 16-byte units (8, 4 or 2 of them) and of the item's bytes
  static constexpr int units = box_bytes >= 128 ? 3 : box_bytes == 64 ? 2 : 1;
  static constexpr int item_bits = sizeof(T) == 8 ? 3 : sizeof(T) == 4 ? 2 : 1;
  // (contiguous index, line) -> offset: boxes of `box` x `lines`, each swizzled
  using lines_layout = decltype(cute::composition(
      cute::Swizzle<units, 4 - item_bits, 3>{},
      cute::make_layout(cute::Shape<cute::Shape<cute::Int<box>, cute::Int<boxes>>, cute::Int<lines>>{},
                        cute::Stride<cute::Stride<cute::_1, cute::Int<box * lines>>, cute::Int<box>>{})));
  // (row, col) -> offset
  using layout_type = decltype(cute::composition(
      lines_layout{}, cute::make_layout(cute::Shape<cute::Int<Rows>, cute::Int<Cols>>{},
                                        cute::conditional_t<Row, cute::Stride<cute::Int<line>, cute::_1>,
                                                            cute::Stride<cute::_1, cute::Int<line>>>{})));
};

// The tile at (row0, col0) of product `item` of the tensor `map`, box by box along its lines.
template <class Tile, typename T>
__device__ __forceinline__ void tma_tile_load(const void* map, T* tile, int row0, int col0, int item,
                                              unsigned long long* bar) {
#pragma unroll
  for (int i = 0; i < Tile::boxes; ++i) {
    tma_load(tile + i * Tile::box * Tile::lines, map, (Tile::row ? col0 : row0) + i * Tile::box, Tile::row ? row0 : col0, item,
             bar);
  }
}

// What Matmul.operands writes for the TMA loop (numba_tiles/_tensor_maps.py's PIPE, checked by static_assert
// there): A's and B's tensor maps, the batch's sizes.
struct batched_maps {
  unsigned char a[128], b[128];  // CUtensorMap of A, of B (64-byte aligned)
  long long count, m, k, n;
};

}  // namespace numba_tiles
