"""What collectives hand to MPI: contiguous host buffers of tensors, reduction ops, ``Work``.

Data-moving collectives send raw bytes, so any dtype travels (bfloat16 included). Reductions
need a type MPI can add: half precision is reduced in float32 and bool with logical ops, then
cast back, as PyTorch's CPU backend does.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from datetime import timedelta
from enum import StrEnum
from typing import Any

import numpy as np

from ember.distributed.errors import DistBackendError, DistError, DistributedError
from ember.distributed.nan_ops import nan_propagating_op
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DeviceError,
    DTypeError,
    ShapeError,
    type_name,
)
from ember.futures import Future
from ember.nn.parameter import is_lazy
from ember.tensor import Tensor


class ReduceOp(StrEnum):
    """How ``all_reduce`` and friends combine the ranks' values (strings work too: ``"sum"``).

    ``AVG`` is another name of ``MEAN``, as in PyTorch. ``BAND``, ``BOR`` and ``BXOR`` are
    bitwise and/or/xor of integer and bool tensors.
    """

    SUM = "sum"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"
    MEAN = "mean"
    AVG = "mean"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    @classmethod
    def parse(cls, op: Any, who: str) -> ReduceOp:
        """``op`` as a member: a member, or a name in any case (``"avg"`` is ``MEAN``)."""
        try:
            return cls[str(op).upper()]
        except KeyError:
            raise ArgumentError(
                f"{who}: unknown reduce op {op!r}; use one of sum, product, max, min, mean "
                "(avg), band, bor, bxor"
            ) from None


def supports_complex(reduceOp: ReduceOp) -> bool:  # noqa: N803 - PyTorch's name
    """Whether ``reduceOp`` works on complex tensors: sum and mean do; max, min, product and
    the bitwise ops do not (as in PyTorch).

    Example:
        >>> dist.supports_complex(dist.ReduceOp.SUM), dist.supports_complex(dist.ReduceOp.MAX)
        (True, False)
    """
    return ReduceOp.parse(reduceOp, "supports_complex") in (ReduceOp.SUM, ReduceOp.MEAN)


class _DeprecatedReduceOp:
    """``reduce_op``: PyTorch's deprecated alias of :class:`ReduceOp` (``reduce_op.SUM`` …),
    warning on use."""

    __members__ = dict(ReduceOp.__members__)

    def __getattr__(self, name: str) -> ReduceOp:
        warnings.warn("`ember.distributed.reduce_op` is deprecated, please use "
                      "`ember.distributed.ReduceOp` instead", FutureWarning, stacklevel=2)
        try:
            return ReduceOp[name]
        except KeyError:
            raise AttributeError(f"reduce_op has no member {name!r}") from None


reduce_op = _DeprecatedReduceOp()

_MPI_OP = {"sum": "SUM", "product": "PROD", "max": "MAX", "min": "MIN", "mean": "SUM",
           "band": "BAND", "bor": "BOR", "bxor": "BXOR"}
# bool reduces as logical or (sum, max, bor), and (product, min, band) and xor (bxor)
_BOOL_OP = {"sum": "MAX", "product": "MIN", "max": "MAX", "min": "MIN",
            "band": "MIN", "bor": "MAX", "bxor": "BXOR"}
_BITWISE = frozenset({ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR})
_NATIVE = frozenset(
    np.dtype(c) for c in ("f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "c8", "c16")
)


_MPI: list = []


def mpi() -> Any:
    """mpi4py's ``MPI`` module (imported on first use: importing it initializes MPI)."""
    if not _MPI:
        from mpi4py import MPI

        _MPI.append(MPI)
    return _MPI[0]


def in_place_sum(t: Tensor, op: Any) -> bool:
    """Whether ``t`` can be summed by MPI in its own memory with no conversion: the hot path
    of ``all_reduce``, which then costs about a microsecond more than mpi4py's call."""
    a = getattr(t, "_data", None)  # (anything else gets host_array's clear error)
    return (
        (op is ReduceOp.SUM or op == "sum")
        and type(a) is np.ndarray
        and a.dtype in _NATIVE
        and a.flags.c_contiguous
    )


def host_array(t: Tensor, who: str) -> np.ndarray:
    """The tensor's NumPy array; the MPI backend works on CPU tensors."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{who}: expected an ember.Tensor, got {type(t).__name__}")
    a = t._data
    if not isinstance(a, np.ndarray):
        raise DeviceError(
            f"{who}: the tensor is on {t.device}; the MPI backend takes CPU "
            "tensors. Hint: move it with .cpu() first"
        )
    return a


def as_bytes(t: Tensor, who: str) -> np.ndarray:
    """A contiguous uint8 view (or copy) of the tensor's data, for data-moving collectives."""
    return np.ascontiguousarray(host_array(t, who)).reshape(-1).view(np.uint8)


