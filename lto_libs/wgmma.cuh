// Matmul.batched, Matmul.tile and Matmul.gemm by wgmma: a batch of one-tile products, one tile of C or all of C,
// on Hopper's warpgroup MMA (wgmma, sm_90a), A and B loaded by TMA (the tensor maps and tiles of the TMA loop,
// matmul.cuh), C stored by TMA.
// The products come from CuTe's GMMA atoms (MathDx's CuTe): cuBLASDx 0.4 itself issues mma.sync only.
#pragma once

#include <cute/arch/mma_sm90.hpp>
#include <cutlass/arch/barrier.h>

#include "tma.cuh"

namespace numba_tiles {

// What Matmul.operands writes for the wgmma loop (numba_tiles/_tensor_maps.py's PIPE, checked by static_assert
// there): A's and B's maps and the batch's sizes (batched_maps), C's map, and the counters of the products'
// order, zero between launches.
struct wgmma_pipe {
  batched_maps ab;
  unsigned char pad[32];
  unsigned char c[128];  // CUtensorMap of C: boxes of 64 rows x 128 bytes, 128-byte swizzle
  unsigned tickets, finished;
};

// The dynamic shared memory the loop takes: 1 KiB of alignment, Stages buffers of A's and B's K-tiles,
// each multiplying warpgroup's 64 rows of C (TMA's swizzled boxes), a full and an empty barrier and the
// product of each buffer, and a barrier for each warpgroup's loads of C (beta != 0; two at most).
// numba_tiles/_matmul/wgmma.py's shared_bytes mirrors it.
template <int M, int N, int Stages, int BufferBytes, typename TD>
inline constexpr int wgmma_shared_bytes =
    1024 + Stages * BufferBytes + M * N * static_cast<int>(sizeof(TD)) + Stages * 20 + 16;

// The shared-memory descriptor of a wgmma operand: 64 (A) or N (B) rows or columns from `mn0`, 16 K-items from
// `k0`, of the operand's tile laid out as tma_tile (TMA's swizzled boxes). K-major: the tile's lines run
// along K (A row-major, B column-major), 8 lines apart SBO bytes; else its boxes of 64 items along M or N,
// LBO bytes apart, hold 8 K-lines every 1 KiB.
template <class Tile, bool KMajor, typename T>
__device__ __forceinline__ unsigned long long wgmma_operand(const T* tile, int mn0, int k0) {
  constexpr int bytes = static_cast<int>(sizeof(T));
  const T* start;
  unsigned lbo, sbo, mode;
  if constexpr (KMajor) {
    start = tile + k0 / Tile::box * (Tile::box * Tile::lines) + mn0 * Tile::box + k0 % Tile::box;
    lbo = 16;
    sbo = 8 * Tile::box_bytes;
    mode = Tile::box_bytes == 128 ? 1 : Tile::box_bytes == 64 ? 2 : 3;
  } else {
    static_assert(Tile::box_bytes == 128, "an M- or N-major operand takes whole 128-byte boxes");
    start = tile + mn0 / Tile::box * (Tile::box * Tile::lines) + k0 * Tile::box;
    lbo = Tile::box * Tile::lines * bytes;
    sbo = 1024;
    mode = 1;
  }
  return static_cast<unsigned long long>((shared_address(start) & 0x3FFFF) >> 4) |
         static_cast<unsigned long long>(lbo >> 4) << 16 | static_cast<unsigned long long>(sbo >> 4) << 32 |
         static_cast<unsigned long long>(mode) << 62;
}

// d += A B for a warpgroup's 64 x N of C (N / 2 floats a thread): CuTe's atom for the shape and types.
template <class Op, int... I>
__device__ __forceinline__ void wgmma_fma(float (&d)[sizeof...(I)], unsigned long long a, unsigned long long b,
                                          bool accumulate, cuda::std::integer_sequence<int, I...>) {
  Op::fma(a, b, d[I]..., accumulate ? cute::SM90::GMMA::ScaleOut::One : cute::SM90::GMMA::ScaleOut::Zero);
}

template <int Count>
__device__ __forceinline__ void wgmma_hold(float (&d)[Count]) {
#pragma unroll
  for (int i = 0; i < Count; ++i) cute::warpgroup_fence_operand(d[i]);
}

// A counter's next value, by one thread: PTX's atom under a lane test, which ptxas leaves alone (atomicAdd
// becomes a warp-aggregated atomic whose result is shuffled at once: the thread would wait for it there).
__device__ __forceinline__ unsigned wgmma_ticket(unsigned* counter) {
  unsigned v;
  // Inline PTX: no library call issues this global atom (cuda::atomic_ref's fetch_add is a generic ATOM, and
  // atomicAdd the warp-aggregated one above).
  asm volatile("{\n .reg .u32 lane;\n .reg .pred one;\n mov.u32 lane, %%laneid;\n setp.eq.u32 one, lane, 0;\n"
               " @one atom.relaxed.gpu.global.add.u32 %0, [%1], 1;\n}" : "=r"(v) : "l"(counter) : "memory");
  return v;
}

// The one arrival that completes a phase of a barrier initialized for one (a full buffer's, the sentinel), or one of
// the arrivals an empty barrier counts (each multiplying warp's).
__device__ __forceinline__ void barrier_arrive(unsigned long long* bar) {
  cuda::ptx::mbarrier_arrive(bar);
}

// The 128 threads of multiplying warpgroup `w` wait for each other: named barrier 1 + w (0 is __syncthreads's), by
// CUTLASS's bar.sync with a raw id. (Its user ids start past the 8 CUTLASS reserves: w + 8, one more value live,
// took the loop's K loop 30 instructions more. cuda::ptx has no bar.sync; the CUDA headers'
// __barrier_sync_count is barrier.sync, not aligned, which ptxas wraps in WARPSYNC.COLLECTIVE.)
__device__ __forceinline__ void warpgroup_barrier(int w) {
  cutlass::arch::NamedBarrier::sync(128, static_cast<cutlass::arch::ReservedNamedBarriers>(1 + w));
}

// Where a persistent loop's work (a product of a batch, a tile of C) lies: product z's tile at (row0, col0).
struct wgmma_where {
  int z, row0, col0;
};

// What the wgmma loop's blocks share, Matmul.batched's, Matmul.tile's and Matmul.gemm's: the layout of the dynamic
// shared memory (wgmma_shared_bytes), the loading thread's K-tiles and the multiplying warpgroups' product of one tile
// of C, stored by TMA. A block is M / 64 + 1 warpgroups: the first thread loads each K-tile of A and B with TMA
// into a ring of Stages buffers, a full barrier each; the other warpgroups multiply 64 rows of C each, straight from
// the buffers by wgmma (one K-tile's products in flight), marking each buffer's empty barrier when done with it,
// then round their C into a swizzled stage that one of their threads stores with TMA.
// P: the operands' type; PD: C's precision (float, __half, __nv_bfloat16); TD: the type C's array holds.
template <int M, int N, int K, int Stages, bool RowA, bool RowB, typename P, typename PD, typename TD>
struct wgmma_block {
  using TileA = tma_tile<M, K, RowA, P>;
  using TileB = tma_tile<K, N, RowB, P>;
  using E = cuda::std::conditional_t<cuda::std::is_same_v<P, __half>, cute::half_t, cute::bfloat16_t>;
  static constexpr auto MajorA = RowA ? cute::SM90::GMMA::Major::K : cute::SM90::GMMA::Major::MN;
  static constexpr auto MajorB = RowB ? cute::SM90::GMMA::Major::MN : cute::SM90::GMMA::Major::K;
  using Op = decltype(cute::SM90::GMMA::ss_op_selector<E, E, float, cute::Shape<cute::_64, cute::Int<N>, cute::_16>,
                                                       MajorA, MajorB>());
  static constexpr int Groups = M / 64, Threads = 128 * (Groups + 1);
  static constexpr int Buffer = TileA::items + TileB::items, BufferBytes = TileA::bytes + TileB::bytes;
  static constexpr int CBox = 128 / static_cast<int>(sizeof(TD)), StageBytes = 64 * N * static_cast<int>(sizeof(TD));
  static constexpr long long SharedBytes = wgmma_shared_bytes<M, N, Stages, BufferBytes, TD>;
  static_assert(M % 64 == 0 && N % 64 == 0 && K % 16 == 0 && TileA::tma && TileB::tma, "refused at typing");

