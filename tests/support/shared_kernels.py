"""Kernels of each kind of shared-memory use a collective makes, for the shared-memory tests on the CPU and the GPU."""

import numba_tiles as tiles

COLLECTIVES = ["load", "radix_sort", "merge_sort", "scan", "exchange", "reduce", "two_reductions", "temp"]


def one_collective(which):
    """A kernel of one kind of shared-memory use, and the bytes of its own shared arrays."""
    from numba import cuda, float32, uint8

    # "temp" and "separate": three collectives, sharing one buffer of the largest size they need or not
    need = (
        max(
            tiles.temp_bytes(
                tiles.block_load, float32[::1], float32[::1], block_dim=256, items_per_thread=4, algorithm="transpose"
            ),
            tiles.temp_bytes(tiles.block_radix_sort, float32[::1], block_dim=256, items_per_thread=4),
            tiles.temp_bytes(
                tiles.block_exchange, float32[::1], "blocked_to_striped", block_dim=256, items_per_thread=4
            ),
        )
        if which == "temp"
        else 1
    )

    @cuda.jit
    def kernel(x, out):
        i = cuda.grid(1)
        items = cuda.local.array(4, float32)
        for j in range(4):
            items[j] = x[i * 4 + j]
        if which == "load":  # (a direct store needs no storage: CUB's 1-byte placeholder is not a buffer)
            tiles.block_load(
                x[cuda.blockIdx.x * 1024 :], items, block_dim=256, items_per_thread=4, algorithm="warp_transpose"
            )
            tiles.block_store(out[cuda.blockIdx.x * 1024 :], items, block_dim=256, items_per_thread=4)
        elif which == "radix_sort":
            tiles.block_radix_sort(items, block_dim=256, items_per_thread=4, values=items)
        elif which == "merge_sort":
            tiles.block_merge_sort(items, ">", block_dim=(16, 16), items_per_thread=4)
        elif which == "scan":
            items[0] = tiles.block_scan(x[i], block_dim=(8, 8, 4), algorithm="warp_scans")
        elif which == "exchange":
            tiles.block_exchange(items, "blocked_to_striped", block_dim=256, items_per_thread=4)
        elif which == "reduce":
            items[0] = tiles.block_reduce(items, "max", block_dim=256, items_per_thread=4, broadcast=True)
        elif which == "two_reductions":  # one storage type: one buffer for both
            items[0] = tiles.block_sum(items, block_dim=256, items_per_thread=4)
            items[1] = tiles.block_reduce(x[i], "max", block_dim=256)
        elif which == "temp":
            temp = cuda.shared.array(need, uint8)
            tiles.block_load(
                x[cuda.blockIdx.x * 1024 :], items, block_dim=256, items_per_thread=4, algorithm="transpose", temp=temp
            )
            tiles.block_radix_sort(items, block_dim=256, items_per_thread=4, temp=temp)
            tiles.block_exchange(items, "blocked_to_striped", block_dim=256, items_per_thread=4, temp=temp)
        elif which == "separate":
            tiles.block_load(
                x[cuda.blockIdx.x * 1024 :], items, block_dim=256, items_per_thread=4, algorithm="transpose"
            )
            tiles.block_radix_sort(items, block_dim=256, items_per_thread=4)
            tiles.block_exchange(items, "blocked_to_striped", block_dim=256, items_per_thread=4)
        out[i] = items[0]

    return kernel, need if which == "temp" else 0