def write(t: Tensor, values: np.ndarray) -> None:
    """Stores received values (any layout, same element count) into ``t``, bumping its
    version so autograd sees the in-place change."""
    a = t._data
    if values.dtype == np.uint8 and a.dtype != np.uint8:
        values = values.view(a.dtype)
    if not np.may_share_memory(values, a):
        if not a.flags.writeable:
            raise ArgumentError(
                f"a collective cannot write its result into this tensor (shape "
                f"{tuple(t.shape)}, strides {t.stride()}): its memory is read-only, as a view "
                "made by expand() or as_strided() is (several elements share one location). "
                "Hint: pass a tensor of its own, e.g. t.clone()")
        a[...] = values.reshape(a.shape)
    t._vc.value += 1


def broadcast_from_first(group: Any, tensors: list[Tensor], root: int = 0) -> None:
    """The first rank of ``group``'s values (or group rank ``root``'s) into ``tensors`` (a
    model's parameters and buffers), one collective per dtype."""
    by_dtype: dict = {}
    for t in tensors:
        by_dtype.setdefault(t._data.dtype, []).append(t)
    for same in by_dtype.values():
        flat = np.concatenate([t._data.reshape(-1) for t in same])
        call(group.comm, "Bcast", flat.view(np.uint8), root=root)
        start = 0
        for t in same:
            write(t, flat[start : start + t.numel()])
            start += t.numel()


SAME_MODEL_HINT = ("build the model identically on every rank (rank-dependent layers, shapes, "
                   "dtypes or requires_grad differ)")


def describe(kind: str, t: Tensor) -> str:
    """A parameter's or buffer's entry for :func:`check_same_everywhere`: shape (or
    ``uninitialized``, a lazy module's), dtype and, for parameters, whether it trains."""
    trains = "" if kind == "buffer" else (" trainable" if t.requires_grad else " frozen")
    shape = "uninitialized" if is_lazy(t) else list(t.shape)
    return f"{kind} {shape} {t._data.dtype.name}{trains}"


def check_same_everywhere(group: Any, who: str, what: str, items: list[tuple[str, str]],
                          hint: str) -> None:
    """``items`` (name, description) must be described alike on every rank of ``group`` (a
    process group, or a list of them: a device mesh's, gathered over each in turn so that
    every rank of the mesh sees every other's; names may differ): every rank raises the same
    error naming the first difference, so none is left waiting in a collective the others
    skip."""
    groups = group if isinstance(group, list) else [group]
    everyone = [(groups[0].ranks[groups[0].rank()], items)]  # (world rank, items)
    for g in groups:
        everyone = [x for theirs in call(g.comm, "allgather", everyone) for x in theirs]
    (r0, first), *others = sorted(everyone, key=lambda x: x[0])
    for r, theirs in others:
        if [d for _, d in theirs] == [d for _, d in first]:
            continue
        if len(theirs) != len(first):
            why = f"rank {r0} has {len(first)} {what}, rank {r} has {len(theirs)}"
        else:
            (na, a), (nb, b) = next((x, y) for x, y in zip(first, theirs) if x[1] != y[1])
            why = f"{na!r} is a {a} on rank {r0}, {nb!r} a {b} on rank {r}"
        raise DistributedError(f"{who} on every rank, but {why}. Hint: {hint}")


def check_like(who: str, what: str, t: Tensor, ref: Tensor) -> None:
    """``t`` must have ``ref``'s shape and dtype (the list arguments of collectives)."""
    if tuple(t.shape) != tuple(ref.shape) or t.dtype is not ref.dtype:
        raise ShapeError(
            f"{who}: {what} is {tuple(t.shape)} {t.dtype.name}, expected "
            f"{tuple(ref.shape)} {ref.dtype.name} like the input tensor"
        )


def check_count(who: str, what: str, items: list | None, n: int) -> None:
    """``items`` must be a list (or tuple) of ``n`` entries (None counts as empty)."""
    items = [] if items is None else items
    if not isinstance(items, (list, tuple)):
        raise ArgumentTypeError(f"{who}: {what} must be a list with one entry per rank ({n}), "
                                f"got {type_name(items)}")
    if len(items) != n:
        raise ShapeError(f"{who}: {what} has {len(items)} entries, expected one per rank ({n})")


