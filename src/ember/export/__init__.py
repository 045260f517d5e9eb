"""``ember.export``: program capture with ``torch.export``'s API (layer 5). :func:`export`
traces a module on example inputs into an :class:`ExportedProgram`: a functional graph of
Ember's primitives (the analogue of ATen ops) as an ``ember.fx`` ``GraphModule``, with the
parameters, buffers and constants lifted to inputs; dynamic sizes with :class:`Dim`;
:func:`save` / :func:`load` without pickle. ONNX export is :mod:`ember.onnx`. See
docs/export.md.

Example:
    >>> ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
    >>> [n.op for n in ep.graph.nodes][-1]
    'output'
"""

from ember.export.dynamic_shapes import DerivedDim, Dim, DimHint, ShapesCollection, ValueRange, dims
from ember.export.errors import ConstraintViolationError, ExportError
from ember.export.exporter import export
from ember.export.graph_signature import (
    ConstantArgument,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from ember.export.guards import GuardError
from ember.export.program import ExportedProgram
from ember.export.serialize import load, save

__all__ = ["ConstantArgument", "ConstraintViolationError", "DerivedDim", "Dim", "DimHint",
           "ExportError", "ExportGraphSignature", "ExportedProgram", "GuardError", "InputKind",
           "InputSpec", "OutputKind", "OutputSpec", "ShapesCollection", "TensorArgument",
           "ValueRange", "dims", "export", "load", "save"]