  const wgmma_pipe* pipe;
  P* tiles;
  char* stage;
  unsigned long long *full, *empty, *loaded;  // (loaded: C's tile of each warpgroup, for beta)
  int* products;
  int slot = 0;
  unsigned phase = 0, c_phase = 0;

  __device__ __forceinline__ wgmma_block(const wgmma_pipe* pipe, unsigned char* shared) : pipe(pipe) {
    const unsigned base = shared_address(shared);
    tiles = reinterpret_cast<P*>(shared + ((base + 1023) / 1024 * 1024 - base));
    stage = reinterpret_cast<char*>(tiles) + Stages * BufferBytes;
    full = reinterpret_cast<unsigned long long*>(stage + M * N * sizeof(TD));
    empty = full + Stages;
    loaded = empty + Stages;
    products = reinterpret_cast<int*>(loaded + 2);
  }

  // The barriers, by the first thread (the block's barrier after it comes from the caller).
  __device__ __forceinline__ void start() {
    for (int s = 0; s < Stages; ++s) {
      tma_barrier_init(full + s);
      cuda::ptx::mbarrier_init(empty + s, 4 * Groups);  // (each multiplying warp arrives once)
    }
    for (int w = 0; w < Groups; ++w) tma_barrier_init(loaded + w);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }

