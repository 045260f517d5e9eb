"""PyTorch's ``torch.ao`` namespace: ``ember.ao.quantization``, ``ember.ao.pruning`` and
``ember.ao.nn``."""

from ember.ao import nn, pruning, quantization

__all__ = ["nn", "pruning", "quantization"]
