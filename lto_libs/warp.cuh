// Warp-level cooperative primitives over CUB, instantiated by numba_tiles (see block_reduce.cuh).
#pragma once

#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>

#include "common.cuh"

namespace numba_tiles {

// With Partial, the lanes of each logical warp from num_valid on contribute the op's identity
// (which numba_tiles passes).
template <int Warp, bool Partial, typename T>
__device__ __forceinline__ T valid_or_identity(T value, int num_valid, T identity) {
  if constexpr (Partial) {
    if (static_cast<int>(::cuda::ptx::get_sreg_laneid() % Warp) >= num_valid) {
      return identity;
    }
  }
  return value;
}

// Reduce one value per lane over each logical warp of Warp lanes; the result is valid in the
// logical warp's lane 0 (as in CUB). Warp is a power of two, so CUB takes its shuffle
// specialization, which needs no shared memory. With Partial, lanes from num_valid on
// contribute the op's identity (the full-warp path: REDUX for 32-bit integers on sm_80+).
template <typename T, typename Op, int Warp, bool Partial>
__device__ __forceinline__ T warp_reduce(T value, int num_valid, T identity) {
  check_warp<Warp>("warp_reduce");
  using Reduce = cub::WarpReduce<T, Warp>;
  typename Reduce::TempStorage temp;  // an empty placeholder for the shuffle specialization
  return Reduce(temp).Reduce(valid_or_identity<Warp, Partial>(value, num_valid, identity), Op{});
}

// Scan one value per lane over each logical warp of Warp lanes (shuffles, no shared memory).
// An exclusive scan seeds with `initial` (the op's identity unless the user gives one), so
// that lane 0 is defined too; an inclusive one with it only when HasInitial. Returns the
// lane's scanned value, or (that, the logical warp's aggregate) when Aggregate. With Partial,
// lanes from num_valid on count as the identity (their outputs repeat the last valid prefix).
template <typename T, typename Op, int Warp, bool Exclusive, bool HasInitial, bool Aggregate, bool Partial>
__device__ __forceinline__ auto warp_scan(T value, T initial, int num_valid, T identity) {
  check_warp<Warp>("warp_scan");
  using Scan = cub::WarpScan<T, Warp>;
  typename Scan::TempStorage temp;  // an empty placeholder for the shuffle specialization
  value = valid_or_identity<Warp, Partial>(value, num_valid, identity);
  T out, aggregate;
  cub_scan<Exclusive, HasInitial, Aggregate>(Scan(temp), value, out, initial, Op{}, aggregate);
  if constexpr (Aggregate) {
    return ::cuda::std::tuple<T, T>{out, aggregate};
  } else {
    return out;
  }
}

}  // namespace numba_tiles
