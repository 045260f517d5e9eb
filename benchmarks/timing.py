"""Timing helpers shared by the benchmarks: alternate the contenders, report medians."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

# A pause before each timed run: both frameworks' worker threads spin-wait after their last
# parallel call (OpenBLAS's for ~0.1 s), and a timed run starting meanwhile shares its cores
# with them. Measured: PyTorch's resnet18 step 634–664 ms run straight after Ember's, 549–557
# ms after the pause; its gpt step 347–355 ms against 277–288 ms.
_SETTLE_SECONDS = 0.25


def per_call_seconds(fn: Callable[[], object], calls: int, least: float = 0.0) -> float:
    """Seconds per call of ``fn`` over ``calls`` back-to-back calls, and ``calls`` more until
    ``least`` seconds have passed."""
    start, made = time.perf_counter(), 0
    while True:
        for _ in range(calls):
            fn()
        made += calls
        spent = time.perf_counter() - start
        if spent >= least:
            return spent / made


def compare(contenders: dict[str, Callable[[], object]], calls: int, repeats: int,
            warmup: int = 3, least: float = 0.0) -> dict[str, list[float]]:
    """Times each contender ``repeats`` times, alternating A B A B, after warm-up calls, with
    a short pause before each timed run so that the other's spinning threads are idle; a
    timed run is ``calls`` calls, repeated until it lasts ``least`` seconds."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            time.sleep(_SETTLE_SECONDS)
            fn()  # untimed: wakes the contender's own threads after the pause
            samples[name].append(per_call_seconds(fn, calls, least))
    return samples


def summary(samples: list[float]) -> tuple[float, float, float]:
    """(median, min, max) of timing samples."""
    return statistics.median(samples), min(samples), max(samples)


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
