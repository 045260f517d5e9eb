"""ZeRO: :class:`ZeroRedundancyOptimizer` keeps 1/N of the optimizer state on each rank.

Each parameter group's parameters are laid end to end in one flat vector, padded to a
multiple of N and cut into N equal shards; rank r keeps shard r as one flat parameter, and a
local optimizer of the wrapped class updates only that. Elementwise optimizers (SGD, Adam,
AdamW, …) do exactly the per-parameter arithmetic, so the trajectory is plain DDP's. After the
update the shards are all-gathered back into the model's parameters.

* stage 1: gradients arrive averaged (wrap the model in DistributedDataParallel, as with
  PyTorch's ZeroRedundancyOptimizer); each rank reads its shard of them.
* stage 2: do not wrap the model; ``step`` reduce-scatters the local gradients, so each rank
  receives only its shard's mean gradient, and the full gradients are freed.

A parameter that no rank has a gradient for keeps its values and optimizer state through a
step, as PyTorch's optimizers skip it; only the shard's step count (Adam's bias correction)
advances for it, where PyTorch would count its steps apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ember.distributed.buffers import mpi
from ember.distributed.checkpoint import ShardedTensor
from ember.distributed.flat_layout import FlatLayout
from ember.distributed.process_group import DistributedError, ProcessGroup, resolve
from ember.nn.parameter import Parameter
from ember.ops.creation import tensor
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor

_SHARDED = (
    "each rank holds only its shard of the state. Hint: save opt.sharded_state() with "
    "ember.distributed.checkpoint.save and restore it with opt.load_sharded_state"
)


class _FlatGroup(FlatLayout):
    """One parameter group laid flat: its parameters, their offsets, this rank's shard."""

    __slots__ = ("params", "dtype", "shard")

    def __init__(self, params: list[Tensor], rank: int, size: int) -> None:
        dtypes = {p._data.dtype for p in params}
        if len(dtypes) != 1:
            raise DistributedError(
                f"ZeroRedundancyOptimizer: a parameter group mixes dtypes "
                f"{sorted(map(str, dtypes))}; put each dtype in its own group"
            )
        super().__init__([p.numel() for p in params], rank, size)
        self.params = params
        self.dtype = params[0]._data.dtype
        self.shard = Parameter(tensor(self.mine([p._data for p in params], self.dtype)))

    def shard_mask(self, chosen: list[bool]) -> np.ndarray:
        """Which elements of this rank's shard belong to the chosen parameters."""
        ones = [np.ones(p.numel(), bool) if c else None for p, c in zip(self.params, chosen)]
        return self.mine(ones, np.dtype(bool))


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps an optimizer class so that each rank holds and updates 1/N of its state.

    As in PyTorch, ``param_groups`` are the model's parameter groups: hyperparameters set
    there (by hand or by a learning-rate scheduler) reach the local optimizer at each step.

    Args:
        params: parameters or parameter groups, as for any optimizer (the same on every rank).
        optimizer_class: an elementwise optimizer, e.g. ``ember.optim.Adam``.
        process_group: the data-parallel ranks (the world by default).
        stage: 1 (optimizer state sharded) or 2 (gradients reduce-scattered and sharded too).
        parameters_as_bucket_view: PyTorch's memory-layout option, accepted: the values are
            the same.
        overlap_with_ddp: PyTorch's step inside DDP's communication hook; only False.
        **defaults: the optimizer's hyperparameters (``lr=…``).

    Example:
        >>> model = DistributedDataParallel(net)
        >>> opt = ZeroRedundancyOptimizer(model.parameters(), ember.optim.Adam, lr=1e-3)
        >>> loss_fn(model(x), y).backward(); opt.step(); opt.zero_grad()
    """

    def __init__(
        self,
        params: Iterable[Any],
        optimizer_class: type[Optimizer],
        *,
        process_group: ProcessGroup | None = None,
        stage: int = 1,
        parameters_as_bucket_view: bool = False,
        overlap_with_ddp: bool = False,
        **defaults: Any,
    ) -> None:
        if stage not in (1, 2):
            raise ValueError(f"ZeroRedundancyOptimizer: stage must be 1 or 2, got {stage}")
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer: overlap_with_ddp=True is not "
                                      "supported. Hint: call opt.step() after backward")
        self.group = resolve(process_group, "ZeroRedundancyOptimizer")
        self.stage = stage
        super().__init__(params, defaults)
        rank, size = self.group.rank(), self.group.size()
        self._flat = []
        local_groups = []
        for g in self.param_groups:
            ps = [p for p in g["params"] if p.requires_grad]
            if stage == 2:  # no DDP in front: replicas must start equal
                self._broadcast(ps)
            flat = _FlatGroup(ps, rank, size)
            self._flat.append(flat)
            local_groups.append(
                {**{k: v for k, v in g.items() if k != "params"}, "params": [flat.shard]}
            )
        self.optim = optimizer_class(local_groups, **defaults)

    def _broadcast(self, params: list[Tensor]) -> None:
        for p in params:
            self.group.comm.Bcast(p._data, root=0)

    # -- the step --------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Gives each shard its gradient, updates the shards, all-gathers the parameters."""
        loss = closure() if closure is not None else None
        size = self.group.size()
        comm = self.group.comm
        for group, local in zip(self.param_groups, self.optim.param_groups):
            local.update((k, v) for k, v in group.items() if k != "params")
        idle = self._idle_elements()
        for flat in self._flat:
            # the parameters are the truth (a checkpoint may have been loaded into them)
            flat.shard._data[...] = flat.mine([p._data for p in flat.params], flat.dtype)
            grads = [None if p.grad is None else p.grad._data for p in flat.params]
            if self.stage == 2:
                full = flat.flat(grads, flat.dtype)
                mine = np.empty(flat.shard_size, full.dtype)
                comm.Reduce_scatter_block(full, mine, mpi().SUM)
                mine /= size
                for p in flat.params:
                    p.grad = None  # only the shard's gradient is kept
            else:
                mine = flat.mine(grads, flat.dtype)
            flat.shard.grad = tensor(mine)
        kept = [self._values(flat, mask) for flat, mask in zip(self._flat, idle)]
        self.optim.step()
        for mask, values in zip(idle, kept):
            for array, old in values:
                array[mask] = old
        for flat in self._flat:
            full = np.empty(flat.shard_size * size, flat.shard._data.dtype)
            comm.Allgather(flat.shard._data, full)
            for p, lo, hi in zip(flat.params, flat.offsets, flat.offsets[1:]):
                p._data[...] = full[lo:hi].reshape(p.shape)
                p._vc.value += 1
        return loss

    def _idle_elements(self) -> list[np.ndarray]:
        """Per flat group, the shard elements of parameters that no rank has a gradient for:
        as in PyTorch, the step leaves them (and their optimizer state) as they are."""
        local = np.array([p.grad is not None for flat in self._flat for p in flat.params],
                         np.uint8)
        anywhere = np.empty_like(local)
        self.group.comm.Allreduce(local, anywhere, mpi().MAX)
        masks, start = [], 0
        for flat in self._flat:
            used = anywhere[start : start + len(flat.params)]
            masks.append(flat.shard_mask([not u for u in used]))
            start += len(flat.params)
        return masks

    def _values(self, flat: _FlatGroup, mask: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """The shard's and its state's elements under ``mask``, to put back after a step."""
        if not mask.any():
            return []
        arrays = [flat.shard._data] + [v._data for v in self.optim.state[flat.shard].values()
                                       if isinstance(v, Tensor) and v.shape == flat.shard.shape]
        return [(a, a[mask].copy()) for a in arrays]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the model's gradients and the shards'."""
        for flat in self._flat:
            for p in [*flat.params, flat.shard]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad._data[...] = 0

    # -- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Refused: each rank holds only its shard; use :meth:`sharded_state`."""
        raise DistributedError(f"ZeroRedundancyOptimizer.state_dict: {_SHARDED}")

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Refused: each rank holds only its shard; use :meth:`load_sharded_state`."""
        raise DistributedError(f"ZeroRedundancyOptimizer.load_state_dict: {_SHARDED}")

    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank holds (the 1/N that ZeRO is for)."""
        return sum(
            v.nbytes for s in self.optim.state.values() for v in s.values() if isinstance(v, Tensor)
        )

    def sharded_state(self) -> dict[str, Any]:
        """This rank's optimizer state for :func:`ember.distributed.checkpoint.save`: the
        shard tensors as :class:`ShardedTensor` pieces of the flat state (padding dropped),
        per-group scalars (step counts) as plain tensors."""
        out: dict[str, Any] = {}
        for i, flat in enumerate(self._flat):
            lo = flat.lo
            keep = max(0, min(flat.shard_size, flat.total - lo))
            for key, value in self.optim.state[flat.shard].items():
                if not isinstance(value, Tensor):
                    continue
                if value.shape == flat.shard.shape:
                    out[f"group{i}.{key}"] = ShardedTensor(
                        value.reshape(-1)[:keep], (flat.total,), lo
                    )
                else:
                    out[f"group{i}.{key}"] = value
        return out

    def load_sharded_state(self, load: Callable[[dict], Any]) -> None:
        """Fills this rank's state from a checkpoint, whatever the world size it was saved
        on: ``load(template)`` is ``lambda t: checkpoint.load(path, {"optim": t})``, say."""
        for flat in self._flat:  # make the state entries exist, with the right shapes
            if not self.optim.state[flat.shard]:
                flat.shard.grad = tensor(np.zeros(flat.shard_size, flat.shard._data.dtype))
                saved = flat.shard._data.copy()
                lrs = [g["lr"] for g in self.optim.param_groups]
                for g in self.optim.param_groups:
                    g["lr"] = 0.0
                self.optim.step()
                for g, lr in zip(self.optim.param_groups, lrs):
                    g["lr"] = lr
                flat.shard._data[...] = saved
                flat.shard.grad = None
        load(self.sharded_state())
