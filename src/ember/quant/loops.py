"""Which elements ATen's vectorized quantized elementwise kernels (``cpu_kernel_vec`` over a
``TensorIterator``) take through their vector body and which through their scalar kernel:
the two round differently at ties and saturate differently out of range, so a result equal
to PyTorch's bit for bit needs the same split.

The iterator visits the output in its memory order (that of the output's layout; an output
that the broadcast resizes takes the inputs' order, :func:`ember.layouts.stride_order`),
with the dimensions merged wherever every operand's strides allow: a loop of rows, the row
being the innermost merged dimension. A row in which every operand is contiguous (or one
input is a broadcast scalar) is vectorized: blocks of :data:`VECTOR_BLOCK` elements from its
start, the rest (``len % 64``) through the scalar kernel; any other row (a transposed or
strided operand) goes through the scalar kernel whole. From :data:`GRAIN_SIZE` elements on,
with several threads, the elements (in loop order) are also cut into one range per thread
(``ceil(numel / tasks)`` elements each) and a row split by a cut counts as two. Ember's
thread count (:func:`ember.get_num_threads`) stands for PyTorch's.
"""

from __future__ import annotations

import math

import numpy as np

from ember.backend.threads import get_num_threads
from ember.layouts import stride_order, suggested_format
from ember.quant.kernels import VECTOR_BLOCK

GRAIN_SIZE = 32768  # ATen's grain: fewer elements run on one thread
_FEW_ROWS = 8  # rows cut between threads that a list of spans describes (more: a mask)

# how each unary kernel lays its output out: "input" (in the input's suggested format, visited
# by the iterator), "dense" (the input made dense in that format first) or "c" (C order)
UNARY_LAYOUTS = {"hardswish": "input", "leaky_relu": "dense", "elu": "c", "threshold": "input"}


