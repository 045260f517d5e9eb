"""``torch.ao.nn``: quantized (``quantized``, ``quantized.dynamic``), fused (``intrinsic``) and
quantization-aware-training (``qat``) modules."""

import sys

from ember.ao.nn import quantized
from ember.quant.modules import intrinsic, qat

for _name, _module in (("intrinsic", intrinsic), ("qat", qat)):  # (importable by these paths)
    sys.modules[f"{__name__}.{_name}"] = _module

__all__ = ["intrinsic", "qat", "quantized"]
