// The register form's loops over K-tiles, whatever multiplies them: Matmul.batched's persistent loop (A and B by
// cp.async, or by TMA: the caller's pipe), and Matmul.tile and Matmul.gemm as its products. E, the product
// engine, is cuBLASDx's (matmul.cuh) or the MMA atoms' (mma_steps.cuh): the shared layouts of A and B
// (layout_a<T>, layout_b<T>), their copy into them (copy<Operand>), acc += A B from two such tiles
// (multiply<LayoutA, LayoutB>: the TMA loop's own layouts too) and C's staged store (store_staged<PD, Reused>).
#pragma once

#include <cute/arch/copy_sm80.hpp>

#include "common.cuh"
#include "stage.cuh"
#include "tma.cuh"

namespace numba_tiles {

// The end of Matmul.load_a's or load_b's copies: one cp.async group; unless Async, waited for, then a barrier (Async:
// Matmul.wait completes it).
template <bool Async>
__device__ __forceinline__ void copies_issued() {
  cute::cp_async_fence();
  if constexpr (!Async) {
    cute::cp_async_wait<0>();
    __syncthreads();
  }
}

// The loop of Matmul.batched (either form): C[i] = alpha A[i] B[i] + beta C[i] for i = `block`,
// `block` + `blocks`, ... below `count` (a persistent loop: this block of a grid of `blocks`; launch about
// as many blocks as fit at once), each product `ksteps` K-tiles. The K-tiles stream through Stages
// shared buffers of A and B (tiles_a + slot * ItemsA in LayoutA, and B's), the next Stages - 1
// loading while the block multiplies the current one into its registers; C goes out through the
// shared stage as matmul_store_staged. `pipe` moves the tiles: pipe.load(slot, item, k) starts
// K-tile k of product `item` into buffer `slot` (then pipe.commit(), once a step, loaded or not),
// pipe.wait(slot, phase) waits for buffer `slot`'s tiles, the `phase`-th (mod 2) time it fills.
// Started: the caller has already started the first K-tile into buffer 0 (a block with no product
// then waits for it before returning). Aliased: C's stage is the bytes of the buffer whose K-tile
// was multiplied last (its A tile's start), which the block is then done with: less shared memory
// a block, so more blocks an SM (ItemsA then spans a buffer's A and B tiles).
// In C++ rather than a kernel's loop of load/multiply/store because the loop is then one piece of
// straight code: the batch's pointers, the pipeline's slots and counters stay in registers, and
// the checks run once.
template <class E, int M, int N, int K, int BX, int BY, int BZ, int CItems, int Stages, class LayoutA, class LayoutB,
          int ItemsA, int ItemsB, typename PD, bool Started, bool Aliased, typename T, typename TC, typename TD,
          class Pipe, typename Epi>
__device__ __forceinline__ void batched_loop(Pipe& pipe, long long count, long long k, T* tiles_a, T* tiles_b,
                                             batched_stage<TC, TD>* stage, const batch_ref<TD>& c, TC alpha, TC beta,
                                             Epi epi, long long block, long long blocks) {
  using Staged = batched_stage<TC, TD>;
  static_assert(Stages >= 2, "a pipeline needs two stages or more");
  constexpr int StageItems = batched_stage_items<M, N, TC, TD>;
  const int ksteps = k > K ? static_cast<int>((k + K - 1) / K) : 1;  // K = 0: one step of zeros
  const long long mine = block < count ? (count - 1 - block) / blocks + 1 : 0;
  const long long steps = mine * ksteps;
  // The next K-tile to load: product `loading`, K-tile `k_load`, into buffer `slot_load`.
  long long loading = block;
  int k_load = 0, slot_load = 0;
  const auto load = [&](bool started) {
    if (!started) {
      pipe.load(slot_load, loading, k_load);
    }
    slot_load = slot_load + 1 == Stages ? 0 : slot_load + 1;
    if (++k_load == ksteps) {
      k_load = 0;
      loading += blocks;
    }
  };
  for (int s = 0; s < Stages - 1; ++s) {
    if (s < steps) {
      load(Started && s == 0);
    }
    pipe.commit();
  }
  TC items[CItems];
  const array_ref<TC> acc{items, CItems, 1};
  long long item = block;
  int kstep = 0, slot = 0;
  unsigned phase = 0;
  for (long long s = 0; s < steps; ++s) {
    pipe.wait(slot, phase);
    if (bulk_out<Staged, TD> && kstep == ksteps - 1) {
      bulk_wait<true>();  // (the stage is written at the end of this step: the last bulk copy has read it)
    }
    __syncthreads();  // K-tile s is in; every thread is done with the buffer it used last step
    if (s + Stages - 1 < steps) {
      load(false);
    }
    pipe.commit();
    if (kstep == 0) {
#pragma unroll
      for (int i = 0; i < CItems; ++i) {
        items[i] = TC(0);
        if constexpr (cute::is_same_v<TC, double>) {
          // (a zero ptxas cannot see: it folds a known one into the first DMMA's zero-accumulator form, which
          // on an H200 left rows 8-15 of every 16 of C wrong whenever a product took more than one K-tile)
          // An empty asm, which no library has for a double (CuTe's warpgroup_fence_operand: float, uint32_t).
          asm volatile("" : "+d"(items[i]));
        }
      }
    }
    E::template multiply<LayoutA, LayoutB>(tiles_a + slot * ItemsA, tiles_b + slot * ItemsB, items);
    Staged* const staged = Aliased ? reinterpret_cast<Staged*>(tiles_a + slot * ItemsA) : stage;
    if (++slot == Stages) {
      slot = 0;
      phase ^= 1;
    }
    if (++kstep == ksteps) {
      if constexpr (Aliased) {
        __syncthreads();  // (every warp done reading the buffer the stage overlays)
      }
      // (no barrier after the store: the next step's comes before the stage, or its buffer, is written again)
      const auto at_item = [&](TC v, long long r, long long col) { return epi(v, item, r, col); };
      if constexpr (has_epilogue<Epi>) {
        E::template store_staged<PD, false>(acc, c[item], alpha, beta, array_ref<Staged>{staged, StageItems, 1},
                                            at_item);
      } else {
        E::template store_staged<PD, false>(acc, c[item], alpha, beta, array_ref<Staged>{staged, StageItems, 1}, epi);
      }
      kstep = 0;
      item += blocks;
    }
  }
  if constexpr (bulk_out<Staged, TD>) {
    bulk_wait<false>();  // (C written when the call returns)
  }
  if constexpr (Started) {
    if (steps == 0) {
      pipe.wait(0, 0);  // (the K-tile the caller started, before its buffer's bytes are let go)
    }
  }
}

// Stop the kernel unless A (count x m x k), B (count x k x n) and C (count x m x n) agree, m <= M and n <= N.
template <int M, int N>
__device__ __forceinline__ void check_batch(long long count, long long m, long long k, long long b_count, long long bk,
                                            long long bn, long long c_count, long long cm, long long cn) {
  if (count != b_count || count != c_count || k != bk || cm != m || cn != bn || m > M || bn > N) {
    if (first_thread()) {
      printf(
          "tiles.Matmul.batched: A is %lld x %lld x %lld, B %lld x %lld x %lld, C %lld x %lld x %lld; they must "
          "be count x m x k, count x k x n and count x m x n with m <= %d and n <= %d (a larger product: mm.tile over "
          "its tiles)\n",
          count, m, k, b_count, bk, bn, c_count, cm, cn, M, N);
    }
    fail();
  }
}

// Stop the kernel unless `shared` holds `bytes` contiguous bytes, 16-byte aligned.
template <typename TS>
__device__ __forceinline__ void check_batched_shared(const array_ref<TS>& shared, long long bytes) {
  if (shared.stride != 1 || shared.size * static_cast<long long>(sizeof(TS)) < bytes ||
      reinterpret_cast<unsigned long long>(shared.data) % 16 != 0) {
    if (first_thread()) {
      printf(
          "tiles.Matmul.batched: shared holds %lld bytes (stride %lld); it needs %lld contiguous bytes, 16-byte "
          "aligned: launch it with mm.launch, which gives the dynamic shared memory it needs\n",
          shared.size * static_cast<long long>(sizeof(TS)), shared.stride, bytes);
    }
    fail();
  }
}

// The bytes of Matmul.batched's (and Matmul.tile's) dynamic shared memory: Stages A tiles, Stages B tiles, the stage.
template <int M, int N, int AItems, int BItems, int Stages, typename T, typename TC, typename TD>
inline constexpr long long batched_shared_bytes =
    Stages * (AItems + BItems) * static_cast<long long>(sizeof(T)) +
    batched_stage_items<M, N, TC, TD> * static_cast<long long>(sizeof(batched_stage<TC, TD>));

// Products block, block + blocks, ... of a batch by cp.async: every thread copies the tiles (operand_copy:
// cp.async when a K-tile lies inside its matrix in aligned 16-byte vectors, item by item with zeros past
// the edges otherwise) into the suggested layouts, each step one cp.async group. `shared` holds Stages A
// tiles, Stages B tiles and the stage (16-byte aligned).
template <class E, int M, int N, int K, int BX, int BY, int BZ, int AItems, int BItems, int CItems, int Stages,
          long long SharedBytes, typename PD, typename T, typename TC, typename TD, typename TS, typename Epi>
__device__ __forceinline__ void copied_loop(const char* name, const batch_ref<T>& a, const batch_ref<T>& b,
                                            const batch_ref<TD>& c, const array_ref<TS>& shared, TC alpha, TC beta,
                                            Epi epi, long long block, long long blocks) {
  static_assert(AItems * sizeof(T) % 16 == 0 && BItems * sizeof(T) % 16 == 0, "tiles of whole 16-byte vectors");
  check_launch<BX, BY, BZ>(name);
  using Staged = batched_stage<TC, TD>;
  static_assert(SharedBytes == batched_shared_bytes<M, N, AItems, BItems, Stages, T, TC, TD>,
                "numba_tiles.Matmul._copied_bytes counts these bytes");
  check_batched_shared(shared, SharedBytes);
  T* const tiles_a = reinterpret_cast<T*>(__builtin_assume_aligned(shared.data, 16));
  T* const tiles_b = tiles_a + Stages * AItems;
  struct {
    const batch_ref<T>& a;
    const batch_ref<T>& b;
    T* tiles_a;
    T* tiles_b;
    __device__ __forceinline__ void load(int slot, long long item, int k) {
      E::template copy<0>(a[item], 0, static_cast<long long>(k) * K, tiles_a + slot * AItems, T(0));
      E::template copy<1>(b[item], static_cast<long long>(k) * K, 0, tiles_b + slot * BItems, T(0));
    }
    // one group a step, empty or not, so that the wait counts steps
    __device__ __forceinline__ void commit() { cute::cp_async_fence(); }
    __device__ __forceinline__ void wait(int, unsigned) { cute::cp_async_wait<Stages - 2>(); }
  } pipe{a, b, tiles_a, tiles_b};
  batched_loop<E, M, N, K, BX, BY, BZ, CItems, Stages, typename E::template layout_a<T>,
               typename E::template layout_b<T>, AItems, BItems, PD, false, false>(
      pipe, a.count, a.cols, tiles_a, tiles_b, reinterpret_cast<Staged*>(tiles_b + Stages * BItems), c, alpha, beta,
      epi, block, blocks);
  cute::cp_async_wait<0>();  // (only empty groups remain; a kernel may reuse the buffers after the call)
  __syncthreads();
}

// Matmul.batched(ops, ...) by cp.async (any GPU) with the product engine E: the batch's products over a persistent
// grid. SharedBytes: the dynamic shared memory numba_tiles.Matmul counts for it (and launches it with), checked.
template <class E, int M, int N, int K, int BX, int BY, int BZ, int AItems, int BItems, int CItems, int Stages,
          long long SharedBytes, typename PD, typename T, typename TC, typename TD, typename TS, typename Epi>
__device__ __forceinline__ void copied_batched(const batch_ref<T>& a, const batch_ref<T>& b, const batch_ref<TD>& c,
                                               const array_ref<TS>& shared, TC alpha, TC beta, Epi epi) {
  check_batch<M, N>(a.count, a.rows, a.cols, b.count, b.rows, b.cols, c.count, c.rows, c.cols);
  copied_loop<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(
      "Matmul.batched", a, b, c, shared, alpha, beta, epi, linear_block(), grid_blocks());
}

// Stop the kernel unless A (m x k), B (k x n) and C (m x n) are one product's (`call`: the Matmul call's name).
template <typename T, typename TD>
__device__ __forceinline__ void check_product(const char* call, const matrix_ref<T>& a, const matrix_ref<T>& b,
                                              const matrix_ref<TD>& c) {
  if (a.cols != b.rows || a.rows != c.rows || b.cols != c.cols) {
    if (first_thread()) {
      printf("tiles.Matmul.%s: A is %lld x %lld, B %lld x %lld, C %lld x %lld; they must be m x k, k x n and m x n\n",
             call, a.rows, a.cols, b.rows, b.cols, c.rows, c.cols);
    }
    fail();
  }
}

// C's tile (i, j) by cp.async (checked: A, B and C one product's) as one product of batched's loop, the M rows of
// A from i * M by the N columns of B from j * N, the epilogue given C's coordinates.
template <class E, int M, int N, int K, int BX, int BY, int BZ, int AItems, int BItems, int CItems, int Stages,
          long long SharedBytes, typename PD, typename T, typename TC, typename TD, typename TS, typename Epi>
__device__ __forceinline__ void copied_tile(const char* name, const matrix_ref<T>& a, const matrix_ref<T>& b,
                                            const matrix_ref<TD>& c, long long i, long long j,
                                            const array_ref<TS>& shared, TC alpha, TC beta, Epi epi) {
  const long long r0 = i * M, c0 = j * N;
  if (r0 < 0 || c0 < 0 || r0 >= c.rows || c0 >= c.cols) {
    return;  // (a tile past C's edge: nothing to compute)
  }
  const long long m = c.rows - r0 < M ? c.rows - r0 : M, n = c.cols - c0 < N ? c.cols - c0 : N;
  const batch_ref<T> pa{a.data + r0 * a.row_stride, 1, m, a.cols, 0, a.row_stride, a.col_stride};
  const batch_ref<T> pb{b.data + c0 * b.col_stride, 1, b.rows, n, 0, b.row_stride, b.col_stride};
  const batch_ref<TD> pc{&c(r0, c0), 1, m, n, 0, c.row_stride, c.col_stride};
  const auto at = [&](TC value, long long, long long r, long long q) { return epi(value, r0 + r, c0 + q); };
  if constexpr (has_epilogue<Epi>) {
    copied_loop<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(name, pa, pb, pc, shared,
                                                                                         alpha, beta, at, 0, 1);
  } else {
    copied_loop<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(name, pa, pb, pc, shared,
                                                                                         alpha, beta, epi, 0, 1);
  }
}

// Matmul.tile(ops, i, j, ...) by cp.async (any GPU) with the product engine E: C's tile (i, j).
template <class E, int M, int N, int K, int BX, int BY, int BZ, int AItems, int BItems, int CItems, int Stages,
          long long SharedBytes, typename PD, typename T, typename TC, typename TD, typename TS, typename Epi>
__device__ __forceinline__ void copied_tile_call(const matrix_ref<T>& a, const matrix_ref<T>& b,
                                                 const matrix_ref<TD>& c, long long i, long long j,
                                                 const array_ref<TS>& shared, TC alpha, TC beta, Epi epi) {
  check_product("tile", a, b, c);
  copied_tile<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>("Matmul.tile", a, b, c, i, j,
                                                                                       shared, alpha, beta, epi);
}

// Matmul.gemm(ops, ...) by cp.async (any GPU) with the product engine E: all of C, this block's tiles in
// each_gemm_tile's order.
template <class E, int M, int N, int K, int BX, int BY, int BZ, int AItems, int BItems, int CItems, int Stages,
          long long SharedBytes, typename PD, typename T, typename TC, typename TD, typename TS, typename Epi>
__device__ __forceinline__ void copied_gemm(const matrix_ref<T>& a, const matrix_ref<T>& b, const matrix_ref<TD>& c,
                                            const array_ref<TS>& shared, TC alpha, TC beta, Epi epi) {
  check_product("gemm", a, b, c);
  each_gemm_tile<M, N>(c.rows, c.cols, [&](int i, int j) {
    copied_tile<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>("Matmul.gemm", a, b, c, i, j,
                                                                                         shared, alpha, beta, epi);
  });
}

// Whether the TMA loop's stage of TS items (`stage` bytes) lives in the bytes of a buffer of A
// and B tiles (`buffer` bytes) that the block has multiplied: when it fits, and goes out by the
// threads' copy, not bulk_out's (a bulk copy would still read it while the buffer refills).
// numba_tiles.Matmul._tma_bytes mirrors it.
template <typename TS, typename TD>
__device__ constexpr bool batched_tma_aliased(long long stage, long long buffer) {
  return !bulk_out<TS, TD> && stage <= buffer;
}

// Matmul.batched(pipe, c, ...) by TMA with the product engine E (T: A's and B's storage): the first thread loads each
// K-tile with TMA (pipe: the tensor maps of A and B the host made, zeros past their edges), a box a line's 128 bytes
// wide (at most), into tma_tile's layouts, counted on the buffer's mbarrier. `shared` holds up to 1 KiB of alignment
// (TMA's swizzle needs 1024-byte aligned boxes), Stages buffers of an A tile then a B tile (each a multiple of 1 KiB),
// the stage unless the buffer holds it (batched_tma_aliased) and the Stages mbarriers. The block's first K-tile is
// started before the sizes are read and checked: a block's start then waits on one load less, which with the aliased
// stage's sixth block an SM is what brings fp16 64^3 x 16384 on an H200 level with torch.bmm, from about 2% behind.
template <class E, int M, int N, int K, bool RowA, bool RowB, int BX, int BY, int BZ, int CItems, int Stages,
          long long SharedBytes, typename T, typename PD, typename TC, typename TD, typename TS, typename Epi>
__device__ __forceinline__ void tma_batched(const array_ref<unsigned char>& maps, const batch_ref<TD>& c,
                                            const array_ref<TS>& shared, TC alpha, TC beta, Epi epi) {
  using TileA = tma_tile<M, K, RowA, T>;
  using TileB = tma_tile<K, N, RowB, T>;
  static_assert(TileA::tma && TileB::tma, "numba_tiles refuses these tiles for TMA at typing");
  using Staged = batched_stage<TC, TD>;
  constexpr long long StageItems = batched_stage_items<M, N, TC, TD>;
  constexpr int Buffer = TileA::items + TileB::items;  // (items of T)
  constexpr bool Aliased = batched_tma_aliased<Staged, TD>(StageItems * sizeof(Staged), TileA::bytes + TileB::bytes);
  constexpr long long StageBytes = Aliased ? 0 : StageItems * sizeof(Staged);  // (the stage's own bytes)
  check_launch<BX, BY, BZ>("Matmul.batched");
  const batched_maps* const pipe = reinterpret_cast<const batched_maps*>(maps.data);
  if (maps.size < static_cast<long long>(sizeof(batched_maps)) || maps.stride != 1 ||
      reinterpret_cast<unsigned long long>(maps.data) % 64 != 0) {
    if (first_thread()) {
      printf("tiles.Matmul.batched: ops.pipe is not what mm.operands(a, b, c) made\n");
    }
    fail();
  }
  // (before the first load writes into it)
  static_assert(SharedBytes == 1008 + Stages * (TileA::bytes + TileB::bytes) + StageBytes + Stages * 8,
                "numba_tiles.Matmul._tma_bytes counts these bytes");
  check_batched_shared(shared, SharedBytes);
  const unsigned base = shared_address(shared.data);
  T* const tiles_a = reinterpret_cast<T*>(reinterpret_cast<char*>(shared.data) + ((base + 1023) / 1024 * 1024 - base));
  T* const tiles_b = tiles_a + TileA::items;
  Staged* const stage = Aliased ? nullptr : reinterpret_cast<Staged*>(tiles_a + Stages * Buffer);
  unsigned long long* const barriers =
      reinterpret_cast<unsigned long long*>(reinterpret_cast<char*>(tiles_a + Stages * Buffer) + StageBytes);
  const bool leader = thread_rank<BX, BY>() == 0;
  const auto load = [&](int slot, long long item, int k) {
    unsigned long long* const bar = barriers + slot;
    tma_expect(bar, TileA::loaded + TileB::loaded);
    tma_tile_load<TileA>(pipe->a, tiles_a + slot * Buffer, 0, k * K, static_cast<int>(item), bar);
    tma_tile_load<TileB>(pipe->b, tiles_b + slot * Buffer, k * K, 0, static_cast<int>(item), bar);
  };
  if (leader) {
    for (int s = 0; s < Stages; ++s) {
      tma_barrier_init(barriers + s);
    }
    // (the first product as batched_loop counts it; 32-bit as TMA's coordinates: the loop's own 64-bit
    // index here took the fp16 kernel from 79 to 99 registers)
    load(0, static_cast<int>(linear_block()), 0);
  }
  check_batch<M, N>(pipe->count, pipe->m, pipe->k, pipe->count, pipe->k, pipe->n, c.count, c.rows, c.cols);
  __syncthreads();  // (the barriers initialized before any thread waits on them)
  struct {
    decltype(load)& start;
    unsigned long long* barriers;
    bool leader;
    __device__ __forceinline__ void load(int slot, long long item, int k) {
      if (leader) {
        start(slot, item, k);
      }
    }
    __device__ __forceinline__ void commit() {}
    __device__ __forceinline__ void wait(int slot, unsigned phase) { tma_wait(barriers + slot, phase); }
  } loader{load, barriers, leader};
  batched_loop<E, M, N, K, BX, BY, BZ, CItems, Stages, typename E::template tma_layout<TileA>,
               typename E::template tma_layout<TileB>, Buffer, Buffer, PD, true, Aliased>(
      loader, pipe->count, pipe->k, tiles_a, tiles_b, stage, c, alpha, beta, epi, linear_block(), grid_blocks());
  __syncthreads();  // (every barrier's last phase waited for)
  if (leader) {
    for (int s = 0; s < Stages; ++s) {
      tma_barrier_inval(barriers + s);  // (before the kernel may use their bytes otherwise)
    }
  }
}

}  // namespace numba_tiles
