// What every numba_tiles header shares: the array view entry points pass, launch and size
// checks, and where temp storage lives; and the CUB configuration and utilities they all build
// on, which are most of a program's parse. Every program includes this header first (the CUB
// library's base), so one precompiled header of it serves them all.
#pragma once

#include <cub/config.cuh>
#include <cub/thread/thread_operators.cuh>
#include <cub/util_ptx.cuh>
#include <cub/util_type.cuh>

#include <cuda/functional>
#include <cuda/ptx>
#include <cuda/std/complex>
#include <cuda/std/cstdint>
#include <cuda/std/functional>
#include <cuda/std/limits>
#include <cuda/std/tuple>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace numba_tiles {

// The bytes of dynamic shared memory the block was launched with.
__device__ __forceinline__ unsigned dynamic_shared_bytes() {
  return cuda::ptx::get_sreg_dynamic_smem_size();
}

// Stop the kernel. A failed device assertion (unlike a bare trap) makes the driver flush the
// printf buffer, so the message printed just before reaches the user; one thread prints it.
__device__ __forceinline__ bool first_thread() {
  return (threadIdx.x | threadIdx.y | threadIdx.z | blockIdx.x | blockIdx.y | blockIdx.z) == 0;
}

__device__ __forceinline__ void fail() {
  __assertfail("numba_tiles check failed (see the message above)", "numba_tiles", 0, "", 1);
}

// Stop the kernel if `bad`, in code that issues wgmma: thread 0 of each block prints printf's `format` and
// `args` only under NUMBA_TILES_DEBUG, and a bare trap stops it otherwise. (With any call in a kernel,
// printf's included, ptxas serializes its every wgmma, each waiting for the one before.)
template <typename... Args>
__device__ __forceinline__ void stop_without_calls(bool bad, const char* format, Args... args) {
  if (bad) {
#ifdef NUMBA_TILES_DEBUG
    if ((threadIdx.x | threadIdx.y | threadIdx.z) == 0) printf(format, args...);
    fail();
#else
    __trap();
#endif
  }
}

// A Numba array as an entry point passes it: data, number of items, stride in items.
template <typename T>
struct array_ref {
  T* data;
  long long size;
  long long stride;
};

// The block's dynamic shared memory as an array of T: the whole of it belongs to the call that takes it
// (a Matmul's tile and batched, whose launch gives the bytes they need).
template <typename T>
__device__ __forceinline__ array_ref<T> dynamic_shared() {
  extern __shared__ __align__(1024) unsigned char dynamic[];
  return {reinterpret_cast<T*>(dynamic), static_cast<long long>(dynamic_shared_bytes() / sizeof(T)), 1};
}

// A 2-D Numba array as an entry point passes it: data, shape, strides in items (any layout).
template <typename T>
struct matrix_ref {
  T* data;
  long long rows, cols;
  long long row_stride, col_stride;

  __device__ __forceinline__ T& operator()(long long r, long long c) const {
    return data[r * row_stride + c * col_stride];
  }
  // Whether it is one dense block of rows x cols items in row-major (or column-major) order.
  __device__ __forceinline__ bool dense(bool row_major) const {
    return row_major ? (col_stride == 1 && (row_stride == cols || rows == 1))
                     : (row_stride == 1 && (col_stride == rows || cols == 1));
  }
};

// A 3-D Numba array as an entry point passes it: a batch of `count` matrices (any strides).
template <typename T>
struct batch_ref {
  T* data;
  long long count, rows, cols;
  long long batch_stride, row_stride, col_stride;

  __device__ __forceinline__ matrix_ref<T> operator[](long long i) const {
    return {data + i * batch_stride, rows, cols, row_stride, col_stride};
  }
};

