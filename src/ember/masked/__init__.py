"""Masked reductions and normalizations, and the :class:`MaskedTensor`, as in ``torch.masked``.

Functions take a bool ``mask`` (broadcastable to the input) that says which elements take
part; a :class:`MaskedTensor` carries its mask with it. See ``docs/masked.md``.
"""

from ember.masked import op_table  # noqa: F401  (installs MaskedTensor's methods)
from ember.masked.masks import is_masked_tensor
from ember.masked.normalizations import *  # noqa: F403
from ember.masked.reductions import *  # noqa: F403
from ember.masked.tensor import *  # noqa: F403