  // By the first thread, once every barrier's last phase is waited for.
  __device__ __forceinline__ void finish() {
    for (int s = 0; s < Stages; ++s) {
      tma_barrier_inval(full + s);
      tma_barrier_inval(empty + s);
    }
    for (int w = 0; w < Groups; ++w) tma_barrier_inval(loaded + w);
  }

  __device__ __forceinline__ void next() {
    if (++slot == Stages) {
      slot = 0;
      phase ^= 1;
    }
  }

  // K-tile ks of the tile at (row0, col0) of product z into the next buffer, once the multiplying warps are done
  // with it; `product` (the batch's loop's order) goes with the buffer's first K-tile.
  __device__ __forceinline__ void issue(int z, int row0, int col0, int ks, int product) {
    tma_wait(empty + slot, phase ^ 1);
    if (ks == 0) products[slot] = product;
    tma_expect(full + slot, TileA::loaded + TileB::loaded);
    P* const a = tiles + slot * Buffer;
    tma_tile_load<TileA>(pipe->ab.a, a, row0, ks * K, z, full + slot);
    tma_tile_load<TileB>(pipe->ab.b, a + TileA::items, ks * K, col0, z, full + slot);
    next();
  }

  // The loading thread of the persistent loop (Matmul.batched's, Matmul.gemm's): the K-tiles of work `block`
  // (its first K-tile issued already, if `first_in`), then of each next one it takes from the pipe's counter,
  // Ahead works ahead, below `count`; then the mark that ends the multiplying warps' loop. where(item): the
  // {z, row0, col0} of work item's C tile. The last block to finish sets the counters back to zero: one call of a
  // pipe a launch, launches of a pipe in order.
  template <int Ahead, class Where>
  __device__ __forceinline__ void produce(wgmma_pipe* counters, int block, int count, int ksteps, bool first_in,
                                          Where where) {
    const int blocks = static_cast<int>(gridDim.x * gridDim.y * gridDim.z);
    const auto take = [&] { return blocks + static_cast<int>(wgmma_ticket(&counters->tickets)); };
    int queue[Ahead];  // (indexed by constants in the unrolled loop below: no copies that would wait on a ticket)
#pragma unroll
    for (int i = 0; i < Ahead; ++i) queue[i] = take();
    int item = block, from = 1;  // (the first work's first K-tile is in)
    bool more = first_in;
    while (more) {
#pragma unroll
      for (int j = 0; j < Ahead; ++j) {
        if (more) {
          const wgmma_where at = where(item);
          for (int ks = from; ks < ksteps; ++ks) issue(at.z, at.row0, at.col0, ks, item);
          from = 0;
          item = queue[j];
          more = item < count;
          if (more) queue[j] = take();
        }
      }
    }
    tma_wait(empty + slot, phase ^ 1);
    products[slot] = -1;  // (the multiplying warps stop here)
    barrier_arrive(full + slot);
    __threadfence();  // (this block's tickets are all taken)
    if (wgmma_ticket(&counters->finished) == static_cast<unsigned>(blocks - 1)) {
      counters->tickets = 0;
      counters->finished = 0;
    }
  }