// The items of a thread-local array of (at least) N items. Numba arrays carry their length
// at run time only; for cuda.local.array it is a constant, so the check folds away.
template <int N, typename T>
__device__ __forceinline__ T* items_of(array_ref<T> a, const char* intrinsic) {
  if (a.size < N || a.stride != 1) {
    if (first_thread()) {
      printf("tiles.%s: the thread-local array has %lld items (stride %lld); it needs items_per_thread=%d "
             "contiguous ones\n", intrinsic, a.size, a.stride, N);
    }
    fail();
  }
  return a.data;
}

// The same as a C++ array reference, which is what CUB's block collectives take.
template <int N, typename T>
__device__ __forceinline__ T (&tile_of(array_ref<T> a, const char* intrinsic))[N] {
  return *reinterpret_cast<T (*)[N]>(items_of<N>(a, intrinsic));
}

// A global array's data, which must be contiguous (unit stride); Contiguous arrays (Numba
// layout "C") skip the check.
template <bool Contiguous, typename T>
__device__ __forceinline__ T* contiguous(array_ref<T> a, const char* intrinsic) {
  if (!Contiguous && a.stride != 1 && a.size > 1) {
    if (first_thread()) {
      printf("tiles.%s: the array is strided (%lld items apart); pass a contiguous slice\n", intrinsic, a.stride);
    }
    fail();
  }
  return a.data;
}

// A store's epilogue when the user gives none: each item as it is. A user's epilogue is a functor of
// the same call, (value, its coordinates...) -> value, generated by numba_tiles around a Numba
// device function (numba_tiles/_callback.py); nvJitLink inlines it into the store's loop.
struct no_epilogue {
  template <typename V, typename... At>
  __device__ __forceinline__ V operator()(V value, At...) const {
    return value;
  }
};

// f(0), f(1), ..., f(N - 1): a loop unrolled by the compiler's front end (each index a constant once f is
// inlined), where #pragma unroll may not be honoured: NVRTC compiles a user epilogue's call as an opaque one,
// and left such loops rolled, their arrays in local memory.
template <int N, int I = 0, typename F>
__device__ __forceinline__ void unrolled(F&& f) {
  if constexpr (I < N) {
    f(I);
    unrolled<N, I + 1>(f);
  }
}

template <typename Epi>
inline constexpr bool has_epilogue = !cuda::std::is_same_v<Epi, no_epilogue>;

// The block's index in the grid, and the grid's blocks.
__device__ __forceinline__ long long linear_block() {
  return blockIdx.x + gridDim.x * (blockIdx.y + static_cast<long long>(gridDim.y) * blockIdx.z);
}
__device__ __forceinline__ long long grid_blocks() {
  return static_cast<long long>(gridDim.x) * gridDim.y * gridDim.z;
}

// The calling thread's rank in its block (x fastest), and the block's threads, for a block shape known only when
// the kernel runs (thread_rank below: a shape known when it compiles).
__device__ __forceinline__ unsigned block_rank() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned block_threads() {
  return blockDim.x * blockDim.y * blockDim.z;
}

// Matmul.gemm's order of C's tiles: tile t of a C of tiles_m x tiles_n tiles, walked in groups of GemmGroup
// tile rows, down a group's column before its next column, so that the tiles a grid works on at once share
// A's rows and B's columns in L2 (numba_tiles/_matmul/twins.py's gemm_tile mirrors it). A t past the last
// tile is tile (tiles_m, 0), past C. In 32 bits: a C that fits a GPU's memory has fewer than 2^31 tiles.
inline constexpr int GemmGroup = 8;
struct tile_index {
  int i, j;
};
__device__ __forceinline__ tile_index gemm_tile(int t, int tiles_m, int tiles_n) {
  if (t >= tiles_m * tiles_n) return {tiles_m, 0};
  const int first = t / (GemmGroup * tiles_n) * GemmGroup;
  const int height = tiles_m - first < GemmGroup ? tiles_m - first : GemmGroup;
  const int in_group = t - first * tiles_n;
  return {first + in_group % height, in_group / height};
}