class Loop:
    """The loop over a quantized elementwise op's output: its order of dimensions and which
    elements (in that order) the vector body takes.

    Example:
        >>> import numpy as np
        >>> a, b = np.broadcast_arrays(np.zeros((2, 65), np.uint8), np.zeros(65, np.uint8))
        >>> loop = Loop.binary(a, a, b, resized=True)  # (2, 65) + (65,)
        >>> [int(n) for n in loop.vector_mask().reshape(2, 65).sum(1)]  # 64 of each row's 65
        [64, 64]
    """

    def __init__(self, shape: tuple[int, ...], order: tuple[int, ...],
                 operands: list[np.ndarray]) -> None:
        self.shape, self.order = shape, order
        self.numel = math.prod(shape)
        self.row = _row(shape, order, operands)  # (0: no element takes the vector body)
        self.full = self.row - self.row % VECTOR_BLOCK  # (the elements of a row it takes)
        self.spans: list[tuple[int, int, bool]] | None = None  # (start, stop, vector)
        self.mask: np.ndarray | None = None
        threads = get_num_threads() if self.numel >= GRAIN_SIZE and self.row else 1
        if threads > 1:  # (cut between threads: a few spans, or a mask of many rows)
            chunk = -(-self.numel // min(threads, -(-self.numel // GRAIN_SIZE)))
            if self.numel // self.row <= _FEW_ROWS:
                self.spans = _spans(self.numel, self.row, chunk)
            else:
                self.mask = _mask(self.numel, self.row, chunk)

    @classmethod
    def binary(cls, first: np.ndarray, a: np.ndarray, b: np.ndarray, resized: bool) -> Loop:
        """The loop of a binary kernel with operands ``a`` and ``b`` (broadcast to one
        shape). Its output takes the layout of ``first`` (the first operand as given): at
        ``first``'s shape, resized (``resized``: ``quantized::add``) to the broadcast shape,
        where it then takes the inputs' order; or at the broadcast shape from the start
        (``quantized::mul``)."""
        shape = a.shape
        if first.shape == shape or not resized:
            order = _format_order(first, len(shape))
            if order == tuple(range(len(shape))) and a.flags.c_contiguous \
                    and b.flags.c_contiguous:  # (one row, as _row would find: skip it)
                return cls(shape, order, [])
        else:
            order = stride_order(shape, *(_element_strides(x) for x in (a, b)))
        return cls(shape, order, [a, b])

    @classmethod
    def unary(cls, op: str, x: np.ndarray) -> Loop:
        """The loop of the unary kernel ``op`` (:data:`UNARY_LAYOUTS`) on ``x``."""
        layout = UNARY_LAYOUTS[op]
        order = tuple(range(x.ndim)) if layout == "c" else _format_order(x, x.ndim)
        return cls(x.shape, order, [] if layout == "dense" else [x])

    def flat(self, x: np.ndarray) -> np.ndarray:
        """``x`` (of the output's shape) as a 1-D array in loop order."""
        return np.transpose(x, self.order).reshape(-1)

    def vector_mask(self) -> np.ndarray:
        """Whether each element (in loop order) goes through the vector body."""
        if self.mask is not None:
            return self.mask
        mask = np.zeros(self.numel, bool)
        if self.spans is not None:
            for start, stop, vector in self.spans:
                mask[start:stop] = vector
        elif self.row:
            mask.reshape(-1, self.row)[:, :self.full] = True
        return mask

    def split(self, *xs: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The elements of each of ``xs`` that the vector body takes, and the others (1-D,
        in loop order)."""
        flats = [self.flat(x) for x in xs]
        if self.mask is not None:
            return [f[self.mask] for f in flats], [f[~self.mask] for f in flats]
        if self.spans is not None:
            return ([np.concatenate([f[a:b] for a, b, vector in self.spans if vector] or
                                    [f[:0]]) for f in flats],
                    [np.concatenate([f[a:b] for a, b, vector in self.spans if not vector] or
                                    [f[:0]]) for f in flats])
        if self.row in (0, self.numel):  # (all scalar, or one row: views)
            return [f[:self.full] for f in flats], [f[self.full:] for f in flats]
        rows = [f.reshape(-1, self.row) for f in flats]
        return ([r[:, :self.full].reshape(-1) for r in rows],
                [r[:, self.full:].reshape(-1) for r in rows])

    def join(self, vector: np.ndarray, scalar: np.ndarray) -> np.ndarray:
        """The output from the vector body's and the scalar kernel's elements (as
        :meth:`split` gives them), laid out densely in loop order."""
        out = np.empty(self.numel, np.result_type(vector, scalar))
        if self.mask is not None:
            out[self.mask], out[~self.mask] = vector, scalar
        elif self.spans is not None:
            taken = {True: 0, False: 0}
            for start, stop, is_vector in self.spans:
                source = vector if is_vector else scalar
                out[start:stop] = source[taken[is_vector]:taken[is_vector] + stop - start]
                taken[is_vector] += stop - start
        elif self.row in (0, self.numel):
            out[:self.full], out[self.full:] = vector, scalar
        else:
            rows = out.reshape(-1, self.row)
            rows[:, :self.full] = vector.reshape(rows.shape[0], self.full)
            rows[:, self.full:] = scalar.reshape(rows.shape[0], self.row - self.full)
        return self.lay(out)

    def lay(self, flat: np.ndarray) -> np.ndarray:
        """The output from all its elements in loop order (1-D), laid out densely in it."""
        laid = flat.reshape([self.shape[d] for d in self.order])
        return laid.transpose(sorted(range(len(self.order)), key=self.order.__getitem__))


def _element_strides(x: np.ndarray) -> tuple[int, ...]:
    return tuple(s // x.itemsize for s in x.strides)


def _format_order(x: np.ndarray, ndim: int) -> tuple[int, ...]:
    """The order of dimensions (outermost first) of PyTorch's ``suggest_memory_format`` of
    ``x`` for an ``ndim``-d output: channels-last ones, else C order."""
    dims = suggested_format(x).dims
    return dims if dims is not None and len(dims) == ndim else tuple(range(ndim))


def _row(shape: tuple[int, ...], order: tuple[int, ...], operands: list[np.ndarray]) -> int:
    """The length of the loop's rows when they take the vector body (the output dense in
    ``order``; ``operands``, the inputs broadcast to ``shape``), else 0: rows shorter than a
    block, or with an operand neither contiguous nor a broadcast scalar along them. No
    operands: all dense in ``order``, one row."""
    if not operands:
        numel = math.prod(shape)
        return numel if numel >= VECTOR_BLOCK else 0
    inner = [d for d in reversed(order) if shape[d] != 1]  # innermost first
    strides = [_element_strides(x) for x in operands]
    steps = [s[inner[0]] for s in strides] if inner else []
    if not inner or not all(s in (0, 1) for s in steps) or steps.count(0) > 1:
        return 0
    row = shape[inner[0]]
    for d in inner[1:]:  # (dimensions merge while every operand steps on evenly)
        if any(s[d] != step * row for s, step in zip(strides, steps)):
            break
        row *= shape[d]
    return row if row >= VECTOR_BLOCK else 0


def _spans(n: int, row: int, chunk: int, lo: int = 0, hi: int | None = None
           ) -> list[tuple[int, int, bool]]:
    """The runs of elements (start, stop, whether the vector body takes them) from ``lo`` to
    ``hi`` (all ``n`` unless told) of ``n`` elements in rows of ``row``, cut every ``chunk``
    elements."""
    hi = n if hi is None else hi
    cuts = sorted({lo, hi} | set(range(lo - lo % row + row, hi, row))
                  | set(range(lo - lo % chunk + chunk, hi, chunk)))
    spans = []
    for start, stop in zip(cuts, cuts[1:]):
        split = stop - (stop - start) % VECTOR_BLOCK
        spans += [(start, split, True)] * (split > start) + [(split, stop, False)] * (stop > split)
    return spans


def _mask(n: int, row: int, chunk: int) -> np.ndarray:
    """Whether each of ``n`` elements in rows of ``row``, cut every ``chunk`` elements,
    goes through the vector body: the rows' blocks, then the rows a cut splits redone."""
    mask = np.zeros(n, bool)
    mask.reshape(-1, row)[:, :row - row % VECTOR_BLOCK] = True
    for start in sorted({cut - cut % row for cut in range(chunk, n, chunk) if cut % row}):
        for a, b, vector in _spans(n, row, chunk, start, start + row):
            mask[a:b] = vector
    return mask
