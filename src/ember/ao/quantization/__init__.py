"""``torch.ao.quantization``'s names: :mod:`ember.quant`; its submodules (``observer``,
``fake_quantize``, ``qconfig``, ``qconfig_mapping``, ``quantize``, ``fuse_modules``,
``fuser_method_mappings``, ``stubs``, ``quantization_mappings``, ``quant_type``, ``utils``)
re-export the matching parts."""

import ember.ao.quantization.fake_quantize
import ember.ao.quantization.fuse_modules
import ember.ao.quantization.fuser_method_mappings
import ember.ao.quantization.observer
import ember.ao.quantization.qconfig
import ember.ao.quantization.qconfig_mapping
import ember.ao.quantization.quant_type
import ember.ao.quantization.quantization_mappings
import ember.ao.quantization.quantize
import ember.ao.quantization.stubs
import ember.ao.quantization.utils  # noqa: F401
from ember.quant import *  # noqa: F403
from ember.quant.fuse import fuse_modules  # (the functions, as PyTorch's, not the submodules)
from ember.quant.quantize import quantize
