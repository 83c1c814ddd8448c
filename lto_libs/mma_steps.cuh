// tiles.Matmul's register form (load_a, load_b, multiply, store) on sm_80 and later for fp16, bf16, tf32 and fp64
// products into a float (double) accumulator, on CuTe's MMA atoms as mma.cuh's tiles.matmul: A and B in shared
// memory in a swizzled layout of numba_tiles' own, each thread's accumulator the atoms' fragments in registers.
// The block's warps are a WM x WN grid over C's M x N tile: warp w multiplies the TM x TN = M / WM x N / WN tile
// at rows (w % WM) TM, columns (w / WM) TN, over all of K. No cuBLASDx GEMM is instantiated, so a step compiles
// in a fraction of matmul.cuh's time; numba_tiles/_matmul/mma_tiles.py chooses the grid and when this code serves
// (matmul.cuh's cuBLASDx form serves the rest). The sizes AItems, BItems and CItems are the host's, the same for
// both forms; the layouts differ, so a kernel's steps all come from one form (the same rule chooses for each).
#pragma once

#include <cute/arch/copy_sm80.hpp>

#include "mma.cuh"
#include "register_loops.cuh"
#include "stage.cuh"

namespace numba_tiles {

// A shared tile of Rows x Cols items of T, row-major (Row) or column-major, unpadded: `lines` lines (rows when
// Row) of `length` items. Its 16-byte chunks are swizzled: chunk q of line l lies at chunk q ^ f(l), f chosen so
// that eight lines in a row at the same chunk (an 8 x 8 block of ldmatrix, the lines of a column of the tile)
// fall in the eight distinct 16-byte columns of shared memory's 128-byte rows of banks. Lines of a number of
// chunks that is not a power of two, or of a part of one, are not swizzled (and not read by ldmatrix).
template <int Rows, int Cols, bool Row, typename T>
struct swizzled {
  static constexpr bool row = Row;
  static constexpr int length = Row ? Cols : Rows, lines = Row ? Rows : Cols, V = 16 / sizeof(T);
  static constexpr int chunks = length % V == 0 ? length / V : 0;  // (0: lines not of whole chunks)
  static constexpr bool swizzles = chunks > 1 && (chunks & (chunks - 1)) == 0;
  // f(l) = (l % 8 / spread) & mask: lines of 8 chunks or more, l % 8; of 4, (l / 2) % 4; of 2, (l / 4) % 2. (From
  // l % 8, so that the compiler may see that lines 8 apart, a warp's atoms', share it.)
  static constexpr int spread = !swizzles || chunks >= 8 ? 1 : 8 / chunks;
  static constexpr int mask = !swizzles ? 0 : chunks >= 8 ? 7 : chunks - 1;
  static __device__ __forceinline__ int at_line(int line, int pos) {
    return line * length + ((pos / V) ^ ((line & 7) / spread & mask)) * V + pos % V;
  }
  static __device__ __forceinline__ int at(int r, int c) { return Row ? at_line(r, c) : at_line(c, r); }
};

// The warps' grid over C's tile: each warp's TM x TN tile of MI x NI atoms, and where a thread's accumulator
// item i lies in C's tile (the atoms' fragments in order [MI][NI][c_regs]; lane l holds rows l / 4 (+ 8) and
// columns 2 (l % 4) and the next of each atom).
template <int M, int N, typename P, int BX, int BY, int BZ, int WM, int WN>
struct warp_grid {
  using Atom = mma_atom<P>;
  using Acc = typename Atom::acc;
  static constexpr int TM = M / WM, TN = N / WN, MI = TM / Atom::m, NI = TN / Atom::n;
  static constexpr int items = MI * NI * Atom::c_regs;
  static_assert(WM * WN * 32 == BX * BY * BZ, "a warp tile for each warp of the block");
  static_assert(M % WM == 0 && N % WN == 0 && TM % Atom::m == 0 && TN % (Atom::n * Atom::nb) == 0,
                "warp tiles of whole atoms");
  static __device__ __forceinline__ int warp() { return thread_rank<BX, BY>() / 32; }
  static __device__ __forceinline__ int lane() { return thread_rank<BX, BY>() % 32; }
  static __device__ __forceinline__ int row(int i, int warp, int lane) {
    const int q = i % Atom::c_regs, m = i / Atom::c_regs / NI;
    return warp % WM * TM + m * Atom::m + lane / 4 + 8 * (q / 2);
  }
  static __device__ __forceinline__ int col(int i, int warp, int lane) {
    const int q = i % Atom::c_regs, j = i / Atom::c_regs % NI;
    return warp / WM * TN + j * Atom::n + 2 * (lane % 4) + q % 2;
  }
};

// The thread's accumulator (the kernel's cuda.local.array: registers once inlined), checked to hold Items items.
template <int Items, typename TC>
__device__ __forceinline__ TC* accumulator_items(const array_ref<TC>& acc) {
  if (acc.size < Items || acc.stride != 1) {
    if (first_thread()) {
      printf(
          "tiles.Matmul: the accumulator holds %lld items (stride %lld); it must be a "
          "cuda.local.array(mm.accumulator_items) of %d\n",
          acc.size, acc.stride, Items);
    }
    fail();
  }
  return acc.data;
}

// The Rows x Cols tile of `src` at (row0, col0) into the shared `tile` (16-byte aligned) as Layout places it, by
// the block's threads. Inside the matrix, with lines contiguous in src in whole aligned 16-byte chunks, one
// cp.async a chunk (not committed); otherwise item by item, `fill` outside the matrix.
template <class Layout, int Rows, int Cols, int Threads, typename T>
__device__ __forceinline__ void tile_in(const matrix_ref<T>& src, long long row0, long long col0, T* tile, T fill,
                                        int t) {
  constexpr int V = Layout::V;
  const long long along = Layout::row ? src.col_stride : src.row_stride;  // (a line's step in src)
  const long long across = Layout::row ? src.row_stride : src.col_stride;
  const bool inside = row0 >= 0 && col0 >= 0 && row0 + Rows <= src.rows && col0 + Cols <= src.cols;
  if (Layout::chunks > 0 && inside && along == 1 && across % V == 0 && (Layout::row ? col0 : row0) % V == 0 &&
      across <= 0x7fffffff / Layout::lines && reinterpret_cast<unsigned long long>(src.data) % 16 == 0) {
    // Thread t copies chunk t % chunks of lines t / chunks, + Threads / chunks, ...: offsets in 32 bits, computed
    // once (where the lines a step apart have the same swizzle, as for every power-of-two block), a fixed count.
    constexpr int Chunks = Layout::chunks > 0 ? Layout::chunks : 1, Total = Layout::lines * Chunks;
    constexpr int Step = Threads / Chunks, Period = Layout::spread * (Layout::mask + 1);
    constexpr bool Even = Threads % Chunks == 0 && Step % Period == 0;
    const T* const origin = &src(row0, col0);
    const int q = t % Chunks, line0 = t / Chunks, stride = static_cast<int>(across);
    const auto copy = [&](int line, int chunk, int at) {
      cute::SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>::copy(
          *reinterpret_cast<const cute::uint128_t*>(origin + line * stride + chunk * V),
          *reinterpret_cast<cute::uint128_t*>(tile + at));
    };
    if constexpr (Even) {
      const int at0 = Layout::at_line(line0, q * V);
#pragma unroll
      for (int j = 0; j < Total / Threads; ++j) {
        copy(line0 + j * Step, q, at0 + j * Step * Layout::length);
      }
      if constexpr (Total % Threads != 0) {
        if (t < Total % Threads) {
          copy(line0 + Total / Threads * Step, q, at0 + Total / Threads * Step * Layout::length);
        }
      }
    } else {
      for (int i = t; i < Total; i += Threads) {
        const int line = i / Chunks, chunk = i % Chunks;
        copy(line, chunk, Layout::at_line(line, chunk * V));
      }
    }
  } else {
#pragma unroll 1  // (the edge path: unrolled, its loads would hold the registers of more resident blocks)
    for (int i = t; i < Rows * Cols; i += Threads) {
      const int line = i / Layout::length, pos = i % Layout::length;
      const long long r = row0 + (Layout::row ? line : pos), c = col0 + (Layout::row ? pos : line);
      tile[Layout::at_line(line, pos)] = r >= 0 && r < src.rows && c >= 0 && c < src.cols ? src(r, c) : fill;
    }
  }
}

// Matmul.store: dst's M x N tile at (row0, col0) = epi(alpha acc + beta dst, row, col) (beta == 0: dst is not
// read), rounded to PD in dst's storage TD, the items outside dst dropped. Each thread stores its own items: no
// barrier, no shared memory.
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN, typename TC, typename PD, typename TD, typename Epi = no_epilogue>
__device__ __forceinline__ void mma_store(array_ref<TC> acc, matrix_ref<TD> dst, long long row0, long long col0,
                                          TC alpha, TC beta, Epi epi = {}) {
  using Grid = warp_grid<M, N, P, BX, BY, BZ, WM, WN>;
  static_assert(sizeof(PD) == sizeof(TD), "the result's storage must match its precision");
  check_launch<BX, BY, BZ>("Matmul.store");
  const TC* const items = accumulator_items<CItems>(acc);
  const int warp = Grid::warp(), lane = Grid::lane();
  unrolled<CItems>([&](int i) {
    const long long r = row0 + Grid::row(i, warp, lane), col = col0 + Grid::col(i, warp, lane);
    if (r >= 0 && r < dst.rows && col >= 0 && col < dst.cols) {
      TD& out = dst(r, col);
      out = blend<PD>(alpha * items[i], beta, out, [&](TC v) { return epi(v, r, col); });
    }
  });
}

// Matmul.store with a stage: the block's items into the shared `stage` (rows of staged_pitch items; a thread's
// two adjacent items as one 8- or 16-byte write), then out by stage_out. TS is the accumulator's type TC, or
// dst's TD when narrower: each thread then finishes its own items (alpha acc + beta dst, the epilogue, rounded
// once to PD) before staging them. Ends with a barrier (Reused; else the caller's next comes first).
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN, typename TC, typename PD, typename TD, bool Reused = true, typename TS = TC,
          typename Epi = no_epilogue>
__device__ __forceinline__ void mma_store_staged(array_ref<TC> acc, matrix_ref<TD> dst, long long row0, long long col0,
                                                 TC alpha, TC beta, array_ref<TS> stage, Epi epi = {}) {
  using Grid = warp_grid<M, N, P, BX, BY, BZ, WM, WN>;
  static_assert(sizeof(PD) == sizeof(TD), "the result's storage must match its precision");
  constexpr bool rounded = !cuda::std::is_same_v<TS, TC>;
  static_assert(!rounded || cuda::std::is_same_v<TS, TD>, "a stage holds the accumulator's items or dst's");
  constexpr bool Bulk = !Reused && bulk_out<TS, TD> && !has_epilogue<Epi>;
  constexpr int LD = Bulk ? N : staged_pitch<N, TC, TS>;
  check_launch<BX, BY, BZ>("Matmul.store");
  TS* const staged = shared_tile<M * LD>(stage);
  const TC* const items = accumulator_items<CItems>(acc);
  const int warp = Grid::warp(), lane = Grid::lane();
  const bool inside = row0 >= 0 && col0 >= 0 && row0 + M <= dst.rows && col0 + N <= dst.cols;
  if constexpr (rounded) {
    PD* const results = reinterpret_cast<PD*>(staged);
    if (beta != TC(0)) {
      // dst's old tile into the stage (coalesced), blended in registers: the result is rounded once
      staged_tile_in<M, N, BX, BY, BZ, LD>(dst, row0, col0, staged);
      __syncthreads();
    }
    // An item's value: the stage's item read (when blended) and written by the thread that holds it, so no
    // barrier between.
    const auto value_of = [&](int r, int col, TC item, auto edges) {
      TC value = alpha * item;
      if (beta != TC(0)) {
        value += beta * static_cast<TC>(results[r * LD + col]);
      }
      if constexpr (has_epilogue<Epi>) {
        const long long gr = row0 + r, gc = col0 + col;
        if (!decltype(edges)::value || (gr >= 0 && gr < dst.rows && gc >= 0 && gc < dst.cols)) {
          value = epi(value, gr, gc);  // (only inside dst: the epilogue may index arrays of dst's rows or columns)
        }
      }
      return static_cast<PD>(value);
    };
    const auto finish = [&](int i, TC item, auto edges) {
      const int r = Grid::row(i, warp, lane), col = Grid::col(i, warp, lane);
      results[r * LD + col] = value_of(r, col, item, edges);
    };
    if (has_epilogue<Epi> && !inside) {
      // Across dst's edge with an epilogue: a loop the compiler keeps rolled (its items from local memory), so
      // that the edge tests do not take the registers of the whole unrolled store.
      TC copy[CItems];
      unrolled<CItems>([&](int i) { copy[i] = items[i]; });
#pragma unroll 1
      for (int i = 0; i < CItems; ++i) {
        finish(i, copy[i], cuda::std::true_type{});
      }
    } else {
      // (every item finished before any is written, so that the epilogue's loads of an item's row or column are
      // made once for all the thread's items that share it; a thread's two adjacent items as one 32-bit write)
      struct alignas(2 * sizeof(PD)) two {
        PD first, second;
      };
      two done[CItems / 2];
      unrolled<CItems / 2>([&](int h) {
        const int r = Grid::row(2 * h, warp, lane), col = Grid::col(2 * h, warp, lane);
        done[h] = two{value_of(r, col, items[2 * h], cuda::std::false_type{}),
                      value_of(r, col + 1, items[2 * h + 1], cuda::std::false_type{})};
      });
      unrolled<CItems / 2>([&](int h) {
        *reinterpret_cast<two*>(results + Grid::row(2 * h, warp, lane) * LD + Grid::col(2 * h, warp, lane)) = done[h];
      });
    }
  } else {
    using Pair = typename pair_of<TC>::type;
    static_assert(LD % 2 == 0, "pairs of items in whole rows");
    unrolled<CItems / 2>([&](int h) {
      const int r = Grid::row(2 * h, warp, lane), col = Grid::col(2 * h, warp, lane);
      *reinterpret_cast<Pair*>(staged + r * LD + col) =
          pair_of<TC>::make(alpha * items[2 * h], alpha * items[2 * h + 1]);
    });
  }
  stage_out<M, N, BX, BY, BZ, LD, Bulk, Reused, PD>(staged, dst, row0, col0, beta, inside, epi);
}

// A TMA tile (tma.cuh's tma_tile: boxes of 16-byte units swizzled by the copy engine) as warp_product reads it:
// its CuTe layout's offsets; its lines are whole 16-byte units, which ldmatrix reads.
template <class Tile>
struct tma_lines {
  static constexpr bool row = Tile::row;
  static constexpr int chunks = Tile::line_bytes / 16;
  static __device__ __forceinline__ int at(int r, int c) { return typename Tile::layout_type{}(r, c); }
};

// The MMA atoms as register_loops.cuh's product engine (Matmul.tile, gemm and batched by cp.async, batched by TMA):
// the swizzled layouts (and TMA's), tile_in, the warps' products and mma_store_staged.
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN>
struct atom_engine {
  using Grid = warp_grid<M, N, P, BX, BY, BZ, WM, WN>;
  template <typename T>
  using layout_a = swizzled<M, K, RowA, T>;
  template <typename T>
  using layout_b = swizzled<K, N, RowB, T>;
  template <class Tile>
  using tma_layout = tma_lines<Tile>;
  template <int Operand, typename T>
  static __device__ __forceinline__ void copy(const matrix_ref<T>& src, long long row0, long long col0, T* tile,
                                              T fill) {
    using Layout = cuda::std::conditional_t<Operand == 0, layout_a<T>, layout_b<T>>;
    tile_in<Layout, Operand == 0 ? M : K, Operand == 0 ? K : N, BX * BY * BZ>(src, row0, col0, tile, fill,
                                                                              thread_rank<BX, BY>());
  }
  template <class LayoutA, class LayoutB, typename T, typename TC>
  static __device__ __forceinline__ void multiply(T* a, T* b, TC* items) {
    using Atom = mma_atom<P>;
    static_assert(Grid::items == CItems && cuda::std::is_same_v<TC, typename Atom::acc>, "numba_tiles' accumulator");
    auto& fragments = *reinterpret_cast<TC(*)[Grid::MI][Grid::NI][Atom::c_regs]>(items);
    constexpr bool Ldsm = LayoutA::chunks > 0 && LayoutB::chunks > 0;
    const int warp = Grid::warp();
    warp_product<P, K, LayoutA, LayoutB, Grid::TM, Grid::TN, Ldsm>(a, b, warp % WM * Grid::TM, warp / WM * Grid::TN,
                                                                   Grid::lane(), fragments);
  }
  template <typename PD, bool Reused, typename TC, typename TD, typename TS, typename Epi>
  static __device__ __forceinline__ void store_staged(const array_ref<TC>& acc, const matrix_ref<TD>& dst, TC alpha,
                                                      TC beta, const array_ref<TS>& stage, Epi epi) {
    mma_store_staged<M, N, K, P, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems, WM, WN, TC, PD, TD, Reused, TS>(
        acc, dst, 0, 0, alpha, beta, stage, epi);
  }
};

// Matmul.load_a (Operand 0: M x K) or load_b (1: K x N) into a tile of the kernel's (the engine's copy), as one
// cp.async group. Async: no barrier (Matmul.wait completes it).
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN, int Operand, bool Async, typename T>
__device__ __forceinline__ void mma_load(matrix_ref<T> src, long long row0, long long col0, array_ref<T> tile, T fill) {
  using E = atom_engine<M, N, K, P, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems, WM, WN>;
  constexpr int Items = Operand == 0 ? AItems : BItems;
  static_assert(Items == (Operand == 0 ? M * K : K * N), "numba_tiles' shared tile size");
  check_launch<BX, BY, BZ>("Matmul.load");
  E::template copy<Operand>(src, row0, col0, shared_tile<Items>(tile), fill);
  copies_issued<Async>();
}

// Matmul.multiply: acc += A B over the block's shared tiles (the engine's product, each warp its tile); ends with a
// barrier, so the tiles may be refilled.
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN, typename TA, typename TB, typename TC>
__device__ __forceinline__ void mma_multiply(array_ref<TA> a, array_ref<TB> b, array_ref<TC> acc) {
  using E = atom_engine<M, N, K, P, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems, WM, WN>;
  check_launch<BX, BY, BZ>("Matmul.multiply");
  E::template multiply<typename E::template layout_a<TA>, typename E::template layout_b<TB>>(
      shared_tile<AItems>(a), shared_tile<BItems>(b), accumulator_items<CItems>(acc));
  __syncthreads();
}

// Matmul.batched(ops, ...) by cp.async, the MMA atoms multiplying.
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN, int Stages, long long SharedBytes, typename T, typename TC, typename PD,
          typename TD, typename TS, typename Epi = no_epilogue>
__device__ __forceinline__ void mma_batched(batch_ref<T> a, batch_ref<T> b, batch_ref<TD> c, array_ref<TS> shared,
                                            TC alpha, TC beta, Epi epi = {}) {
  using E = atom_engine<M, N, K, P, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems, WM, WN>;
  copied_batched<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(a, b, c, shared, alpha, beta,
                                                                                          epi);
}

// Matmul.tile(ops, i, j, ...) by cp.async, the MMA atoms multiplying: C's tile (i, j).
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN, int Stages, long long SharedBytes, typename T, typename TC, typename PD,
          typename TD, typename TS, typename Epi = no_epilogue>
__device__ __forceinline__ void mma_tile(matrix_ref<T> a, matrix_ref<T> b, matrix_ref<TD> c, long long i, long long j,
                                         array_ref<TS> shared, TC alpha, TC beta, Epi epi = {}) {
  using E = atom_engine<M, N, K, P, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems, WM, WN>;
  copied_tile_call<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(a, b, c, i, j, shared,
                                                                                            alpha, beta, epi);
}

// Matmul.gemm(ops, ...) by cp.async, the MMA atoms multiplying: all of C.
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN, int Stages, long long SharedBytes, typename T, typename TC, typename PD,
          typename TD, typename TS, typename Epi = no_epilogue>
__device__ __forceinline__ void mma_gemm(matrix_ref<T> a, matrix_ref<T> b, matrix_ref<TD> c, array_ref<TS> shared,
                                         TC alpha, TC beta, Epi epi = {}) {
  using E = atom_engine<M, N, K, P, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems, WM, WN>;
  copied_gemm<E, M, N, K, BX, BY, BZ, AItems, BItems, CItems, Stages, SharedBytes, PD>(a, b, c, shared, alpha, beta,
                                                                                       epi);
}

// Matmul.batched(pipe, c, ...) by TMA (sm_90 and later), the MMA atoms multiplying (T: an item of A and B, of the
// precision's size, as the tiles' layouts count them).
template <int M, int N, int K, typename P, bool RowA, bool RowB, int BX, int BY, int BZ, int AItems, int BItems,
          int CItems, int WM, int WN, int Stages, long long SharedBytes, typename TC, typename PD, typename TD,
          typename TS, typename Epi = no_epilogue>
__device__ __forceinline__ void mma_batched_tma(array_ref<unsigned char> maps, batch_ref<TD> c, array_ref<TS> shared,
                                                TC alpha, TC beta, Epi epi = {}) {
  using E = atom_engine<M, N, K, P, RowA, RowB, BX, BY, BZ, AItems, BItems, CItems, WM, WN>;
  using T = cuda::std::conditional_t<cuda::std::is_same_v<P, tf32>, float, P>;
  tma_batched<E, M, N, K, RowA, RowB, BX, BY, BZ, CItems, Stages, SharedBytes, T, PD>(maps, c, shared, alpha, beta,
                                                                                      epi);
}

}  // namespace numba_tiles
