// Block FFTs over cuFFTDx (MathDx), instantiated by numba_tiles for tiles.FFT.execute.
//
// Each thread holds its items of one FFT of the block (threadIdx.y picks the FFT) in cuFFTDx's register
// layout: item i of thread x holds element x + i * Stride (fft_layout.cuh says where the real side's values
// are). numba_tiles computed the description's sizes on the host from cuFFTDx's database
// (numba_tiles/_fft/database.py); each is checked here against cuFFTDx's own trait, so that the two can never
// disagree silently.
#pragma once

#include <cufftdx.hpp>

#include "common.cuh"

namespace numba_tiles {

// Kind: 0 c2c, 1 r2c, 2 c2r. P is the precision (float or double). SM is the arch NVRTC compiles for, so
// that the instance's C++ text (and its symbol) is one for every arch; the cache key holds the arch.
template <int Size, typename P, int Kind, bool Forward, int EPT, int FPB>
using block_fft_unfolded = decltype(cufftdx::Size<Size>() + cufftdx::Precision<P>() +
                                    cufftdx::Type<Kind == 0   ? cufftdx::fft_type::c2c
                                                  : Kind == 1 ? cufftdx::fft_type::r2c
                                                              : cufftdx::fft_type::c2r>() +
                                    cufftdx::Direction<Forward ? cufftdx::fft_direction::forward
                                                               : cufftdx::fft_direction::inverse>() +
                                    cufftdx::ElementsPerThread<EPT>() + cufftdx::FFTsPerBlock<FPB>() +
                                    cufftdx::SM<__CUDA_ARCH__>() + cufftdx::Block());

// Folded (an r2c or c2r of a power-of-two size): cuFFTDx runs it as a c2c FFT of half its size, its real values
// taken in pairs, the complex side in the natural layout (size / 2 + 1 values, as unfolded).
template <typename Description, bool Folded>
struct folded_if {
  using type = Description;
};
template <typename Description>
struct folded_if<Description, true> {
  using type = decltype(Description() + cufftdx::RealFFTOptions<cufftdx::complex_layout::natural,
                                                                 cufftdx::real_mode::folded>());
};

template <int Size, typename P, int Kind, bool Folded, bool Forward, int EPT, int FPB>
using block_fft = typename folded_if<block_fft_unfolded<Size, P, Kind, Forward, EPT, FPB>, Folded>::type;

// The block's shared workspace when the call is given none: a static buffer of its own, aligned for any value.
template <int Bytes>
struct alignas(16) fft_workspace {
  unsigned char bytes[Bytes > 0 ? Bytes : 1];
};

// The FFT's shared memory: own_storage (the call was given none), or the user's buffer (shared=), which
// cuFFTDx reads as values of V: as many bytes as the FFT needs, aligned to V (for a cuda.shared.array of
// constant size and alignment these checks fold away).
template <int SharedBytes, typename V, typename Shared>
__device__ __forceinline__ void* fft_shared(Shared shared, const char* intrinsic) {
  if constexpr (::cuda::std::is_same_v<Shared, own_storage>) {
    return &storage_of<fft_workspace<SharedBytes>>(shared, intrinsic);
  } else {
    const long long bytes = shared.size * static_cast<long long>(sizeof(*shared.data));
    const unsigned long long misaligned = reinterpret_cast<unsigned long long>(shared.data) % alignof(V);
    if (bytes < SharedBytes || (shared.stride != 1 && shared.size > 1) || misaligned != 0) {
      if (first_thread()) {
        printf("tiles.%s: shared holds %lld bytes (stride %lld items), %saligned to %d bytes; this FFT needs %d "
               "contiguous bytes so aligned (cuda.shared.array(fft.shared_memory_bytes, uint8, alignment=16))\n",
               intrinsic, bytes, shared.stride, misaligned ? "not " : "", static_cast<int>(alignof(V)), SharedBytes);
      }
      fail();
    }
    return static_cast<void*>(shared.data);
  }
}

// The FFT, in place on each thread's `items` (complex values of P: numba's complex64/128 arrive as
// ::cuda::std::complex, the same two values as cuFFTDx's complex), in `shared` (the user's buffer, or
// own_storage). cuFFTDx's execute ends with the block's data back in registers, and synchronizes the
// block around its own shared steps.
template <int Size, typename P, int Kind, bool Folded, bool Forward, int EPT, int FPB, int Stride, int Storage,
          int SharedBytes, typename T, typename Shared>
__device__ __forceinline__ void fft_execute(array_ref<T> items, Shared shared) {
  using FFT = block_fft<Size, P, Kind, Folded, Forward, EPT, FPB>;
  using V = typename FFT::value_type;
  static_assert(sizeof(T) == sizeof(V) && alignof(T) <= alignof(V), "items must hold cuFFTDx's complex values");
  static_assert(!FFT::requires_workspace, "numba_tiles describes only FFTs that need no workspace");
  static_assert(FFT::elements_per_thread == EPT, "tiles.FFT's elements_per_thread is not cuFFTDx's");
  static_assert(FFT::ffts_per_block == FPB, "tiles.FFT's ffts_per_block is not cuFFTDx's");
  static_assert(FFT::stride == Stride && FFT::block_dim.x == Stride && FFT::block_dim.y == FPB &&
                    FFT::block_dim.z == 1,
                "tiles.FFT's block_dim is not cuFFTDx's");
  static_assert(FFT::storage_size == Storage, "tiles.FFT's storage_size is not cuFFTDx's");
  static_assert(FFT::shared_memory_size == SharedBytes, "tiles.FFT's shared_memory_bytes is not cuFFTDx's");
  check_launch<Stride, FPB, 1>("FFT.execute");
  if (items.size < Storage || items.stride != 1) {  // (a cuda.local.array's size is a constant: this folds away)
    if (first_thread()) {
      printf("tiles.FFT.execute: items has %lld items (stride %lld); this FFT needs %d contiguous ones "
             "(fft.storage_size)\n",
             items.size, items.stride, Storage);
    }
    fail();
  }
  FFT().execute(reinterpret_cast<V*>(items.data), fft_shared<SharedBytes, V>(shared, "FFT.execute"));
}

}  // namespace numba_tiles
