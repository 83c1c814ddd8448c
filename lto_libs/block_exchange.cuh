// Rearranging a block's tile between blocked, striped and warp-striped arrangements, over
// cub::BlockExchange (see block_reduce.cuh for how these are instantiated).
#pragma once

#include <cub/block/block_exchange.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage (numba_tiles.shared_memory and temp_bytes report its size).
template <typename T, int BX, int BY, int BZ, int IPT>
using block_exchange_storage = typename cub::BlockExchange<T, BX, IPT, false, BY, BZ>::TempStorage;

enum class exchange { striped_to_blocked, blocked_to_striped, warp_striped_to_blocked, blocked_to_warp_striped };

// Rearrange the tile held in `items` (IPT per thread), in place. `temp`: see common.cuh.
template <typename T, int BX, int BY, int BZ, int IPT, exchange Kind, typename Temp>
__device__ __forceinline__ void block_exchange(array_ref<T> items, Temp temp) {
  check_launch<BX, BY, BZ>("block_exchange");
  using Exchange = cub::BlockExchange<T, BX, IPT, false, BY, BZ>;
  auto& storage = storage_of<block_exchange_storage<T, BX, BY, BZ, IPT>>(temp, "block_exchange");
  T (&tile)[IPT] = tile_of<IPT>(items, "block_exchange");
  if constexpr (Kind == exchange::striped_to_blocked) {
    Exchange(storage).StripedToBlocked(tile, tile);
  } else if constexpr (Kind == exchange::blocked_to_striped) {
    Exchange(storage).BlockedToStriped(tile, tile);
  } else if constexpr (Kind == exchange::warp_striped_to_blocked) {
    Exchange(storage).WarpStripedToBlocked(tile, tile);
  } else {
    Exchange(storage).BlockedToWarpStriped(tile, tile);
  }
  __syncthreads();  // the next call that uses this storage must wait for every thread
}

}  // namespace numba_tiles
