// Block FFTs over cuFFTDx (MathDx), instantiated by numba_tiles for tiles.FFT.execute.
//
// Each thread holds its items of one FFT of the block (threadIdx.y picks the FFT) in cuFFTDx's register
// layout: item i of thread x holds element x + i * Stride. numba_tiles computed the description's sizes on
// the host from cuFFTDx's database (numba_tiles/_fft/database.py); each is checked here against cuFFTDx's
// own trait, so that the two can never disagree silently.
#pragma once

#include <cufftdx.hpp>

#include "common.cuh"

namespace numba_tiles {

// Kind: 0 c2c, 1 r2c, 2 c2r. P is the precision (float or double). SM is the arch NVRTC compiles for, so
// that the instance's C++ text (and its symbol) is one for every arch; the cache key holds the arch.
template <int Size, typename P, int Kind, bool Forward, int EPT, int FPB>
using block_fft = decltype(cufftdx::Size<Size>() + cufftdx::Precision<P>() +
                           cufftdx::Type<Kind == 0   ? cufftdx::fft_type::c2c
                                         : Kind == 1 ? cufftdx::fft_type::r2c
                                                     : cufftdx::fft_type::c2r>() +
                           cufftdx::Direction<Forward ? cufftdx::fft_direction::forward
                                                      : cufftdx::fft_direction::inverse>() +
                           cufftdx::ElementsPerThread<EPT>() + cufftdx::FFTsPerBlock<FPB>() +
                           cufftdx::SM<__CUDA_ARCH__>() + cufftdx::Block());

// The FFT, in place on each thread's `items` (complex values of P: numba's complex64/128 arrive as
// ::cuda::std::complex, the same two values as cuFFTDx's complex), with `shared` as its workspace. cuFFTDx's
// execute ends with the block's data back in registers; it synchronizes the block around its shared steps.
template <int Size, typename P, int Kind, bool Forward, int EPT, int FPB, int Stride, int Storage, int SharedBytes,
          typename T, typename TS>
__device__ __forceinline__ void fft_execute(array_ref<T> items, array_ref<TS> shared) {
  using FFT = block_fft<Size, P, Kind, Forward, EPT, FPB>;
  using V = typename FFT::value_type;
  static_assert(sizeof(T) == sizeof(V) && alignof(T) == alignof(V), "items must hold cuFFTDx's complex values");
  static_assert(!FFT::requires_workspace, "numba_tiles describes only FFTs that need no workspace");
  static_assert(FFT::elements_per_thread == EPT, "tiles.FFT's elements_per_thread is not cuFFTDx's");
  static_assert(FFT::ffts_per_block == FPB, "tiles.FFT's ffts_per_block is not cuFFTDx's");
  static_assert(FFT::stride == Stride && FFT::block_dim.x == Stride && FFT::block_dim.y == FPB &&
                    FFT::block_dim.z == 1,
                "tiles.FFT's block_dim is not cuFFTDx's");
  static_assert(FFT::storage_size == Storage, "tiles.FFT's storage_size is not cuFFTDx's");
  static_assert(FFT::shared_memory_size == SharedBytes, "tiles.FFT's shared_memory_bytes is not cuFFTDx's");
  check_launch<Stride, FPB, 1>("FFT.execute");
  // (a static array's sizes are constants: these checks fold away for cuda.local and cuda.shared arrays)
  if (items.size < Storage || items.stride != 1 ||
      static_cast<unsigned long long>(shared.size) * sizeof(TS) < static_cast<unsigned long long>(SharedBytes) ||
      (SharedBytes > 0 && shared.stride != 1)) {
    if (first_thread()) {
      printf("tiles.FFT.execute: items has %lld items (stride %lld) and shared %lld bytes; this FFT needs "
             "%d contiguous items and %d contiguous bytes\n",
             items.size, items.stride, shared.size * static_cast<long long>(sizeof(TS)), Storage, SharedBytes);
    }
    fail();
  }
#ifdef NUMBA_TILES_DEBUG
  if (reinterpret_cast<unsigned long long>(shared.data) % alignof(V) != 0) {
    if (first_thread()) {
      printf("tiles.FFT.execute: shared is not aligned to %d bytes; allocate it with alignment=16\n",
             static_cast<int>(alignof(V)));
    }
    fail();
  }
#endif
  FFT().execute(reinterpret_cast<V*>(items.data), static_cast<void*>(shared.data));
}

}  // namespace numba_tiles
