"""One FSDP unit's parameters as one flat vector: its shard, gathering it for compute,
freeing the gathered copy, and reducing the gradients back to the shard.

The unit's original parameters leave their modules; each module attribute becomes a leaf
tensor (``requires_grad`` as the parameter's) whose memory is a view of the gathered flat
vector while the unit computes and an empty array while it is freed (PyTorch's freed
storage). Autograd records those leaves in the graph; refilling them before the unit's
backward (``FULL_SHARD``) is all that re-gathering takes. Each leaf's gradient is copied into
one flat gradient as it arrives, and when all have arrived the flat gradient is
reduce-scattered (all-reduced for ``NO_SHARD``) and averaged into the shard's ``.grad``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ember import nn
from ember.autograd.grad_mode import no_grad
from ember.distributed.buffers import call, mpi
from ember.distributed.flat_layout import FlatLayout
from ember.distributed.process_group import ProcessGroup
from ember.errors import ArgumentError
from ember.nn.parameter import Parameter
from ember.tensor import _wrap

FLAT_PARAM = "_flat_param"
_FLATTENED: dict[int, str] = {}  # id(original parameter) -> its unit, while it lives


class _GatheredView(NamedTuple):
    """Where a saved array lay in the gathered vector (the vector itself is freed)."""

    offset: int
    shape: tuple
    strides: tuple
    dtype: np.dtype


def pack_gathered_view(t: Any, full: np.ndarray | None) -> Any:
    """``saved_tensors_hooks`` pack for a unit's gathered parameters ``full``: a saved view of
    them (``weight.t()`` kept by a matmul) is kept as its place in ``full``, so that freeing
    ``full`` frees it; other tensors are kept as they are."""
    a = t._data
    if full is not None and isinstance(a, np.ndarray) and (a is full or a.base is full):
        offset = a.__array_interface__["data"][0] - full.__array_interface__["data"][0]
        return _GatheredView(offset, a.shape, a.strides, a.dtype)
    return t


def unpack_gathered_view(saved: Any, gathered: Callable[[], np.ndarray], device: Any) -> Any:
    """``saved_tensors_hooks`` unpack: what :func:`pack_gathered_view` kept, as a tensor (a
    view of ``gathered()``, the parameters gathered again for backward)."""
    if type(saved) is not _GatheredView:
        return saved
    full = gathered()
    return _wrap(np.ndarray(saved.shape, saved.dtype, buffer=full, offset=saved.offset,
                            strides=saved.strides), device)


class FlatParamHandle(FlatLayout):
    """The flat parameter of one unit, laid out over the ranks (``world`` is 1 for an
    unsharded, ``NO_SHARD``, one)."""

    def __init__(self, owner: str, params: list[tuple[nn.Module, str, Parameter]],
                 aliases: list[tuple[nn.Module, str, int]], group: ProcessGroup,
                 sharded: bool, param_dtype: np.dtype | None,
                 reduce_dtype: np.dtype | None) -> None:
        _check_uniform(owner, params)
        _check_not_flattened(owner, params)
        self.owner = owner
        self.slots = [(module, name, i) for i, (module, name, _) in enumerate(params)]
        self.slots += aliases  # (a parameter shared by several modules is flattened once)
        self.shapes = [tuple(p.shape) for _, _, p in params]
        super().__init__([p.numel() for _, _, p in params], group.rank() if sharded else 0,
                         group.size() if sharded else 1)
        self.group = group
        self.device = params[0][2]._device
        self.param_dtype = param_dtype  # (None: compute in the shards' own dtype)
        self.grad_dtype = reduce_dtype or param_dtype
        shard = self.mine([p._data for _, _, p in params], params[0][2]._data.dtype)
        self.flat_param = Parameter(_wrap(shard, self.device), params[0][2].requires_grad)
        self.leaves = [_wrap(np.empty(0, self.compute_dtype), self.device) for _ in params]
        for _, _, p in params:
            _FLATTENED[id(p)] = owner
            weakref.finalize(p, _FLATTENED.pop, id(p), None)
        for leaf, (_, _, p) in zip(self.leaves, params):
            leaf.requires_grad = p.requires_grad
        self.unsharded = False
        self.full: np.ndarray | None = None  # the gathered vector while it exists
        self.grad_full: np.ndarray | None = None   # this backward's gradients, laid flat
        self.arrived = 0
        self.accumulated: np.ndarray | None = None  # gradients kept unreduced under no_sync

    @property
    def dtype(self) -> np.dtype:
        """The shards' dtype (``module.double()`` after wrapping changes it)."""
        return self.flat_param._data.dtype

    @property
    def compute_dtype(self) -> np.dtype:
        return self.param_dtype or self.dtype

    @property
    def reduce_dtype(self) -> np.dtype:
        return self.grad_dtype or self.dtype

    # -- parameters --------------------------------------------------------------------------
    def gather(self, dtype: np.dtype) -> np.ndarray:
        """The full flat vector (padding included) in ``dtype``."""
        return self.all_gather(self.flat_param._data).astype(dtype, copy=False)

    def all_gather(self, local: np.ndarray) -> np.ndarray:
        """The ranks' shard-sized arrays (the shard, or optimizer state of its shape) end to
        end."""
        local = np.ascontiguousarray(local)
        if self.world == 1:
            return local
        full = np.empty(self.shard_size * self.world, local.dtype)
        call(self.group.comm, "Allgather", local.view(np.uint8), full.view(np.uint8))
        return full

    def unshard(self, dtype: np.dtype | None = None) -> None:
        """Points the module attributes at the gathered parameters (compute dtype unless
        ``dtype`` is given)."""
        full = self.gather(dtype or self.compute_dtype)
        self.full = full
        for leaf, shape, lo, hi in zip(self.leaves, self.shapes, self.offsets, self.offsets[1:]):
            leaf._data = full[lo:hi].reshape(shape)
        self.unsharded = True

    def reshard(self) -> None:
        """Frees the gathered parameters (the attributes hold empty arrays until the next
        gather)."""
        if not self.frees:
            return  # (the attributes are views of the flat parameter itself)
        for leaf in self.leaves:
            leaf._data = np.empty(0, leaf._data.dtype)
        self.full = None
        self.unsharded = False

    @property
    def frees(self) -> bool:
        """Whether :meth:`reshard` frees memory (the gathered vector is not the shard)."""
        return self.world > 1 or self.compute_dtype != self.dtype

    def pack(self, t: Any) -> Any:
        """``saved_tensors_hooks`` pack: see :func:`pack_gathered_view`."""
        return pack_gathered_view(t, self.full)

    def unpack(self, saved: Any) -> Any:
        """``saved_tensors_hooks`` unpack: the view again, in the vector gathered for
        backward."""
        return unpack_gathered_view(saved, self._gathered_for_backward, self.device)

    def _gathered_for_backward(self) -> np.ndarray:
        if self.full is None:
            raise RuntimeError(f"{self.owner}: backward needs the gathered parameters, but "
                               "they are freed (the unit's outputs got no gradient before its "
                               "inner nodes ran)")
        return self.full

    def install(self) -> None:
        """Puts the leaves in the modules as plain attributes (not parameters)."""
        for module, name, i in self.slots:
            object.__setattr__(module, name, self.leaves[i])

    def write_back(self) -> None:
        """Copies this rank's part of the gathered values (changed by the user) to the shard."""
        shard = self.flat_param._data
        shard[...] = self.mine([leaf._data for leaf in self.leaves], shard.dtype)
        self.flat_param._vc.value += 1

    def local_pieces(self) -> list[tuple[np.ndarray, int]]:
        """Per original parameter, this rank's flattened piece of it (a view of the shard) and
        where it starts."""
        shard = self.flat_param._data
        return [(shard[lo:hi], start) for lo, hi, start in self.pieces()]

    # -- gradients ---------------------------------------------------------------------------
    def expected(self) -> int:
        return sum(leaf.requires_grad for leaf in self.leaves)

    def take_grad(self, i: int, grad: np.ndarray) -> bool:
        """Adds leaf ``i``'s gradient to the flat gradient; True once all have arrived."""
        if self.grad_full is None:
            self.grad_full = np.zeros(self.shard_size * self.world, self.reduce_dtype)
        self.grad_full[self.offsets[i] : self.offsets[i + 1]] = grad.reshape(-1)
        self.arrived += 1
        return self.arrived == self.expected()

    def reduce_grad(self, sync: bool) -> None:
        """Averages the flat gradient over the ranks into the shard's ``.grad`` (or, when
        not ``sync``, keeps it for the next synchronized backward)."""
        full, self.grad_full, self.arrived = self.grad_full, None, 0
        if full is None:
            return
        if self.accumulated is not None:
            full = full + self.accumulated
            self.accumulated = None
        if not sync:
            self.accumulated = full
            return
        wire = full if full.dtype.itemsize >= 4 else full.astype(np.float32)
        comm = self.group.comm
        if self.world == 1:
            mine = wire.copy()
            if self.group.size() > 1:
                call(comm, "Allreduce", mpi().IN_PLACE, mine, mpi().SUM)
            mine /= self.group.size()
        else:
            mine = np.empty(self.shard_size, wire.dtype)
            call(comm, "Reduce_scatter_block", wire, mine, mpi().SUM)
            mine /= self.world
        mine = mine.astype(self.reduce_dtype).astype(self.dtype)
        p = self.flat_param
        with no_grad():
            if p.grad is None:
                p.grad = _wrap(mine, self.device)
            else:
                p.grad._data += mine


