"""Parallel styles (``torch.distributed.tensor.parallel.style``): how
:func:`~ember.distributed.tensor.parallel.parallelize_module` lays out one module's
parameters, inputs and outputs on a 1-d mesh.

Example (2 ranks): Megatron's MLP, one all-reduce in forward and one in backward:
    >>> mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
    >>> mlp = parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    >>> mlp[0].weight.placements, mlp[2].weight.placements
    ((Shard(dim=0),), (Shard(dim=1),))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import nn
from ember.distributed.device_mesh import DeviceMesh
from ember.distributed.tensor.dtensor import DTensor
from ember.distributed.tensor.module import distribute_module, distribute_parameter
from ember.distributed.tensor.placement import Placement, Replicate, Shard
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["ColwiseParallel", "ParallelStyle", "PrepareModuleInput", "PrepareModuleOutput",
           "RowwiseParallel", "SequenceParallel"]


class ParallelStyle:
    """A way to parallelize one module; :meth:`_apply` does it in place (as in PyTorch)."""

    src_data_rank: int | None = 0

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        raise NotImplementedError(f"{type(self).__name__} does not define _apply()")


def to_layout(x: Any, mesh: DeviceMesh, layout: Placement | None,
              desired: Placement | None) -> Any:
    """``x`` as a DTensor of placement ``desired``: an ordinary tensor is taken as the local
    piece of ``layout`` (a DTensor keeps its own placements, as in PyTorch); a None layout
    passes ``x`` through."""
    if layout is None:
        return x
    if not isinstance(x, DTensor):
        x = DTensor.from_local(x, mesh, (layout,), run_check=False)
    return x if desired is None else x.redistribute(mesh, (desired,))


def _local(x: Any, use_local_output: bool) -> Any:
    return x.to_local() if use_local_output and isinstance(x, DTensor) else x


def _check_mesh(style: str, mesh: DeviceMesh) -> None:
    if mesh.ndim != 1:
        raise ArgumentError(f"{style} works on a 1-d mesh, got {mesh}. Hint: pass the tensor "
                            "parallel dimension, e.g. mesh['tp']")


class _LinearStyle(ParallelStyle):
    """Colwise / rowwise: shards a Linear or Embedding, converts its first input from
    ``input_layouts`` to what it needs and its output to ``output_layouts``."""

    shards: dict[type, dict[str, Placement]]
    desired: dict[type, Placement]

    def __init__(self, input_layouts: Placement, output_layouts: Placement,
                 use_local_output: bool) -> None:
        self.input_layouts, self.output_layouts = input_layouts, output_layouts
        self.use_local_output = use_local_output

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        name = type(self).__name__
        _check_mesh(name, device_mesh)
        kind = next((k for k in self.shards if isinstance(module, k)), None)
        if kind is None:
            raise NotImplementedError(f"{name} currently only supports nn.Linear and "
                                      f"nn.Embedding, got {type(module).__name__}")
        shards, desired = self.shards[kind], self.desired[kind]

        def partition(_: str, sub: nn.Module, mesh: DeviceMesh) -> None:
            if sub is module:
                for param, placement in shards.items():
                    if sub._parameters.get(param) is not None:
                        distribute_parameter(sub, param, mesh, [placement],
                                             src_data_rank=self.src_data_rank)

        def prepare_input(_: nn.Module, inputs: tuple, mesh: DeviceMesh) -> tuple:
            return (to_layout(inputs[0], mesh, self.input_layouts, desired), *inputs[1:])

        def prepare_output(_: nn.Module, output: Any, mesh: DeviceMesh) -> Any:
            output = output.redistribute(mesh, (self.output_layouts,))
            return _local(output, self.use_local_output)

        return distribute_module(module, device_mesh, partition, prepare_input, prepare_output,
                                 src_data_rank=self.src_data_rank)


class ColwiseParallel(_LinearStyle):
    """Shards a Linear's output features (weight and bias ``Shard(0)``) or an Embedding's
    columns (``Shard(1)``). The input (``input_layouts``, default ``Replicate()``) is
    replicated; the output is ``output_layouts`` (default ``Shard(-1)``), a local tensor
    unless ``use_local_output=False``.

    Example (2 ranks):
        >>> fc = parallelize_module(nn.Linear(4, 6), mesh, ColwiseParallel())
        >>> fc(ember.randn(2, 4)).shape                   # this rank's 3 features
        ember.Size([2, 3])
    """

    shards = {nn.Linear: {"weight": Shard(0), "bias": Shard(0)},
              nn.Embedding: {"weight": Shard(1)}}
    desired = {nn.Linear: Replicate(), nn.Embedding: Replicate()}

    def __init__(self, *, input_layouts: Placement | None = None,
                 output_layouts: Placement | None = None, use_local_output: bool = True) -> None:
        super().__init__(input_layouts or Replicate(), output_layouts or Shard(-1),
                         use_local_output)


class RowwiseParallel(_LinearStyle):
    """Shards a Linear's input features (weight ``Shard(1)``, bias replicated) or an
    Embedding's rows (``Shard(0)``). The input is ``input_layouts`` (default ``Shard(-1)``,
    a colwise layer's output); the partial results are reduced to ``output_layouts``
    (default ``Replicate()``), a local tensor unless ``use_local_output=False``.

    Example (2 ranks):
        >>> fc = parallelize_module(nn.Linear(6, 4), mesh, RowwiseParallel())
        >>> fc(ember.randn(2, 3)).shape                   # this rank's 3 input features
        ember.Size([2, 4])
    """

    shards = {nn.Linear: {"weight": Shard(1)}, nn.Embedding: {"weight": Shard(0)}}
    desired = {nn.Linear: Shard(-1), nn.Embedding: Replicate()}

    def __init__(self, *, input_layouts: Placement | None = None,
                 output_layouts: Placement | None = None, use_local_output: bool = True) -> None:
        super().__init__(input_layouts or Shard(-1), output_layouts or Replicate(),
                         use_local_output)


class SequenceParallel(ParallelStyle):
    """Replicates the module's parameters (a LayerNorm, say) and runs it on its first input
    sharded along ``sequence_dim``: an ordinary tensor is taken as this rank's piece
    (``Shard(sequence_dim)``), a DTensor is redistributed to it. The output stays a DTensor
    unless ``use_local_output``.

    Example (2 ranks):
        >>> ln = parallelize_module(nn.LayerNorm(4), mesh, SequenceParallel())
        >>> ln(ember.randn(2, 3, 4)).placements
        (Shard(dim=1),)
    """

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False) -> None:
        self.sequence_dim, self.use_local_output = sequence_dim, use_local_output

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        _check_mesh("SequenceParallel", device_mesh)

        def prepare_input(_: nn.Module, inputs: tuple, mesh: DeviceMesh) -> tuple:
            first = inputs[0]
            if isinstance(first, (Tensor, DTensor)):
                first = to_layout(first, mesh, Shard(self.sequence_dim), Shard(self.sequence_dim))
            return (first, *inputs[1:])

        def prepare_output(_: nn.Module, output: Any, mesh: DeviceMesh) -> Any:
            return _local(output, self.use_local_output)

        return distribute_module(module, device_mesh, None, prepare_input, prepare_output,
                                 src_data_rank=self.src_data_rank)


def _layouts(value: Any) -> tuple | None:
    return None if value is None else tuple(value) if isinstance(value, Sequence) else (value,)


class PrepareModuleInput(ParallelStyle):
    """Converts a module's inputs before ``forward``: positional input ``i`` (an ordinary
    tensor taken as the local piece of ``input_layouts[i]``, or a DTensor of it) is
    redistributed to ``desired_input_layouts[i]``; keyword inputs likewise with the
    ``*_kwarg_layouts`` dicts. A None layout leaves that input alone. With
    ``use_local_output`` the module receives local tensors.

    Example (2 ranks):
        >>> style = PrepareModuleInput(input_layouts=Shard(0),
        ...                            desired_input_layouts=Replicate())
    """

    def __init__(self, *, input_layouts: Any = None, desired_input_layouts: Any = None,
                 input_kwarg_layouts: dict | None = None,
                 desired_input_kwarg_layouts: dict | None = None,
                 use_local_output: bool = False) -> None:
        self.input_layouts = _layouts(input_layouts)
        self.desired_input_layouts = _layouts(desired_input_layouts)
        if (self.input_layouts is None) != (self.desired_input_layouts is None) or (
                self.input_layouts is not None and
                len(self.input_layouts) != len(self.desired_input_layouts)):
            raise ArgumentError("PrepareModuleInput: input_layouts and desired_input_layouts "
                                "should have the same length")
        self.input_kwarg_layouts = input_kwarg_layouts or {}
        self.desired_input_kwarg_layouts = desired_input_kwarg_layouts or {}
        if set(self.input_kwarg_layouts) != set(self.desired_input_kwarg_layouts):
            raise ArgumentError("PrepareModuleInput: input_kwarg_layouts and "
                                "desired_input_kwarg_layouts should name the same inputs")
        self.use_local_output = use_local_output

    def _convert(self, x: Any, mesh: DeviceMesh, layout: Any, desired: Any) -> Any:
        return _local(to_layout(x, mesh, layout, desired), self.use_local_output)

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        _check_mesh("PrepareModuleInput", device_mesh)

        def prepare(_: nn.Module, args: tuple, kwargs: dict) -> tuple:
            if self.input_layouts is not None:
                if len(args) != len(self.input_layouts):
                    raise ArgumentError(f"PrepareModuleInput: module inputs and input_layouts "
                                        f"should have same length, got {len(args)} and "
                                        f"{len(self.input_layouts)}")
                args = tuple(self._convert(x, device_mesh, lay, want) for x, lay, want in
                             zip(args, self.input_layouts, self.desired_input_layouts))
            kwargs = {k: self._convert(v, device_mesh, self.input_kwarg_layouts.get(k),
                                       self.desired_input_kwarg_layouts.get(k))
                      for k, v in kwargs.items()}
            return args, kwargs

        module.register_forward_pre_hook(prepare, with_kwargs=True)
        return module


class PrepareModuleOutput(ParallelStyle):
    """Converts a module's outputs after ``forward``: output ``i`` (an ordinary tensor taken
    as the local piece of ``output_layouts[i]``, or a DTensor of it) is redistributed to
    ``desired_output_layouts[i]``, and made local with ``use_local_output`` (default).

    Example (2 ranks):
        >>> style = PrepareModuleOutput(output_layouts=Partial(),
        ...                             desired_output_layouts=Replicate())
    """

    def __init__(self, *, output_layouts: Any, desired_output_layouts: Any,
                 use_local_output: bool = True) -> None:
        self.output_layouts = _layouts(output_layouts)
        self.desired_output_layouts = _layouts(desired_output_layouts)
        if len(self.output_layouts) != len(self.desired_output_layouts):
            raise ArgumentError("PrepareModuleOutput: output_layouts and desired_output_layouts "
                                "should have the same length")
        self.use_local_output = use_local_output

    def _apply(self, module: nn.Module, device_mesh: DeviceMesh) -> nn.Module:
        _check_mesh("PrepareModuleOutput", device_mesh)

        def prepare(_: nn.Module, args: tuple, output: Any) -> Any:
            single = not isinstance(output, tuple)
            outputs = (output,) if single else output
            if len(outputs) != len(self.output_layouts):
                raise ArgumentError(f"PrepareModuleOutput: module outputs and output_layouts "
                                    f"should have same length, got {len(outputs)} and "
                                    f"{len(self.output_layouts)}")
            done = tuple(_local(to_layout(x, device_mesh, lay, want), self.use_local_output)
                         for x, lay, want in zip(outputs, self.output_layouts,
                                                 self.desired_output_layouts))
            return done[0] if single else done

        module.register_forward_hook(prepare)
        return module
