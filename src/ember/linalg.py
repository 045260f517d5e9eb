"""``ember.linalg``: the ``torch.linalg`` namespace (norms, matmul, vecdot, multi_dot, cross).

Example:
    >>> ember.linalg.norm(ember.tensor([3.0, 4.0]))
    tensor(5.)
"""

from ember.ops.construct import linalg_cross as cross
from ember.ops.linalg import matmul, multi_dot, vecdot
from ember.ops.norms import linalg_norm as norm
from ember.ops.norms import matrix_norm, vector_norm

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "vecdot", "multi_dot", "cross"]