  // A multiplying warpgroup's loop: each work the loading thread marks in turn, until its end mark, multiplied and
  // stored at where(item) (C of rows x cols), fin(value, item, row, col) on each item when Fused.
  template <bool Fused, class Where, class Fin>
  __device__ __forceinline__ void consume(int ksteps, long long rows, long long cols, float alpha, float beta,
                                          Where where, Fin fin) {
    const int t = threadIdx.x, lane = t % 32;
    for (;;) {
      tma_wait(full + slot, phase);
      // The work, read by lane 0 alone: lane 0's arrival on the empty barrier releases only its own
      // accesses, and the loading thread writes the next work here once that barrier completes (read by
      // every lane, compute-sanitizer's racecheck reports the reads and that write as a race).
      const int item = __shfl_sync(0xffffffffu, lane == 0 ? products[slot] : 0, 0);
      if (item < 0) break;
      const wgmma_where at = where(item);
      const auto at_item = [&](float x, long long row, long long col) { return fin(x, item, row, col); };
      multiply_store<Fused>(t / 128 - 1, at.z, at.row0, at.col0, ksteps, rows, cols, alpha, beta, at_item);
    }
    if (t % 128 == 0) bulk_wait<false>();
  }

  // Warpgroup w's 64 rows of C's tile at (row0, col0) of product z, whose K-tiles start in the current buffer, the
  // first of them loaded (the caller has waited for its full barrier):
  // their product, then `alpha d + beta C` (fin(value, row, col) on each item inside C when Fused) rounded into
  // the warpgroup's stage in TMA's boxes (64 rows x 128 bytes, 16-byte units of a row XOR the row mod 8), once its
  // last store has read the stage, and stored by one of its threads. With beta, C's old tile comes first into
  // the stage by TMA (zeros past C's edges), and each thread blends its items.
  template <bool Fused, class Fin>
  __device__ __forceinline__ void multiply_store(int w, int z, int row0, int col0, int ksteps, long long rows,
                                                 long long cols, float alpha, float beta, Fin fin) {
    const int t = threadIdx.x, warp = t % 128 / 32, lane = t % 32;
    char* const mine = stage + w * StageBytes;
    float d[N / 2];
    int used = -1;
    for (int ks = 0; ks < ksteps; ++ks) {
      if (ks > 0) tma_wait(full + slot, phase);
      const P* const a = tiles + slot * Buffer;
      const P* const b = a + TileA::items;
      cute::warpgroup_arrive();
#pragma unroll
      for (int kk = 0; kk < K; kk += 16) {
        wgmma_fma<Op>(d, wgmma_operand<TileA, RowA>(a, 64 * w, kk), wgmma_operand<TileB, !RowB>(b, 0, kk),
                      ks > 0 || kk > 0, cuda::std::make_integer_sequence<int, N / 2>{});
      }
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<1>();  // (the K-tile before this one is multiplied: its buffer is free)
      wgmma_hold(d);
      if (lane == 0 && used >= 0) barrier_arrive(empty + used);
      used = slot;
      next();
    }
    cute::warpgroup_wait<0>();
    wgmma_hold(d);
    if (lane == 0) barrier_arrive(empty + used);
    if (t % 128 == 0) {
      bulk_wait<true>();
      if (beta != 0.0f) {
        tma_expect(loaded + w, StageBytes);
#pragma unroll
        for (int box = 0; box < N / CBox; ++box) {
          tma_load(mine + box * 64 * 128, pipe->c, col0 + box * CBox, row0 + 64 * w, z, loaded + w);
        }
      }
    }
    if (beta != 0.0f) {
      tma_wait(loaded + w, c_phase);
      c_phase ^= 1;
    } else {
      warpgroup_barrier(w);
    }
    // (thread's items: rows r0 and r0 + 8, columns 8 j + q and the next; q < 8 lies in the 16-byte unit
    // q / U, U items a unit: the rest of each address is known at compile time)
    constexpr unsigned U = 16 / sizeof(TD);
    const unsigned r0 = warp * 16 + lane / 4, q = 2 * (lane % 4), swizzle = r0 % 8;
    char* const row_start = mine + r0 * 128 + q % U * sizeof(TD);
    // (blend, checked: compile-time bools, so that beta == 0 costs nothing, nor, for the warpgroups' rows and
    // columns all inside C, the test of each item before its epilogue)
    const auto to_stage = [&](auto blend, auto checked) {
#pragma unroll
      for (int j = 0; j < N / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          char* const unit = row_start + 8 * j / CBox * (64 * 128) + h * 8 * 128 +
                             (((8 * j % CBox / U + q / U) ^ swizzle) << 4);
          float x[2] = {alpha * d[4 * j + 2 * h], alpha * d[4 * j + 2 * h + 1]};
          if constexpr (decltype(blend)::value) {
            const TD* const old = reinterpret_cast<const TD*>(unit);
            x[0] += beta * static_cast<float>(cuda::std::bit_cast<PD>(old[0]));
            x[1] += beta * static_cast<float>(cuda::std::bit_cast<PD>(old[1]));
          }
          if constexpr (Fused) {
            const long long row = row0 + 64 * w + r0 + 8 * h, col = col0 + 8 * j + q;
            // (only items inside C: the epilogue may index arrays of C's rows or columns)
            if (!decltype(checked)::value || row < rows) {
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                if (!decltype(checked)::value || col + e < cols) x[e] = fin(x[e], row, col + e);
              }
            }
          }
          if constexpr (sizeof(TD) == 2) {
            const auto bits = [](float v) {
              return static_cast<unsigned>(cuda::std::bit_cast<unsigned short>(static_cast<PD>(v)));
            };
            *reinterpret_cast<unsigned*>(unit) = bits(x[0]) | bits(x[1]) << 16;
          } else {
            *reinterpret_cast<float2*>(unit) = make_float2(x[0], x[1]);
          }
        }
      }
    };
    const auto blended = [&](auto checked) {
      if (beta != 0.0f) {
        to_stage(cuda::std::true_type{}, checked);
      } else {
        to_stage(cuda::std::false_type{}, checked);
      }
    };
    if (!Fused || (row0 + 64 * (w + 1) <= rows && col0 + N <= cols)) {
      blended(cuda::std::false_type{});
    } else {
      blended(cuda::std::true_type{});
    }
    bulk_fence();
    warpgroup_barrier(w);
    if (t % 128 == 0) {
#pragma unroll
      for (int box = 0; box < N / CBox; ++box) {
        tma_store(pipe->c, col0 + box * CBox, row0 + 64 * w, z, mine + box * 64 * 128);
      }
      cuda::ptx::cp_async_bulk_commit_group();
    }
  }
};

