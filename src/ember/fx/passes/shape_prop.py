""":class:`ShapeProp`: run a GraphModule and record each node's output shape and dtype in
``node.meta["tensor_meta"]``, as ``torch.fx.passes.shape_prop`` does."""

from __future__ import annotations

from typing import Any, NamedTuple

from ember.dtypes import DType
from ember.fx.interpreter import Interpreter
from ember.fx.node import Node, map_aggregate
from ember.layouts import channels_last, channels_last_3d, contiguous_format
from ember.size import Size
from ember.tensor import Tensor

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor value, field for field as torch.fx's:
    ``memory_format`` is the first of contiguous, channels-last and channels-last-3d the
    tensor is laid out in (None if none), ``qparams`` a quantized tensor's ``qscheme``,
    ``scale``, ``zero_point`` (and ``axis``) or ``{}``."""

    shape: Size
    dtype: DType
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]

    @property
    def is_contiguous(self) -> bool:
        """Whether the tensor was laid out contiguously (row-major)."""
        return self.memory_format is contiguous_format


_FORMATS = (contiguous_format, channels_last, channels_last_3d)


def _metadata(x: Any) -> TensorMetadata:
    memory_format = next((f for f in _FORMATS if x.is_contiguous(memory_format=f)), None)
    qparams: dict[str, Any] = {}
    quantized = bool(getattr(x, "is_quantized", False))
    if quantized:
        qparams["qscheme"] = scheme = x.qscheme()
        if not scheme.per_channel:
            qparams["scale"], qparams["zero_point"] = x.q_scale(), x.q_zero_point()
        else:
            qparams["scale"] = x.q_per_channel_scales().tolist()
            qparams["zero_point"] = x.q_per_channel_zero_points().tolist()
            qparams["axis"] = x.q_per_channel_axis()
    return TensorMetadata(x.shape, x.dtype, x.requires_grad, x.stride(), memory_format,
                          quantized, qparams)


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
            if isinstance(x, Tensor) or getattr(x, "is_quantized", False) is True:
                found.append(x)
                return _metadata(x)
            return x

        tensor_meta = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tensor_meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Runs the module on ``args`` (recording the metadata); returns its output."""
        return self.run(*args)
