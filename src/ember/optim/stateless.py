"""Running an optimizer's step on other parameters and state than its own, for a while
(``swap_in_optimizer_params_and_state``, PyTorch's ``torch.optim`` name)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ember.errors import ArgumentError
from ember.optim.optimizer import OPTIMIZER_TRACE, Optimizer
from ember.tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _layout_problem(optimizer: Optimizer, n_params: int, saved: Any) -> str | None:
    """What keeps ``saved`` from standing in for ``optimizer.state_dict()`` with ``n_params``
    swap-in parameters (the first problem found: each check assumes the ones before passed),
    or None."""
    if not optimizer.state:
        return "requires initialized optimizer state: run a step first"
    if not isinstance(saved, dict):
        return f"requires an optimizer.state_dict()-style dict, got {type(saved).__name__}"
    state, groups = saved.get("state"), saved.get("param_groups")
    if not (isinstance(state, dict) and all(
            not isinstance(k, Tensor) and (isinstance(v, dict) or not isinstance(k, int))
            for k, v in state.items())):
        return ("requires swapin_optim_state['state'] to be a dict from packed parameter ids "
                "to per-parameter state dicts")
    live_groups = optimizer.param_groups
    if not (isinstance(groups, list) and len(groups) == len(live_groups)):
        return (f"swapin_optim_state['param_groups'] must be a list of {len(live_groups)} "
                "param-group dicts, as the live optimizer has")
    listed, taken = set(), 0
    for i, (live, group) in enumerate(zip(live_groups, groups, strict=True)):
        ids = group.get("params") if isinstance(group, dict) else None
        if not (isinstance(ids, list) and all(isinstance(k, int) for k in ids)):
            return "requires each param group to be a dict whose 'params' lists packed integer ids"
        if len(ids) != len(live["params"]):
            return (f"swapin_optim_state param group {i} has {len(ids)} params, the live "
                    f"optimizer's has {len(live['params'])}")
        if group.keys() != live.keys():
            return (f"param group {i}'s keys must match the live group's: only in swap-in "
                    f"{sorted(group.keys() - live.keys())}, only in live "
                    f"{sorted(live.keys() - group.keys())}")
        taken += len(ids)
        if taken > n_params:
            return f"{n_params} swap-in parameters given, the optimizer's param_groups hold more"
        for k in ids:
            if k in listed:  # (its parameters would share, and doubly update, one state)
                return (f"param id {k} is listed twice in swapin_optim_state's param groups "
                        f"(again in group {i}; an optimizer whose param groups list one "
                        "parameter twice saves it so); hint: build the optimizer without the "
                        "duplicate, or give each parameter its own id")
            listed.add(k)
    unlisted = [k for k in state if k not in listed]
    if unlisted:
        return (f"swapin_optim_state['state'] has keys {unlisted!r} that no param group's "
                "'params' lists")
    return None


def _swap_in_plan(optimizer: Optimizer, parameters: list[Tensor],
                  saved: dict[str, Any]) -> tuple[list[dict], defaultdict[Tensor, Any]]:
    """The group dicts (in the live groups' key order) and the state the optimizer steps
    inside the block: ``parameters`` in order take the saved ids' places, each with a shallow
    copy of its saved state (its tensors are the saved ones, so in-place updates land there)."""
    unused = iter(parameters)
    groups, state = [], defaultdict(dict)
    for live, group in zip(optimizer.param_groups, saved["param_groups"], strict=True):
        params = [next(unused) for _ in group["params"]]
        groups.append({k: params if k == "params" else group[k] for k in live})
        state.update((p, dict(saved["state"].get(k, {})))
                     for p, k in zip(params, group["params"], strict=True))
    return groups, state


def _exchange(optimizer: Optimizer, groups: list[dict],
              state: Any) -> tuple[list[dict], Any]:
    """Gives the optimizer ``groups``' contents (its own group dicts keep their identity) and
    ``state``; returns what it held, for the way back."""
    held = [dict(live) for live in optimizer.param_groups], optimizer.state
    for live, group in zip(optimizer.param_groups, groups, strict=True):
        live.clear()
        live.update(group)
    optimizer.state = state
    return held


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer,
                                       swapin_parameters: dict[str, Tensor],
                                       swapin_optim_state: dict[str, Any]) -> Iterator[None]:
    """Within the ``with`` block, ``optimizer`` works on ``swapin_parameters`` (in the order of
    its param groups' parameters) with the state and group options of ``swapin_optim_state``
    (an ``optimizer.state_dict()``-shaped dict); on exit, also by an exception, its own
    parameters, options and state come back. In-place updates of the swap-in state tensors
    (the step's) stay in ``swapin_optim_state``; entries added or replaced in the state during
    the block do not. Entering the block while a function is being traced (``ember.compile``,
    ``ember.jit.trace``, ``ember.export``, an ``ember.cond`` branch) is refused: enter it
    outside and call the compiled step inside the block.

    Example:
        >>> w = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = ember.ones(2); opt.step()
        >>> other = ember.zeros(2, requires_grad=True); other.grad = ember.ones(2)
        >>> saved = opt.state_dict()
        >>> with ember.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, saved):
        ...     opt.step()
        >>> other
        tensor([-0.1900, -0.1900], requires_grad=True)
        >>> w
        tensor([0.9000, 1.9000], requires_grad=True)
    """
    if OPTIMIZER_TRACE.tracer is not None:  # (a graph would replay the step on the own params)
        raise ArgumentError(f"{_NAME} entered while a function is being traced (ember.compile, "
                            "ember.jit.trace, ember.export, an ember.cond branch): the graph "
                            "would replay the step on the optimizer's own parameters; hint: "
                            "enter the block outside the traced function and call it inside "
                            f"(with {_NAME}(...): step(...))")
    parameters = list(swapin_parameters.values())
    problem = _layout_problem(optimizer, len(parameters), swapin_optim_state)
    if problem is not None:
        raise ArgumentError(f"{_NAME}: {problem}")
    own = _exchange(optimizer, *_swap_in_plan(optimizer, parameters, swapin_optim_state))
    try:
        yield
    finally:
        _exchange(optimizer, *own)
