"""Watching the programs NVRTC compiles."""

from numba_tiles import _programs


def observed_programs(monkeypatch):
    """The C++ sources and options NVRTC is given (the real NVRTC runs)."""
    seen = []
    real = _programs._nvrtc

    def observe(source, library, target, name, instances, output="ltoir", **how):
        seen.append((source, library.program_options(target, output)))
        return real(source, library, target, name, instances, output, **how)

    monkeypatch.setattr(_programs, "_nvrtc", observe)
    return seen
