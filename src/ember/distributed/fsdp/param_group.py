"""The parameters of one ``fully_shard`` module (FSDP2): each rank keeps a ``Shard(0)`` piece
of every parameter; the pieces are all-gathered together for the module's compute and their
gradients reduce-scattered together.

**Layout.** Parameter ``i`` of global shape ``(n_i, *rest)`` is cut into ``torch.chunk``
pieces of ``c_i = ceil(n_i / W)`` rows over the ``W`` ranks (the pieces of a ``Shard(0)``
DTensor: the last ones short or empty; PyTorch pads them alike). A rank sends its pieces,
each zero-padded to ``c_i`` rows, end to end; one all-gather brings the ``W`` blocks, copied
into one buffer where every parameter is a contiguous view. Gradients go back the same way,
in one reduce-scatter.

**Gathers.** Every all-gather starts in :meth:`ShardedParamGroup.start_gather` (blocking, or
in the background for prefetching and ``unshard(async_op=True)``) and ends in ``gather``.
With an int ``reshard_after_forward=k`` forward keeps each rank's rows of ``k``-way pieces
(:class:`PieceLayout` over a communicator of ``k`` ranks), and backward gathers those. HSDP's
2-d mesh shards over its dim 1 and all-reduces the reduce-scattered gradients over dim 0.

**How the unsharded parameters reach forward.** The piece stays the module's registered
``nn.Parameter`` (what ``parameters()``, the optimizer and ``state_dict`` see). ``unshard``
makes the gathered views the outputs of one autograd Function of the pieces
(:class:`_Unshard`) and sets them as plain instance attributes, which shadow the registered
parameters while they are there (``Module.__getattr__`` reads ``_parameters`` only when the
ordinary lookup fails); ``reshard`` deletes them. The Function's backward is the
reduce-scatter, so autograd delivers each piece's averaged gradient into its ``.grad`` once
every use of the gathered parameters has contributed (a module called twice makes two nodes
whose gradients add up, as autograd adds any two uses of a leaf).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from ember import nn
from ember.autograd.engine import queue_callback
from ember.autograd.function import Function, once_differentiable
from ember.backend import Device
from ember.distributed.buffers import call, describe, mpi
from ember.distributed.device_mesh import DeviceMesh
from ember.distributed.fsdp.flat_param import pack_gathered_view, unpack_gathered_view
from ember.distributed.tensor.dtensor import DTensor
from ember.distributed.tensor.placement import Replicate, Shard, chunk_bounds
from ember.errors import ArgumentError, DeviceError
from ember.nn.parameter import Parameter, is_lazy
from ember.ops.creation import empty
from ember.tensor import Tensor, _wrap

# id(parameter) -> the group of the fully_shard module that sharded it (weak: the group holds
# the modules), for the originals and the pieces
_SHARDED: dict[int, weakref.ref] = {}


class ParamSlot:
    """Where a parameter is registered: ``module.<name>``, ``fqn`` below the sharded
    module; ``index`` into the group's distinct parameters (tied ones share it)."""

    __slots__ = ("fqn", "module", "name", "index")

    def __init__(self, fqn: str, module: nn.Module, name: str, index: int) -> None:
        self.fqn, self.module, self.name, self.index = fqn, module, name, index


