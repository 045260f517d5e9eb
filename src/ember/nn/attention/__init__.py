"""``ember.nn.attention`` (PyTorch's ``torch.nn.attention``): choosing the implementation of
:func:`ember.nn.functional.scaled_dot_product_attention`. ``MATH`` is the composite of matmul
and softmax; ``FLASH_ATTENTION`` is Ember's blockwise kernel (memory linear in the length).
The submodule :mod:`ember.nn.attention.flex_attention` is PyTorch's FlexAttention (score
mods, block masks).

Example:
    >>> from ember.nn.attention import SDPBackend, sdpa_kernel
    >>> q = ember.randn(1, 2, 4, 8)
    >>> with sdpa_kernel(SDPBackend.MATH):        # e.g. to compare against the blockwise kernel
    ...     F.scaled_dot_product_attention(q, q, q).shape
    ember.Size([1, 2, 4, 8])
"""

# MultiheadAttention was defined in this module before it became a package: old imports work
from ember.nn.multihead_attention import MultiheadAttention
from ember.ops.attention_backends import SDPBackend, sdpa_kernel

__all__ = ["SDPBackend", "sdpa_kernel"]
