// Block-level cooperative primitives over CUB, instantiated by numba_tiles.
//
// numba_tiles renders, per instantiation, a one-line `extern "C" __device__` entry point that
// calls one of these templates; NVRTC turns it into LTO-IR and nvJitLink inlines it into the
// Numba kernel. Keep these thin: the algorithms are CUB's.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>

namespace numba_tiles {

// The value of a reduction over no items: the op's identity. The ops are CCCL's transparent
// functors (plus<>, not plus<T>): CUB selects REDUX and other fast paths only for those.
template <typename Op, typename T>
struct identity;
template <typename T>
struct identity<::cuda::std::plus<>, T> { static constexpr T value = T(0); };
template <typename T>
struct identity<::cuda::std::multiplies<>, T> { static constexpr T value = T(1); };
template <typename T>
struct identity<::cuda::minimum<>, T> {
  static constexpr T value = ::cuda::std::numeric_limits<T>::has_infinity
                               ? ::cuda::std::numeric_limits<T>::infinity()
                               : ::cuda::std::numeric_limits<T>::max();
};
template <typename T>
struct identity<::cuda::maximum<>, T> {
  static constexpr T value = ::cuda::std::numeric_limits<T>::has_infinity
                               ? -::cuda::std::numeric_limits<T>::infinity()
                               : ::cuda::std::numeric_limits<T>::lowest();
};
template <typename T>
struct identity<::cuda::std::bit_and<>, T> { static constexpr T value = static_cast<T>(~T(0)); };
template <typename T>
struct identity<::cuda::std::bit_or<>, T> { static constexpr T value = T(0); };
template <typename T>
struct identity<::cuda::std::bit_xor<>, T> { static constexpr T value = T(0); };

// Reduce one value per thread over the block; the result is valid in thread 0 (as in CUB).
// With Partial, only the first num_valid threads (in linear order) contribute: the others
// contribute the op's identity, so the whole block takes CUB's full-tile path (full-mask
// shuffles, REDUX where CUB uses it) instead of the bounds-checked partial one, whose
// variable-mask shuffles compile to a called helper. num_valid <= 0 gives the identity.
template <typename T, typename Op, int BX, int BY, int BZ, bool Partial>
__device__ __forceinline__ T block_reduce(T value, int num_valid) {
  using Reduce = cub::BlockReduce<T, BX, cub::BLOCK_REDUCE_WARP_REDUCTIONS, BY, BZ>;
  // One buffer per instantiation, shared by all its call sites in a kernel.
  __shared__ typename Reduce::TempStorage temp;
  if (Partial && cub::RowMajorTid(BX, BY, BZ) >= num_valid) {
    value = identity<Op, T>::value;
  }
  T result = Reduce(temp).Reduce(value, Op{});
  // The next call of this instantiation reuses `temp`: CUB requires a barrier in between.
  __syncthreads();
  return result;
}

}  // namespace numba_tiles
