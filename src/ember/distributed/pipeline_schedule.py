"""Pipeline schedules as plain data: which micro-batch each stage runs forward or backward, in
what order (GPipe and 1F1B), how stages are cut from a list of layers, and a simulator that
replays the schedules on unit costs to check they cannot deadlock and to compute their bubble.

Nothing here communicates; :mod:`ember.distributed.pipeline` executes these orders over MPI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ember.errors import ArgumentError

__all__ = [
    "Action",
    "ScheduleReport",
    "balance_by_size",
    "bubble_fraction",
    "gpipe_schedule",
    "one_f_one_b_schedule",
    "schedule",
    "simulate",
    "stage_bounds",
]

FORWARD, BACKWARD = "forward", "backward"


@dataclass(frozen=True)
class Action:
    """One step of a stage's schedule: ``kind`` ("forward" or "backward") of ``micro_batch``."""

    kind: str
    micro_batch: int

    def __repr__(self) -> str:
        return f"{self.kind[0].upper()}{self.micro_batch}"


def _check(stage: int, num_stages: int, num_micro_batches: int) -> None:
    if num_stages < 1 or num_micro_batches < 1:
        raise ArgumentError(
            f"pipeline schedule: need num_stages ≥ 1 and num_micro_batches ≥ 1, "
            f"got {num_stages} and {num_micro_batches}"
        )
    if not 0 <= stage < num_stages:
        raise ArgumentError(f"pipeline schedule: stage {stage} is outside 0..{num_stages - 1}")


def gpipe_schedule(stage: int, num_stages: int, num_micro_batches: int) -> list[Action]:
    """GPipe: every micro-batch forward, then every backward. Each stage keeps all
    ``num_micro_batches`` activations alive until its backwards start.

    Example:
        >>> gpipe_schedule(0, 2, 3)
        [F0, F1, F2, B0, B1, B2]
    """
    _check(stage, num_stages, num_micro_batches)
    m = range(num_micro_batches)
    return [Action(FORWARD, j) for j in m] + [Action(BACKWARD, j) for j in m]


def one_f_one_b_schedule(stage: int, num_stages: int, num_micro_batches: int) -> list[Action]:
    """1F1B (PipeDream-flush): ``num_stages - stage - 1`` warm-up forwards, then one forward
    and one backward in turn, then the remaining backwards. Same bubble as GPipe, but a stage
    holds at most ``num_stages - stage`` micro-batches' activations instead of all of them.

    Example:
        >>> one_f_one_b_schedule(0, 2, 3)
        [F0, F1, B0, F2, B1, B2]
    """
    _check(stage, num_stages, num_micro_batches)
    warmup = min(num_stages - stage - 1, num_micro_batches)
    actions = [Action(FORWARD, j) for j in range(warmup)]
    for j in range(num_micro_batches - warmup):
        actions += [Action(FORWARD, warmup + j), Action(BACKWARD, j)]
    actions += [Action(BACKWARD, j) for j in range(num_micro_batches - warmup, num_micro_batches)]
    return actions


_SCHEDULES = {"gpipe": gpipe_schedule, "1f1b": one_f_one_b_schedule}


def schedule(name: str, stage: int, num_stages: int, num_micro_batches: int) -> list[Action]:
    """The schedule called ``name`` ("gpipe" or "1f1b") for one stage."""
    if name not in _SCHEDULES:
        raise ArgumentError(
            f"pipeline schedule: unknown schedule {name!r}; choose one of {sorted(_SCHEDULES)}"
        )
    return _SCHEDULES[name](stage, num_stages, num_micro_batches)


def bubble_fraction(num_stages: int, num_micro_batches: int) -> float:
    """The idle share of each stage in a flushed pipeline with equal stage costs:
    ``(p - 1) / (m + p - 1)`` for ``p`` stages and ``m`` micro-batches (GPipe and 1F1B alike).

    Example:
        >>> bubble_fraction(4, 8)
        0.2727272727272727
    """
    _check(0, num_stages, num_micro_batches)
    return (num_stages - 1) / (num_micro_batches + num_stages - 1)


@dataclass
class ScheduleReport:
    """What :func:`simulate` found: total time, each stage's busy time, idle share, and the
    most micro-batches whose activations a stage held at once."""

    makespan: float
    busy: list[float]
    peak_in_flight: list[int]

    @property
    def bubble(self) -> list[float]:
        """Per stage, the fraction of the makespan spent waiting."""
        return [1.0 - b / self.makespan for b in self.busy]


