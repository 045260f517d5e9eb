"""``torch.ao.nn``: quantized (``quantized``, ``quantized.dynamic``), fused (``intrinsic``, its
quantization-aware-training ones in ``intrinsic.qat``) and quantization-aware-training (``qat``)
modules."""

import sys

from ember.ao.nn import quantized
from ember.quant.modules import intrinsic, intrinsic_qat, qat

intrinsic.qat = intrinsic_qat  # type: ignore[attr-defined]  # (as torch's subpackage)
for _name, _module in (("intrinsic", intrinsic), ("intrinsic.qat", intrinsic_qat),
                       ("qat", qat)):  # (importable by these paths)
    sys.modules[f"{__name__}.{_name}"] = _module

__all__ = ["intrinsic", "qat", "quantized"]
