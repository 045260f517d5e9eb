"""``DeviceMesh``: the ranks laid out as an n-dimensional array, with one MPI sub-communicator
per line along each dimension (``torch.distributed.device_mesh``).

In a 2×2 mesh with dims ``("dp", "tp")`` rank 3 sits at ``(1, 1)``; its ``"tp"`` group is the
row ``[2, 3]`` and its ``"dp"`` group the column ``[1, 3]``. Making the mesh is collective
(every rank, one ``MPI_Comm_split`` per dimension); the groups are ordinary
:class:`~ember.distributed.ProcessGroup` objects every collective takes as ``group=``. Ember's
collectives move CPU tensors, so the device type is ``"cpu"``.

Example (under ``ember launch -n 4``):
    >>> from ember.distributed.device_mesh import init_device_mesh
    >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    >>> mesh.get_coordinate(), mesh["tp"].mesh.tolist()                   # on rank 3
    ((1, 1), [2, 3])
    >>> dist.all_reduce(grad, group=mesh.get_group("dp"))                 # over [1, 3]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.distributed.process_group import (
    ProcessGroup,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
    split_world,
)
from ember.ops.creation import tensor
from ember.tensor import Tensor


class DeviceMesh:
    """Ranks arranged as an n-d array (``mesh``), with a process group per dimension.

    Args:
        device_type: ``"cpu"`` (the device Ember's collectives work on).
        mesh: the world ranks as a nested list, array or tensor; each rank at most once.
        mesh_dim_names: a name per dimension, for ``mesh["name"]`` and ``get_group("name")``.

    Every world rank must construct it (ranks outside ``mesh`` get no groups and
    ``get_coordinate()`` None); it starts the default process group if there is none. Along a
    dimension, group ranks follow world order, as :func:`~ember.distributed.new_group` makes
    them.
    """

    def __init__(self, device_type: str, mesh: Any, *,
                 mesh_dim_names: tuple[str, ...] | None = None) -> None:
        _ensure_world()
        ranks = np.asarray(mesh.tolist() if isinstance(mesh, Tensor) else mesh, dtype=np.int64)
        _check_layout(device_type, ranks, mesh_dim_names)
        me = get_rank()
        where = np.argwhere(ranks == me)
        coordinate = tuple(int(i) for i in where[0]) if len(where) else None
        groups = [_dim_group(ranks, d, coordinate) for d in range(ranks.ndim)]
        self._init(device_type, ranks, mesh_dim_names, coordinate, groups)

    def _init(self, device_type: str, ranks: np.ndarray, names: tuple[str, ...] | None,
              coordinate: tuple[int, ...] | None, groups: list[Any]) -> None:
        self.device_type = device_type
        self._ranks = ranks
        self.mesh_dim_names = None if names is None else tuple(names)
        self._coordinate = coordinate
        self._groups = groups

    @property
    def mesh(self) -> Tensor:
        """The world ranks as an int64 tensor of the mesh's shape."""
        return tensor(self._ranks.tolist())

    @property
    def ndim(self) -> int:
        """Number of mesh dimensions."""
        return self._ranks.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        """Ranks along each dimension."""
        return tuple(self._ranks.shape)

    def size(self, mesh_dim: int | str | None = None) -> int:
        """Ranks along ``mesh_dim`` (an index or a name), or in the whole mesh when None."""
        if mesh_dim is None:
            return int(self._ranks.size)
        return int(self._ranks.shape[self._dim(mesh_dim)])

    def get_rank(self) -> int:
        """This process's world rank."""
        return get_rank()

    def get_coordinate(self) -> tuple[int, ...] | None:
        """This rank's index along each dimension, or None if it is not in the mesh."""
        return self._coordinate

    def get_group(self, mesh_dim: int | str | None = None) -> ProcessGroup:
        """The process group along ``mesh_dim`` (an index or a name) that contains this rank;
        ``mesh_dim`` may be left out on a 1-d mesh."""
        return self._groups[self._dim(mesh_dim, "get_group")]

    def get_all_groups(self) -> list[ProcessGroup]:
        """This rank's process group along each dimension, in dimension order."""
        return list(self._groups)

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's index along ``mesh_dim`` (its rank in that dimension's group)."""
        dim = self._dim(mesh_dim, "get_local_rank")
        if self._coordinate is None:
            raise RuntimeError(f"DeviceMesh.get_local_rank: rank {get_rank()} is not in the "
                               f"mesh {self._ranks.tolist()}")
        return self._coordinate[dim]

    def __getitem__(self, mesh_dim_names: str | Sequence[str]) -> DeviceMesh:
        """The sub-mesh of the named dimensions (in the mesh's order) through this rank:
        ``mesh["tp"]`` is this rank's row, with the same process group as ``get_group("tp")``.
        """
        if self.mesh_dim_names is None:
            raise RuntimeError("DeviceMesh: cannot slice a DeviceMesh without mesh_dim_names")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if not names or any(n not in self.mesh_dim_names for n in names):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names "
                           f"are {self.mesh_dim_names}.")
        dims = [self.mesh_dim_names.index(n) for n in names]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"DeviceMesh: slicing overlapping dim_names {names} is not "
                               "allowed")
        if dims != sorted(dims):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Mesh dim indices should "
                           f"be in ascending order (the mesh's are {self.mesh_dim_names})")
        if self._coordinate is None:
            raise RuntimeError(f"DeviceMesh: rank {get_rank()} is not in the mesh "
                               f"{self._ranks.tolist()}, so it has no sub-mesh")
        index = tuple(slice(None) if d in dims else c for d, c in enumerate(self._coordinate))
        sub = object.__new__(DeviceMesh)
        sub._init(self.device_type, self._ranks[index], names,
                  tuple(self._coordinate[d] for d in dims), [self._groups[d] for d in dims])
        return sub

    def _dim(self, mesh_dim: int | str | None, who: str = "size") -> int:
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(f"DeviceMesh.{who}: the mesh has {self.ndim} dimensions; "
                                   "pass mesh_dim (an index or a name)")
            return 0
        if isinstance(mesh_dim, str):
            if self.mesh_dim_names is None or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"DeviceMesh.{who}: mesh_dim {mesh_dim} is out of range for a "
                             f"{self.ndim}-d mesh")
        return mesh_dim % self.ndim

    def __repr__(self) -> str:
        dims = (f"({', '.join(f'{n}={s}' for n, s in zip(self.mesh_dim_names, self.shape))})"
                if self.mesh_dim_names else str(self.shape))
        return f"DeviceMesh({dims}, '{self.device_type}', mesh={self._ranks.tolist()})"


def _ensure_world() -> None:
    """Starts the default process group if none is running (as PyTorch's mesh does)."""
    if not is_initialized():
        init_process_group("mpi")


def _check_layout(device_type: str, ranks: np.ndarray,
                  names: tuple[str, ...] | None) -> None:
    if device_type != "cpu":
        raise RuntimeError(f"DeviceMesh: device_type {device_type!r} is not supported: "
                           "Ember's MPI collectives move CPU tensors. Hint: use 'cpu'")
    if names is not None:
        if len(set(names)) != len(names):
            raise RuntimeError(f"DeviceMesh: each mesh_dim_name must be unique; found a "
                               f"repeated one in {tuple(names)}")
        if len(names) != ranks.ndim:
            raise RuntimeError(f"DeviceMesh: mesh of shape {ranks.shape} and mesh_dim_names "
                               f"{tuple(names)} should have the same length")
    world = get_world_size()
    flat = ranks.reshape(-1).tolist()
    if ranks.ndim == 0 or len(set(flat)) != len(flat) or any(not 0 <= r < world for r in flat):
        raise RuntimeError(f"DeviceMesh: mesh {ranks.tolist()} must hold distinct world ranks "
                           f"in [0, {world}), in at least one dimension")


def _dim_group(ranks: np.ndarray, dim: int, coordinate: tuple[int, ...] | None) -> Any:
    """This rank's group along ``dim`` (None outside the mesh): every line of the mesh along
    ``dim`` becomes a group, all made by one split."""
    lines = np.moveaxis(ranks, dim, -1).reshape(-1, ranks.shape[dim]).tolist()
    groups = split_world(lines, "DeviceMesh")
    if coordinate is None:
        return None
    line = int(np.ravel_multi_index(coordinate[:dim] + coordinate[dim + 1:],
                                    ranks.shape[:dim] + ranks.shape[dim + 1:]))
    return groups[line]


def init_device_mesh(device_type: str, mesh_shape: tuple[int, ...], *,
                     mesh_dim_names: tuple[str, ...] | None = None) -> DeviceMesh:
    """A mesh of ``mesh_shape`` holding world ranks 0, 1, … in row-major order; every rank
    calls it. Starts the default process group first if there is none. The shape's product
    must be the world size.

    Example (4 ranks):
        >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        >>> mesh.get_local_rank("dp"), mesh.size("tp")                    # on rank 2
        (1, 2)
    """
    _ensure_world()
    shape = tuple(int(s) for s in mesh_shape)
    world = get_world_size()
    if math.prod(shape) != world:
        raise RuntimeError(f"init_device_mesh: a mesh of shape {shape} holds "
                           f"{math.prod(shape)} ranks, but the world has {world}")
    return DeviceMesh(device_type, np.arange(world).reshape(shape),
                      mesh_dim_names=mesh_dim_names)