// The block of one of the calls below over the launch's dynamic shared memory, its launch checked first (`message`
// under NUMBA_TILES_DEBUG, else a trap; whole, so that a debug build's cubin holds it as the call's own).
template <class Block, long long SharedBytes>
__device__ __forceinline__ Block wgmma_started(const array_ref<unsigned char>& maps, const char* message) {
  static_assert(SharedBytes == Block::SharedBytes, "numba_tiles/_matmul/wgmma.py's shared_bytes counts these bytes");
  stop_without_calls(block_threads() != Block::Threads ||
                         dynamic_shared_bytes() < Block::SharedBytes ||
                         maps.size < static_cast<long long>(sizeof(wgmma_pipe)) || maps.stride != 1 ||
                         reinterpret_cast<unsigned long long>(maps.data) % 64 != 0,
                     message);
  extern __shared__ __align__(1024) unsigned char shared[];
  return Block(reinterpret_cast<const wgmma_pipe*>(maps.data), shared);
}

// C[i] = alpha A[i] B[i] + beta C[i] for the batch `pipe` describes, each product one M x N tile, by a
// persistent block of wgmma_block's warpgroups; the multiplying warpgroups go on with the next product while
// their C is stored.
// The products' order is dynamic: each block's first is its own index; it then takes the next from the
// pipe's counter, Ahead products ahead, so that the SMs that draw memory faster take more. On an H200 the
// same loop in the grid's order (every block its equal share) was 8% slower for bf16 128^3 x 4096 (see
// docs/notes/why-the-matmul-is-shaped-so.md).
// epi(value, item, row, col): the epilogue, applied to each item of C inside C before it is rounded.
template <int M, int N, int K, int Stages, long long SharedBytes, bool RowA, bool RowB, typename P, typename PD,
          typename TD, typename Epi = no_epilogue>
