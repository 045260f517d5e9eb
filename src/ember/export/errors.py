"""The errors of exporting: :class:`ExportError` (a model cannot be exported as traced; the
ONNX exporter's too) and :class:`ConstraintViolationError` (dynamic shapes the model does not
allow, as ``torch.fx.experimental.symbolic_shapes.ConstraintViolationError``)."""

from ember.errors import EmberError


class ExportError(EmberError, RuntimeError):
    """A model cannot be exported as traced; the message lists every reason."""


class ConstraintViolationError(ExportError):
    """The ``dynamic_shapes`` of an export ask for sizes the model does not allow: an example
    size outside its dim's range, or a dim marked dynamic that the code specializes."""
