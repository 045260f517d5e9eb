"""``ember.export``: program capture (layer 5); for now the tracing it shares with
:mod:`ember.onnx` and the errors of exporting."""

from ember.export.errors import ConstraintViolationError, ExportError

__all__ = ["ConstraintViolationError", "ExportError"]