class Reducible:
    """A buffer of the tensor's values in a type MPI reduces, and the MPI op to use.

    ``result(n)`` gives the reduced values in the tensor's dtype (after the MEAN division)."""

    __slots__ = ("buf", "op", "mean", "dtype")

    def __init__(self, arrays: list[np.ndarray], op: Any, who: str) -> None:
        op = ReduceOp.parse(op, who)
        dtype = arrays[0].dtype
        self.dtype, self.mean = dtype, op is ReduceOp.MEAN
        MPI = mpi()
        if dtype.kind == "c" and not supports_complex(op):
            raise ArgumentError(f"{who} does not support {op.name} on complex tensors (as "
                                "PyTorch). Hint: reduce the real and imaginary parts apart")
        if op in _BITWISE and dtype.kind not in "iub":
            raise DTypeError(f"{who}: cannot use ReduceOp.{op.name} with non-integral dtype "
                             f"{dtype} (as PyTorch). Hint: bitwise ops take integer and bool "
                             "tensors")
        if dtype == np.bool_:
            if self.mean:
                raise DTypeError(f"{who}: mean of a bool tensor; cast it to float first")
            wire, name = np.uint8, _BOOL_OP[op.value]
        elif dtype in _NATIVE:
            if self.mean and dtype.kind not in "fc":
                raise DTypeError(
                    f"{who}: mean of an integer ({dtype}) tensor; PyTorch refuses "
                    "it too. Hint: reduce with sum, or cast to float first"
                )
            wire, name = dtype, _MPI_OP[op.value]
        else:  # float16, bfloat16: no MPI type adds them
            wire, name = np.float32, _MPI_OP[op.value]
        if len(arrays) == 1:
            # the tensor's own memory when it is contiguous already: reduced in place
            self.buf = np.ascontiguousarray(arrays[0], dtype=wire).reshape(-1)
        else:
            self.buf = np.concatenate([np.asarray(a, dtype=wire).reshape(-1) for a in arrays])
        if name in ("MAX", "MIN") and np.dtype(wire).kind == "f":
            self.op = nan_propagating_op(MPI, name, wire)
        else:
            self.op = getattr(MPI, name)

    def result(self, buf: np.ndarray, n: int) -> np.ndarray:
        if self.mean:
            np.divide(buf, n, out=buf)
        return buf if buf.dtype == self.dtype else buf.astype(self.dtype)


def reducible(t: Tensor, op: Any, who: str) -> Reducible:
    return Reducible([host_array(t, who)], op, who)


# Work.wait(timeout): how long it tests in a tight loop, then the first and longest sleep
_SPIN_S, _SLEEP_MIN, _SLEEP_MAX = 1e-3, 2e-5, 1e-3


