"""Model ensembling with :func:`vmap`, as ``torch.func``: :func:`stack_module_state` stacks the
weights of same-shaped models, so that ``vmap`` over :func:`functional_call` runs them all at
once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.nn.module import Module
from ember.ops.join import stack
from ember.tensor import Tensor

__all__ = ["stack_module_state"]


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and the buffers of ``models`` (of one class, all in training or all in
    eval mode), each stacked along a new first dim: ``({name: tensor}, {name: tensor})``. The
    stacked parameters are new leaves that require grad (when the models' do), so an optimizer
    can train the ensemble directly.

    Example:
        >>> models = [ember.nn.Linear(3, 2) for _ in range(4)]
        >>> params, buffers = ember.func.stack_module_state(models)
        >>> params["weight"].shape, params["weight"].is_leaf
        (ember.Size([4, 2, 3]), True)
        >>> call = lambda p, b, x: ember.func.functional_call(models[0], (p, b), (x,))
        >>> ember.func.vmap(call, in_dims=(0, 0, None))(params, buffers, ember.ones(5, 3)).shape
        ember.Size([4, 5, 2])
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode (call .train() or .eval() on all of them).")
    kinds = {type(m) for m in models}
    if len(kinds) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class, "
                           f"got {', '.join(sorted(k.__name__ for k in kinds))}.")
    return (_stacked([dict(m.named_parameters()) for m in models]),
            _stacked([dict(m.named_buffers()) for m in models]))


def _stacked(per_model: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    out: dict[str, Any] = {}
    for name in per_model[0]:
        tensors = [entries[name] for entries in per_model]
        grads = {t.requires_grad for t in tensors}
        if len(grads) != 1:
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               ".requires_grad")
        result = stack(tensors)
        out[name] = result.detach().requires_grad_() if grads == {True} else result
    return out
