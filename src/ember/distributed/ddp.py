"""Data parallelism: :class:`DistributedDataParallel` averages gradients over the ranks.

Each rank runs the whole model on its share of the batch. At construction rank 0's parameters
and buffers are broadcast, so every replica starts equal. In backward, each parameter's
gradient hook copies the gradient into a flat bucket (about ``bucket_cap_mb`` MiB, parameters
in reverse order, roughly the order backward produces them); a full bucket starts a
non-blocking all-reduce at once, in bucket order on every rank (MPI matches collectives by
order), and the last gradient waits for them and writes the averages into ``.grad``.

The engine hands a parameter its gradient as soon as every node leading to it has run, so a
bucket's all-reduce starts while backward is still computing the earlier layers' gradients;
each later hook tests the requests in flight, which lets an MPI without a progress thread move
them along.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ember import nn
from ember.autograd.engine import running_task
from ember.autograd.grad_mode import is_grad_enabled
from ember.autograd.graph import accumulator
from ember.distributed.buffers import (
    SAME_MODEL_HINT,
    broadcast_from_first,
    call,
    check_same_everywhere,
    describe,
    mpi,
)
from ember.distributed.ddp_join import DDPJoin
from ember.distributed.grad_bucket import GradBucket
from ember.distributed.process_group import (
    DistBackendError,
    DistributedError,
    ProcessGroup,
    resolve,
)
from ember.errors import ArgumentError
from ember.futures import Future
from ember.nn import parallel
from ember.tensor import Tensor, _wrap


class _Bucket:
    """Parameters whose gradients are all-reduced as one flat buffer."""

    __slots__ = ("params", "offsets", "flat", "outs", "ready", "work")

    def __init__(self, params: list, wire: np.dtype) -> None:
        self.params = params
        sizes = [p.numel() for p in params]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        self.flat = np.empty(self.offsets[-1], wire)
        self.outs: list = [None] * len(params)
        self.ready = 0
        self.work: Any = None

    def slot(self, i: int) -> np.ndarray:
        return self.flat[self.offsets[i] : self.offsets[i + 1]]


def _wire_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype gradients travel in: half precision is summed in float32."""
    return np.dtype(np.float32) if dtype.itemsize < 4 and dtype.kind in "fV" else dtype


def make_buckets(params: list, cap_bytes: int) -> list[list]:
    """Groups parameters, in reverse order, into runs of one dtype and at most ``cap_bytes``
    (a larger parameter gets a bucket of its own)."""
    buckets: list[list] = []
    size = 0
    for p in reversed(params):
        if (
            not buckets
            or size + p.nbytes > cap_bytes
            or buckets[-1][0]._data.dtype != p._data.dtype
        ):
            buckets.append([])
            size = 0
        buckets[-1].append(p)
        size += p.nbytes
    return buckets


def _buffer_syncs(broadcast_buffers: bool | None, forward_sync: bool | None) -> tuple[bool, bool]:
    """(sync buffers before each forward, sync them at construction), as PyTorch 2.13 reads
    its deprecated ``broadcast_buffers`` and its ``forward_sync_buffers``."""
    if broadcast_buffers is not None:
        warnings.warn(
            "DistributedDataParallel: broadcast_buffers is deprecated (as in PyTorch 2.13); "
            + ("its value is ignored since forward_sync_buffers is given" if forward_sync
               is not None else "use forward_sync_buffers, which keeps the broadcast at "
               "construction (broadcast_buffers=False skips it)"),
            FutureWarning, stacklevel=3)
    if forward_sync is not None:
        return bool(forward_sync), True
    keep = True if broadcast_buffers is None else bool(broadcast_buffers)
    return keep, keep


