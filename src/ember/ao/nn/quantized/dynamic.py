"""``torch.ao.nn.quantized.dynamic``: dynamically quantized modules."""

from ember.quant.modules.dynamic import *  # noqa: F403
from ember.quant.modules.dynamic_cells import *  # noqa: F403
from ember.quant.modules.dynamic_rnn import *  # noqa: F403