// tile(i, j) for this block's tiles of an M x N-tiled C of rows x cols, in gemm_tile's order: the block's
// index, then a grid's blocks apart (Matmul.gemm by a tile call; a grid of any size covers C).
template <int M, int N, class Tile>
__device__ __forceinline__ void each_gemm_tile(long long rows, long long cols, Tile tile) {
  const int tiles_m = static_cast<int>((rows + M - 1) / M), tiles_n = static_cast<int>((cols + N - 1) / N);
  const int count = tiles_m * tiles_n, blocks = static_cast<int>(grid_blocks());
  for (int t = static_cast<int>(linear_block()); t < count; t += blocks) {
    const tile_index at = gemm_tile(t, tiles_m, tiles_n);
    tile(at.i, at.j);
  }
}

// Where a block collective keeps its shared temp storage (CUB's TempStorage, or a struct around
// it). own_storage: a static __shared__ buffer per storage type in the kernel, which every call
// that needs that type reuses (each call ends with a barrier, so sequential calls never overlap).
struct own_storage {};

// NUMBA_TILES_STATIC_SHARED_BYTES: a block's static shared memory, which numba_tiles defines
// (one number for Python and C++). When this fails, numba_tiles measures each storage and
// names the intrinsic whose storage is too big.
template <typename Storage>
__device__ __forceinline__ Storage& storage_of(own_storage, const char*) {
  static_assert(sizeof(Storage) <= NUMBA_TILES_STATIC_SHARED_BYTES, "a temp storage over the static shared memory");
  __shared__ Storage storage;
  return storage;
}

// The user's buffer (temp=), usually a cuda.shared.array that several calls share. Numba aligns
// an array to its item size only, so the storage starts at the first aligned byte: the buffer
// needs sizeof + alignof - 1 bytes (tiles.temp_bytes), wherever it lies, so that a size that
// works once works everywhere. The pointer is advanced, not rebuilt from an integer, so that
// the compiler still sees shared memory (LDS/STS, not generic accesses); for a
// cuda.shared.array the size check folds away.
template <typename Storage, typename T>
__device__ __forceinline__ Storage& storage_of(array_ref<T> buffer, const char* intrinsic) {
  constexpr unsigned long long align = alignof(Storage);
  constexpr unsigned long long need = sizeof(Storage) + align - 1;
  const long long bytes = buffer.size * static_cast<long long>(sizeof(T));
  if ((buffer.stride != 1 && buffer.size > 1) || bytes < static_cast<long long>(need)) {
    if (first_thread()) {
      printf("tiles.%s: temp holds %lld bytes (stride %lld items); this call needs %llu contiguous bytes "
             "(tiles.temp_bytes gives it)\n", intrinsic, bytes, buffer.stride, need);
    }
    fail();
  }
  char* start = reinterpret_cast<char*>(buffer.data);
  return *reinterpret_cast<Storage*>(start + (align - reinterpret_cast<unsigned long long>(start) % align) % align);
}

// The calling thread's rank in a BX x BY x BZ block (x fastest), as CUB ranks them.
template <int BX, int BY>
__device__ __forceinline__ int thread_rank() {
  return threadIdx.x + BX * (threadIdx.y + BY * threadIdx.z);
}

#ifdef NUMBA_TILES_DEBUG
// Whether this thread is the first to report a failed check of this program's code: one message, however many
// threads and blocks fail (the kernel stops at the first failure, so the flag is never reset).
__device__ __forceinline__ bool first_report() {
  static __device__ unsigned reported = 0;
  return atomicExch(&reported, 1u) == 0;
}

// How many of the block's threads arrive here, counted by a barrier.
__device__ __forceinline__ int threads_arriving() {
  int count;
  // CUDA's __syncthreads_count is the .aligned form, which a warp split by the very branch under check must not
  // execute; cuda::ptx has no barrier.red.
  asm volatile("barrier.cta.red.popc.u32 %0, 0, 1;" : "=r"(count) : : "memory");
  return count;
}
#endif

