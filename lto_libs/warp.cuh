// Warp-level cooperative primitives over CUB, instantiated by numba_tiles (see block.cuh).
#pragma once

#include <cub/warp/warp_reduce.cuh>

#include "ops.cuh"

namespace numba_tiles {

// Reduce one value per lane over each logical warp of Warp lanes; the result is valid in the
// logical warp's lane 0 (as in CUB). Warp is a power of two, so CUB takes its shuffle
// specialization, which needs no shared memory. With Partial, lanes from num_valid on
// contribute the op's identity (the full-warp path: REDUX for 32-bit integers on sm_80+).
template <typename T, typename Op, int Warp, bool Partial>
__device__ __forceinline__ T warp_reduce(T value, int num_valid) {
  using Reduce = cub::WarpReduce<T, Warp>;
  typename Reduce::TempStorage temp;  // an empty placeholder for the shuffle specialization
  if (Partial && static_cast<int>(::cuda::ptx::get_sreg_laneid() % Warp) >= num_valid) {
    value = identity<Op, T>::value;
  }
  return Reduce(temp).Reduce(value, Op{});
}

}  // namespace numba_tiles