class ShardedParamGroup:
    """The pieces of one module's parameters, their gathered buffer and their gradient
    reduction.

    Args:
        owner: the module's name in messages, ``fully_shard(Block)``.
        found: ``(fqn, module, name, parameter)`` for every registration of a parameter.
        mesh: the 1-d device mesh of the ranks that shard the parameters (HSDP: 2-d,
            replicated over dim 0, sharded over dim 1).
        param_dtype, reduce_dtype: the mixed-precision dtypes (None: the parameters' own).
    """

    def __init__(self, owner: str, found: list[tuple[str, nn.Module, str, Parameter]],
                 mesh: DeviceMesh, param_dtype: np.dtype | None,
                 reduce_dtype: np.dtype | None) -> None:
        self.owner = owner
        # a 1-d mesh shards over its ranks; HSDP's 2-d one replicates over dim 0 (the rows
        # hold the same pieces) and shards over dim 1
        self.mesh, self.group = mesh, mesh.get_group(mesh.ndim - 1)
        self.replicas = mesh.get_group(0) if mesh.ndim == 2 else None
        self.placements = [Shard(0)] if mesh.ndim == 1 else [Replicate(), Shard(0)]
        self.world, rank = self.group.size(), self.group.rank()
        self.slots: list[ParamSlot] = []
        distinct: dict[int, int] = {}
        originals: list[Parameter] = []
        for fqn, module, name, p in found:
            if id(p) not in distinct:
                distinct[id(p)] = len(originals)
                originals.append(p)
            self.slots.append(ParamSlot(fqn, module, name, distinct[id(p)]))
        _check_params(owner, [(s.fqn, originals[s.index]) for s in self.slots], param_dtype)
        self.shapes = [tuple(p.shape) for p in originals]
        self.layout = PieceLayout(self.shapes, self.group.comm, self.world, rank)
        self.rows, self.bounds = self.layout.rows, self.layout.bounds
        self.send_offsets = self.layout.send_offsets
        self.full_offsets = [o * self.world for o in self.send_offsets]
        # reshard_after_forward=k: after forward each rank keeps its rows of k-way pieces
        # (over k consecutive ranks), which backward gathers over those k only
        self.post_layout: PieceLayout | None = None
        self.post: tuple[list[np.ndarray], list[tuple]] | None = None  # (rows, sources)
        self.param_dtype = param_dtype
        self.reduce_dtype = reduce_dtype
        self.full: np.ndarray | None = None  # the gathered parameters, while they exist
        self.gathered_from: list[tuple] = []  # (piece, version, array) of each piece then
        # a started all-gather: (request, blocks, sources, layout)
        self.in_flight: tuple | None = None
        self.pending: np.ndarray | None = None  # gradients kept unreduced (no sync)
        self.sync = True
        self.reshard_after_backward = True
        self.backward_prefetch: list[ShardedParamGroup] = []  # gathered early in backward
        self.prefetched = False  # (this backward prefetched already)
        self.last_backward = True
        pieces = [self._piece(p, i) for i, p in enumerate(originals)]
        for slot in self.slots:
            slot.module._parameters[slot.name] = pieces[slot.index]
        for p in (*originals, *pieces):
            self._register(p)

    def _register(self, p: Parameter) -> None:
        _SHARDED[id(p)] = weakref.ref(self)
        weakref.finalize(p, _SHARDED.pop, id(p), None)

    def _piece(self, p: Parameter, i: int) -> Parameter:
        lo, hi = self.bounds[i]
        if p.is_meta:  # (to_empty and an initialisation fill it later)
            return Parameter(empty((hi - lo, *self.shapes[i][1:]), dtype=p.dtype,
                                   device=p.device), p.requires_grad)
        local = np.ascontiguousarray(p._data[lo:hi]).copy()
        return Parameter(_wrap(local, p._device), p.requires_grad)

    @property
    def device(self) -> Device:
        """The pieces' device (the meta device until ``to_empty``)."""
        return self.pieces()[0]._device

    # -- parameters --------------------------------------------------------------------------
    def pieces(self) -> list[Parameter]:
        """The registered pieces, one per distinct parameter (read now: ``module.double()``
        keeps the objects but may change their data)."""
        first = {}
        for s in self.slots:
            first.setdefault(s.index, s)
        found = [first[i].module._parameters[first[i].name] for i in range(len(self.shapes))]
        for p in found:
            if id(p) not in _SHARDED:  # (load_state_dict(assign=True) puts new pieces in)
                self._register(p)
        return found

    @property
    def compute_dtype(self) -> np.dtype:
        return self.param_dtype or self.pieces()[0]._data.dtype

    def _sources(self) -> list[tuple]:
        """Each piece, its version and its array (held: ``p.data = new`` keeps the version
        but replaces the array)."""
        return [(p, p._vc.value, p._data) for p in self.pieces()]

    def fresh(self) -> bool:
        """Whether the gathered buffer holds the pieces' current values (an optimizer step,
        a load or an assignment to ``.data`` changes them)."""
        return self.full is not None and self._current(self.gathered_from)

    def _current(self, sources: list[tuple]) -> bool:
        return all(p is q and version == p._vc.value and data is p._data
                   for (q, version, data), p in zip(sources, self.pieces()))

    def gather(self) -> np.ndarray:
        """All-gathers the pieces (in the compute dtype) into :attr:`full`, finishing the
        all-gather :meth:`start_gather` began if there is one (gathered again if the pieces
        changed since it began: a prefetch left unused across an optimizer step)."""
        if self.in_flight is None:
            self.start_gather(wait=True)
        request, blocks, sources, layout = self.in_flight
        self.in_flight = None
        if request is not None:
            call(request, "Wait")
            if not self._current(sources):
                return self.gather()
        full = np.empty(self.full_offsets[-1], blocks.dtype)
        for i, shape in enumerate(self.shapes):  # (each parameter's rows, then padding)
            lo, hi, size = layout.send_offsets[i], layout.send_offsets[i + 1], math.prod(shape)
            start = self.full_offsets[i]
            full[start:start + size] = blocks[:, lo:hi].reshape(-1)[:size]
        self.full, self.gathered_from, self.post = full, sources, None
        return full

    def start_gather(self, wait: bool = False, post: bool = False) -> None:
        """Issues the all-gather of the pieces (every all-gather of the group starts here),
        or with ``post`` of the rows kept after forward, over ``post_layout``'s ranks; without
        ``wait`` it runs in the background (MPI's ``Iallgather``) until :meth:`gather`
        finishes it. Nothing happens while one is in flight."""
        if self.in_flight is not None:
            return
        if post:
            layout, (local, sources) = self.post_layout, self.post
        else:
            pieces = self.pieces()
            for i, p in enumerate(pieces):
                self._check_piece(i, p)
            layout, local, sources = self.layout, [p._data for p in pieces], self._sources()
        dtype = self.compute_dtype
        send = np.zeros(layout.send_offsets[-1], dtype)
        for start, a in zip(layout.send_offsets, local):
            send[start:start + a.size] = a.reshape(-1)
        request = None
        if layout.world == 1:
            blocks = send.reshape(1, -1)
        else:
            blocks = np.empty((layout.world, send.size), dtype)
            args = (send.view(np.uint8), blocks.view(np.uint8))
            if wait:
                call(layout.comm, "Allgather", *args)
            else:
                request = call(layout.comm, "Iallgather", *args)
        self.in_flight = (request, blocks, sources, layout)

    def reshard_after_forward_to(self, ranks: int) -> None:
        """Makes :meth:`reshard_to_post` keep ``ranks``-way pieces (``fully_shard``'s int
        ``reshard_after_forward``); collective over the shard group (a communicator split)."""
        rank = self.group.rank()
        comm = self.group.comm.Split(rank // ranks, rank)
        self.post_layout = PieceLayout(self.shapes, comm, ranks, rank % ranks)

    def reshard_to_post(self) -> None:
        """After forward: keeps this rank's rows of the ``post_layout`` pieces of the
        gathered parameters and frees the rest (backward gathers them over fewer ranks)."""
        rows = [np.ascontiguousarray(v[lo:hi]) for v, (lo, hi)
                in zip(self.views(), self.post_layout.bounds)]
        sources = self.gathered_from
        self.reshard()
        self.post = (rows, sources)

    def _check_piece(self, i: int, p: Tensor) -> None:
        if p.is_meta:
            raise RuntimeError(
                f"{self.owner}: the parameters are on the meta device (no values to gather). "
                "Hint: module.to_empty(device='cpu'), then initialise them "
                "(module.reset_parameters() or nn.init: each rank fills its rows of the full "
                "tensor's draw)")
        lo, hi = self.bounds[i]
        piece = (hi - lo, *self.shapes[i][1:])
        if tuple(p.shape) != piece:
            fqn = next(s.fqn for s in self.slots if s.index == i)
            raise RuntimeError(
                f"{self.owner}: parameter '{fqn}' is a tensor of shape {tuple(p.shape)}, not "
                f"this rank's piece {piece} of {self.shapes[i]}; the module's parameters were "
                "replaced after fully_shard (functional_call, stateless swaps and assignments "
                "of other shapes are not supported on a sharded module). Hint: load values "
                "with load_state_dict")

    def views(self) -> list[np.ndarray]:
        """Each parameter's full value, a view of :attr:`full` (padding left out)."""
        return [self.full[start:start + math.prod(shape)].reshape(shape)
                for start, shape in zip(self.full_offsets, self.shapes)]

    def unshard(self) -> None:
        """Gathers the parameters (unless the buffer is fresh) and sets them on the modules
        as outputs of :class:`_Unshard`, so that gradients reach the pieces."""
        if self.in_flight is not None or not self.fresh():
            self.gather()
        self._install()

    def unshard_for_recompute(self) -> None:
        """:meth:`unshard` in backward, for activation checkpointing's recompute of a
        function the module's forward called (the buffer lives until backward ends)."""
        self._gathered_for_backward()
        self._install()

    def _install(self) -> None:
        full = _Unshard.apply(self, *self.pieces())
        for slot in self.slots:
            object.__setattr__(slot.module, slot.name, full[slot.index])

    def uninstall(self) -> None:
        """The modules show their registered pieces again (the buffer stays)."""
        for slot in self.slots:
            slot.module.__dict__.pop(slot.name, None)

    def reshard(self) -> None:
        """:meth:`uninstall` and free the gathered buffer (and rows kept after forward)."""
        self.uninstall()
        self.full, self.post = None, None

    # -- saved tensors -----------------------------------------------------------------------
    def pack(self, t: Tensor) -> Any:
        """``saved_tensors_hooks`` pack: views of the buffer are kept as their place in it."""
        return pack_gathered_view(t, self.full)

    def unpack(self, saved: Any) -> Any:
        """``saved_tensors_hooks`` unpack: the view, in the buffer gathered again."""
        return unpack_gathered_view(saved, self._gathered_for_backward, self.device)

    def _gathered_for_backward(self) -> np.ndarray:
        if self.in_flight is not None or not self.fresh():
            if self.in_flight is None and self.post is not None and self._current(self.post[1]):
                self.start_gather(wait=True, post=True)
            self.gather()
            queue_callback(self._after_backward)  # (frozen parameters: no _Unshard node)
        self.prefetch_for_backward()
        return self.full

    def prefetch_for_backward(self) -> None:
        """Once per backward, when this group first gathers (or, kept from forward, reduces):
        the groups ``set_modules_to_backward_prefetch`` named start gathering in the
        background, before their backward needs them."""
        if not self.prefetched:
            self.prefetched = True
            queue_callback(self._end_prefetch)
            for other in self.backward_prefetch:
                other.prefetch()

    def prefetch(self) -> None:
        """Starts gathering in the background unless the buffer is fresh or on its way."""
        if self.in_flight is None and not self.fresh():
            self.start_gather()

    def _end_prefetch(self) -> None:
        self.prefetched = False
        if self.last_backward:  # (prefetched for a backward that did not come)
            for other in self.backward_prefetch:
                if other.in_flight is not None:
                    other.gather()  # (MPI's request is waited for before its buffer goes)
                    other.reshard()

    def _after_backward(self) -> None:
        self.uninstall()  # (kept after forward without reshard_after_forward)
        self.post = None
        if self.reshard_after_backward:
            self.full = None

    # -- gradients ---------------------------------------------------------------------------
    def reduce_grads(self, grads: tuple[Tensor | None, ...], needs: tuple[bool, ...]) -> tuple:
        """Reduce-scatters the gradients of the gathered parameters and returns each piece's
        share of their mean over the ranks (None where not needed, where no rank's backward
        reached the parameter, as a single process leaves an unused parameter's ``.grad``
        None, or every one while gradient sync is off: the sum is kept for the next
        synchronized backward).

        Every rank's block ends with one count per parameter (1 where this rank has its
        gradient), so the reduce-scatter also tells each rank how many ranks had one."""
        world, used = self.world, self.send_offsets[-1]
        reduce = self.reduce_dtype or self.compute_dtype
        wire = reduce if reduce.itemsize >= 4 else np.dtype(np.float32)  # (MPI sums no 16-bit)
        blocks = np.zeros((world, used + len(grads)), wire)
        for i, g in enumerate(grads):
            if g is None:
                continue
            blocks[:, used + i] = 1
            padded = np.zeros(world * (self.send_offsets[i + 1] - self.send_offsets[i]), wire)
            flat = g._data.reshape(-1)
            padded[:flat.size] = flat.astype(reduce, copy=False)
            blocks[:, self.send_offsets[i]:self.send_offsets[i + 1]] = padded.reshape(world, -1)
        if self.pending is not None:
            blocks += self.pending
            self.pending = None
        if not self.sync:
            self.pending = blocks
            return (None,) * len(grads)
        mine = blocks[0].copy()
        if world > 1:
            call(self.group.comm, "Reduce_scatter_block", blocks, mine, mpi().SUM)
        if self.replicas is not None:  # HSDP: the replicas' sums of the same rows
            call(self.replicas.comm, "Allreduce", mpi().IN_PLACE, mine, mpi().SUM)
            world *= self.replicas.size()
        reached = mine[used:] > 0
        mine = (mine[:used] / world).astype(reduce, copy=False)
        out = []
        for i, (p, need) in enumerate(zip(self.pieces(), needs)):
            start = self.send_offsets[i]
            local = mine[start:start + p._data.size].reshape(p._data.shape)
            out.append(_wrap(local.astype(p._data.dtype), self.device)
                       if need and reached[i] else None)
        return tuple(out)

    def local_piece(self, key: str, value: Any, index: int) -> Any:
        """This rank's piece of parameter ``index`` from a state dict entry ``key``: a DTensor
        (redistributed to ``Shard(0)`` if needed) or a tensor of the full shape."""
        shape = self.shapes[index]
        if isinstance(value, DTensor):
            if tuple(value.shape) != shape:
                raise RuntimeError(f"{self.owner} load: '{key}' is a DTensor of shape "
                                   f"{tuple(value.shape)}, the parameter's is {shape}")
            if value.placements != tuple(self.placements):
                value = value.redistribute(self.mesh, self.placements)
            return value.to_local()
        if isinstance(value, Tensor | np.ndarray) and tuple(value.shape) == shape:
            lo, hi = self.bounds[index]
            return value[lo:hi]
        raise RuntimeError(f"{self.owner} load: '{key}' should be a DTensor or a tensor of the "
                           f"parameter's shape {shape}, got {type(value).__name__} of shape "
                           f"{tuple(getattr(value, 'shape', ()))}")

    def fqns(self) -> list[tuple[str, int]]:
        """``(fqn, index)`` of every registration below the sharded module."""
        return [(s.fqn, s.index) for s in self.slots]


class PieceLayout:
    """The ``torch.chunk`` pieces of a group's parameters over ``world`` ranks of ``comm``:
    each parameter's rows on rank ``rank`` (:attr:`bounds`), padded to :attr:`rows` to
    travel, laid end to end at :attr:`send_offsets`."""

    def __init__(self, shapes: list[tuple[int, ...]], comm: Any, world: int, rank: int) -> None:
        self.comm, self.world = comm, world
        self.rows = [chunk_bounds(s[0], world, 0)[1] for s in shapes]
        self.bounds = [chunk_bounds(s[0], world, rank) for s in shapes]
        block = [c * math.prod(s[1:]) for c, s in zip(self.rows, shapes)]  # a padded piece
        self.send_offsets = np.cumsum([0] + block).tolist()


class _Unshard(Function):
    """The pieces → the gathered parameters (already in ``group.full``); backward
    reduce-scatters their gradients."""

    @staticmethod
    def forward(ctx: Any, group: ShardedParamGroup, *pieces: Tensor) -> tuple[Tensor, ...]:
        ctx.group = group
        ctx.set_materialize_grads(False)  # (an unused parameter's gradient stays None)
        return tuple(_wrap(v, group.device) for v in group.views())

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        group = ctx.group
        group.prefetch_for_backward()
        out = group.reduce_grads(grads, ctx.needs_input_grad[1:])
        group._after_backward()
        return (None, *out)


def described(found: list[tuple[str, nn.Module, str, Parameter]]) -> list[tuple[str, str]]:
    """``(fqn, description)`` of each registration, for the check that every rank shards
    the same parameters: a piece of an earlier ``fully_shard`` is described without its
    shape (pieces differ between ranks; :func:`_check_params` refuses it after the check)."""
    first: dict[int, int] = {}
    out = []
    for i, (fqn, _, _, p) in enumerate(found):
        what = "sharded parameter" if id(p) in _SHARDED else describe("parameter", p)
        tied = f" (registration {first[id(p)]} again)" if id(p) in first else ""
        first.setdefault(id(p), i)
        out.append((fqn, what + tied))
    return out


def _check_params(owner: str, named: list[tuple[str, Parameter]],
                  param_dtype: np.dtype | None) -> None:
    """Refuses what ``Shard(0)`` pieces cannot hold (with the parameter's name)."""
    first_name, first = named[0]
    for fqn, p in named:
        other = _SHARDED.get(id(p), lambda: None)()
        if other is not None:
            raise ArgumentError(
                f"{owner}: parameter '{fqn}' is already sharded by {other.owner}. Apply "
                "fully_shard to submodules before their parents (bottom-up), and keep a "
                "parameter shared by several modules inside one fully_shard module")
        if is_lazy(p):
            raise ArgumentError(f"{owner}: parameter '{fqn}' is uninitialized (a lazy module's); "
                                "its shape is known after one forward. Hint: run the model once, "
                                "then fully_shard it")
        if p.ndim == 0:
            raise ArgumentError(f"{owner}: parameter '{fqn}' is 0-d; fully_shard shards "
                                "parameters along dim 0 (Shard(0)). Hint: give it shape (1,)")
        if p._device.type not in ("cpu", "meta"):
            raise DeviceError(f"{owner}: parameter '{fqn}' is on {p._device}, but Ember's MPI "
                              "process groups work on CPU tensors. Hint: keep the model on "
                              "the CPU")
        if param_dtype is None and p._data.dtype != first._data.dtype:
            raise ArgumentError(
                f"{owner}: parameters '{first_name}' ({first.dtype}) and '{fqn}' ({p.dtype}) "
                "differ in dtype; one module's parameters are gathered in one dtype. Hint: "
                "fully_shard their submodules separately, or set "
                "MixedPrecisionPolicy(param_dtype=...)")


def sharded_piece(p: Tensor) -> tuple[ShardedParamGroup, int] | None:
    """The group and parameter index of a ``fully_shard`` piece (None for other tensors)."""
    group = _SHARDED.get(id(p), lambda: None)()
    if group is not None:
        for i, q in enumerate(group.pieces()):
            if q is p:
                return group, i
    return None


def whole_of_piece(t: Tensor) -> tuple[tuple[int, ...], tuple[int, int]] | None:
    """``nn.init``'s hook (``SHARDED_PIECES``): the full shape and this rank's rows of a
    ``fully_shard`` piece."""
    found = sharded_piece(t)
    if found is None:
        return None
    group, i = found
    return group.shapes[i], group.bounds[i]


def sharded_grad_norm(parameters: list[Tensor], norm_type: float) -> tuple[list, Tensor | None]:
    """``nn.utils.clip_grad_norm_``'s hook (``SHARDED_NORMS``): the norm of the whole
    gradients of the ``fully_shard`` pieces among ``parameters`` (their pieces' sums of powers,
    or maxima, all-reduced over each process group), and the other parameters."""
    rest, local, dtype = [], {}, None
    for p in parameters:
        found = sharded_piece(p)
        if found is None:
            rest.append(p)
            continue
        group = found[0]
        if p.grad is not None:
            dtype = dtype or p.grad._data.dtype
        comm = group.group.comm
        seen = local.setdefault(id(comm), [comm, 0.0])
        seen[1] = _combine(seen[1], _norm_part(p.grad, norm_type), norm_type)
    if not local:
        return rest, None
    inf = norm_type == math.inf
    total = 0.0
    for comm, part in local.values():  # (the same order on every rank)
        total = _combine(total, comm.allreduce(part, op=mpi().MAX if inf else mpi().SUM),
                         norm_type)
    total = total if inf else total ** (1.0 / norm_type)
    return rest, _wrap(np.asarray(total, dtype or np.float32), parameters[0]._device)


def _norm_part(g: Tensor | None, norm_type: float) -> float:
    """A gradient's part of a norm: the maximum of ``|g|`` (inf) or the sum of ``|g|^p``."""
    if g is None or g._data.size == 0:
        return 0.0
    a = np.abs(g._data.astype(np.float64))
    return float(a.max()) if norm_type == math.inf else float((a ** norm_type).sum())


def _combine(a: float, b: float, norm_type: float) -> float:
    return max(a, b) if norm_type == math.inf else a + b
