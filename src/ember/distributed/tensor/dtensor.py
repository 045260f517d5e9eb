"""``DTensor``: a global tensor laid out over a :class:`DeviceMesh`, each rank holding its
local piece (``torch.distributed.tensor.DTensor``).

A DTensor is a thin wrapper: its local tensor is an ordinary Ember tensor, which carries the
autograd history, so gradients flow through :meth:`DTensor.from_local`,
:meth:`~DTensor.to_local` and :meth:`~DTensor.redistribute` (whose backward is the reverse
redistribution) and through every op, which computes on local tensors (see
:mod:`ember.distributed.tensor.ops`).

Example (2 ranks):
    >>> mesh = init_device_mesh("cpu", (2,))
    >>> d = distribute_tensor(ember.arange(6.0).view(3, 2), mesh, [Shard(0)])
    >>> d.shape, d.placements               # rank 0 holds rows 0-1, rank 1 row 2
    (ember.Size([3, 2]), (Shard(dim=0),))
    >>> d.redistribute(mesh, [Replicate()]).to_local()
    tensor([[0., 1.],
            [2., 3.],
            [4., 5.]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.autograd.function import Function
from ember.distributed import collectives
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh
from ember.distributed.object_collectives import all_gather_object
from ember.distributed.process_group import get_world_size
from ember.distributed.tensor.placement import Partial, Placement, Replicate, Shard
from ember.distributed.tensor.redistribute import (
    local_piece,
    local_shape,
    partition,
    redistribute_local,
)
from ember.dtypes import DType
from ember.errors import ArgumentError
from ember.ops import compare
from ember.ops.overrides import TensorLikeOperand, outermost_op
from ember.size import Size
from ember.tensor import Tensor

__all__ = ["DTensor", "UnsupportedShardingError", "distribute_tensor"]


class UnsupportedShardingError(TensorLikeOperand, NotImplementedError):
    """An op met DTensor operands it has no sharding rule for (or mixed with tensors)."""


class DTensor:
    """A tensor distributed over ``device_mesh`` by one placement per mesh dimension.

    Made by :func:`distribute_tensor` or :meth:`from_local`, not directly. ``shape`` is the
    global shape; :meth:`to_local` gives this rank's piece.
    """

    __slots__ = ("_local_tensor", "_mesh", "_placements", "_shape")

    def __init__(self, local: Tensor, mesh: DeviceMesh, placements: Sequence[Placement],
                 shape: Sequence[int]) -> None:
        self._local_tensor = local
        self._mesh = mesh
        self._placements = tuple(placements)
        self._shape = Size(shape)

    # -- making and unmaking -----------------------------------------------------------------
    @staticmethod
    def from_local(local_tensor: Tensor, device_mesh: DeviceMesh | None = None,
                   placements: Sequence[Placement] | None = None, *, run_check: bool = False,
                   shape: Sequence[int] | None = None,
                   stride: Sequence[int] | None = None) -> DTensor:
        """Every rank's ``local_tensor`` taken as its piece of one DTensor; differentiable
        (the gradient of the local tensor is its piece of the DTensor's gradient).

        Without ``shape`` the pieces are assumed even (global size = local size × ranks along
        each sharding mesh dimension); pass ``shape`` for uneven ones. ``run_check`` checks
        that the ranks agree on the dtype and number of dimensions (and the shape, when
        ``shape`` is not given, as PyTorch checks) and gives ``Replicate``
        dimensions the values of their group's first rank (a broadcast, as PyTorch does).
        ``stride`` is accepted for PyTorch's signature; Ember's DTensors are contiguous.

        Example (2 ranks):
            >>> DTensor.from_local(ember.ones(2, 3), mesh, [Shard(0)]).shape
            ember.Size([4, 3])
        """
        mesh = device_mesh if device_mesh is not None else world_mesh()
        places = _normalize(placements or [Replicate()] * mesh.ndim, mesh, local_tensor.ndim)
        inferred = shape is None
        if inferred:
            full = list(local_tensor.shape)
            for m, p in enumerate(places):
                if isinstance(p, Shard):
                    full[p.dim] *= mesh.size(m)
            shape = full
        elif tuple(local_shape(shape, mesh, places)) != tuple(local_tensor.shape):
            raise ArgumentError(f"DTensor.from_local: a local tensor of shape "
                                f"{tuple(local_tensor.shape)} is not this rank's piece of shape "
                                f"{tuple(shape)} under {places} (expected "
                                f"{local_shape(shape, mesh, places)})")
        if run_check:
            local_tensor = _checked(local_tensor, mesh, places, same_shape=inferred)
        return DTensor(local_tensor, mesh, places, shape)

    def to_local(self, *, grad_placements: Sequence[Placement] | None = None) -> Tensor:
        """This rank's piece, as an ordinary tensor (differentiable: its gradient is taken
        as this rank's piece of the DTensor's gradient). With ``grad_placements`` that
        gradient is taken as a piece under those placements instead (e.g. ``Partial()``
        where each rank's loss is a different term) and redistributed in backward.

        Example (2 ranks):
            >>> distribute_tensor(ember.zeros(4, 3), mesh, [Shard(0)]).to_local().shape
            ember.Size([2, 3])
        """
        if grad_placements is None:
            return self._local_tensor
        given = _normalize(grad_placements, self._mesh, self.ndim)
        if local_shape(self._shape, self._mesh, given) != tuple(self._local_tensor.shape):
            raise ArgumentError(f"DTensor.to_local: grad_placements {given} do not fit the local "
                                f"tensor of shape {tuple(self._local_tensor.shape)} (placements "
                                f"{self._placements})")
        wanted = _grad_layout(self._placements)
        if given == wanted:
            return self._local_tensor
        return _GradLayout.apply(self._local_tensor, self, given, wanted)

    def redistribute(self, device_mesh: DeviceMesh | None = None,
                     placements: Sequence[Placement] | None = None, *,
                     async_op: bool = False) -> DTensor:
        """The same global tensor under ``placements`` (every transition between
        ``Shard``, ``Replicate`` and ``Partial``); differentiable, its backward is the
        reverse redistribution. ``device_mesh`` must be this DTensor's mesh.

        Example (2 ranks):
            >>> d = distribute_tensor(ember.ones(4, 2), mesh, [Shard(0)])
            >>> d.redistribute(mesh, [Shard(1)]).to_local().shape
            ember.Size([4, 1])
        """
        if device_mesh is not None and device_mesh is not self._mesh and \
                device_mesh._ranks.tolist() != self._mesh._ranks.tolist():
            raise NotImplementedError(f"DTensor.redistribute: moving to another mesh "
                                      f"({device_mesh}) from {self._mesh} is not supported")
        if async_op:
            raise NotImplementedError("DTensor.redistribute: async_op=True is not supported; "
                                      "Ember's redistributions are synchronous")
        target = _normalize(placements or self._placements, self._mesh, self.ndim)
        local = redistribute_local(self._local_tensor, self._mesh, self._shape,
                                   self._placements, target)
        return DTensor(local, self._mesh, target, self._shape)

    def full_tensor(self) -> Tensor:
        """The whole global tensor on every rank (redistributed to ``Replicate``);
        differentiable.

        Example (2 ranks):
            >>> distribute_tensor(ember.arange(4.0), mesh, [Shard(0)]).full_tensor()
            tensor([0., 1., 2., 3.])
        """
        return self.redistribute(self._mesh, [Replicate()] * self._mesh.ndim).to_local()

    # -- what it is --------------------------------------------------------------------------
    @property
    def placements(self) -> tuple[Placement, ...]:
        """One placement per mesh dimension."""
        return self._placements

    @property
    def device_mesh(self) -> DeviceMesh:
        """The mesh the tensor is laid out on."""
        return self._mesh

    @property
    def shape(self) -> Size:
        """The global shape."""
        return self._shape

    def size(self, dim: int | None = None) -> Any:
        """The global shape, or its size along ``dim``."""
        return self._shape if dim is None else self._shape[dim]

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        return self._shape.numel()

    @property
    def dtype(self) -> DType:
        return self._local_tensor.dtype

    @property
    def device(self) -> Any:
        return self._local_tensor.device

    @property
    def requires_grad(self) -> bool:
        return self._local_tensor.requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> DTensor:
        self._local_tensor.requires_grad_(requires_grad)
        return self

    @property
    def grad(self) -> DTensor | None:
        """The gradient of a leaf DTensor, with its placements, ``Replicate`` where it is
        ``Partial`` (None before backward)."""
        g = self._local_tensor.grad
        return None if g is None else DTensor(g, self._mesh, _grad_layout(self._placements),
                                              self._shape)

    def backward(self, gradient: DTensor | None = None) -> None:
        """Backpropagates from a replicated DTensor (a loss every rank holds whole)."""
        if any(not p.is_replicate() for p in self._placements):
            raise RuntimeError(f"DTensor.backward: the tensor has placements "
                               f"{self._placements}; backward needs Replicate() on every mesh "
                               "dimension. Hint: call .full_tensor() (or redistribute) first")
        g = None if gradient is None else gradient.full_tensor()
        self._local_tensor.backward(g)

    def detach(self) -> DTensor:
        return DTensor(self._local_tensor.detach(), self._mesh, self._placements, self._shape)

    def __repr__(self) -> str:
        return (f"DTensor(local_tensor={self._local_tensor!r}, device_mesh={self._mesh!r}, "
                f"placements={self._placements})")

    def __getattr__(self, name: str) -> Any:
        # a core op reading a tensor's internals (``_data``) or a method without a rule
        if hasattr(Tensor, name) and not name.startswith("__"):
            raise _mixed_error(name, self)
        raise AttributeError(f"'DTensor' object has no attribute {name!r}")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise _mixed_error(None, self)

    def __eq__(self, other: object) -> Any:  # elementwise, as a tensor's (rule: tensor_ops)
        return compare.eq(self, other)

    def __ne__(self, other: object) -> Any:
        return compare.ne(self, other)

    def __bool__(self) -> bool:
        raise RuntimeError("the truth value of a DTensor is ambiguous. Hint: compare "
                           "full_tensor() values")

    __hash__ = object.__hash__


class _GradLayout(Function):
    """Identity forward; backward redistributes the gradient from the layout the caller
    gave (``grad_placements``) to the one the DTensor's convention expects."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, d: DTensor, given: tuple, wanted: tuple) -> Tensor:
        ctx.layout = (d._mesh, d._shape, given, wanted)
        return x.clone()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        mesh, shape, given, wanted = ctx.layout
        return redistribute_local(g, mesh, shape, given, wanted), None, None, None


class _Mixed(UnsupportedShardingError):
    def __str__(self) -> str:  # the op is found when the message is read (cheap when caught)
        op = self.args[0] or outermost_op(self.__traceback__)
        return self.args[1].format(op=op)


def _mixed_error(method: str | None, d: DTensor) -> _Mixed:
    what = f"DTensor.{method}" if method and not method.startswith("_") else None
    return _Mixed(what, "{op}: got a DTensor with placements " + str(d.placements) +
            " where a tensor was expected (an op without a DTensor rule, or a DTensor mixed "
            "with an ordinary tensor). Hint: turn tensors into DTensors with "
            "DTensor.from_local/distribute_tensor, or compute on .full_tensor() / "
            ".to_local()")


def _grad_layout(placements: tuple[Placement, ...]) -> tuple[Placement, ...]:
    """The placements of the gradient's local pieces: a ``Partial`` tensor's local gradient is
    the whole gradient (``Replicate``, as PyTorch's), the others' are alike."""
    return tuple(Replicate() if p.is_partial() else p for p in placements)


def _normalize(placements: Sequence[Placement], mesh: DeviceMesh,
               ndim: int) -> tuple[Placement, ...]:
    """Placements with negative ``Shard`` dims made positive; one per mesh dimension."""
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ArgumentError(f"DTensor: {len(placements)} placements {placements} for a "
                            f"{mesh.ndim}-d mesh; give one per mesh dimension")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"DTensor: placements must be Shard, Replicate or Partial, got "
                            f"{p!r}")
        if isinstance(p, Shard):
            if ndim == 0 or not -ndim <= p.dim < ndim:
                raise IndexError(f"DTensor: Shard(dim={p.dim}) is out of range for a "
                                 f"{ndim}-d tensor")
            p = Shard(p.dim % ndim)
        out.append(p)
    return tuple(out)