class Work:
    """The handle of a collective started with ``async_op=True``; ``wait()`` finishes it.

    ``get_future()`` gives a :class:`ember.futures.Future` of the collective's output tensors
    (a list, ``[tensor]`` for ``all_reduce``), to chain work on with ``then``.

    Example:
        >>> work = dist.all_reduce(t, async_op=True)
        >>> ...                                    # compute while the reduction runs
        >>> work.wait()
    """

    __slots__ = ("_request", "_finish", "_done", "_outputs", "_future", "_future_set",
                 "_with_status", "_source", "_error", "_timeout")

    def __init__(
        self,
        request: Any,
        finish: Callable[[], None] | None = None,
        outputs: list[Tensor] | None = None,
        status: Any = None,
        source: Callable[[], int] | None = None,
    ) -> None:
        self._request, self._finish, self._done = request, finish, False
        self._outputs = [] if outputs is None else outputs
        self._future: Future | None = None
        self._future_set = False
        # a receive's MPI status (filled by Wait/Test) and its sender's world rank
        self._with_status = () if status is None else (status,)
        self._source = source
        self._error: Exception | None = None
        self._timeout: timedelta | None = None  # wait()'s default (a timed async barrier's)

    def _poll(self, block: bool) -> None:
        """Waits for (``block``) or tests the request once; once it is done, runs the finish
        step and completes the future. A failure (MPI's, or the finish step's) is kept, not
        raised: the work is then done, with that error (as PyTorch's c10d ``Work``)."""
        if not self._done:
            try:
                if block:
                    call(self._request, "Wait", *self._with_status)
                elif not call(self._request, "Test", *self._with_status):
                    return
                if self._finish is not None:
                    self._finish()
            except Exception as exc:
                self._error = exc
            self._done, self._finish = True, None
        self._set_future()

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Blocks until the collective is done and its results are in the tensors; raises
        its error if it failed (every time it is called, as PyTorch).

        ``timeout`` (a ``timedelta``, as PyTorch's; zero or None waits as long as it takes;
        the default of a barrier's work is the barrier's ``timeout``): a collective not done
        by then raises :class:`DistError` (it keeps running, so a later ``wait`` can still
        finish it).

        Example:
            >>> work.wait(timeout=datetime.timedelta(seconds=30))
            True
        """
        timeout = self._timeout if timeout is None else timeout
        limit = 0.0 if timeout is None else timeout.total_seconds()
        if limit > 0:
            self._wait_until(limit)
        else:
            self._poll(True)
        if self._error is not None:
            raise self._error
        return True

    def _wait_until(self, limit: float) -> None:
        """Tests the request until it is done or ``limit`` seconds pass (DistError): a tight
        loop for the first ``_SPIN_S`` (a collective whose ranks are all there finishes in
        microseconds, and only advances inside an MPI call), then sleeps growing to
        ``_SLEEP_MAX`` between tests, so a long wait costs little CPU."""
        start = time.monotonic()
        delay = _SLEEP_MIN
        while not self.is_completed():
            waited = time.monotonic() - start
            if waited >= limit:
                raise DistError(
                    f"Work.wait: the operation did not finish within {limit:g} s. "
                    "Hint: a rank may not have called it (or a matching send/recv)"
                )
            if waited >= _SPIN_S:
                time.sleep(delay)
                delay = min(2 * delay, _SLEEP_MAX)

    def is_completed(self) -> bool:
        """Whether the collective is done (never blocks); raises its error if it failed
        (every time, as :meth:`wait`; :meth:`is_success` and :meth:`exception` never raise)."""
        self._poll(False)
        if self._error is not None:
            raise self._error
        return self._done

    def is_success(self) -> bool:
        """Whether the collective is done without error (never blocks or raises)."""
        self._poll(False)
        return self._done and self._error is None

    def exception(self) -> Exception | None:
        """The error this operation failed with (what ``wait()`` raises); None when it has
        not failed (as PyTorch's ``Work.exception``; it never blocks).

        Example:
            >>> work = dist.all_reduce(t, async_op=True)
            >>> work.wait(); work.exception() is None
            True
        """
        return self._error

    def result(self) -> list[Tensor]:
        """The output tensors of the collective, once done (waits for it)."""
        self.wait()
        return self._outputs

    def source_rank(self) -> int:
        """The world rank that sent the message of an ``irecv`` (waits for it).

        Example:
            >>> work = dist.irecv(t)                  # from any rank
            >>> work.source_rank()
            1
        """
        if self._source is None:
            raise ArgumentError("Work.source_rank: only the work of an irecv has a source rank")
        self.wait()
        return self._source()

    def _set_future(self) -> None:
        """Completes the future (running what is chained on it) once the collective is done:
        with its outputs, or with its error."""
        if self._future is not None and self._done and not self._future_set:
            self._future_set = True
            if self._error is None:
                self._future.set_result(self._outputs)
            else:
                self._future.set_exception(self._error)

    def get_future(self) -> Future[list[Tensor]]:
        """A future of the output tensors; it completes when the collective does (on
        :meth:`wait`, or ``wait()``/``done()`` of it or of a future chained on it).

        Example:
            >>> fut = dist.all_reduce(t, async_op=True).get_future()
            >>> halved = fut.then(lambda f: f.value()[0] / 2)
            >>> halved.wait()
        """
        if self._future is None:
            self._future = Future._driven_by(self._poll)
        return self._future


def backend_error(exc: Exception, name: str) -> Exception:
    """The :class:`~ember.distributed.DistBackendError` for MPI's exception ``exc`` in
    ``name``: most often ranks running different collectives or shapes."""
    return DistBackendError(
        f"MPI {name} failed: {exc}. Hint: every rank must run the same collectives in the "
        "same order on tensors of the same shape and dtype; dist.set_debug_level(DETAIL) "
        "(TORCH_DISTRIBUTED_DEBUG=DETAIL) makes each collective check it and name the ranks' "
        "calls")


def call(comm: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """``comm.name(*args, **kwargs)`` (an MPI communicator's or request's method), MPI's
    failure raised as :func:`backend_error`'s DistBackendError: every MPI call on tensor
    data goes through here."""
    try:
        return getattr(comm, name)(*args, **kwargs)
    except mpi().Exception as exc:
        raise backend_error(exc, name) from exc


def run(
    comm: Any,
    name: str,
    args: tuple,
    async_op: bool,
    finish: Callable[[], None] | None = None,
    outputs: list[Tensor] | None = None,
) -> Work | None:
    """Calls MPI's ``name`` (blocking), or ``I`` + ``name`` and returns its :class:`Work`
    (whose future holds ``outputs``)."""
    if async_op:
        return Work(call(comm, "I" + name[0].lower() + name[1:], *args), finish, outputs)
    call(comm, name, *args)
    if finish is not None:
        finish()
    return None
