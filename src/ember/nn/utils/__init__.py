"""``ember.nn.utils``: gradient clipping, flat parameter vectors, packed sequences
(:mod:`~ember.nn.utils.rnn`), parametrizations (weight and spectral norm), folding batch norm
into the layer before it, pruning (:mod:`~ember.nn.utils.prune`), building a module without
initialising it (``skip_init``), convolution weights in a memory format, as in ``torch.nn.utils``.
"""

from ember.nn.utils import fusion, parametrizations, parametrize, prune, rnn, stateless
from ember.nn.utils.clip_grad import *  # noqa: F403
from ember.nn.utils.clip_grad import __all__ as _clip_grad
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from ember.nn.utils.fusion import *  # noqa: F403
from ember.nn.utils.fusion import __all__ as _fusion
from ember.nn.utils.init import skip_init
from ember.nn.utils.memory_format import *  # noqa: F403
from ember.nn.utils.memory_format import __all__ as _memory_format
from ember.nn.utils.spectral_norm import *  # noqa: F403
from ember.nn.utils.spectral_norm import __all__ as _spectral_norm
from ember.nn.utils.weight_norm import *  # noqa: F403
from ember.nn.utils.weight_norm import __all__ as _weight_norm

__all__ = ["fusion", "parametrizations", "parametrize", "prune", "rnn", "stateless",
           "parameters_to_vector", "vector_to_parameters", "skip_init", *_clip_grad, *_fusion,
           *_weight_norm, *_spectral_norm, *_memory_format]
