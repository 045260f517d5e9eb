"""``torch.ao.quantization.utils``: the helper ``get_combined_dict`` and ``calculate_qmin_qmax``."""

from ember.quant.mappings import get_combined_dict
from ember.quant.observer import calculate_qmin_qmax

__all__ = ["get_combined_dict", "calculate_qmin_qmax"]
