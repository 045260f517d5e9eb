"""How backward runs the user's hooks: tensor hooks on a gradient, a leaf's hooks (and whether
one kept the gradient), a node's pre-hooks and hooks; each replacement a hook returns is
checked against the gradient it replaces, as PyTorch checks it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ember.errors import GradError
from ember.tensor import Tensor


def run_hooks(hooks: list, g: Any) -> Any:
    """Passes ``g`` through tensor hooks in order; a hook may return a replacement of the
    same shape and dtype (or None to keep it)."""
    for hook in list(hooks):
        replaced = hook(g)
        if replaced is not None:
            check_replacement(hook, replaced, g)
            g = replaced
    return g


def held_elsewhere(g: Any, owners: set) -> None:
    """Marks ``g``'s memory as held by more than the engine, so that a ``.grad`` it becomes
    is a copy (:func:`~ember.autograd.accumulate.accumulate_grad`'s ``owners``)."""
    if isinstance(g, Tensor):
        owners.add(id(g._data if g._data.base is None else g._data.base))


def run_leaf_hooks(hooks: list, g: Any) -> tuple[Any, bool]:
    """A leaf's gradient through its tensor hooks, and whether a hook kept a reference to the
    result: then ``.grad`` must not be that tensor (a later backward would add into what the
    hook holds), as PyTorch's ``AccumulateGrad`` steals a gradient only when nothing else
    holds it (its reference count)."""
    before = sys.getrefcount(g)
    out = run_hooks(hooks, g)
    # (counted apart from the return: references the name ``out`` and getrefcount's argument
    # add, and for the same tensor also ``g``)
    kept = sys.getrefcount(out) > (before + 1 if out is g else 2)
    return out, kept


def check_replacement(hook: Callable, new: Any, g: Any) -> None:
    """Refuses a gradient a hook returned in place of ``g`` unless it is a tensor of the same
    shape and dtype, as PyTorch does."""
    if not isinstance(new, Tensor):
        got, want = type(new).__name__, f"shape {tuple(g.shape)}"
    elif new.shape != g.shape:
        got, want = f"a tensor of shape {tuple(new.shape)}", f"shape {tuple(g.shape)}"
    elif new.dtype is not g.dtype:
        got, want = f"a tensor of dtype {new.dtype.name}", f"dtype {g.dtype.name}"
    else:
        return
    raise GradError(f"hook {hook_name(hook)} returned {got} for a gradient of {want}; a hook "
                    "returns None or a tensor of the gradient's shape and dtype")


def hook_name(hook: Callable) -> str:
    return repr(getattr(hook, "__qualname__", hook))


def run_node_hooks(hooks: list, grads: tuple, who: str, grad_outputs: tuple | None = None
                    ) -> tuple:
    """Passes ``grads`` through a node's pre-hooks (``hook(grads)``) or, given
    ``grad_outputs``, its post-hooks (``hook(grads, grad_outputs)``); a hook returns None or a
    tuple of as many gradients (each None or a tensor like the one it replaces)."""
    for hook in list(hooks):
        new = hook(grads) if grad_outputs is None else hook(grads, grad_outputs)
        if new is None:
            continue
        if not isinstance(new, (tuple, list)) or len(new) != len(grads):
            got = (f"{len(new)} values" if isinstance(new, (tuple, list))
                   else type(new).__name__)
            raise GradError(f"{who} ({hook_name(hook)}) returned {got}; expected None or a "
                            f"tuple of {len(grads)} gradients (None for no gradient)")
        for g, n in zip(grads, new):
            if g is None and n is not None:
                raise GradError(f"{who} ({hook_name(hook)}) returned a gradient where there "
                                "was none (None): a hook cannot replace a None gradient with "
                                "a tensor, as in PyTorch. Hint: return None in that place")
            if n is not None:
                check_replacement(hook, n, g)
        grads = tuple(new)
    return grads
