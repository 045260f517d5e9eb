"""Ember's ONNX converters, one small module per family of primitives; importing this package
registers them all in :data:`ember.onnx.registry.CONVERTERS`."""

from ember.onnx.converters import (  # noqa: F401 - registration
    activations,
    bits,
    elementwise,
    gamma,
    indexing,
    linalg,
    losses,
    nn_kernels,
    normalization,
    recurrent,
    reductions,
    scans,
    scatter,
    shape,
    sorting,
    special,
)
