// Rearranging a block's tile between blocked, striped and warp-striped arrangements, over
// cub::BlockExchange (see block_reduce.cuh for how these are instantiated).
#pragma once

#include <cub/block/block_exchange.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared memory of one instantiation (numba_tiles.shared_memory reports its size).
template <typename T, int BX, int BY, int BZ, int IPT>
using block_exchange_storage = typename cub::BlockExchange<T, BX, IPT, false, BY, BZ>::TempStorage;

enum class exchange { striped_to_blocked, blocked_to_striped, warp_striped_to_blocked, blocked_to_warp_striped };

// Rearrange the tile held in `items` (IPT per thread), in place.
template <typename T, int BX, int BY, int BZ, int IPT, exchange Kind>
__device__ __forceinline__ void block_exchange(array_ref<T> items) {
  check_launch<BX, BY, BZ>("block_exchange");
  using Exchange = cub::BlockExchange<T, BX, IPT, false, BY, BZ>;
  __shared__ block_exchange_storage<T, BX, BY, BZ, IPT> temp;
  T (&tile)[IPT] = tile_of<IPT>(items, "block_exchange");
  if constexpr (Kind == exchange::striped_to_blocked) {
    Exchange(temp).StripedToBlocked(tile, tile);
  } else if constexpr (Kind == exchange::blocked_to_striped) {
    Exchange(temp).BlockedToStriped(tile, tile);
  } else if constexpr (Kind == exchange::warp_striped_to_blocked) {
    Exchange(temp).WarpStripedToBlocked(tile, tile);
  } else {
    Exchange(temp).BlockedToWarpStriped(tile, tile);
  }
  __syncthreads();  // the next call of this instantiation reuses `temp`
}

}  // namespace numba_tiles
