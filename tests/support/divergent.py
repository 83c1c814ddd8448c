"""Kernels whose collectives only some threads call (a branch, an early return, part of a logical warp), and one
whose every thread calls: what the simulator and NUMBA_TILES_DEBUG=1 must catch, and let pass."""

import numpy as np
from numba import cuda

import numba_tiles as tiles


@cuda.jit
def half_of_the_block(x, out):
    v = x[cuda.grid(1)]
    if cuda.threadIdx.x < 64:
        s = tiles.block_sum(v, block_dim=128)
        if cuda.threadIdx.x == 0:
            out[cuda.blockIdx.x] = s


@cuda.jit
def early_return(x, out):
    i = cuda.grid(1)
    if i >= x.size:
        return
    s = tiles.block_sum(x[i], block_dim=128)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s


@cuda.jit
def other_collective(x, out):
    v = x[cuda.grid(1)]
    if cuda.threadIdx.x < 32:
        s = tiles.block_sum(v, block_dim=128)
    else:
        s = tiles.block_reduce(v, "max", block_dim=128)
    out[cuda.grid(1)] = s


@cuda.jit
def partial_warp(x, out):
    i = cuda.grid(1)
    if cuda.threadIdx.x % 16 < 12:
        out[i] = tiles.warp_sum(x[i], warp_size=16)


@cuda.jit
def warp_call_against_a_barrier(x, out):
    i = cuda.grid(1)
    v = x[i]
    if cuda.threadIdx.x % 32 < 20:
        v = tiles.warp_sum(v)
    cuda.syncthreads()  # (the other 12 lanes of each warp wait here)
    out[i] = v


@cuda.jit
def whole_block_and_warps(x, out, lanes):
    i = cuda.grid(1)
    v = x[i] if i < x.size else np.float32(0)  # threads past the end give the sum's neutral value
    s = tiles.block_sum(v, block_dim=128)
    w = tiles.warp_sum(v, warp_size=8)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = s
    if cuda.threadIdx.x % 8 == 0:
        lanes[i // 8] = w
