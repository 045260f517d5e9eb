"""Tensor parallelism with DTensors (``torch.distributed.tensor.parallel``):
:func:`parallelize_module` applies parallel styles (:class:`ColwiseParallel`,
:class:`RowwiseParallel`, :class:`SequenceParallel`, :class:`PrepareModuleInput`,
:class:`PrepareModuleOutput`) to a module and its submodules; :func:`loss_parallel` computes
the cross entropy of class-sharded logits without gathering them.

Example (``ember launch -n 2``):
    >>> mesh = init_device_mesh("cpu", (2,))
    >>> fc = parallelize_module(nn.Linear(4, 6), mesh, ColwiseParallel())
    >>> fc.weight.placements, fc(ember.ones(1, 4)).shape
    ((Shard(dim=0),), ember.Size([1, 3]))
"""

from __future__ import annotations

import warnings
from fnmatch import fnmatch
from typing import Any

from ember import nn
from ember.distributed.device_mesh import DeviceMesh
from ember.distributed.tensor.dtensor import world_mesh
from ember.distributed.tensor.parallel.loss import loss_parallel
from ember.distributed.tensor.parallel.style import (
    ColwiseParallel,
    ParallelStyle,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
)

__all__ = ["ColwiseParallel", "ParallelStyle", "PrepareModuleInput", "PrepareModuleOutput",
           "RowwiseParallel", "SequenceParallel", "loss_parallel", "parallelize_module"]


def parallelize_module(module: nn.Module, device_mesh: DeviceMesh | None = None,
                       parallelize_plan: ParallelStyle | dict[str, ParallelStyle] | None = None,
                       *, src_data_rank: int | None = 0) -> nn.Module:
    """Parallelizes ``module`` in place by ``parallelize_plan`` and returns it: a style for
    the module itself, or a dict from submodule paths (``"layers.0.fc1"``, with ``fnmatch``
    wildcards per name: ``"layers.*.fc1"``; ``""``: the module itself) to styles. Parameters
    take their values from group rank ``src_data_rank`` (None: each rank's own). Every rank
    of the mesh calls it; a path that matches no submodule is skipped with a warning.

    Example (2 ranks):
        >>> m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
        >>> m = parallelize_module(m, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        >>> m(ember.randn(3, 4)).shape
        ember.Size([3, 4])
    """
    mesh = device_mesh if device_mesh is not None else world_mesh()
    if parallelize_plan is None:
        warnings.warn("parallelize_module: no parallelize_plan given; the module is returned "
                      "unchanged", stacklevel=2)
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        parallelize_plan.src_data_rank = src_data_rank
        return parallelize_plan._apply(module, mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(f"parallelize_module: expected a ParallelStyle or a dict of them, got "
                        f"{type(parallelize_plan).__name__}")
    for path, style in parallelize_plan.items():
        if path == "":  # the module itself
            parallelize_module(module, mesh, style, src_data_rank=src_data_rank)
        else:
            _apply_at(module, mesh, path, path.split("."), style, src_data_rank)
    return module


def _apply_at(module: nn.Module, mesh: DeviceMesh, path: str, atoms: list[str],
              style: Any, src_data_rank: int | None) -> None:
    matched = [sub for name, sub in module.named_children() if fnmatch(name, atoms[0])]
    if not matched:
        warnings.warn(f"Parallelize plan key {path!r} could not be resolved: no submodule "
                      f"matching token {atoms[0]!r} in module {type(module).__name__}",
                      stacklevel=3)
    for sub in matched:
        if len(atoms) > 1:
            _apply_at(sub, mesh, path, atoms[1:], style, src_data_rank)
        else:
            parallelize_module(sub, mesh, style, src_data_rank=src_data_rank)
