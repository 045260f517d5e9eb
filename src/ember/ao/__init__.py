"""PyTorch's ``torch.ao`` namespace: ``ember.ao.quantization`` and ``ember.ao.nn``."""

from ember.ao import nn, quantization

__all__ = ["nn", "quantization"]
