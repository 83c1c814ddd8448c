// Block-level cooperative primitives over CUB, instantiated by numba_tiles.
//
// numba_tiles renders, per instantiation, a one-line `extern "C" __device__` entry point that
// calls one of these templates; NVRTC turns it into LTO-IR and nvJitLink inlines it into the
// Numba kernel. Keep these thin: the algorithms are CUB's.
#pragma once

#include <cub/block/block_reduce.cuh>

#include "ops.cuh"

namespace numba_tiles {

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
