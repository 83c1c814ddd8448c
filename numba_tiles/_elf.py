"""Reading a cubin (ELF64): its sections, a symbol's bytes, a kernel's static shared memory."""

import struct


def sections(elf):
    """(name, type, file offset, size, link) of each section."""
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", elf, 0x3A)
    raw = [struct.unpack_from("<IIQQQQI", elf, shoff + i * entsize) for i in range(count)]
    names = raw[names_index][4]

    def name(offset):
        return elf[names + offset : elf.index(b"\0", names + offset)].decode()

    return [(name(r[0]), r[1], r[4], r[5], r[6]) for r in raw]


def symbol_bytes(elf, wanted, size):
    """The first ``size`` bytes of the initialized global named ``wanted``."""
    table = sections(elf)
    for _, kind, offset, length, link in table:
        if kind != 2:  # SHT_SYMTAB
            continue
        strings = table[link][2]
        for at in range(offset, offset + length, 24):
            name, _, _, index, value, _ = struct.unpack_from("<IBBHQQ", elf, at)
            if elf[strings + name : elf.index(b"\0", strings + name)] == wanted.encode():
                start = table[index][2] + value
                return elf[start : start + size]
    raise LookupError(wanted)


def static_shared(cubin):
    """Static shared memory of the kernel in a cubin, as the driver reports it (``sharedSizeBytes``).

    Where the cubin has a ``.nv.shared.reserved`` section (sm_90 and newer: the space the system
    reserves), the kernel's ``.nv.shared.<kernel>`` section also holds that 1 KiB per block, which
    the driver leaves out of the kernel's figure. sm_80 to sm_89 cubins have neither (the driver
    reserves their 1 KiB on its own).
    """
    found = sections(cubin)
    size = sum(
        size
        for name, _, _, size, _ in found
        # (not the file-static kernels of a library linked in: CUDA's device runtime, for a grid's sync)
        if name.startswith(".nv.shared.") and not name.startswith((".nv.shared.reserved", ".nv.shared.__nv_static_"))
    )
    reserved = any(name.startswith(".nv.shared.reserved") for name, *_ in found)
    return max(size - 1024, 0) if reserved else size
