"""``torch.ao.nn``: quantized (``quantized``, ``quantized.dynamic``), fused (``intrinsic``) and
quantization-aware-training (``qat``) modules."""

from ember.ao.nn import quantized
from ember.quant.modules import intrinsic, qat

__all__ = ["intrinsic", "qat", "quantized"]
