"""Shared memory, with no GPU: what a kernel and its intrinsics' storages take, and what a ``temp`` needs."""

from . import _backends, _compile, _elf, _programs
from ._backends import simulated
from ._errors import error


def shared_memory(kernel, signature, *, arch="sm_90"):
    """The static shared memory of a kernel and of each intrinsic storage in it, in bytes: no GPU needed.

    Returns ``{"total": bytes, "buffers": {description: bytes}}``. ``total`` is what the linked
    kernel declares (your ``cuda.shared.array``\\ s included), the number occupancy depends on:
    the driver's ``sharedSizeBytes`` (numba's ``kernel.get_shared_mem_per_block()``); on sm_80
    and newer the system reserves 1 KiB per block on top of it. ``buffers`` has one entry per
    static buffer the intrinsics declare: one per C++ storage type (CUB's temp storage), which
    all the calls that need that type share, described by those intrinsics and the type. Calls
    given ``temp=`` declare none.

    Example::

        from numba import cuda
        import numba_tiles as tiles

        @cuda.jit
        def scan_rows(x, out):
            i = cuda.grid(1)
            out[i] = tiles.block_scan(x[i], block_dim=256, algorithm="warp_scans")

        usage = tiles.shared_memory(scan_rows, "void(float32[::1], float32[::1])", arch="sm_90")
        assert usage["total"] >= sum(usage["buffers"].values())
    """
    _compile.refuse_simulator(
        "shared_memory", "nothing, so there is no linked kernel to measure", "measure the compiled kernel"
    )
    with _programs.recording() as lowered:
        cubin = _compile.compile(kernel, signature, arch=arch)
    users, headers = {}, {}
    for i, _ in lowered:
        if i.static_storage:
            users.setdefault(i.static_storage, {})[f"tiles.{i.intrinsic}"] = None
            headers[i.static_storage] = i.header
    sizes = {storage: _programs.constant(f"sizeof({storage})", headers[storage], arch) for storage in users}
    # CUB's storage for the algorithms that need none (direct loads, ...) is a 1-byte
    # placeholder, never touched, which the compiler removes.
    buffers = {
        f"{', '.join(names)}: {storage}": sizes[storage] for storage, names in users.items() if sizes[storage] > 1
    }
    return {"total": _elf.static_shared(cubin), "buffers": buffers}


def temp_bytes(intrinsic, *args, arch="sm_90", **kwargs):
    """The bytes of ``temp`` that a call of ``intrinsic`` with these arguments needs: no GPU needed.

    Pass the call's arguments, with Numba types (or sample values) for the run-time ones, and no
    ``temp``. Several calls in a row may share one buffer of the largest of their sizes: each
    call ends with a barrier. The size includes room to align the storage in any buffer, so
    ``cuda.shared.array(n, uint8)`` of this ``n`` always fits; a smaller ``temp`` stops the
    kernel with a message (``tiles.<intrinsic>: temp holds ... bytes``).

    Example::

        from numba import cuda, float32, uint8
        import numba_tiles as tiles

        items = float32[::1]   # the thread-local array's type
        TEMP = max(tiles.temp_bytes(tiles.block_load, float32[::1], items, block_dim=128,
                                    items_per_thread=4, algorithm="transpose"),
                   tiles.temp_bytes(tiles.block_scan, items, block_dim=128, items_per_thread=4))

        @cuda.jit
        def scan_tiles(x, out):
            temp = cuda.shared.array(TEMP, uint8)   # one buffer for both calls
            tile = cuda.local.array(4, float32)
            start = cuda.blockIdx.x * 512
            tiles.block_load(x[start:], tile, block_dim=128, items_per_thread=4, algorithm="transpose", temp=temp)
            tiles.block_scan(tile, block_dim=128, items_per_thread=4, temp=temp)
            tiles.block_store(out[start:], tile, block_dim=128, items_per_thread=4)
    """
    spec = getattr(intrinsic, "spec", None)
    if spec is None or "temp" not in spec.pysig.parameters:
        raise error(
            "temp_bytes",
            f"{getattr(intrinsic, '__name__', intrinsic)!r} takes no temp storage",
            "pass a block intrinsic, e.g. tiles.temp_bytes(tiles.block_scan, float32, block_dim=128)",
        )
    if kwargs.get("temp") is not None:
        raise error("temp_bytes", "the arguments include temp", "leave temp out: temp_bytes gives its size")
    instance, _ = spec.resolve_values(*args, **kwargs)
    return storage_need(instance, arch)


def storage_need(instance, arch="sm_90"):
    """The bytes a ``temp`` buffer needs to hold ``instance``'s storage wherever it lies (see common.cuh)."""
    return _programs.constant(f"sizeof({instance.storage}) + alignof({instance.storage}) - 1", instance.header, arch)


def allow_dynamic_shared_memory(kernel, nbytes, *args):
    """Let ``kernel``'s launches with ``args`` take ``nbytes`` of dynamic shared memory, over the 48 KiB
    CUDA allows by default (up to the GPU's opt-in limit: 227 KiB on Hopper, 163 on A100).

    The kernel is compiled for ``args`` first if it was not (a launch with other argument types
    compiles another kernel, which needs its own call). Launch it with ``nbytes`` as the
    launch's fourth value, ``kernel[grid, block, stream, nbytes](*args)``; inside, the memory is
    ``cuda.shared.array(0, dtype)``, of which each dtype's array sees the same bytes. Returns
    ``nbytes``. On Numba's simulator there is no limit to lift, and numba-cuda-mlir's launches lift it
    themselves: for those it only returns ``nbytes``.

    Example::

        import numpy as np
        from numba import cuda, float32
        import numba_tiles as tiles

        @cuda.jit
        def reverse_rows(x, out):
            row = cuda.shared.array(0, float32)     # x.shape[1] items, dynamic
            r, t = cuda.blockIdx.x, cuda.threadIdx.x
            for j in range(t, x.shape[1], cuda.blockDim.x):
                row[j] = x[r, j]
            cuda.syncthreads()
            for j in range(t, x.shape[1], cuda.blockDim.x):
                out[r, j] = row[x.shape[1] - 1 - j]

        cubin = tiles.compile(reverse_rows, "void(float32[:, ::1], float32[:, ::1])")   # no GPU needed
        if cuda.is_available():
            x = cuda.to_device(np.random.rand(4, 20000).astype(np.float32))   # 80,000 bytes a row
            out = cuda.device_array_like(x)
            nbytes = tiles.allow_dynamic_shared_memory(reverse_rows, 20000 * 4, x, out)
            reverse_rows[4, 256, 0, nbytes](x, out)
            assert (out.copy_to_host() == x.copy_to_host()[:, ::-1]).all()
    """
    if not isinstance(nbytes, int) or nbytes < 0:
        raise error(
            "allow_dynamic_shared_memory",
            f"nbytes must be a non-negative int, got {nbytes!r}",
            "pass the bytes the launch will ask for, e.g. 96 * 1024",
        )
    if simulated.simulator_enabled():
        return nbytes
    limit = _backends.of_kernel(kernel).allow_dynamic_shared_memory(kernel, nbytes, args)
    if nbytes > limit:
        raise error(
            "allow_dynamic_shared_memory",
            f"{nbytes} bytes are over this GPU's {limit} bytes of shared memory a block may opt in to",
            "use smaller tiles, fewer pipeline stages or fewer buffers",
        )
    return nbytes
