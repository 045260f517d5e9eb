"""Views in an Ember checkpoint: a saved tensor whose memory lies inside another saved tensor
(a row of a weight, its transpose, a slice of a flat buffer) is stored as a view of that one
(``{"$view": name, "offset": k, "size": [...], "stride": [...]}`` in the tree, in elements),
so it loads sharing memory with it, as ``torch.load`` keeps views of one storage. Saved
tensors that overlap where none of them holds the others (``x[:6]`` and ``x[4:]``) are views of
the memory they cover together, stored as a tensor of its own (``"<first name>.storage"``, the
one other safetensors readers see in their place), as ``torch.save`` stores their storage.
That storage is the whole range of memory they span (two rows of a matrix and a column
crossing them: the rows between them too); tensors that share no element (two columns, the
even and the odd rows) stay copies, however their ranges interleave (past a bound on the
pairwise checks, many views of mixed layouts whose ranges overlap count as sharing).

A file with views says format version 2, so an older Ember refuses it ("upgrade Ember")
rather than load the whole tensor in the view's place; files without views stay version 1.
"""

from __future__ import annotations

import bisect
import heapq
import math
from types import SimpleNamespace
from typing import Any

import numpy as np

from ember.errors import CheckpointError
from ember.ops.constructors import empty_strided
from ember.ops.creation import share_array
from ember.tensor import Tensor


def _span(a: np.ndarray) -> tuple[int, int]:
    """[begin, end) byte addresses ``a`` reads (non-negative strides only)."""
    begin = a.__array_interface__["data"][0]
    last = sum((n - 1) * s for n, s in zip(a.shape, a.strides))
    return begin, begin + last + a.itemsize


def layout(begin: int, shape: tuple[int, ...], strides: tuple[int, ...],
           itemsize: int) -> np.ndarray:
    """An array of this layout (strides in bytes) at address ``begin``, to compare memory
    with :func:`sharing_groups` only: its bytes are never read (they may be a device's)."""
    fields = {"data": (begin, True), "shape": tuple(shape), "strides": tuple(strides),
              "typestr": f"|V{itemsize}", "version": 3}
    return np.asarray(SimpleNamespace(__array_interface__=fields))


#: The most ``np.shares_memory`` calls one :func:`sharing_groups` makes, per array; past it,
#: arrays whose ranges overlap count as sharing (a bigger file, never a wrong one).
CHECKS_PER_ARRAY = 4
#: How many ``np.shares_memory`` calls were made (tests read it).
checks_made = 0


