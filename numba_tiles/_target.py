"""What a build is for: the one description of everything outside the C++ text that changes the code.

A `Target` is made once where a build starts (lowering one intrinsic call, from numba-cuda's
flags; or `tiles.compile`) and handed down: NVRTC's options, the cache key and the precompiled
header's tag all come from it, and nothing below reads the environment.
"""

import dataclasses
import os


def checks_requested():
    """Whether ``NUMBA_TILES_DEBUG`` asks for the launch and input checks to be compiled in (read when code is
    lowered)."""
    return os.environ.get("NUMBA_TILES_DEBUG", "0") not in ("", "0")


@dataclasses.dataclass(frozen=True)
class Target:
    """``arch`` (``"sm_90"``), and the code-changing modes: ``checks`` (``NUMBA_TILES_DEBUG=1``: launch
    and input checks compiled in) and ``lineinfo`` (line tables, NVRTC ``-lineinfo``). There is no
    debug (``-G``) mode: a debug build of a kernel that calls an intrinsic is refused at typing
    (`_spec.Spec.typing_signature`). Example::

        from numba_tiles._target import Target

        assert Target("sm_90", lineinfo=True).nvrtc_options() == {"arch": "sm_90", "lineinfo": True}
    """

    arch: str
    checks: bool = False
    lineinfo: bool = False

    @classmethod
    def for_lowering(cls, cc, lineinfo):
        """The target of code lowered now for compute capability ``cc``; ``checks`` from ``NUMBA_TILES_DEBUG``."""
        return cls("sm_%d%d" % cc, checks=checks_requested(), lineinfo=lineinfo)

    @property
    def cc(self):
        number = self.arch[3:]
        return int(number[:-1]), int(number[-1])

    def nvrtc_options(self):
        """The NVRTC options this target adds to a library's."""
        options = {"arch": self.arch}
        if self.lineinfo:
            options["lineinfo"] = True
        if self.checks:
            options["define_macro"] = ["NUMBA_TILES_DEBUG"]
        return options

    def key(self):
        return dataclasses.asdict(self)