def simulate(
    schedules: Sequence[Sequence[Action]], forward_time: float = 1.0, backward_time: float = 2.0
) -> ScheduleReport:
    """Replays one schedule per stage with fixed costs and free communication: a forward
    waits for the previous stage's forward of that micro-batch, a backward for its own forward
    and the next stage's backward. Raises ``RuntimeError`` if the schedules deadlock or miss
    or repeat work.

    Example:
        >>> p, m = 4, 8
        >>> r = simulate([one_f_one_b_schedule(s, p, m) for s in range(p)])
        >>> round(r.bubble[0], 4) == round(bubble_fraction(p, m), 4)
        True
    """
    p = len(schedules)
    m = sum(a.kind == FORWARD for a in schedules[0]) if p else 0
    for s, actions in enumerate(schedules):
        expected = {Action(k, j) for k in (FORWARD, BACKWARD) for j in range(m)}
        if len(actions) != 2 * m or set(actions) != expected:
            raise RuntimeError(
                f"pipeline schedule: stage {s} must run forward and backward of "
                f"micro-batches 0..{m - 1} once each, got {list(actions)}"
            )
    done: dict[tuple[str, int, int], float] = {}
    clock, pos, busy = [0.0] * p, [0] * p, [0.0] * p
    live, peak = [0] * p, [0] * p
    progressed = True
    while progressed:
        progressed = False
        for s in range(p):
            while pos[s] < len(schedules[s]):
                a = schedules[s][pos[s]]
                if a.kind == FORWARD:
                    deps = [(FORWARD, s - 1, a.micro_batch)] if s > 0 else []
                else:
                    deps = [(FORWARD, s, a.micro_batch)]
                    deps += [(BACKWARD, s + 1, a.micro_batch)] if s < p - 1 else []
                if any(d not in done for d in deps):
                    break
                cost = forward_time if a.kind == FORWARD else backward_time
                start = max([clock[s]] + [done[d] for d in deps])
                clock[s] = done[(a.kind, s, a.micro_batch)] = start + cost
                busy[s] += cost
                live[s] += 1 if a.kind == FORWARD else -1
                peak[s] = max(peak[s], live[s])
                pos[s] += 1
                progressed = True
    stuck = [s for s in range(p) if pos[s] < len(schedules[s])]
    if stuck:
        raise RuntimeError(
            "pipeline schedule: deadlock; stages "
            + ", ".join(f"{s} waiting at {schedules[s][pos[s]]!r}" for s in stuck)
        )
    return ScheduleReport(max(clock) if p else 0.0, busy, peak)


def stage_bounds(balance: Sequence[int]) -> list[tuple[int, int]]:
    """``[start, stop)`` layer ranges of each stage from the layer counts in ``balance``.

    Example:
        >>> stage_bounds([2, 3, 1])
        [(0, 2), (2, 5), (5, 6)]
    """
    if not balance or any(int(b) < 1 for b in balance):
        raise ArgumentError(
            f"pipeline: balance must list at least one layer per stage, got {list(balance)}"
        )
    bounds, start = [], 0
    for b in balance:
        bounds.append((start, start + int(b)))
        start += int(b)
    return bounds


def balance_by_size(sizes: Sequence[int], num_stages: int) -> list[int]:
    """Cuts layers of the given sizes (e.g. parameter counts) into ``num_stages`` contiguous,
    non-empty stages so that the largest stage is as small as possible; ties go to the cut
    that puts more layers in earlier stages.

    Example:
        >>> balance_by_size([10, 10, 0, 10, 10, 0], 2)
        [3, 3]
    """
    n = len(sizes)
    if not 1 <= num_stages <= n:
        raise ArgumentError(f"pipeline: cannot cut {n} layers into {num_stages} non-empty stages")
    prefix = [0]
    for size in sizes:
        prefix.append(prefix[-1] + int(size))
    inf = float("inf")
    # best[k][i]: smallest largest-stage size cutting the first i layers into k stages.
    best = [[inf] * (n + 1) for _ in range(num_stages + 1)]
    cut = [[0] * (n + 1) for _ in range(num_stages + 1)]
    best[0][0] = 0
    for k in range(1, num_stages + 1):
        for i in range(k, n - (num_stages - k) + 1):
            for j in range(i - 1, k - 2, -1):
                cost = max(best[k - 1][j], prefix[i] - prefix[j])
                if cost < best[k][i]:
                    best[k][i], cut[k][i] = cost, j
    balance, i = [], n
    for k in range(num_stages, 0, -1):
        balance.append(i - cut[k][i])
        i = cut[k][i]
    return balance[::-1]
