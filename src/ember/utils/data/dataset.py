"""``torch.utils.data.dataset``'s path: the datasets of :mod:`ember.data.dataset`."""

from ember.data.dataset import *  # noqa: F403
from ember.data.dataset import __all__  # noqa: F401
