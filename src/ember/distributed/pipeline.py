"""Pipeline parallelism: an ``nn.Sequential`` cut into consecutive stages, one per rank of a
group, trained on micro-batches with the GPipe or 1F1B schedule.

Stage ``s`` receives its input activations from stage ``s - 1`` and sends its outputs to
``s + 1`` (point-to-point, non-blocking sends and blocking receives in the schedule's order,
which :func:`~ember.distributed.pipeline_schedule.simulate` shows cannot deadlock); in backward
the gradients travel the other way. The loss is computed on the last stage. Each micro-batch's
loss is divided by the number of micro-batches, so with a loss that averages over its batch the
parameters get the gradients of the unsplit model on the whole batch.

Example (under ``ember launch -n 2``):
    >>> model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    >>> pipe = Pipeline(model, chunks=4)
    >>> loss = pipe.train_step(ember.randn(32, 8), ember.randn(32, 4), F.mse_loss)
    >>> 0.0 <= pipe.stats.bubble <= 1.0      # measured idle share of this stage
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ember
from ember import nn
from ember.distributed import collectives
from ember.distributed.buffers import ReduceOp, Work
from ember.distributed.pipeline_schedule import (
    FORWARD,
    balance_by_size,
    bubble_fraction,
    stage_bounds,
)
from ember.distributed.pipeline_schedule import schedule as schedule_of
from ember.distributed.process_group import ProcessGroup, resolve
from ember.dtypes import ALL_DTYPES
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["Pipeline", "PipelineStats"]

_TAG_META, _TAG_ACTIVATION, _TAG_GRAD = 11, 12, 13
_MAX_DIMS = 8


@dataclass
class PipelineStats:
    """Timing of this stage's last :meth:`Pipeline.train_step`: wall time, time spent blocked
    waiting for neighbours, the measured idle share and the theoretical one."""

    step_s: float
    idle_s: float
    theoretical_bubble: float

    @property
    def bubble(self) -> float:
        """Measured share of the step this stage spent waiting."""
        return self.idle_s / self.step_s if self.step_s > 0 else 0.0


class Pipeline(nn.Module):
    """This rank's stage of ``model`` (an ``nn.Sequential``) in a pipeline over ``group``.

    Args:
        model: the whole model; every rank passes the same one and keeps only its layers.
        chunks: micro-batches per step; the batch must divide into them evenly.
        group: the ranks of the pipeline, stage ``s`` on the group's rank ``s`` (world: None).
        balance: layers per stage, e.g. ``[3, 2]``; by default the cut that evens out the
            parameter counts.
        schedule: ``"1f1b"`` (default, at most ``stages - s`` micro-batches' activations live
            on stage ``s``) or ``"gpipe"`` (all of them).
        data_parallel_group: for pipeline × data parallelism, the ranks holding this same stage
            in other pipeline replicas; after each step the stage's gradients are averaged
            over them (one all-reduce of a flat buffer).

    Example (2 ranks):
        >>> pipe = Pipeline(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1)), 2)
        >>> pipe.num_stages, pipe.balance, pipe.stage == dist.get_rank()
        (2, [2, 1], True)
    """

    def __init__(
        self,
        model: nn.Sequential,
        chunks: int,
        group: ProcessGroup | None = None,
        balance: Sequence[int] | None = None,
        schedule: str = "1f1b",
        data_parallel_group: ProcessGroup | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(model, nn.Sequential):
            raise TypeError(f"Pipeline: expected an nn.Sequential, got {type(model).__name__}")
        self.group = resolve(group, "Pipeline")
        self.stage, self.num_stages = self.group.rank(), self.group.size()
        if balance is None:
            sizes = [sum(p.numel() for p in layer.parameters()) for layer in model]
            balance = balance_by_size(sizes, self.num_stages)
        if len(balance) != self.num_stages or sum(balance) != len(model):
            raise ArgumentError(
                f"Pipeline: balance {list(balance)} must give {self.num_stages} "
                f"stages summing to the model's {len(model)} layers"
            )
        schedule_of(schedule, 0, 1, 1)  # an unknown name fails here, on every rank alike
        start, stop = stage_bounds(balance)[self.stage]
        self.balance, self.chunks, self.schedule = list(balance), int(chunks), schedule
        self.module = model[start:stop]
        self.data_parallel_group = data_parallel_group
        self.stats: PipelineStats | None = None
        self._idle = 0.0
        self._sends: list[Work] = []
        self._meta: list[int] = []  # dtype code, ndim, shape of the activations sent
        self._in_spec: tuple = ((), ember.float32)  # shape and dtype of those received

    @property
    def is_first(self) -> bool:
        return self.stage == 0

    @property
    def is_last(self) -> bool:
        return self.stage == self.num_stages - 1

    def forward(self, inputs: Tensor | None = None) -> Tensor | None:
        """Inference through the pipeline, without gradients: the first stage passes
        ``inputs`` (the others None); the last stage returns the whole batch's output, the
        others None.
        """
        outputs = []
        with ember.no_grad():
            micro = self._split(inputs, "inputs") if self.is_first else [None] * self.chunks
            for j, x in enumerate(micro):
                y = self.module(x if self.is_first else self._recv_activation(j))
                if self.is_last:
                    outputs.append(y)
                else:
                    self._send_activation(y, j)
            self._finish_sends()
        return ember.cat(outputs) if self.is_last else None

    def train_step(
        self, inputs: Tensor | None, target: Any, loss_fn: Callable[[Tensor, Any], Tensor]
    ) -> float:
        """Forward and backward of one batch through the pipeline; gradients accumulate into
        this stage's parameters. ``inputs`` matters on the first stage and ``target`` on the
        last (pass None elsewhere). Returns the batch loss (the mean of the micro-batch
        losses) on every stage, as a float; timings go to :attr:`stats`.
        """
        begin = time.perf_counter()
        self._idle = 0.0
        m = self.chunks
        micro_inputs = self._split(inputs, "inputs") if self.is_first else [None] * m
        micro_targets = self._split(target, "target") if self.is_last else [None] * m
        live: dict[int, tuple[Tensor | None, Tensor]] = {}
        loss = ember.zeros(1, dtype=ember.float64)
        for action in schedule_of(self.schedule, self.stage, self.num_stages, m):
            j = action.micro_batch
            if action.kind == FORWARD:
                x = micro_inputs[j] if self.is_first else self._recv_activation(j)
                with ember.enable_grad():
                    y = self.module(x)
                    if self.is_last:
                        y = loss_fn(y, micro_targets[j]) / m
                        loss += y.detach().to(ember.float64)
                    else:
                        self._send_activation(y, j)
                live[j] = (None if self.is_first else x, y)
            else:
                x, y = live.pop(j)
                if self.is_last:
                    y.backward()
                else:
                    grad = ember.empty(tuple(y.shape), dtype=y.dtype)
                    self._wait(collectives.recv, grad, self._peer(+1), self.group, _TAG_GRAD)
                    y.backward(grad)
                if x is not None:
                    self._isend(
                        x.grad if x.grad is not None else ember.zeros_like(x), -1, _TAG_GRAD
                    )
        self._finish_sends()
        self._wait(collectives.broadcast, loss, self.group.ranks[-1], self.group)
        if self.data_parallel_group is not None:
            self._average_gradients(loss)
        self.stats = PipelineStats(
            time.perf_counter() - begin, self._idle, bubble_fraction(self.num_stages, m)
        )
        return float(loss.item())

    def _finish_sends(self) -> None:
        for work in self._sends:
            self._wait(work.wait)
        self._sends = []

    def _average_gradients(self, loss: Tensor) -> None:
        """Averages the gradients (and the reported loss) over the data-parallel replicas of
        this stage, as one flat buffer per dtype."""
        params = [p for p in self.module.parameters() if p.grad is not None]
        by_dtype: dict[Any, list[Tensor]] = {}
        for t in [p.grad for p in params] + [loss]:
            by_dtype.setdefault(t.dtype, []).append(t)
        for tensors in by_dtype.values():
            flat = ember.cat([t.reshape(-1) for t in tensors])
            collectives.all_reduce(flat, ReduceOp.MEAN, self.data_parallel_group)
            start = 0
            for t in tensors:
                t.copy_(flat[start : start + t.numel()].view(t.shape))
                start += t.numel()

    def _split(self, batch: Any, what: str) -> list:
        if not isinstance(batch, Tensor):
            raise TypeError(
                f"Pipeline.train_step: stage {self.stage} needs {what} as a "
                f"tensor, got {type(batch).__name__}"
            )
        if batch.ndim == 0 or batch.shape[0] % self.chunks:
            raise ArgumentError(
                f"Pipeline.train_step: {what} of shape {tuple(batch.shape)} does "
                f"not split into {self.chunks} equal micro-batches along dim 0"
            )
        return list(batch.chunk(self.chunks, 0))

    def _peer(self, offset: int) -> int:
        return self.group.ranks[self.stage + offset]

    def _wait(self, blocking: Callable[..., Any], *args: Any) -> Any:
        """Runs a call that blocks on a neighbour and counts its time as idle."""
        t = time.perf_counter()
        out = blocking(*args)
        self._idle += time.perf_counter() - t
        return out

    def _isend(self, tensor: Tensor, offset: int, tag: int) -> None:
        tensor = tensor.detach().contiguous()
        self._sends.append(collectives.isend(tensor, self._peer(offset), self.group, tag))

    def _send_activation(self, y: Tensor, j: int) -> None:
        """Sends ``y`` to the next stage, its shape and dtype first with micro-batch 0 (the
        others must match: the batch splits evenly, so only a layer that changes shapes from
        batch to batch would break this)."""
        if not isinstance(y, Tensor):
            raise TypeError(
                f"Pipeline: stage {self.stage} returned {type(y).__name__}; one tensor "
                "travels between stages"
            )
        if y.ndim > _MAX_DIMS:
            raise ArgumentError(
                f"Pipeline: stage {self.stage} output has {y.ndim} dims; at most "
                f"{_MAX_DIMS} travel between stages"
            )
        meta = [ALL_DTYPES.index(y.dtype), y.ndim, *y.shape]
        if j == 0:
            header = ember.tensor(meta + [0] * (_MAX_DIMS + 2 - len(meta)), dtype=ember.int64)
            self._isend(header, +1, _TAG_META)
            self._meta = meta
        elif meta != self._meta:
            raise ArgumentError(
                f"Pipeline: stage {self.stage} output of micro-batch {j} is "
                f"{tuple(y.shape)} {y.dtype.name}, micro-batch 0's was "
                f"{tuple(self._meta[2:])} {ALL_DTYPES[self._meta[0]].name}"
            )
        self._isend(y, +1, _TAG_ACTIVATION)

    def _recv_activation(self, j: int) -> Tensor:
        """The previous stage's output for micro-batch ``j``, as a leaf that collects the
        gradient to send back."""
        src = self._peer(-1)
        if j == 0:
            header = ember.empty(_MAX_DIMS + 2, dtype=ember.int64)
            self._wait(collectives.recv, header, src, self.group, _TAG_META)
            code, ndim, *dims = (int(v) for v in header.tolist())
            self._in_spec = (tuple(dims[:ndim]), ALL_DTYPES[code])
        shape, dtype = self._in_spec
        x = ember.empty(shape, dtype=dtype)
        self._wait(collectives.recv, x, src, self.group, _TAG_ACTIVATION)
        return x.requires_grad_(dtype.is_floating_point)
