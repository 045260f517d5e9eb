"""Distributed tensors (``torch.distributed.tensor``): :class:`DTensor`, a global tensor laid
out over a :class:`~ember.distributed.device_mesh.DeviceMesh` by one placement per mesh
dimension (:class:`Shard`, :class:`Replicate`, :class:`Partial`), with ops that propagate
the placements, and :func:`distribute_module`; :mod:`ember.distributed.tensor.parallel`
parallelizes modules with it. See ``docs/dtensor.md``.

Example (``ember launch -n 2``):
    >>> from ember.distributed.tensor import Shard, distribute_tensor, init_device_mesh
    >>> mesh = init_device_mesh("cpu", (2,))
    >>> w = distribute_tensor(ember.randn(8, 4), mesh, [Shard(0)])
    >>> (w.t() @ w).placements                       # Shard(1) @ Shard(0)
    (Partial(sum),)
"""

from ember.distributed.device_mesh import DeviceMesh, init_device_mesh
from ember.distributed.tensor import attention as _attention  # noqa: F401  (registers rules)
from ember.distributed.tensor import autograd as _autograd  # noqa: F401
from ember.distributed.tensor import ops as _ops  # noqa: F401
from ember.distributed.tensor import random as _random  # noqa: F401
from ember.distributed.tensor import reduce_ops as _reduce_ops  # noqa: F401
from ember.distributed.tensor import tensor_ops as _tensor_ops  # noqa: F401
from ember.distributed.tensor.dtensor import DTensor, UnsupportedShardingError, distribute_tensor
from ember.distributed.tensor.module import distribute_module, distribute_parameter
from ember.distributed.tensor.placement import Partial, Placement, Replicate, Shard

__all__ = [
    "DTensor",
    "DeviceMesh",
    "Partial",
    "Placement",
    "Replicate",
    "Shard",
    "UnsupportedShardingError",
    "distribute_module",
    "distribute_parameter",
    "distribute_tensor",
    "init_device_mesh",
]
