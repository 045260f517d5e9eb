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
step, as PyTorch's optimizers skip it, and a group with no gradient anywhere is not stepped;
but in a group where others have gradients, the shard's step count (Adam's bias correction)
advances for it, where PyTorch would count its steps apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ember.distributed.buffers import call, check_same_everywhere, mpi
from ember.distributed.checkpoint import ShardedTensor
from ember.distributed.flat_layout import FlatLayout
from ember.distributed.process_group import DistributedError, ProcessGroup, resolve
from ember.errors import ArgumentError, CheckpointError
from ember.nn.parameter import Parameter
from ember.ops.creation import tensor
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor

_SHARDED = (
    "the optimizer state has not been consolidated on this rank ({rank}): each rank holds "
    "only its shard. Hint: call opt.consolidate_state_dict(to={rank}) on every rank first, or "
    "save opt.sharded_state() with ember.distributed.checkpoint.save and restore it with "
    "opt.load_sharded_state"
)


class _FlatGroup(FlatLayout):
    """One parameter group laid flat: its parameters, their offsets, this rank's shard."""

    __slots__ = ("params", "dtype", "shard")

    def __init__(self, params: list[Tensor], rank: int, size: int) -> None:
        dtypes = {p._data.dtype for p in params} or {np.dtype(np.float32)}  # (all frozen)
        if len(dtypes) != 1:
            raise DistributedError(
                f"ZeroRedundancyOptimizer: a parameter group mixes dtypes "
                f"{sorted(map(str, dtypes))}; put each dtype in its own group"
            )
        super().__init__([p.numel() for p in params], rank, size)
        self.params = params
        self.dtype = dtypes.pop()
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
            raise ArgumentError(f"ZeroRedundancyOptimizer: stage must be 1 or 2, got {stage}")
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer: overlap_with_ddp=True is not "
                                      "supported. Hint: call opt.step() after backward")
        self.group = resolve(process_group, "ZeroRedundancyOptimizer")
        self.stage = stage
        self._flat: list[_FlatGroup] = []
        self.optim: Optimizer | None = None
        self._consolidated: dict | None = None
        self._pending: list[dict] | None = []  # the local groups, until the local optimizer
        super().__init__(params, defaults)
        # made over every group at once, as PyTorch's: an optimizer that makes state when
        # constructed (Adagrad) makes it for each group
        pending, self._pending = self._pending, None
        self.optim = optimizer_class(pending, **defaults)
        for g, local in zip(self.param_groups, self.optim.param_groups):
            for k, v in local.items():  # the local optimizer's defaults
                g.setdefault(k, v)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a parameter group (as any optimizer's, e.g. when unfreezing layers): it is laid
        flat and sharded like the others; every rank adds the same group."""
        super().add_param_group(param_group)
        g = self.param_groups[-1]
        ps = [p for p in g["params"] if p.requires_grad]
        try:  # all or nothing: a refused group leaves the optimizer as it was
            check_same_everywhere(
                self.group, "ZeroRedundancyOptimizer expects the same parameter groups",
                "trainable parameters in the group",
                [(f"parameter {j}", f"tensor {list(p.shape)} {p._data.dtype.name}")
                 for j, p in enumerate(ps)],
                "give every rank the same parameters, in the same order")
            flat = _FlatGroup(ps, self.group.rank(), self.group.size())
            local = {**{k: v for k, v in g.items() if k != "params"}, "params": [flat.shard]}
            if self._pending is not None:  # (in the constructor)
                self._pending.append(local)
            else:
                self.optim.add_param_group(local)
        except Exception:
            self.param_groups.pop()
            raise
        self._flat.append(flat)
        if self.stage == 2:  # no DDP in front: replicas must start equal
            self._broadcast(ps)
        if self._pending is None:
            for k, v in self.optim.param_groups[-1].items():  # the local optimizer's defaults
                g.setdefault(k, v)

    def _broadcast(self, params: list[Tensor]) -> None:
        for p in params:
            call(self.group.comm, "Bcast", p._data, root=0)

    # -- the step --------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Gives each shard its gradient, updates the shards, all-gathers the parameters."""
        loss = closure() if closure is not None else None
        self._check_unfrozen()
        size = self.group.size()
        comm = self.group.comm
        for group, local in zip(self.param_groups, self.optim.param_groups):
            local.update((k, v) for k, v in group.items() if k != "params")
        idle = self._idle_elements()
        for flat, mask in zip(self._flat, idle):
            # the parameters are the truth (a checkpoint may have been loaded into them)
            flat.shard._data[...] = flat.mine([p._data for p in flat.params], flat.dtype)
            grads = [None if p.grad is None else p.grad._data for p in flat.params]
            if self.stage == 2:
                full = flat.flat(grads, flat.dtype)
                mine = np.empty(flat.shard_size, full.dtype)
                call(comm, "Reduce_scatter_block", full, mine, mpi().SUM)
                mine /= size
                for p in flat.params:
                    p.grad = None  # only the shard's gradient is kept
            else:
                mine = flat.mine(grads, flat.dtype)
            # a group no rank has a gradient for is skipped whole, as PyTorch's optimizers
            # skip such parameters: no state made, no step counted
            flat.shard.grad = None if mask is None else tensor(mine)
        kept = [self._values(flat, mask) for flat, mask in zip(self._flat, idle)]
        self.optim.step()
        for mask, values in zip(idle, kept):
            for array, old in values:
                array[mask] = old
        for flat in self._flat:
            full = np.empty(flat.shard_size * size, flat.shard._data.dtype)
            call(comm, "Allgather", flat.shard._data, full)
            for p, lo, hi in zip(flat.params, flat.offsets, flat.offsets[1:]):
                p._data[...] = full[lo:hi].reshape(p.shape)
                p._vc.value += 1
        return loss

    def _check_unfrozen(self) -> None:
        """A parameter frozen when its group was added is not laid out: if it has been
        unfrozen since, say so rather than leave it untrained."""
        for i, (group, flat) in enumerate(zip(self.param_groups, self._flat)):
            if len(group["params"]) == len(flat.params):
                continue
            laid = {id(p) for p in flat.params}
            for j, p in enumerate(group["params"]):
                if p.requires_grad and id(p) not in laid:
                    raise DistributedError(
                        f"ZeroRedundancyOptimizer.step: parameter {j} of group {i} (shape "
                        f"{tuple(p.shape)}) was frozen (requires_grad=False) when its group was "
                        "added and has been unfrozen since; ZeRO lays out only the parameters "
                        "that require grad when their group is added, so it would not train. "
                        "Hint: leave the layers to unfreeze out of the optimizer and add them "
                        "with opt.add_param_group({'params': ...}) when unfreezing them")

    def _idle_elements(self) -> list[np.ndarray | None]:
        """Per flat group, the shard elements of parameters that no rank has a gradient for:
        as in PyTorch, the step leaves them (and their optimizer state) as they are; None for
        a group none of whose parameters has one."""
        local = np.array([p.grad is not None for flat in self._flat for p in flat.params],
                         np.uint8)
        anywhere = np.empty_like(local)
        call(self.group.comm, "Allreduce", local, anywhere, mpi().MAX)
        masks, start = [], 0
        for flat in self._flat:
            used = anywhere[start : start + len(flat.params)]
            # (a group of only frozen parameters has an empty shard: stepped, as before, so
            # that its checkpoints keep their entries)
            masks.append(flat.shard_mask([not u for u in used])
                         if used.any() or not flat.params else None)
            start += len(flat.params)
        return masks

    def _values(self, flat: _FlatGroup, mask: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """The shard's and its state's elements under ``mask``, to put back after a step."""
        if mask is None or not mask.any():
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
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gathers the whole optimizer state on rank ``to`` of the group, for
        :meth:`state_dict` there (as PyTorch's); every rank calls it.

        Example:
            >>> opt.consolidate_state_dict(to=0)
            >>> if dist.get_rank() == 0: ember.save(opt.state_dict(), "optim.pt")
        """
        mine = [{k: v._data if isinstance(v, Tensor) else v
                 for k, v in self.optim.state.get(flat.shard, {}).items()} for flat in self._flat]
        everyone = self.group.comm.gather(mine, root=to)
        self._consolidated = None
        if self.group.rank() != to:
            return
        state: dict[Tensor, dict[str, Any]] = {}
        for i, flat in enumerate(self._flat):
            shards = [ranks[i] for ranks in everyone]
            for key, value in shards[0].items():
                if isinstance(value, np.ndarray) and value.shape == flat.shard.shape:
                    full = np.concatenate([s[key] for s in shards])
                    for p, lo, hi in zip(flat.params, flat.offsets, flat.offsets[1:]):
                        state.setdefault(p, {})[key] = tensor(full[lo:hi].reshape(p.shape))
                else:
                    for p in flat.params:
                        state.setdefault(p, {})[key] = (tensor(value.copy()) if isinstance(
                            value, np.ndarray) else value)
        self._consolidated = state

    def state_dict(self) -> dict[str, Any]:
        """The optimizer state last gathered on this rank by :meth:`consolidate_state_dict`,
        in the wrapped optimizer's layout, PyTorch's: state by parameter index,
        ``param_groups`` with the indices. A plain Ember optimizer loads it (a PyTorch one once
        its tensors are torch tensors). A parameter frozen when its group was added has no
        state."""
        if self._consolidated is None:
            raise DistributedError("ZeroRedundancyOptimizer.state_dict: "
                                   + _SHARDED.format(rank=self.group.rank()))
        self.state = defaultdict(dict, self._consolidated)
        try:
            return super().state_dict()
        finally:
            self.state = defaultdict(dict)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a whole state dict (:meth:`state_dict`'s, or a plain optimizer's over the
        same parameter groups): every rank calls it and keeps its shard. The state it holds
        replaces this optimizer's, whatever that was; a refused state dict changes nothing.
        The parameters of a group share one step count, so in each group either all or none
        of them have state, and their saved ``step`` values agree."""
        groups, local = self.param_groups, [dict(g) for g in self.optim.param_groups]
        state = self.optim.state
        try:
            super().load_state_dict(state_dict)
            full, self.state = self.state, defaultdict(dict)
            for group, mine in zip(self.param_groups, self.optim.param_groups):
                mine.update((k, v) for k, v in group.items() if k != "params")
            has = [any(full.get(p) for p in flat.params) for flat in self._flat]
            self.optim.state = defaultdict(dict)  # made anew for the loaded hyperparameters
            self._make_state(has)
            for i, (flat, stepped) in enumerate(zip(self._flat, has)):
                if stepped:
                    self._fill_shard(i, flat, [full.get(p) or {} for p in flat.params])
        except Exception:
            self.param_groups, self.state, self.optim.state = groups, defaultdict(dict), state
            for mine, saved in zip(self.optim.param_groups, local):
                mine.clear()
                mine.update(saved)
            raise

    def _fill_shard(self, i: int, flat: _FlatGroup, entries: list[dict[str, Any]]) -> None:
        """Puts the shard's piece of per-parameter ``entries`` into the local state."""
        if not all(entries):
            raise ArgumentError(f"ZeroRedundancyOptimizer.load_state_dict: in parameter group {i}"
                                f", {sum(map(bool, entries))} of its {len(entries)} trainable "
                                "parameters have state; ZeRO keeps one step count per group. "
                                "Hint: put them in separate groups")
        for key, value in self.optim.state[flat.shard].items():
            given = [e[key] for e in entries if key in e]
            if not given:
                raise ArgumentError(f"ZeroRedundancyOptimizer.load_state_dict: parameter group {i}"
                                    f" has state but no {key!r} for any of its parameters")
            if isinstance(value, Tensor) and value.shape == flat.shard.shape:
                arrays = [e[key]._data if key in e else None for e in entries]
                value._data[...] = flat.mine(arrays, value._data.dtype)
                continue
            scalars = {float(np.asarray(v._data if isinstance(v, Tensor) else v)) for v in given}
            if len(scalars) > 1:
                raise ArgumentError(f"ZeroRedundancyOptimizer.load_state_dict: the parameters of "
                                    f"group {i} have different {key!r} values {sorted(scalars)}; "
                                    "ZeRO keeps one per group. Hint: put them in separate groups")
            if isinstance(value, Tensor):
                value._data[...] = np.asarray(given[0]._data if isinstance(given[0], Tensor)
                                              else given[0])
            else:
                self.optim.state[flat.shard][key] = given[0]

    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank holds (the 1/N that ZeRO is for)."""
        return sum(
            v.nbytes for s in self.optim.state.values() for v in s.values() if isinstance(v, Tensor)
        )

    def sharded_state(self) -> dict[str, Any]:
        """This rank's optimizer state for :func:`ember.distributed.checkpoint.save`: the
        shard tensors as :class:`ShardedTensor` pieces of the flat state (padding dropped),
        per-group scalars (step counts) as plain tensors, and per group whether it has state
        yet (none before the first step)."""
        out: dict[str, Any] = {}
        for i, flat in enumerate(self._flat):
            lo = flat.lo
            keep = max(0, min(flat.shard_size, flat.total - lo))
            state = self.optim.state.get(flat.shard, {})
            out[f"group{i}.has_state"] = tensor(np.array(bool(state), np.uint8))
            for key, value in state.items():
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
        on: ``load(template)`` is ``lambda t: checkpoint.load(path, {"optim": t})``, say. It
        is called twice: first for which groups have state, then for the state."""
        marks = {f"group{i}.has_state": tensor(np.ones((), np.uint8))
                 for i in range(len(self._flat))}
        try:
            load(marks)
        except CheckpointError as e:  # saved before the marks existed, so after a step
            if "no entry" not in str(e) or ".has_state'" not in str(e):
                raise
            for m in marks.values():
                m._data[...] = 1
        self._make_state([bool(m.item()) for m in marks.values()])
        load({k: v for k, v in self.sharded_state().items() if k not in marks})

    def _make_state(self, wanted: list[bool]) -> None:
        """Gives the shards of the ``wanted`` groups state entries of the right shapes (a step
        with zero gradients and learning rate 0: its values are loaded over), and the others
        none, as before a first step."""
        state = self.optim.state
        need = [flat for flat, w in zip(self._flat, wanted) if w and not state.get(flat.shard)]
        for flat, w in zip(self._flat, wanted):
            if not w:
                state.pop(flat.shard, None)
        if not need:
            return
        kept = [(f, f.shard.grad, f.shard._data.copy()) for f in self._flat]
        lrs = [g["lr"] for g in self.optim.param_groups]
        for f in self._flat:
            f.shard.grad = tensor(np.zeros_like(f.shard._data)) if f in need else None
        try:
            for g in self.optim.param_groups:
                g["lr"] = 0.0
            self.optim.step()
        finally:
            for g, lr in zip(self.optim.param_groups, lrs):
                g["lr"] = lr
            for f, grad, data in kept:
                f.shard.grad = grad
                f.shard._data[...] = data
