"""Reading a cubin (ELF64): its sections, a symbol's bytes, a kernel's static shared memory."""

import struct


def sections(elf):
    """(name, type, file offset, size, link) of each section."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", elf, 0x3A)
    raw = [struct.unpack_from("<IIQQQQI", elf, shoff + i * entsize) for i in range(count)]
    names = raw[names_index][4]

    def name(offset):
        return elf[names + offset:elf.index(b"\0", names + offset)].decode()

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
            if elf[strings + name:elf.index(b"\0", strings + name)] == wanted.encode():
                start = table[index][2] + value
                return elf[start:start + size]
    raise LookupError(wanted)


def static_shared(cubin, cc):
    """Static shared memory of the kernel in a cubin, as the driver reports it (``sharedSizeBytes``).

    The ELF ``.nv.shared.<kernel>`` section also holds, on sm_80 and newer, the 1 KiB per block
    the system reserves, which the driver leaves out of the kernel's figure.
    """
    size = sum(size for name, _, _, size, _ in sections(cubin)
               if name.startswith(".nv.shared.") and not name.startswith(".nv.shared.reserved"))
    return max(size - 1024, 0) if cc >= (8, 0) else size
