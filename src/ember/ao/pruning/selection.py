"""Which ``k`` of equal values PyTorch's CPU ``topk(largest=False)`` picks: it selects with
libstdc++'s ``std::nth_element`` (or ``std::partial_sort`` when ``k * 64 <= n``) on (value,
index) pairs compared by value, NaN last; this module replays those algorithms, so masks built
from the selection match PyTorch's when values tie at the threshold (blocks zeroed earlier,
equal weights). Without such a tie the set is plain ``argsort``'s, which is used."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["torch_smallest", "torch_smallest_per_row"]


def _less(a: tuple[float, int], b: tuple[float, int]) -> bool:
    """PyTorch's comparator: by value, NaN after every number."""
    return (not math.isnan(a[0]) and math.isnan(b[0])) or a[0] < b[0]


def _insertion_sort(q: list, first: int, last: int) -> None:
    for i in range(first + 1, last):
        val = q[i]
        if _less(val, q[first]):
            q[first + 1:i + 1] = q[first:i]
            q[first] = val
            continue
        j = i
        while _less(val, q[j - 1]):
            q[j] = q[j - 1]
            j -= 1
        q[j] = val


def _move_median_to_first(q: list, result: int, a: int, b: int, c: int) -> None:
    if _less(q[a], q[b]):
        pick = b if _less(q[b], q[c]) else (c if _less(q[a], q[c]) else a)
    else:
        pick = a if _less(q[a], q[c]) else (c if _less(q[b], q[c]) else b)
    q[result], q[pick] = q[pick], q[result]


def _unguarded_partition(q: list, first: int, last: int, pivot: int) -> int:
    while True:
        while _less(q[first], q[pivot]):
            first += 1
        last -= 1
        while _less(q[pivot], q[last]):
            last -= 1
        if not first < last:
            return first
        q[first], q[last] = q[last], q[first]
        first += 1


def _push_heap(q: list, first: int, hole: int, top: int, value: Any) -> None:
    parent = (hole - 1) // 2
    while hole > top and _less(q[first + parent], value):
        q[first + hole] = q[first + parent]
        hole, parent = parent, (parent - 1) // 2
    q[first + hole] = value


def _adjust_heap(q: list, first: int, hole: int, length: int, value: Any) -> None:
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _less(q[first + child], q[first + child - 1]):
            child -= 1
        q[first + hole] = q[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        q[first + hole] = q[first + child - 1]
        hole = child - 1
    _push_heap(q, first, hole, top, value)


def _heap_select(q: list, first: int, middle: int, last: int) -> None:
    length = middle - first
    if length >= 2:
        for parent in range((length - 2) // 2, -1, -1):
            _adjust_heap(q, first, parent, length, q[first + parent])
    for i in range(middle, last):
        if _less(q[i], q[first]):
            value, q[i] = q[i], q[first]
            _adjust_heap(q, first, 0, length, value)


def _nth_element(q: list, nth: int) -> None:
    first, last = 0, len(q)
    depth = 2 * ((last - first).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            _heap_select(q, first, nth + 1, last)
            q[first], q[nth] = q[nth], q[first]
            return
        depth -= 1
        mid = first + (last - first) // 2
        _move_median_to_first(q, first, first + 1, mid, last - 1)
        cut = _unguarded_partition(q, first + 1, last, first)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(q, first, last)


def torch_smallest(values: np.ndarray, k: int) -> np.ndarray:
    """The indices of the ``k`` entries of the 1-D ``values`` that ``torch.topk(values, k,
    largest=False)`` returns on the CPU (as a set, in no particular order).

    Example:
        >>> sorted(torch_smallest(np.array([0.0, 2.0, 0.0, 0.0, 1.0]), 2).tolist())  # not [0, 2]
        [2, 3]
    """
    order = np.argsort(values, kind="stable")  # (NaN last, as PyTorch's comparator)
    if k <= 0 or k >= values.size:
        return order[:max(k, 0)]
    below, above = values[order[k - 1]], values[order[k]]
    if not (below == above or (np.isnan(below) and np.isnan(above))):
        return order[:k]  # (no tie at the threshold: the set is determined)
    q = [(float(v), i) for i, v in enumerate(values)]
    if k * 64 <= len(q):
        _heap_select(q, 0, k, len(q))
    else:
        _nth_element(q, k - 1)
    return np.array([i for _, i in q[:k]], dtype=np.int64)


def torch_smallest_per_row(values: np.ndarray, k: int) -> np.ndarray:
    """:func:`torch_smallest` of each row of the 2-D ``values``: a (rows, k) index array.

    Example:
        >>> np.sort(torch_smallest_per_row(np.array([[3.0, 1.0, 2.0], [0.0, 0.0, 0.0]]), 1))
        array([[1],
               [0]])
    """
    picked = np.argsort(values, axis=-1, kind="stable")[:, :k].copy()
    if 0 < k < values.shape[1]:
        rows = np.arange(values.shape[0])
        below = values[rows, picked[:, -1]]
        above = values[rows, np.argsort(values, axis=-1, kind="stable")[:, k]]
        for row in np.flatnonzero((below == above) | (np.isnan(below) & np.isnan(above))):
            picked[row] = torch_smallest(values[row], k)
    return picked