def _shares(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` (whose byte ranges overlap) have a byte in common; when NumPy
    cannot tell within a bounded effort (rare strides), the overlap of the ranges says yes."""
    global checks_made
    checks_made += 1
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except np.exceptions.TooHardError:
        return True


def _lane(a: np.ndarray, begin: int) -> tuple[tuple, int, bool] | None:
    """For an array whose strides are positive whole numbers of items (size-1 dimensions
    aside): its family (item size, shape, strides, address modulo the item size), its lane
    (the address modulo the strides' gcd) and whether it is 1-d. Two of one family in other
    lanes share no element; in one lane, two 1-d ones share one iff their ranges overlap.
    None for other arrays."""
    dims = [(n, s) for n, s in zip(a.shape, a.strides) if n != 1]
    if any(s <= 0 or s % a.itemsize for _, s in dims):
        return None
    shape, strides = tuple(n for n, _ in dims), tuple(s for _, s in dims)
    step = math.gcd(*strides) if dims else a.itemsize
    return (a.itemsize, shape, strides, begin % a.itemsize), begin % step, len(dims) < 2


def sharing_groups(arrays: dict[str, np.ndarray]) -> list[list[str]]:
    """The names of ``arrays`` grouped by shared memory: two whose arrays have an element in
    common are in one group (groups of one too), each group in order of address.

    Arrays of one layout are told apart by their addresses where that settles it (the
    columns of a matrix: :func:`_lane`); other pairs whose ranges overlap by
    ``np.shares_memory``, at most ``CHECKS_PER_ARRAY`` calls per array, past which they count
    as sharing."""
    spans = sorted((*_span(a), n) for n, a in arrays.items())
    group = {n: n for n in arrays}

    def root(n: str) -> str:
        while group[n] != n:
            n = group[n] = group[group[n]]
        return n

    budget = CHECKS_PER_ARRAY * len(arrays)
    ends: list[tuple[int, str]] = []  # heap of (end, name) of the arrays still open
    open_: dict[Any, dict[Any, dict[str, None]]] = {}  # family -> lane -> its open names
    where: dict[str, tuple[Any, Any]] = {}  # name -> (family, lane)
    last: dict[tuple, tuple[int, str]] = {}  # (family, lane) of 1-d ones -> (end, name)
    joined = False  # whether all open arrays are one group (once the budget is spent)
    for begin, end, name in spans:
        while ends and ends[0][0] <= begin:
            gone = heapq.heappop(ends)[1]
            family, lane = where[gone]
            del open_[family][lane][gone]
            if not open_[family][lane]:
                del open_[family][lane]
                if not open_[family]:
                    del open_[family]
        found = _lane(arrays[name], begin)
        family, lane, one_d = (name, None, False) if found is None else found
        where[name] = family, lane
        if one_d:
            prev = last.get((family, lane))
            if prev is not None and prev[0] > begin:
                group[root(name)] = root(prev[1])
            last[family, lane] = (end, name)
        if joined:  # (all open arrays are one group: joining one of them joins them all)
            if ends:
                group[root(name)] = root(ends[0][1])
        else:
            spent = budget <= 0  # (then join all open arrays, once)
            for key, lanes in open_.items():
                if key == family and not spent:  # (of its family, its own lane only)
                    lanes = {} if one_d or lane not in lanes else {lane: lanes[lane]}
                for names in lanes.values():
                    for other in names:
                        if root(other) == root(name):
                            continue
                        if budget > 0:
                            budget -= 1
                            if not _shares(arrays[other], arrays[name]):
                                continue
                        group[root(name)] = root(other)
            joined = spent
        heapq.heappush(ends, (end, name))
        open_.setdefault(family, {}).setdefault(lane, {})[name] = None
    out: dict[str, list[str]] = {}
    for _, _, name in spans:
        out.setdefault(root(name), []).append(name)
    return list(out.values())


def _steps(a: np.ndarray) -> list[int]:
    """``a``'s strides in bytes, 0 for a dimension of size 1 (whose stride is never used)."""
    return [s if n > 1 else 0 for n, s in zip(a.shape, a.strides)]


def link_views(arrays: dict[str, np.ndarray], nodes: dict[str, list[dict]]) -> bool:
    """Turns each tensor of ``nodes`` (name -> its tree nodes) whose array lies inside a
    contiguous other one of the same dtype and device into a view of it (or of the memory that
    it and others overlapping it cover, added to ``arrays``: :func:`_add_storages`), dropping
    its array from ``arrays``; returns whether any did. Expanded tensors (a stride 0) stay
    copies, and so do views of another dtype's memory.

    Memory is compared by address (NumPy's bases do not tell: a strided view made by
    ``as_strided``, as a torch file's tensors are, has none)."""
    groups: dict[tuple, list[str]] = {}
    for name, found in nodes.items():
        a = arrays[name]
        if (a.size  # (expanded ones stay copies, as before)
                and all(s > 0 or n == 1 for n, s in zip(a.shape, a.strides))):
            groups.setdefault((a.dtype, found[0].get("device", "cpu")), []).append(name)
    linked = False
    for names in groups.values():
        names = names + _add_storages(arrays, names)
        # contiguous arrays no other one contains, by address: the one holding an array, if
        # any, is the last that begins at or before it (a root holding it that begins earlier
        # would hold that one too, which then were no root)
        begins: list[int] = []
        roots: list[tuple[int, int, str]] = []
        for name in sorted(names, key=lambda n: (-arrays[n].nbytes,
                                                 not arrays[n].flags.c_contiguous, n)):
            a = arrays[name]
            begin, end = _span(a)
            i = bisect.bisect_right(begins, begin) - 1
            root = roots[i] if i >= 0 else None
            if (root is None or end > root[1] or (begin - root[0]) % a.itemsize
                    or any(s % a.itemsize for s in _steps(a))):
                if a.flags.c_contiguous:
                    begins.insert(i + 1, begin)
                    roots.insert(i + 1, (begin, end, name))
                continue
            view = {"$view": root[2], "offset": (begin - root[0]) // a.itemsize,
                    "size": list(a.shape), "stride": [s // a.itemsize for s in _steps(a)]}
            for node in nodes[name]:
                del node["$tensor"]
                node.update(view)
            del arrays[name]
            linked = True
    return linked


def _add_storages(arrays: dict[str, np.ndarray], names: list[str]) -> list[str]:
    """For each group of ``names`` whose arrays share memory (:func:`sharing_groups`) and that
    no contiguous one of them covers whole, adds (and returns the name of) the contiguous
    array of the memory they span, which they can all be views of (each starting a whole
    number of elements into it, its strides too)."""
    added = []
    for members in sharing_groups({n: arrays[n] for n in names}):
        first = arrays[members[0]]  # (it begins where the group does)
        begin, end = _span(first)[0], max(_span(arrays[n])[1] for n in members)
        size = first.itemsize
        if len(members) < 2 or (end - begin) % size or any(
                (arrays[n].flags.c_contiguous and _span(arrays[n]) == (begin, end))
                or (_span(arrays[n])[0] - begin) % size
                or any(s % size for s in _steps(arrays[n])) for n in members):
            continue
        name = f"{members[0]}.storage"
        while name in arrays:
            name += "_"
        arrays[name] = strided_view(first, ((end - begin) // size,), (1,))
        added.append(name)
    return added


def view_of(base: Tensor, node: dict, where: str) -> Tensor:
    """The view a ``$view`` ``node`` describes of ``base`` (the tensor it names, as loaded)."""
    offset, size, stride = node.get("offset"), node.get("size"), node.get("stride")
    if not (type(offset) is int and isinstance(size, list) and isinstance(stride, list)
            and len(size) == len(stride) and offset >= 0
            and all(type(v) is int and v >= 0 for v in size + stride)):
        raise CheckpointError(f"{where}: malformed view entry of {node['$view']!r} (offset "
                              f"{offset!r}, size {size!r}, stride {stride!r})")
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if 0 not in size and last >= base.numel():
        raise CheckpointError(f"{where}: a view of {node['$view']!r} (size {size}, stride "
                              f"{stride}, offset {offset}) reads past its {base.numel()} "
                              "elements; the file is corrupted")
    if base.is_meta:  # (no memory to share: its layout alone, as torch.load on meta)
        return empty_strided(size, stride, dtype=base.dtype, device="meta")
    if math.prod(size) * base.element_size() >= 2 ** 63:  # (stride 0 passes the check above)
        raise CheckpointError(f"{where}: a view of {node['$view']!r} (size {size}) has too "
                              "many elements to address; the file is corrupted")
    flat = base.detach().cpu().numpy().reshape(-1)  # (base: a fresh, contiguous tensor)
    t = share_array(strided_view(flat[offset:], tuple(size), tuple(stride)))  # (writable)
    return t.to(base.device) if base.device.type != "cpu" else t


def strided_view(flat: np.ndarray, size: tuple[int, ...], stride: tuple[int, ...]) -> np.ndarray:
    """The view of ``flat`` with ``size`` and ``stride`` (in elements); NumPy makes strided
    views of its own dtypes only, so bfloat16 and float8 go through unsigned ints."""
    own = flat.dtype.isbuiltin == 1  # (not ml_dtypes' bfloat16 and float8s)
    carrier = flat if own else flat.view(f"u{flat.itemsize}")
    view = np.lib.stride_tricks.as_strided(carrier, size, [s * flat.itemsize for s in stride])
    return view if own else view.view(flat.dtype)


def view_key(node: dict) -> Any:
    """What tells apart the views of one tensor (None for the tensor itself)."""
    return None if "$view" not in node else repr((node.get("offset"), node.get("size"),
                                                  node.get("stride")))
