"""``torch.ao.quantization.fake_quantize``: :mod:`ember.quant.fake_quantize` and the
fixed-parameter fake quantizers of :mod:`ember.quant.special_observers`."""

from ember.quant import fake_quantize
from ember.quant.fake_quantize import *  # noqa: F403
from ember.quant.qconfig import default_dynamic_fake_quant
from ember.quant.special_observers import (
    FixedQParamsFakeQuantize,
    default_affine_fixed_qparams_fake_quant,
    default_fixed_qparams_range_0to1_fake_quant,
    default_fixed_qparams_range_neg1to1_fake_quant,
    default_symmetric_fixed_qparams_fake_quant,
)

__all__ = fake_quantize.__all__ + [
    "FixedQParamsFakeQuantize", "default_affine_fixed_qparams_fake_quant",
    "default_fixed_qparams_range_0to1_fake_quant", "default_fixed_qparams_range_neg1to1_fake_quant",
    "default_symmetric_fixed_qparams_fake_quant", "default_dynamic_fake_quant"]
