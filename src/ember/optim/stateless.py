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


def _swap_in_groups(optimizer: Optimizer, parameters: list[Tensor],
                    optim_state: Any) -> tuple[dict[Any, Any], list[tuple[dict, dict, list]]]:
    """Checks ``optim_state`` has ``optimizer.state_dict()``'s layout for this optimizer and
    pairs each live group with its saved group and its slice of ``parameters``."""
    if not optimizer.state:
        raise ArgumentError(f"{_NAME} requires initialized optimizer state: run a step first")
    if not isinstance(optim_state, dict):
        raise ArgumentError(f"{_NAME} requires an optimizer.state_dict()-style dict, got "
                            f"{type(optim_state).__name__}")
    state, groups = optim_state.get("state"), optim_state.get("param_groups")
    if not isinstance(state, dict) or any(isinstance(k, Tensor) for k in state) or any(
            isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise ArgumentError(f"{_NAME} requires swapin_optim_state['state'] to be a dict from "
                            "packed parameter ids to per-parameter state dicts")
    if not isinstance(groups, list) or len(groups) != len(optimizer.param_groups):
        raise ArgumentError(f"{_NAME}: swapin_optim_state['param_groups'] must be a list of "
                            f"{len(optimizer.param_groups)} param-group dicts, as the live "
                            "optimizer has")
    paired, offset, seen = [], 0, set()
    for i, (live, saved) in enumerate(zip(optimizer.param_groups, groups, strict=True)):
        ids = saved.get("params") if isinstance(saved, dict) else None
        if not isinstance(ids, list) or not all(isinstance(k, int) for k in ids):
            raise ArgumentError(f"{_NAME} requires each param group to be a dict whose "
                                "'params' lists packed integer parameter ids")
        if len(ids) != len(live["params"]):
            raise ArgumentError(f"{_NAME}: swapin_optim_state param group {i} has {len(ids)} "
                                f"params, the live optimizer's has {len(live['params'])}")
        if set(saved) != set(live):
            raise ArgumentError(f"{_NAME}: param group {i}'s keys must match the live group's: "
                                f"only in swap-in {sorted(set(saved) - set(live))}, only in "
                                f"live {sorted(set(live) - set(saved))}")
        if offset + len(ids) > len(parameters):
            raise ArgumentError(f"{_NAME}: {len(parameters)} swap-in parameters given, the "
                                "optimizer's param_groups hold more")
        paired.append((live, saved, parameters[offset:offset + len(ids)]))
        offset += len(ids)
        seen.update(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise ArgumentError(f"{_NAME}: swapin_optim_state['state'] has keys {extra!r} that no "
                            "param group's 'params' lists")
    return state, paired


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer,
                                       swapin_parameters: dict[str, Tensor],
                                       swapin_optim_state: dict[str, Any]) -> Iterator[None]:
    """Within the ``with`` block, ``optimizer`` works on ``swapin_parameters`` (in the order of
    its param groups' parameters) with the state and group options of ``swapin_optim_state``
    (an ``optimizer.state_dict()``-shaped dict); on exit its own parameters, options and state
    come back. In-place updates of the swap-in state tensors (the step's) stay in
    ``swapin_optim_state``; entries added or replaced in the state during the block do not.
    Entering the block inside an ``ember.jit.compile``'d function is refused: call the compiled
    step inside the block.

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
        raise ArgumentError(f"{_NAME} inside ember.jit.compile: a compiled call replays the "
                            "step on the optimizer's own parameters; call the compiled step "
                            f"inside the with block instead (with {_NAME}(...): step(...))")
    state, paired = _swap_in_groups(optimizer, list(swapin_parameters.values()),
                                    swapin_optim_state)
    own_state = optimizer.state
    own_groups = [dict(group) for group in optimizer.param_groups]
    try:
        swapped: defaultdict[Tensor, Any] = defaultdict(dict)
        for live, saved, params in paired:
            live.update({k: v for k, v in saved.items() if k != "params"})
            live["params"] = params
            for p, k in zip(params, saved["params"], strict=True):
                swapped[p] = dict(state.get(k, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, own in zip(optimizer.param_groups, own_groups, strict=True):
            group.clear()
            group.update(own)
        optimizer.state = own_state
