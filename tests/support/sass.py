"""Reading compiled kernels: their SASS (nvdisasm), its instructions, external calls and registers."""

import subprocess

from cuda.pathfinder import find_nvidia_binary_utility


def sass(cubin, tmp_path):
    nvdisasm = find_nvidia_binary_utility("nvdisasm")
    assert nvdisasm, "nvdisasm not found: pip install nvidia-cuda-nvdisasm (part of .[test])"
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    return subprocess.run([nvdisasm, "-c", str(path)], check=True, capture_output=True, text=True).stdout


def external_calls(text):
    """CALLs to anything but ptxas's own code: its helper routines (``$__internal_...``: shuffles
    or votes under a lane mask it cannot prove uniform, which CUB issues in some warp-level
    paths) and subroutines it outlines within the kernel itself (local ``.L_x_`` labels)."""
    return [
        line for line in text.splitlines() if " CALL" in line and "$__internal_" not in line and "`(.L_x_" not in line
    ]


def instructions(text):
    return [line.split(";")[0].split("*/", 1)[-1].split() for line in text.splitlines() if "/*" in line and ";" in line]


def opcode_names(code):
    return {op.split(".")[0] for op in (i[1] if i[0].startswith("@") else i[0] for i in instructions(code) if i)}


def registers(cubin):
    """Registers per thread of the cubin's kernel: its ``EIATTR_REGCOUNT`` (0x2f) in ``.nv.info``."""
    from numba_tiles._elf import sections

    for name, _, offset, size, _ in sections(cubin):
        at = offset
        while name == ".nv.info" and at < offset + size:
            form, attribute = cubin[at], cubin[at + 1]
            if form in (1, 2):  # no value / a 2-byte value
                at += 2 * form
                continue
            length = int.from_bytes(cubin[at + 2 : at + 4], "little")
            if attribute == 0x2F:
                return int.from_bytes(cubin[at + 8 : at + 12], "little")
            at += 4 + length
    raise LookupError("no register count in the cubin")