// With NUMBA_TILES_DEBUG=1 (compiled in as the macro NUMBA_TILES_DEBUG), every block-level call
// first checks that the launch's block shape is the block_dim it was compiled for (CUB gives
// wrong results silently otherwise), and that every thread of the block makes the call (a branch
// or an early return that skips it hangs the block or gives garbage).
template <int BX, int BY, int BZ>
__device__ __forceinline__ void check_launch(const char* intrinsic) {
#ifdef NUMBA_TILES_DEBUG
  if (blockDim.x != BX || blockDim.y != BY || blockDim.z != BZ) {
    if (first_thread()) {
      printf("tiles.%s: compiled for block_dim=(%d, %d, %d) but launched with blocks of (%d, %d, %d)\n",
             intrinsic, BX, BY, BZ, blockDim.x, blockDim.y, blockDim.z);
    }
    fail();
  }
  const int arrived = threads_arriving();
  if (arrived != BX * BY * BZ) {
    if (first_report()) {
      printf("tiles.%s: called by %d of the %d threads of block (%d, %d, %d); every thread of the block must make "
             "the call. Fix: call it outside the branch, giving threads without data a neutral value, and return "
             "only after it, not before\n",
             intrinsic, arrived, BX * BY * BZ, blockIdx.x, blockIdx.y, blockIdx.z);
    }
    fail();
  }
#endif
}

// With NUMBA_TILES_DEBUG=1, every warp-level call first checks that all the lanes of its logical warp of Warp
// lanes (those the block has) are there: converged at the call, as CUB's shuffles need them.
template <int Warp>
__device__ __forceinline__ void check_warp(const char* intrinsic) {
#ifdef NUMBA_TILES_DEBUG
  const unsigned lane = ::cuda::ptx::get_sreg_laneid();
  const unsigned threads = block_threads();
  const unsigned first = block_rank() - lane;  // lane 0's
  const unsigned exist = threads - first >= 32 ? 0xffffffffu : (1u << (threads - first)) - 1;
  const unsigned group = (Warp == 32 ? 0xffffffffu : ((1u << Warp) - 1) << (lane / Warp * Warp)) & exist;
  const unsigned here = __activemask() & group;
  if (here != group) {
    if (first_report()) {
      printf("tiles.%s: called by %d of the %d lanes of a logical warp (warp_size=%d) in block (%d, %d, %d); every "
             "lane must make the call. Fix: call it outside the branch, giving lanes without data a neutral value, "
             "and return only after it, not before\n",
             intrinsic, __popc(here), __popc(group), Warp, blockIdx.x, blockIdx.y, blockIdx.z);
    }
    fail();
  }
#endif
}

// The CUB scan method for the flags, on a cub::BlockScan (arrays of items) or a cub::WarpScan
// (one value): both name their methods alike and take the same arguments in the same order.
// An exclusive scan always has an initial value; an inclusive one only when HasInitial.
// `aggregate` is written only when Aggregate.
template <bool Exclusive, bool HasInitial, bool Aggregate, typename Scan, typename In, typename Out, typename T,
          typename Op>
__device__ __forceinline__ void cub_scan(Scan&& scan, In& in, Out& out, T initial, Op op, T& aggregate) {
  if constexpr (Exclusive && Aggregate) {
    scan.ExclusiveScan(in, out, initial, op, aggregate);
  } else if constexpr (Exclusive) {
    scan.ExclusiveScan(in, out, initial, op);
  } else if constexpr (HasInitial && Aggregate) {
    scan.InclusiveScan(in, out, initial, op, aggregate);
  } else if constexpr (HasInitial) {
    scan.InclusiveScan(in, out, initial, op);
  } else if constexpr (Aggregate) {
    scan.InclusiveScan(in, out, op, aggregate);
  } else {
    scan.InclusiveScan(in, out, op);
  }
}

}  // namespace numba_tiles