def _check_uniform(owner: str, params: list[tuple[nn.Module, str, Parameter]]) -> None:
    """Flattening needs one dtype and one ``requires_grad`` (PyTorch's rule)."""
    names = [f"{type(m).__name__}.{n}" for m, n, _ in params]
    for what, key in (("dtype", lambda p: p._data.dtype), ("requires_grad",
                                                           lambda p: p.requires_grad)):
        first = key(params[0][2])
        for name, (_, _, p) in zip(names, params):
            if key(p) != first:
                raise ArgumentError(
                    f"{owner}: Must flatten tensors with uniform {what} but got {first} "
                    f"({names[0]}) and {key(p)} ({name}). Hint: wrap the parameters of "
                    f"each {what} in their own FullyShardedDataParallel unit")


def _check_not_flattened(owner: str, params: list[tuple[nn.Module, str, Parameter]]) -> None:
    """A parameter shared with a module of another unit would become one copy per unit, each
    trained on part of its gradient: refused, as PyTorch requires one unit for them."""
    for module, name, p in params:
        other = _FLATTENED.get(id(p))
        if other is not None:
            raise ArgumentError(
                f"{owner}: parameter {type(module).__name__}.{name} is shared with {other}, "
                "which has flattened it already; each unit would train its own copy. Modules "
                "that share a parameter must be in the same FSDP unit. Hint: wrap their "
                "common parent instead (keep them out of auto_wrap_policy and wrap())")
