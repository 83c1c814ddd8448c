// Flagging where a block's tile changes value, over cub::BlockDiscontinuity (see
// block_reduce.cuh for how these are instantiated). Items are in blocked arrangement: thread t
// holds items t*IPT ... t*IPT+IPT-1 of the tile.
#pragma once

#include <cub/block/block_discontinuity.cuh>

#include "common.cuh"

namespace numba_tiles {

// The shared temp storage (numba_tiles.shared_memory and temp_bytes report its size): one item
// per thread for each direction, whatever IPT is.
template <typename T, int BX, int BY, int BZ>
using block_discontinuity_storage = typename cub::BlockDiscontinuity<T, BX, BY, BZ>::TempStorage;

// Flag the heads and/or tails of runs in the tile; the items are left as they are.
//  - Heads: heads[i] = Op{}(x[i-1], x[i]). Item 0 of the tile is always a head (1), unless
//    HasPredecessor: then its flag is Op{}(predecessor, x[0]).
//  - Tails: tails[i] = Op{}(x[i], x[i+1]). The tile's last item is always a tail (1), unless
//    HasSuccessor: then its flag is Op{}(x[last], successor).
// Op(a, b) is true where a (the earlier item) and b differ, e.g. ::cuda::std::not_equal_to<>.
// (CUB would also pass an op that takes a third int argument the rank of the later item; the
// ops numba_tiles passes take two.) The flags array that a false Heads/Tails leaves out may be
// a dummy: it is never touched. Flag is any integer type or bool: CUB's FlagT is a template
// parameter that it assigns the op's bool (and the literal 1) to, so no conversion is needed.
// `predecessor` matters in thread 0 only, `successor` in the last thread only. `temp`: see
// common.cuh.
template <typename T, typename Flag, typename Op, int BX, int BY, int BZ, int IPT, bool Heads, bool Tails,
          bool HasPredecessor, bool HasSuccessor, typename Temp>
__device__ __forceinline__ void block_discontinuity(array_ref<T> items, array_ref<Flag> heads, array_ref<Flag> tails,
                                                    T predecessor, T successor, Temp temp) {
  static_assert(Heads || Tails, "numba_tiles: block_discontinuity flags heads, tails or both");
  static_assert(Heads || !HasPredecessor, "numba_tiles: a predecessor item only matters for head flags");
  static_assert(Tails || !HasSuccessor, "numba_tiles: a successor item only matters for tail flags");
  check_launch<BX, BY, BZ>("block_discontinuity");
  using Discontinuity = cub::BlockDiscontinuity<T, BX, BY, BZ>;
  auto& storage = storage_of<block_discontinuity_storage<T, BX, BY, BZ>>(temp, "block_discontinuity");
  T (&tile)[IPT] = tile_of<IPT>(items, "block_discontinuity");
  if constexpr (Heads && Tails) {
    Flag (&h)[IPT] = tile_of<IPT>(heads, "block_discontinuity");
    Flag (&t)[IPT] = tile_of<IPT>(tails, "block_discontinuity");
    // CUB tells the four overloads apart by where the edge items sit among the arguments.
    if constexpr (HasPredecessor && HasSuccessor) {
      Discontinuity(storage).FlagHeadsAndTails(h, predecessor, t, successor, tile, Op{});
    } else if constexpr (HasPredecessor) {
      Discontinuity(storage).FlagHeadsAndTails(h, predecessor, t, tile, Op{});
    } else if constexpr (HasSuccessor) {
      Discontinuity(storage).FlagHeadsAndTails(h, t, successor, tile, Op{});
    } else {
      Discontinuity(storage).FlagHeadsAndTails(h, t, tile, Op{});
    }
  } else if constexpr (Heads) {
    Flag (&h)[IPT] = tile_of<IPT>(heads, "block_discontinuity");
    if constexpr (HasPredecessor) {
      Discontinuity(storage).FlagHeads(h, tile, Op{}, predecessor);
    } else {
      Discontinuity(storage).FlagHeads(h, tile, Op{});
    }
  } else {
    Flag (&t)[IPT] = tile_of<IPT>(tails, "block_discontinuity");
    if constexpr (HasSuccessor) {
      Discontinuity(storage).FlagTails(t, tile, Op{}, successor);
    } else {
      Discontinuity(storage).FlagTails(t, tile, Op{});
    }
  }
  __syncthreads();  // the next call that uses this storage must wait for every thread
}

}  // namespace numba_tiles
