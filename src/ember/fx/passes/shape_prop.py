""":class:`ShapeProp`: run a GraphModule and record each node's output shape and dtype in
``node.meta["tensor_meta"]``, as ``torch.fx.passes.shape_prop`` does."""

from __future__ import annotations

from typing import Any, NamedTuple

from ember.dtypes import DType
from ember.fx.interpreter import Interpreter
from ember.fx.node import Node, map_aggregate
from ember.size import Size
from ember.tensor import Tensor

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor value."""

    shape: Size
    dtype: DType
    requires_grad: bool
    stride: tuple[int, ...]
    is_contiguous: bool


class ShapeProp(Interpreter):
    """Runs the module on example inputs; every node producing a tensor (or tuples of them)
    gets ``meta["tensor_meta"]`` and ``meta["type"]``.

    Example:
        >>> from ember.fx.passes.shape_prop import ShapeProp
        >>> gm = ember.fx.symbolic_trace(ember.models.mlp())
        >>> _ = ShapeProp(gm).propagate(ember.ones(2, 1, 28, 28))
        >>> [n.meta["tensor_meta"].shape for n in gm.graph.nodes][-1]
        ember.Size([2, 10])
    """

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found = []

        def meta(x: Any) -> Any:
            if isinstance(x, Tensor):
                found.append(x)
                return TensorMetadata(x.shape, x.dtype, x.requires_grad, x.stride(),
                                      x.is_contiguous())
            return x

        tensor_meta = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tensor_meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Runs the module on ``args`` (recording the metadata); returns its output."""
        return self.run(*args)