__device__ __forceinline__ void wgmma_batched(array_ref<unsigned char> maps, batch_ref<TD> c, float alpha,
                                                 float beta, Epi epi = {}) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Block = wgmma_block<M, N, K, Stages, RowA, RowB, P, PD, TD>;
  constexpr int Ahead = 2;
  Block at = wgmma_started<Block, SharedBytes>(
      maps, "tiles.Matmul.batched: launched with other threads or less dynamic shared memory than mm.launch gives, "
            "or ops.pipe is not what mm.operands(a, b, c) made\n");
  wgmma_pipe* const pipe = reinterpret_cast<wgmma_pipe*>(maps.data);  // (its counters change)
  const int t = threadIdx.x, group = t / 128;
  const int block = static_cast<int>(linear_block());
  if (t == 0) {
    at.start();
    // The block's first K-tile before it reads the batch's sizes: a launch's start waits on one load less.
    // (A block past the batch's end loads zeros there, and its C tile, stored past C's end, is dropped.)
    at.issue(block, 0, 0, 0, block);
  }
  __syncthreads();
  const int ksteps = static_cast<int>((pipe->ab.k + K - 1) / K);  // (k >= 1: Matmul.operands)
  const auto where = [](int item) { return wgmma_where{item, 0, 0}; };
  if (group == 0) {
    if (t == 0) {
      const int count = static_cast<int>(pipe->ab.count);  // (Matmul.operands: below 2^31, as TMA's coordinates)
      stop_without_calls(c.count != count || c.rows != pipe->ab.m || c.cols != pipe->ab.n,
                         "tiles.Matmul.batched: ops.pipe is not mm.operands(a, b, c) of this c\n");
      at.template produce<Ahead>(pipe, block, count, ksteps, true, where);
    }
  } else {
    const auto fin = [&](float x, int item, long long row, long long col) {
      return epi(x, static_cast<long long>(item), row, col);
    };
    at.template consume<has_epilogue<Epi>>(ksteps, c.rows, c.cols, alpha, beta, where, fin);
  }
  __syncthreads();  // (every barrier's last phase waited for)
  if (t == 0) at.finish();
#else
  __trap();  // (refused at typing: the rule compiles this for sm_90a)
#endif
}

// C's tile (i, j) = alpha A B + beta C there, for the matrices `pipe` describes, by wgmma_block's warpgroups: the
// first thread loads the tile's K-tiles, the others multiply and store them. Ends with a barrier, C stored.
// epi(value, row, col): the epilogue, applied to each item of C inside C before it is rounded.
template <int M, int N, int K, int Stages, long long SharedBytes, bool RowA, bool RowB, typename P, typename PD,
          typename TD, typename Epi = no_epilogue>
__device__ __forceinline__ void wgmma_tile(array_ref<unsigned char> maps, matrix_ref<TD> c, long long i,
                                                    long long j, float alpha, float beta, Epi epi = {}) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Block = wgmma_block<M, N, K, Stages, RowA, RowB, P, PD, TD>;
  Block at = wgmma_started<Block, SharedBytes>(
      maps, "tiles.Matmul.tile: launched with other threads or less dynamic shared memory than mm.launch gives, "
            "or ops.pipe is not what mm.operands(a, b, c) made\n");
  const wgmma_pipe* const pipe = at.pipe;
  const int t = threadIdx.x;
  // (TMA's coordinates are 32-bit: Matmul.operands keeps C's sides below 2^31)
  const int row0 = static_cast<int>(i * M), col0 = static_cast<int>(j * N);
  const int ksteps = static_cast<int>((pipe->ab.k + K - 1) / K);
  if (t == 0) {
    at.start();
    stop_without_calls(pipe->ab.count != 1 || c.rows != pipe->ab.m || c.cols != pipe->ab.n,
                       "tiles.Matmul.tile: ops.pipe is not mm.operands(a, b, c) of this c\n");
  }
  __syncthreads();
  if (t < 128) {
    if (t == 0) {
      for (int ks = 0; ks < ksteps; ++ks) at.issue(0, row0, col0, ks, 0);
    }
  } else {
    tma_wait(at.full + at.slot, at.phase);  // (multiply_store waits for the K-tiles after the first)
    at.template multiply_store<has_epilogue<Epi>>(t / 128 - 1, 0, row0, col0, ksteps, c.rows, c.cols, alpha, beta,
                                                  epi);
    if (t % 128 == 0) bulk_wait<false>();
  }
  __syncthreads();  // (every barrier's last phase waited for, C stored: the block may compute its next tile)
  if (t == 0) at.finish();
