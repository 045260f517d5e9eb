"""Modules of quantized models: fused float modules (``intrinsic``), quantization-aware
training modules (``qat``), static quantized modules (``quantized``) and dynamically quantized
ones (``dynamic``), as ``torch.ao.nn``."""
