"""Masked reductions and normalizations, and the :class:`MaskedTensor`, as in ``torch.masked``.

Functions take a bool ``mask`` (broadcastable to the input) that says which elements take
part; see ``docs/masked.md``.
"""

from ember.masked.masks import is_masked_tensor
from ember.masked.normalizations import *  # noqa: F403
from ember.masked.reductions import *  # noqa: F403
