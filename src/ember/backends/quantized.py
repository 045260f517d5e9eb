"""``ember.backends.quantized``: which CPU backend's numbers the quantized modules give, as
``torch.backends.quantized.engine``. ``"x86"`` (the default) and ``"fbgemm"`` compute as
fbgemm; ``"qnnpack"`` as QNNPACK, whose quantized ``Linear`` and convolutions add a bias
quantized to int32 and requantize in float32, and whose dynamic ``Linear``, ``LSTM`` and
``GRU`` ignore ``reduce_range`` (see docs/quantization.md). A layer computes as the engine
current when its weights were set (built, converted or loaded), as PyTorch packs them then.
PyTorch's ``"onednn"`` is not modelled.

Example:
    >>> ember.backends.quantized.engine
    'x86'
    >>> ember.backends.quantized.engine = "qnnpack"
    >>> ember.backends.quantized.engine
    'qnnpack'
    >>> ember.backends.quantized.engine = "x86"
"""

from __future__ import annotations

import sys
import types

supported_engines = ["qnnpack", "x86", "fbgemm"]
engine = "x86"


class _QuantizedBackend(types.ModuleType):
    """This module, checking what is assigned to ``engine`` (PyTorch raises there too)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "engine" and value not in supported_engines:
            raise RuntimeError(f"{value} is not a valid value for quantized engine: Ember's "
                               f"quantized kernels model {supported_engines}")
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _QuantizedBackend
