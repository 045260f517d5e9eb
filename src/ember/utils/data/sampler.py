"""``torch.utils.data.sampler``'s path: the samplers of :mod:`ember.data.sampler`."""

from ember.data.sampler import *  # noqa: F403
from ember.data.sampler import __all__  # noqa: F401
