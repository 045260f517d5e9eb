"""``distribute_module``: a module whose parameters are DTensors.

Ember's parameters are tensors, so a distributed parameter is kept as its local piece (an
ordinary :class:`~ember.nn.Parameter`, which optimizers, ``.grad`` and ``state_dict`` see)
and ``module.<name>`` becomes a DTensor made from it on every access, through a
parametrization (:mod:`ember.nn.utils.parametrize`): the local piece is
``module.parametrizations.<name>.original``.

Example (2 ranks):
    >>> fc = nn.Linear(4, 6)
    >>> distribute_parameter(fc, "weight", mesh, [Shard(0)])
    >>> fc.weight.placements, fc.weight.shape, fc.parametrizations.weight.original.shape
    ((Shard(dim=0),), ember.Size([6, 4]), ember.Size([3, 4]))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember import nn
from ember.distributed.device_mesh import DeviceMesh
from ember.distributed.tensor.dtensor import DTensor, distribute_tensor, world_mesh
from ember.distributed.tensor.placement import Placement, Replicate
from ember.errors import ArgumentError
from ember.nn.utils.parametrize import ParametrizationList, register_parametrization

__all__ = ["distribute_module", "distribute_parameter"]


class FromLocal(nn.Module):
    """The parametrization of a distributed parameter: its local piece → the DTensor."""

    def __init__(self, mesh: DeviceMesh, placements: Sequence[Placement],
                 shape: Sequence[int]) -> None:
        super().__init__()
        self.mesh, self.placements, self.shape = mesh, tuple(placements), tuple(shape)

    def forward(self, local: Any) -> DTensor:
        return DTensor.from_local(local, self.mesh, self.placements, shape=self.shape)

    def extra_repr(self) -> str:
        return f"placements={self.placements}, shape={self.shape}"


def distribute_parameter(module: nn.Module, name: str, device_mesh: DeviceMesh,
                         placements: Sequence[Placement], *, src_data_rank: int | None = 0
                         ) -> None:
    """Makes parameter ``name`` of ``module`` a DTensor laid out by ``placements`` (values
    from ``src_data_rank``, as :func:`distribute_tensor`); what a ``partition_fn`` calls
    (PyTorch's ``module.register_parameter(name, nn.Parameter(distribute_tensor(...)))``).

    Example (2 ranks):
        >>> fc = nn.Linear(4, 6)
        >>> distribute_parameter(fc, "bias", mesh, [Replicate()])
        >>> fc.bias.placements
        (Replicate(),)
    """
    param = module._parameters.get(name)
    if param is None:
        raise ArgumentError(f"distribute_parameter: {type(module).__name__} has no parameter "
                            f"'{name}' (or it is None or already distributed)")
    d = distribute_tensor(param, device_mesh, placements, src_data_rank=src_data_rank)
    module._parameters[name] = nn.Parameter(d.to_local(), param.requires_grad)
    register_parametrization(module, name, FromLocal(device_mesh, d.placements, d.shape),
                             unsafe=True)


def distribute_module(module: nn.Module, device_mesh: DeviceMesh | None = None,
                      partition_fn: Callable | None = None, input_fn: Callable | None = None,
                      output_fn: Callable | None = None, *, src_data_rank: int | None = 0
                      ) -> nn.Module:
    """Distributes ``module`` over ``device_mesh`` in place and returns it.

    ``partition_fn(name, submodule, mesh)`` is called on every submodule and may lay out its
    parameters with :func:`distribute_parameter`; parameters left alone are replicated.
    ``input_fn(module, inputs, mesh)`` runs before ``forward`` (its result replaces the
    inputs) and ``output_fn(module, outputs, mesh)`` after it (its result replaces the
    outputs). Buffers stay ordinary tensors.

    Example (2 ranks):
        >>> m = distribute_module(nn.Linear(4, 4), mesh)
        >>> m.weight.placements
        (Replicate(),)
    """
    mesh = device_mesh if device_mesh is not None else world_mesh()
    if partition_fn is not None:
        for name, sub in list(module.named_modules()):
            partition_fn(name, sub, mesh)
    for sub in list(module.modules()):
        if isinstance(sub, ParametrizationList):
            continue  # the local pieces of parameters already distributed
        for name, p in list(sub._parameters.items()):
            if p is not None:
                distribute_parameter(sub, name, mesh, [Replicate()] * mesh.ndim,
                                     src_data_rank=src_data_rank)
    if input_fn is not None:
        module.register_forward_pre_hook(lambda m, inputs: input_fn(m, inputs, mesh))
    if output_fn is not None:
        module.register_forward_hook(lambda m, inputs, outputs: output_fn(m, outputs, mesh))
    return module
