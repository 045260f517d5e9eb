"""``torch.ao.quantization._learnable_fake_quantize``:
:mod:`ember.quant.learnable_fake_quantize`."""

from ember.quant.learnable_fake_quantize import _LearnableFakeQuantize

__all__ = ["_LearnableFakeQuantize"]
