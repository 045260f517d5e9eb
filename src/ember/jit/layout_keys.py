"""Parts of a compiled function's layout (:meth:`~ember.jit.discover.Reach.layout`) made
from library objects: what an optimizer's ``state`` holds, a tensor's hooks and what its
``.grad`` is."""

from __future__ import annotations

from ember.autograd.graph import leaf_hooks
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor


def state_key(opt: Optimizer) -> tuple:
    """What an optimizer's ``state`` holds, for the layout: for each parameter with state,
    its keys and what they hold (a tensor by identity, other values by type: a count that
    moves every step is no new layout)."""
    return tuple((id(p), tuple((key, id(v) if isinstance(v, Tensor) else type(v).__name__)
                               for key, v in state.items()) if isinstance(state, dict)
                  else type(state).__name__)
                 for p, state in opt.state.items())


def tensor_hooks(t: Tensor) -> tuple:
    """A tensor's hooks a graph bakes in: ``register_hook``'s, and for a leaf those of its
    ``AccumulateGrad`` node (pre, post and post-accumulate hooks)."""
    node = leaf_hooks(t) if t._node is None else None
    if node is None:
        return tuple(t._hooks or ())
    return (*(t._hooks or ()), *node.pre, *node.post, *node.post_accumulate)


def grad_key(t: Tensor) -> bool | str:
    """What the cache key keeps of ``t.grad``: True where unset, ``"a view"`` where it is a
    view of another tensor (a flat gradient buffer's slice: see
    :func:`~ember.jit.fallback.grad_views`), else False."""
    grad = t._grad
    return True if grad is None else grad._view is not None and "a view"
