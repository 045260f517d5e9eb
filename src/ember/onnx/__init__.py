"""``ember.onnx``: ONNX export with ``torch.onnx``'s names (layer 5; needs the ``onnx``
package: ``pip install ember[export]``; see docs/onnx.md). A model traced by :mod:`ember.jit`
into its graph IR, each equation turned into ONNX nodes by the converter registered for its
primitive (:data:`CONVERTERS`; one small module per family under ``converters/``). Primitives
without a converter are all listed in one :class:`ExportError`.

Example:
    >>> proto = ember.onnx.to_model(ember.nn.Linear(4, 2), ember.randn(3, 4))
    >>> proto.graph.input[0].name
    'input'
"""

try:
    import onnx  # noqa: F401
except ModuleNotFoundError as e:  # (an optional dependency: say how to get it)
    raise ModuleNotFoundError("ember.onnx needs the onnx package: pip install 'ember[export]' "
                              "(or pip install onnx)", name="onnx") from e

from ember.onnx.exporter import DEFAULT_OPSET, export, to_model
from ember.onnx.modes import TrainingMode
from ember.onnx.registry import CONVERTERS, ExportError, converter, supported_primitives

__all__ = ["export", "to_model", "converter", "supported_primitives", "CONVERTERS",
           "ExportError", "TrainingMode", "DEFAULT_OPSET"]
