"""``ember.onnx``: ONNX export with ``torch.onnx``'s names (needs the ``onnx`` package: ``pip
install ember[export]``). See :mod:`ember.export` and docs/export.md.

Example:
    >>> model = ember.models.mlp(hidden=32).eval()
    >>> proto = ember.onnx.export(model, ember.randn(2, 1, 28, 28), "mlp.onnx")  # doctest: +SKIP
"""

from ember.export import (
    CONVERTERS,
    ExportError,
    TrainingMode,
    converter,
    export,
    supported_primitives,
    to_model,
)

__all__ = ["export", "to_model", "converter", "supported_primitives", "CONVERTERS",
           "ExportError", "TrainingMode"]
