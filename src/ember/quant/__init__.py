"""Quantization, eager mode, as ``torch.ao.quantization`` (also ``ember.ao.quantization`` and
``ember.quantization``): observers, fake quantization, qconfigs, ``prepare``/``convert``,
``prepare_qat``, ``quantize_dynamic`` and ``fuse_modules``; quantized modules compute as
PyTorch's x86/fbgemm kernels do. See docs/quantization.md.
"""

from ember.quant import (
    fake_quantize,
    fuse,
    fuser_method_mappings,
    histogram_observer,
    mappings,
    models,
    observer,
    observer_state,
    qconfig,
    qconfig_mapping,
    qtensor,
    qtypes,
    quant_type,
    special_observers,
    stubs,
)
from ember.quant import join as _join  # noqa: F401 (cat/stack of quantized tensors)
from ember.quant import quantize as _workflow  # (the name becomes the function, as PyTorch's)
from ember.quant.fake_quantize import *  # noqa: F403
from ember.quant.fuse import *  # noqa: F403
from ember.quant.fuser_method_mappings import *  # noqa: F403
from ember.quant.histogram_observer import *  # noqa: F403
from ember.quant.mappings import *  # noqa: F403
from ember.quant.observer import *  # noqa: F403
from ember.quant.observer_state import *  # noqa: F403
from ember.quant.observer_state import ObserverOrFakeQuantize
from ember.quant.qconfig import *  # noqa: F403
from ember.quant.qconfig_mapping import *  # noqa: F403
from ember.quant.qtensor import *  # noqa: F403
from ember.quant.qtypes import *  # noqa: F403
from ember.quant.quant_type import *  # noqa: F403
from ember.quant.quantize import *  # noqa: F403
from ember.quant.quantize import default_eval_fn  # (torch.ao.quantization's, not .quantize's)
from ember.quant.special_observers import *  # noqa: F403
from ember.quant.stubs import *  # noqa: F403

__all__ = [name for module in (fake_quantize, fuse, fuser_method_mappings, histogram_observer,
                               mappings, observer, observer_state, qconfig, qconfig_mapping,
                               qtensor, qtypes, quant_type, _workflow, special_observers, stubs)
           for name in module.__all__] + ["default_eval_fn", "ObserverOrFakeQuantize"]
