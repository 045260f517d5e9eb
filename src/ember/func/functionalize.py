"""``functionalize``: a function whose in-place updates never reach the caller's tensors while
it runs, as ``torch.func.functionalize``.

PyTorch rewrites the program: every in-place and ``out=`` op becomes its out-of-place form,
and the final values of mutated inputs are copied back into them when the function returns.
Ember reaches the same observable semantics without a rewrite: the function runs on private
copies of its tensor arguments (so its in-place ops, and its views of them, act on tensors
only it holds), then each argument it mutated receives its final value with one ``copy_``.
Gradients flow through the copies as through PyTorch's out-of-place replacements. The
outputs never alias the arguments (PyTorch's may: ``functionalize(lambda x: x)`` returns
``x`` itself there, a fresh copy here); with ``remove="mutations_and_views"`` they are also
fresh tensors that alias nothing (PyTorch's ``*_copy`` views).

What this does not do is produce a graph: Ember's transforms (``jit``, ``vmap``, ``grad``)
already treat in-place ops as functional updates, so they need no functionalized program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError
from ember.func.pytree import tree_flatten, tree_map, tree_unflatten
from ember.tensor import Tensor

__all__ = ["functionalize"]

_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """``func`` with its in-place updates kept from the caller's tensors until it returns;
    then each mutated argument gets its final value (one ``copy_``), as in PyTorch.

    Example:
        >>> def f(x):
        ...     y = x.view(-1)
        ...     y.add_(1)
        ...     return y
        >>> x = ember.zeros(2, 2)
        >>> out = ember.func.functionalize(f)(x)
        >>> x, out.data_ptr() == x.data_ptr()
        (tensor([[1., 1.],
                [1., 1.]]), False)
    """
    if remove not in _REMOVE:
        raise ArgumentError(f"functionalize(f, remove='mutations'): received invalid argument for "
                            f"remove={remove}. Valid options are: remove='mutations' (in-place "
                            "and out= ops act on private copies) and remove='mutations_and_views' "
                            "(in addition, no output aliases another)")

    @functools.wraps(func)
    def functionalized(*args: Any, **kwargs: Any) -> Any:
        leaves, spec = tree_flatten((args, kwargs))
        private = [leaf.clone() if isinstance(leaf, Tensor) else leaf for leaf in leaves]
        versions = [p._version if isinstance(p, Tensor) else None for p in private]
        out_args, out_kwargs = tree_unflatten(private, spec)
        result = func(*out_args, **out_kwargs)
        for leaf, copy, version in zip(leaves, private, versions):
            if isinstance(leaf, Tensor) and copy._version != version:
                leaf.copy_(copy)
        if remove == "mutations_and_views":
            result = tree_map(lambda r: r.clone() if isinstance(r, Tensor) else r, result)
        return result

    return functionalized
