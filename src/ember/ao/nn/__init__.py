"""``torch.ao.nn``: quantized (``quantized``, ``quantized.dynamic``), fused (``intrinsic``, its
quantization-aware-training ones in ``intrinsic.qat``, their quantized ones in
``intrinsic.quantized``) and quantization-aware-training (``qat``)
modules."""

import sys

from ember.ao.nn import intrinsic_quantized, quantized
from ember.quant.modules import intrinsic, intrinsic_qat, qat

intrinsic.qat = intrinsic_qat  # type: ignore[attr-defined]  # (as torch's subpackages)
intrinsic.quantized = intrinsic_quantized  # type: ignore[attr-defined]
for _name, _module in (("intrinsic", intrinsic), ("intrinsic.qat", intrinsic_qat),
                       ("intrinsic.quantized", intrinsic_quantized),
                       ("intrinsic.quantized.dynamic", intrinsic_quantized.dynamic),
                       ("qat", qat)):  # (importable by these paths)
    sys.modules[f"{__name__}.{_name}"] = _module

__all__ = ["intrinsic", "qat", "quantized"]
