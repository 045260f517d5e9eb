"""``ember.nested``: nested tensors of layout ``ember.jagged``, as ``torch.nested``: batches of
sequences of different lengths with no padding, stored as packed values plus offsets.

Example:
    >>> nt = ember.nested.nested_tensor([ember.ones(2, 4), ember.ones(3, 4)])
    >>> nt.shape
    (2, j..., 4)
    >>> F.linear(nt, ember.ones(1, 4)).sum(1)
    tensor([[ 8.],
            [12.]])
"""

from ember.nested import (
    attention,  # noqa: F401 - registers attention on nested tensors
    autograd,  # noqa: F401 - registers ember.autograd.grad of nested tensors
    dims,  # noqa: F401 - registers permute, select, indexing
    elementwise,  # noqa: F401 - registers sinc, hypot, clamp_min, … as methods
    products,  # noqa: F401 - registers linear, matmul, bmm
)
from ember.nested.creation import (
    as_nested_tensor,
    masked_select,
    narrow,
    nested_tensor,
    nested_tensor_from_jagged,
    to_padded_tensor,
)
from ember.nested.nested_tensor import NestedTensor, UnsupportedOpError
from ember.nested.ragged import RaggedDim

__all__ = ["NestedTensor", "RaggedDim", "UnsupportedOpError", "as_nested_tensor", "masked_select",
           "narrow", "nested_tensor", "nested_tensor_from_jagged", "to_padded_tensor"]
