"""``ember.testing``: PyTorch's ``torch.testing`` — :func:`assert_close` (and the deprecated
:func:`assert_allclose`) to compare results with PyTorch's tolerances and messages, and
:func:`make_tensor` to make test inputs with PyTorch's value ranges.

Example:
    >>> x = ember.testing.make_tensor(2, 3, dtype=ember.float32, device="cpu")
    >>> ember.testing.assert_close(x * 1.0, x)
"""

from ember.testing.comparison import assert_allclose, assert_close
from ember.testing.creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