#else
  __trap();  // (refused at typing: the rule compiles this for sm_90a)
#endif
}

// All of C = alpha A B + beta C for the matrices `pipe` describes, by a persistent block of wgmma_block's
// warpgroups, as wgmma_batched's loop with C's tiles for products: the loading thread runs ahead across tiles
// (Stages K-tiles, whichever tiles they belong to), the barriers are set up once a launch, and each multiplying
// warpgroup goes on with its next tile while TMA stores its last one. The tiles' order is dynamic as the batch's,
// tile t being gemm_tile's t-th (groups of rows sharing B's columns in L2), the loading thread one ticket ahead
// (two, as the batch takes, spread the tiles in flight wider: on an H100, bf16 8192^3's kernel took 1.58 ms so,
// 1.54 with one). Ends with a barrier, C stored.
// epi(value, row, col): the epilogue, applied to each item of C inside C before it is rounded.
template <int M, int N, int K, int Stages, long long SharedBytes, bool RowA, bool RowB, typename P, typename PD,
          typename TD, typename Epi = no_epilogue>
__device__ __forceinline__ void wgmma_gemm(array_ref<unsigned char> maps, matrix_ref<TD> c, float alpha, float beta,
                                           Epi epi = {}) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Block = wgmma_block<M, N, K, Stages, RowA, RowB, P, PD, TD>;
  Block at = wgmma_started<Block, SharedBytes>(
      maps, "tiles.Matmul.gemm: launched with other threads or less dynamic shared memory than mm.launch gives, "
            "or ops.pipe is not what mm.operands(a, b, c) made\n");
  wgmma_pipe* const pipe = reinterpret_cast<wgmma_pipe*>(maps.data);  // (its counters change)
  const int t = threadIdx.x;
  const int block = static_cast<int>(linear_block());
  // (C's sides are below 2^31, as TMA's coordinates: Matmul.operands)
  const int tiles_m = static_cast<int>((c.rows + M - 1) / M), tiles_n = static_cast<int>((c.cols + N - 1) / N);
  const int count = tiles_m * tiles_n;
  const auto where = [=](int item) {
    const tile_index tile = gemm_tile(item, tiles_m, tiles_n);
    return wgmma_where{0, tile.i * M, tile.j * N};
  };
  if (t == 0) {
    at.start();
    stop_without_calls(pipe->ab.count != 1 || c.rows != pipe->ab.m || c.cols != pipe->ab.n,
                       "tiles.Matmul.gemm: ops.pipe is not mm.operands(a, b, c) of this c\n");
    if (block < count) {
      const wgmma_where first = where(block);
      at.issue(first.z, first.row0, first.col0, 0, block);
    }
  }
  __syncthreads();
  const int ksteps = static_cast<int>((pipe->ab.k + K - 1) / K);  // (k >= 1: Matmul.operands)
  if (t < 128) {
    if (t == 0) at.template produce<1>(pipe, block, count, ksteps, block < count, where);
  } else {
    const auto fin = [&](float x, int, long long row, long long col) { return epi(x, row, col); };
    at.template consume<has_epilogue<Epi>>(ksteps, c.rows, c.cols, alpha, beta, where, fin);
  }
  __syncthreads();  // (every barrier's last phase waited for, C stored)
  if (t == 0) at.finish();
#else
  __trap();  // (refused at typing: the rule compiles this for sm_90a)
#endif
}

}  // namespace numba_tiles
