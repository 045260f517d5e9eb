"""``ember.utils.data``: PyTorch's ``torch.utils.data`` path to :mod:`ember.data`."""

from ember.data import *  # noqa: F403
from ember.data import __all__  # noqa: F401
