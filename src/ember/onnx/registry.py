"""The converter table: one function per primitive name, ``convert(ctx, eqn)``, returning the
ONNX value name of each of the equation's outputs (a list, or one name for one output; None
for an output the converter does not make, which may then not be read).

A converter whose primitive bakes shapes into its params (``reshape``, ``expand``, ``slice``)
is registered with ``shape_params=True``: it reads dynamic dimensions from the context itself.
Any other equation whose params change with a dynamic axis is refused by the exporter.

Example:
    >>> @converter("my_relu")                # (a primitive named "my_relu")
    ... def my_relu(ctx, eqn):
    ...     return ctx.node("Relu", [ctx.value(eqn.inputs[0])])
    >>> del CONVERTERS["my_relu"]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.export.errors import ExportError

__all__ = ["CONVERTERS", "ExportError", "SHAPE_PARAMS", "converter", "supported_primitives"]

Converter = Callable[[Any, Any], Any]
CONVERTERS: dict[str, Converter] = {}
SHAPE_PARAMS: set[str] = set()  # primitives whose converters handle params that hold sizes


def converter(*names: str, shape_params: bool = False) -> Callable[[Converter], Converter]:
    """Registers the decorated function as the ONNX converter of each primitive in ``names``
    (replacing one registered before: a user's converter overrides Ember's).

    Example:
        >>> @ember.onnx.converter("my_op")
        ... def my_op(ctx, eqn):
        ...     return ctx.node("Identity", [ctx.value(eqn.inputs[0])])
        >>> "my_op" in ember.onnx.supported_primitives()
        True
        >>> del ember.onnx.CONVERTERS["my_op"]
    """

    def register(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS[name] = fn
            if shape_params:
                SHAPE_PARAMS.add(name)
            else:
                SHAPE_PARAMS.discard(name)
        return fn

    return register


def supported_primitives() -> list[str]:
    """The names of the primitives that have an ONNX converter, sorted.

    Example:
        >>> "matmul" in ember.onnx.supported_primitives()
        True
    """
    return sorted(CONVERTERS)