def world_mesh() -> DeviceMesh:
    """The 1-d mesh of every world rank, for calls given no mesh (collective)."""
    return init_device_mesh("cpu", (get_world_size(),))


def _checked(local: Tensor, mesh: DeviceMesh, placements: tuple[Placement, ...], *,
             same_shape: bool) -> Tensor:
    """``run_check``: the same dtype and ndim on every rank (and shape, where ``same_shape``:
    the global shape is inferred from this rank's), Replicate pieces from mesh rank 0 of
    each such dimension."""
    seen = [None] * mesh.size()
    meta = (local.dtype.name, tuple(local.shape) if same_shape else local.ndim)
    all_gather_object(seen, meta)
    if len(set(seen)) != 1:
        what = "dtype or shape" if same_shape else "dtype or ndim"
        hint = (" Hint: pass shape= (the global shape) for uneven pieces" if same_shape
                else "")
        raise ArgumentError(f"DTensor.from_local(run_check=True): the ranks' local tensors differ "
                            f"in {what}: {seen}.{hint}")
    for m, p in enumerate(placements):
        if isinstance(p, Replicate):
            group = mesh.get_group(m)
            data = local.detach().clone()
            collectives.broadcast(data, src=group.ranks[0], group=group)
            local = local + (data - local.detach())  # mesh rank 0's values, same gradient
    return local


