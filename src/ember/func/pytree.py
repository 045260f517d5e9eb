"""The function transforms' pytrees: :mod:`ember.utils._pytree` (PyTorch's path, where layers
below the transforms, such as ``vision.transforms.v2``, import them from).

Example:
    >>> tree_flatten({"a": 1, "b": (2, 3)})[0]
    [1, 2, 3]
"""

from ember.utils._pytree import (
    LEAF,
    TreeSpec,
    register_pytree_node,
    tree_flatten,
    tree_map,
    tree_paths,
    tree_unflatten,
)

__all__ = ["LEAF", "TreeSpec", "register_pytree_node", "tree_flatten", "tree_map", "tree_paths",
           "tree_unflatten"]