class DistributedDataParallel(nn.Module):
    """Wraps ``module`` so that ``backward`` leaves the ranks' mean gradient in every ``.grad``.

    Args:
        module: the model (the same architecture on every rank).
        process_group: the ranks that share the gradients (the world by default).
        bucket_cap_mb: size of the flat all-reduce buckets, in MiB.
        broadcast_buffers: deprecated, as in PyTorch 2.13 (a FutureWarning when given):
            ``False`` leaves buffers out of both the broadcast at construction and the one
            before each forward (rank-local buffers stay).
        find_unused_parameters: count the parameters each backward pass does not reach ready
            with a zero local gradient (those the forward skipped, and those behind outputs
            the loss leaves out); a parameter no rank used keeps its ``.grad`` (None stays
            None), as in PyTorch.
        init_sync: broadcast rank 0's parameters and buffers at construction (default True).
        static_graph: the graph is the same every step; parameters it skips are handled as
            with ``find_unused_parameters``, as PyTorch handles them.
        forward_sync_buffers: broadcast rank 0's buffers (BatchNorm statistics) before each
            forward (default True) that follows one with grad enabled outside ``no_sync()``
            (as PyTorch's ``require_forward_param_sync``); ``init_sync`` broadcasts them at
            construction either way.

    PyTorch's ``output_device``, ``dim`` (CPU modules run whole on each rank),
    ``check_reduction`` (deprecated) and ``gradient_as_bucket_view`` (a memory layout: the
    gradients' values are the same) are accepted and change nothing.

    Example:
        >>> dist.init_process_group("mpi")
        >>> model = DistributedDataParallel(ember.models.mlp())
        >>> loss = F.cross_entropy(model(x_local), y_local)
        >>> loss.backward()                 # .grad holds the mean over ranks
        >>> opt.step()
    """

    _untracked_attributes = frozenset({  # (per-step bookkeeping)
        "_armed", "_pending", "_launched", "_check_queued", "_sync_now", "_unused", "_outputs",
        "_failure", "require_forward_param_sync"})
    # what ember.jit.compile says when a compiled function reaches one (jit/compiled.py)
    jit_refusal = ("its forward arms the gradients' all-reduce and its gradient hooks talk to "
                   "the other ranks: Python that a compiled graph would run once, when tracing. "
                   "Hint: compile the model inside it, model.forward = "
                   "ember.jit.compile(model.forward) before wrapping it, and run backward and "
                   "the optimizer step outside the compiled function")

    def __init__(
        self,
        module: nn.Module,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool | None = None,
        init_sync: bool = True,
        process_group: ProcessGroup | None = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        forward_sync_buffers: bool | None = None,
    ) -> None:
        super().__init__()
        self.module = module
        group = resolve(process_group, "DistributedDataParallel")
        object.__setattr__(self, "_group", group)
        self.forward_sync_buffers, init_buffers = _buffer_syncs(
            broadcast_buffers, forward_sync_buffers)
        self.find_unused_parameters = find_unused_parameters or static_graph
        self.gradient_as_bucket_view, self.static_graph = gradient_as_bucket_view, static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        params = [p for p in module.parameters() if p.requires_grad]
        cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb  # (PyTorch's default)
        buckets = [
            _Bucket(b, _wire_dtype(b[0]._data.dtype))
            for b in make_buckets(params, int(cap_mb * 2**20))
        ]
        object.__setattr__(self, "_buckets", buckets)
        self._where = {
            id(p): (b, i) for b, bucket in enumerate(buckets) for i, p in enumerate(bucket.params)
        }
        self._launched = 0
        self._pending = 0
        self._armed = False
        self._check_queued = False
        self._sync_now = True
        self._unused: set[int] = set()
        self._outputs: list[weakref.ref] = []  # (the nodes of this step's forwards' outputs)
        self._failure: Exception | None = None
        self._divisor = group.size()  # of the summed gradients (join() may count fewer)
        object.__setattr__(self, "_comm_hook", None)
        object.__setattr__(self, "_join", None)
        _check_same_model(group, module)
        if init_sync:
            buffers = list(module.buffers()) if init_buffers else []
            broadcast_from_first(group, list(module.parameters()) + buffers)
        for p in params:
            p.register_hook(self._hook(p))

    @property
    def broadcast_buffers(self) -> bool:
        """PyTorch 2.13's deprecated name for ``forward_sync_buffers``, read and set through it.

        Example:
            >>> ddp.broadcast_buffers = False   # no broadcast before each forward from now on
        """
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    # -- state -----------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._check_queued:  # a backward that ended early (it raised) left it set
            self._check_queued = False
            if self._armed:
                self._fail_unfinished()
        buffers = (list(self.module.buffers())  # (listed only when they are broadcast)
                   if self.forward_sync_buffers and self.require_forward_param_sync else [])
        sync_buffers = bool(buffers)
        root = 0 if self._join is None else self._join.forward_notice(
            sync_buffers, self.require_backward_grad_sync and is_grad_enabled())
        if sync_buffers:
            broadcast_from_first(self._group, buffers, root)
        out = self.module(*args, **kwargs)
        self._sync_now = self.require_backward_grad_sync
        # (PyTorch's: the next forward broadcasts buffers only after one whose backward syncs)
        self.require_forward_param_sync = self._sync_now and is_grad_enabled()
        if self.require_forward_param_sync:  # (evaluation under no_grad has no backward)
            if not self._armed:  # (else no backward since the last forward: one may follow both)
                self._arm()
            if self.find_unused_parameters:  # (those of forwards whose outputs died go: a
                self._outputs = [n for n in self._outputs if n() is not None] + \
                    _output_nodes(out)  # validation loop in train mode keeps none)
        return out

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes in this block only accumulate local gradients (no communication);
        the first backward after it all-reduces the accumulated sum.

        Example:
            >>> with model.no_sync():
            ...     loss_fn(model(x1), y1).backward()
            >>> loss_fn(model(x2), y2).backward()     # averages (g1 + g2) over ranks
        """
        saved = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = saved

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> DDPJoin:
        """A context manager for uneven inputs (PyTorch's ``DDP.join``): a rank that runs out
        of batches leaves the block and shadows the others' collectives until all have;
        gradients are divided by the initial world size (or, with
        ``divide_by_initial_world_size=False``, by the ranks still active), and at the end
        every rank gets the parameters of the last ones to finish. See ``ddp_join``.

        Example:
            >>> with model.join():
            ...     for x, y in my_batches:             # a different count on each rank
            ...         loss_fn(model(x), y).backward(); opt.step(); opt.zero_grad()
        """
        return DDPJoin(self, divide_by_initial_world_size, enable, throw_on_early_termination)

    def register_comm_hook(self, state: object, hook: Callable) -> None:
        """Replaces the gradients' all-reduce by ``hook(state, bucket)``: called with each
        :class:`~ember.distributed.GradBucket` once its gradients have arrived, in bucket order
        on every rank, it returns an :class:`ember.futures.Future` whose value is the flat
        tensor of final gradients (the hook averages: DDP does not divide them). Call it once,
        before the first backward; ``ember.distributed.algorithms.ddp_comm_hooks`` has
        PyTorch's hooks.

        Example:
            >>> from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
            >>> model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        """
        _check_comm_hook(hook)
        if self._comm_hook is not None:
            raise RuntimeError("DistributedDataParallel.register_comm_hook: "
                               "register_comm_hook can only be called once")
        object.__setattr__(self, "_comm_hook", (hook, state))

    # -- gradients -------------------------------------------------------------------------
    def _arm(self) -> None:
        for bucket in self._buckets:
            bucket.ready = 0
            bucket.work = None
        self._launched = 0
        self._pending = sum(len(b.params) for b in self._buckets)
        self._unused = set()
        self._outputs = []
        self._failure = None
        self._armed = True

    def _through_outputs(self) -> bool:
        """Whether the running backward goes through the outputs of this step's forwards."""
        task = running_task()
        return any(node() is not None and task.will_execute(node()) for node in self._outputs)

    def _hook(self, p: Tensor) -> Any:
        def hook(grad: Tensor) -> Tensor | None:
            task = running_task()
            if not task.accumulates:  # grad(): the local gradient, no communication (as torch,
                return None           # whose reducer hooks sit on the AccumulateGrad nodes)
            if not (self._armed and self._sync_now):
                if self._sync_now and id(p) in self._unused and self._through_outputs():
                    raise _late_gradient(self._names().get(id(p), "?"))
                return None
            if not self._check_queued:  # once per backward: did every gradient arrive?
                self._check_queued = True  # (at the end of this pass, also of one with inputs=)
                task.at_exit.append(self._after_backward)
                if self.find_unused_parameters:
                    self._mark_unused(task)
            try:
                data = grad._data
            except AttributeError:  # a sparse gradient
                raise _sparse_refused(self._names().get(id(p), "?"), grad) from None
            b, i = self._where[id(p)]
            bucket = self._buckets[b]
            if bucket.outs[i] is not None:
                self._check_queued = False
                self._fail_unfinished(
                    f"parameter {self._names().get(id(p), '?')} got a gradient after this step "
                    "counted it unused (the backward that started the step did not reach it; "
                    "one nested in it, e.g. run from a hook, takes no part in the step)"
                )
            slot = bucket.slot(i).reshape(p.shape)  # a view: strided gradients copy once
            if p.grad is None:
                slot[...] = data
            else:  # gradients accumulated under no_sync, plus this backward's
                np.add(p.grad._data, data, out=slot, casting="unsafe")
            p.grad = None  # the engine stores the returned tensor as the new .grad
            out = _wrap(np.empty(p.shape, p._data.dtype), p._device)
            bucket.outs[i] = out._data
            self._mark_ready(b)
            return out

        return hook

    def _mark_ready(self, b: int) -> None:
        self._buckets[b].ready += 1
        self._pending -= 1
        buckets = self._buckets
        while self._launched < len(buckets) and buckets[self._launched].ready == len(
            buckets[self._launched].params
        ):
            bucket = buckets[self._launched]
            if self._comm_hook is None:
                bucket.work = self._mpi(self._group.comm, "Iallreduce", mpi().IN_PLACE,
                                        bucket.flat, mpi().SUM)
            else:
                bucket.work = self._call_hook(self._launched)
            self._launched += 1
        if self._comm_hook is None:
            # progress for the ones in flight (completed ones are no-ops); a hook's futures are
            # left alone: their callbacks may start collectives, which must run in the same
            # order on every rank (bucket by bucket, in _finish)
            for bucket in buckets[: self._launched]:
                self._mpi(bucket.work, "Test")
        if self._pending == 0:
            self._finish()

    def _mpi(self, obj: Any, name: str, *args: Any) -> Any:
        """``call(obj, name, *args)``; MPI's failure is kept for :meth:`_finish` to raise once
        every bucket is launched and waited for in order (as on the other ranks), and a
        launch that failed leaves a null request."""
        try:
            return call(obj, name, *args)
        except DistBackendError as exc:
            self._failure = self._failure or exc
            return mpi().REQUEST_NULL

    def _finish(self) -> None:
        for b, bucket in enumerate(self._buckets):
            if self._comm_hook is None:
                self._mpi(bucket.work, "Wait")
                result, scale = bucket.flat, self._divisor
            else:
                try:
                    result, scale = self._hook_result(b, bucket.work.wait()), 1
                except Exception as exc:  # (the later buckets' futures still run, in order)
                    self._failure = self._failure or exc
            if self._failure is not None:
                continue
            for i, (p, out) in enumerate(zip(bucket.params, bucket.outs)):
                if out is not None:  # the mean, in one pass into the gradient's memory: .grad
                    # (the engine stores a copy of what a hook returns), or the returned tensor
                    # while the engine has not stored it yet (the hook that ends the step)
                    target = out if p.grad is None else p.grad._data
                    part = result[bucket.offsets[i] : bucket.offsets[i + 1]].reshape(out.shape)
                    np.divide(part, scale, out=target, casting="unsafe")
        if self._failure is not None:  # no half-written gradients; the next step starts afresh
            failure, self._failure = self._failure, None
            self._abandon_step()
            raise failure
        for bucket in self._buckets:
            bucket.outs = [None] * len(bucket.params)
        if self.find_unused_parameters:
            self._drop_globally_unused()
        self._armed = False

    def _call_hook(self, b: int) -> Future:
        """Hands bucket ``b`` to the communication hook; its future."""
        hook, state = self._comm_hook
        bucket = self._buckets[b]
        first = bucket.params[0]
        flat = bucket.flat.astype(first._data.dtype, copy=False)  # (half: summed as float32)
        grads = GradBucket(b, _wrap(flat, first._device), bucket.params, bucket.offsets,
                           b == len(self._buckets) - 1)
        try:
            fut = hook(state, grads)
            if not isinstance(fut, Future):
                raise TypeError(f"DistributedDataParallel: the communication hook "
                                f"{getattr(hook, '__qualname__', hook)!r} returned "
                                f"{type(fut).__name__}, expected an ember.futures.Future of "
                                "the bucket's flat gradients")
        except Exception:  # the earlier buckets' futures still run; the step ends cleanly
            for earlier in self._buckets[:b]:
                with contextlib.suppress(Exception):
                    earlier.work.wait()
            self._abandon_step()
            raise
        return fut

    def _hook_result(self, b: int, value: Any) -> np.ndarray:
        """The flat gradients of bucket ``b`` from its hook's future."""
        size = self._buckets[b].offsets[-1]
        if isinstance(value, list | tuple) and len(value) == 1:
            value = value[0]  # (a collective's future, as PyTorch's reducer accepts)
        if not isinstance(value, Tensor) or value.numel() != size:
            raise TypeError(f"DistributedDataParallel: the communication hook's future for "
                            f"bucket {b} holds {getattr(value, 'shape', type(value).__name__)}"
                            f", expected a tensor of the bucket's {size} gradient elements")
        return np.asarray(value._data).reshape(-1)

    def _mark_unused(self, task: Any) -> None:
        """Counts the parameters this backward pass does not reach as ready, with no local
        gradient: those the forward skipped, and those behind outputs the loss leaves out
        (as PyTorch's reducer, which asks the running graph ``task``)."""
        for b, bucket in enumerate(self._buckets):
            for i, p in enumerate(bucket.params):
                if not task.will_execute(accumulator(p)):
                    if p.grad is None:  # (one accumulated under no_sync counts as used)
                        self._unused.add(id(p))
                        p.grad = _wrap(np.zeros(p.shape, p._data.dtype), p._device)
                    bucket.slot(i)[...] = p.grad._data.reshape(-1)
                    bucket.outs[i] = p.grad._data
                    self._mark_ready(b)

    def _drop_globally_unused(self) -> None:
        """Gives back ``.grad = None`` to the parameters no rank used (PyTorch leaves their
        gradient untouched), so optimizers skip them as they would in one process."""
        params = [p for bucket in self._buckets for p in bucket.params]
        unused = np.array([id(p) in self._unused for p in params], np.uint8)
        call(self._group.comm, "Allreduce", mpi().IN_PLACE, unused, mpi().MIN)
        for p, everywhere in zip(params, unused):
            if everywhere:
                p.grad = None

    def _after_backward(self) -> None:
        self._check_queued = False
        if self._armed and self._pending:
            self._fail_unfinished()

    def _names(self) -> dict[int, str]:
        return {id(p): n for n, p in self.module.named_parameters()}

    def _abandon_step(self) -> None:
        """Ends a step whose averages were not all written: the gradients that would hold
        memory no all-reduce filled go back to None."""
        for bucket in self._buckets:
            for p, out in zip(bucket.params, bucket.outs):
                if out is not None:  # (its .grad, if stored, is this step's unfilled one)
                    p.grad = None
            bucket.outs = [None] * len(bucket.params)
        self._armed = False

    def _fail_unfinished(self, why: str | None = None) -> None:
        names = self._names()
        missing = [
            names.get(id(p), "?")
            for bucket in self._buckets
            for i, p in enumerate(bucket.params)
            if bucket.outs[i] is None
        ]
        self._abandon_step()
        if why is None:
            why = (f"the last backward gave no gradient to parameters {missing[:8]}"
                   f"{' …' if len(missing) > 8 else ''}, so their all-reduce never ran. Hint: "
                   "pass find_unused_parameters=True if the model skips parameters (or "
                   "backward's inputs= leaves some out), or call backward on every forward's "
                   "output")
        raise DistributedError(f"DistributedDataParallel: {why}")


def _check_same_model(group: ProcessGroup, module: nn.Module) -> None:
    """Every rank must wrap the same parameters and buffers (shapes, dtypes, which parameters
    train), as PyTorch's DDP verifies: otherwise the broadcast of rank 0's values and the
    bucketed all-reduces would mix unrelated memory silently."""
    check_same_everywhere(group, "DistributedDataParallel expects the same model",
                          "parameters and buffers",
                          [(name, describe(kind, t))
                           for kind, items in (("parameter", module.named_parameters()),
                                               ("buffer", module.named_buffers()))
                           for name, t in items],
                          SAME_MODEL_HINT)


def _check_comm_hook(hook: Any) -> None:
    """PyTorch's checks of a communication hook: callable, annotations (when given) of
    ``GradBucket`` and ``Future``."""
    if not callable(hook):
        raise TypeError(f"register_comm_hook: the communication hook must be callable, got "
                        f"{type(hook).__name__}")
    sig = inspect.signature(hook)
    bucket = sig.parameters.get("bucket")
    if bucket is not None and bucket.annotation not in (inspect.Parameter.empty, GradBucket,
                                                          "GradBucket", "dist.GradBucket"):
        raise ArgumentError("register_comm_hook: the hook's bucket annotation should be "
                            "dist.GradBucket")
    ret = sig.return_annotation
    if ret is not inspect.Signature.empty and getattr(ret, "__origin__", ret) is not Future \
            and not (isinstance(ret, str) and "Future" in ret):
        raise ArgumentError("register_comm_hook: the hook's return annotation should be "
                            "ember.futures.Future[ember.Tensor]")


parallel.register("DistributedDataParallel", DistributedDataParallel)


def _output_nodes(out: Any) -> list[weakref.ref]:
    """Weak references to the graph nodes of the tensors in ``out`` (nested lists, tuples,
    dicts)."""
    found, todo = [], [out]
    while todo:
        item = todo.pop()
        if isinstance(item, Tensor):
            if item._node is not None:
                found.append(weakref.ref(item._node))
        elif isinstance(item, list | tuple):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())
    return found


def _late_gradient(name: str) -> DistributedError:
    """The error for a gradient that reaches a parameter the step counted unused after the
    step ended: two backward calls over one forward's outputs (PyTorch raises without
    ``retain_graph``, its output node being freed, and keeps a rank-local gradient with it)."""
    return DistributedError(
        f"DistributedDataParallel: parameter {name} got a gradient in a backward after this "
        "forward's step had ended, and was counted unused there, so it would not be averaged "
        "(the ranks' copies would drift apart). Hint: add the losses and call backward() once")


def _sparse_refused(name: str, grad: Any) -> NotImplementedError:
    """The error for a sparse gradient (``nn.Embedding(sparse=True)``): buckets hold dense
    gradients."""
    return NotImplementedError(
        f"DistributedDataParallel: parameter {name} got a sparse gradient "
        f"({grad.layout!r}, shape {tuple(grad.shape)}); Ember's DDP all-reduces dense "
        "gradients only. Hint: use nn.Embedding(sparse=False) (or embedding(..., "
        "sparse=False)) under DDP")
