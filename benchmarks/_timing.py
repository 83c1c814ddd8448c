"""The kernel timing that the memory-bound benchmarks share: CUDA events around launches queued behind a sleep
kernel, so that the host's launch overhead is hidden and the GPU's time alone is measured."""

import statistics
import time

from numba import cuda

SLEEP_ITERS = 1500  # the sleep kernel: 1500 x nanosleep(1 µs), longer than the host takes to queue a trial


@cuda.jit
def _sleep(iterations):
    for _ in range(iterations):
        cuda.nanosleep(1000)


def median_ms(launch, repeats, warmup=1):
    """The median time of one ``launch()`` (ms) after ``warmup`` launches: each trial times enough launches for
    about 2 ms, queued behind the sleep kernel, between two events on the legacy default stream."""
    stream = cuda.legacy_default_stream()
    for _ in range(warmup):
        launch()
    cuda.synchronize()
    t0 = time.perf_counter()
    launch()
    cuda.synchronize()
    per_trial = max(1, min(20, int(2e-3 / max(time.perf_counter() - t0, 1e-6))))
    trials = []
    for _ in range(repeats):
        start, end = cuda.event(), cuda.event()
        _sleep[1, 1, stream](SLEEP_ITERS)
        start.record(stream)
        for _ in range(per_trial):
            launch()
        end.record(stream)
        end.synchronize()
        trials.append(cuda.event_elapsed_time(start, end) / per_trial)
    return statistics.median(trials)