def distribute_tensor(tensor: Tensor, device_mesh: DeviceMesh | None = None,
                      placements: Sequence[Placement] | None = None, *,
                      src_data_rank: int | None = 0) -> DTensor:
    """Lays ``tensor`` out over ``device_mesh``: each rank keeps its piece. The values come
    from group rank ``src_data_rank`` of each mesh dimension (broadcast first), or, with
    None, from each rank's own ``tensor``; a ``Partial`` dimension gets terms that reduce to
    them. The result is a leaf that requires grad if ``tensor`` does (default placements:
    Replicate everywhere).

    Example (2 ranks):
        >>> d = distribute_tensor(ember.arange(5.0), mesh, [Shard(0)])
        >>> d.shape, d.full_tensor()         # pieces of 3 and 2 elements, as torch.chunk
        (ember.Size([5]), tensor([0., 1., 2., 3., 4.]))
    """
    mesh = device_mesh if device_mesh is not None else world_mesh()
    places = _normalize(placements or [Replicate()] * mesh.ndim, mesh, tensor.ndim)
    data = tensor.detach().contiguous()
    if src_data_rank is not None:
        data = data.clone()
        for m in range(mesh.ndim):
            group = mesh.get_group(m)
            collectives.broadcast(data, src=group.ranks[src_data_rank], group=group)
    data = local_piece(data, mesh, places)
    for m, p in enumerate(places):
        if isinstance(p, Partial):  # terms that reduce to the value
            data = partition(data, p, mesh.get_group(m))
    local = data.clone()
    local.requires_grad_(tensor.requires_grad)
    return DTensor(local, mesh, places, tensor.shape)
