"""Seeded random configurations of every intrinsic over odd block shapes, compiled for sm_90 with no GPU.

The accepted ones compile in batched kernels (one kernel, one NVRTC program, per family and block
shape); each one a rule of the library rejects must fail at typing, alone, with a `TilesError` that
names the intrinsic and the fix, before NVRTC runs: a configuration that fails in NVRTC instead is a
missing typing rule. tests/support/random_cases.py draws the configurations (a prefix of the GPU test's set);
NUMBA_TILES_CASES_SEED or NUMBA_TILES_TEST_SEED draws others.
"""

import re

import pytest

import numba_tiles as tiles

from ..support import random_cases as rc

# Each shape about twice per family: ~110 kernels, about a minute and a half on 2 cores (NVRTC ~0.7 s each).
CASES = rc.generate(per_family=20)
BATCHES = rc.batches(CASES)
REJECTED = rc.rejected(CASES)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: b.id)
def test_accepted_configurations_compile(batch, rng):
    print(rc.describe_seed(), batch, sep="\n")
    try:
        cubin = batch.compile(rng)
    except Exception as e:
        pytest.fail(f"{batch} passed typing but failed to compile (a missing typing rule?): {type(e).__name__}: {e}")
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("case", REJECTED, ids=repr)
def test_rejected_configurations_fail_at_typing(case, rng):
    print(rc.describe_seed(), case, sep="\n")
    intrinsic, message = case.rejection()
    nvrtc = tiles.cache.stats()["nvrtc"]
    with pytest.raises(tiles.TilesError) as info:
        rc.compile_alone(case, rng)
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"tiles.{intrinsic}:") and "Fix:" in first, first
    assert re.search(message, first), first
    assert tiles.cache.stats()["nvrtc"] == nvrtc, "rejected after NVRTC ran, not at typing"


def test_the_default_sample_draws_every_shape_and_algorithm():
    """What CI compiles (the default seed) covers every family in every odd shape, every algorithm,
    arrangement and shuffle kind, and every items_per_thread."""
    cases = rc.generate(per_family=20, seed=rc.DEFAULT_SEED)
    assert {(c.family, c.block_dim) for c in cases} >= {(f.family, s) for f in rc.FAMILIES for s in rc.ODD_SHAPES}
    drawn = {
        (c.family, key, getattr(c, key))
        for c in cases
        for key in ("algorithm", "load", "store", "arrangement", "kind")
        if hasattr(c, key)
    }
    for family, key, options in (
        (rc.Reduce, "algorithm", rc.Reduce.ALGORITHMS),
        (rc.Scan, "algorithm", rc.Scan.ALGORITHMS),
        (rc.LoadStore, "load", rc.LoadStore.ALGORITHMS),
        (rc.LoadStore, "store", rc.LoadStore.ALGORITHMS),
        (rc.Exchange, "arrangement", rc.Exchange.ARRANGEMENTS),
        (rc.Histogram, "algorithm", ["sort", "atomic"]),
        (rc.Shuffle, "kind", ["offset", "rotate", "up", "down"]),
    ):
        assert {(family.family, key, o) for o in options} <= drawn, (family.family, key)
    assert {c.ipt for c in cases} >= set(rc.ITEMS)
