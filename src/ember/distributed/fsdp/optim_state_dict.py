"""The optimizer state of a ``fully_shard`` model by parameter name, with PyTorch's names
(``torch.distributed.checkpoint.state_dict.get_optimizer_state_dict`` and
``set_optimizer_state_dict``): each state tensor of a sharded parameter (Adam's moments, SGD's
momentum) is a ``Shard(0)`` DTensor of the parameter's full shape, sharing memory with the
optimizer's, so :func:`ember.distributed.checkpoint.save` writes every rank's rows and
:func:`~ember.distributed.checkpoint.load` fills them in place (on any number of ranks).

``optimizer.state_dict()`` itself holds this rank's pieces as plain tensors: written by
``checkpoint.save`` as if replicated, one rank's rows would stand for all.
"""

from __future__ import annotations

from typing import Any

from ember import nn
from ember.distributed.fsdp.param_group import sharded_piece
from ember.distributed.tensor.dtensor import DTensor
from ember.errors import ArgumentError
from ember.ops.creation import zeros_like
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor

__all__ = ["get_optimizer_state_dict", "set_optimizer_state_dict"]


def get_optimizer_state_dict(model: nn.Module, optimizers: Optimizer) -> dict[str, Any]:
    """``{"state": {name: {key: value}}, "param_groups": [{..., "params": [names]}]}`` for
    ``optimizers`` (one optimizer over ``model``'s parameters); a sharded parameter's state
    tensors are ``Shard(0)`` DTensors of its full shape. State not made yet (no step so far)
    is made by a step with zero gradients and learning rate 0, as PyTorch does, so that a
    checkpoint can be loaded into it (not when gradients exist already, nor for frozen
    parameters, as PyTorch's). So, as in PyTorch, call it to load a checkpoint before any
    backward (or after ``opt.zero_grad()``): with gradients and no state yet, it returns no
    state, and ``checkpoint.load`` into that loads no optimizer state.

    Example:
        >>> osd = get_optimizer_state_dict(model, opt)
        >>> checkpoint.save("ckpt", {"model": model.state_dict(), "optim": osd["state"]}, 10)
        >>> checkpoint.load(path, {"optim": get_optimizer_state_dict(model, opt)["state"]})
    """
    opt = _one(optimizers)
    if not opt.state:
        _make_state(opt)
    names = _names(model, opt)
    params = [p for g in opt.param_groups for p in g["params"]]
    sd = opt.state_dict()
    state = {names[id(params[i])]: {k: _sharded(v, params[i]) for k, v in s.items()}
             for i, s in sd["state"].items()}
    groups = [{**g, "params": [names[id(params[i])] for i in g["params"]]}
              for g in sd["param_groups"]]
    return {"state": state, "param_groups": groups}


def set_optimizer_state_dict(model: nn.Module, optimizers: Optimizer,
                             optim_state_dict: dict[str, Any]) -> None:
    """Loads what :func:`get_optimizer_state_dict` gives (DTensors, or full tensors of the
    parameters' shapes: each rank keeps its rows) into ``optimizers``.

    Example:
        >>> set_optimizer_state_dict(model, opt, osd)
    """
    opt = _one(optimizers)
    names = _names(model, opt)
    params = [p for g in opt.param_groups for p in g["params"]]
    index = {names[id(p)]: i for i, p in enumerate(params)}
    for name in optim_state_dict["state"]:
        if name not in index:
            raise KeyError(f"set_optimizer_state_dict: '{name}' names no parameter of the "
                           f"optimizer (it has {sorted(index)[:6]} …)")
    state = {index[name]: {k: _local(name, k, v, params[index[name]]) for k, v in s.items()}
             for name, s in optim_state_dict["state"].items()}
    groups = [{**g, "params": [index[name] for name in g["params"]]}
              for g in optim_state_dict["param_groups"]]
    opt.load_state_dict({"state": state, "param_groups": groups})


def _one(optimizers: Any) -> Optimizer:
    if not isinstance(optimizers, Optimizer):
        raise TypeError("get/set_optimizer_state_dict: pass one optimizer, got "
                        f"{type(optimizers).__name__} (several optimizers are not supported)")
    return optimizers


def _names(model: nn.Module, opt: Optimizer) -> dict[int, str]:
    names = {id(p): name for name, p in model.named_parameters()}
    for g in opt.param_groups:
        for p in g["params"]:
            if id(p) not in names:
                raise ArgumentError("get/set_optimizer_state_dict: the optimizer holds a "
                                    f"parameter of shape {tuple(p.shape)} that is not one of the "
                                    "model's. Hint: build the optimizer after fully_shard, on "
                                    "model.parameters()")
    return names


def _make_state(opt: Optimizer) -> None:
    """One step with zero gradients and learning rate 0: the state exists, the parameters
    are unchanged. As PyTorch's, nothing is made when a parameter has a gradient already (a
    step would count it: the state is made by the next real step), and frozen parameters
    (``requires_grad=False``) get no gradient, so no state."""
    params = [p for g in opt.param_groups for p in g["params"]]
    if any(p.grad is not None for p in params):
        return
    rates = [g["lr"] for g in opt.param_groups]
    for p in params:
        if p.requires_grad:
            p.grad = zeros_like(p)
    try:
        for g in opt.param_groups:
            g["lr"] = 0.0
        opt.step()
    finally:
        for g, lr in zip(opt.param_groups, rates):
            g["lr"] = lr
        for p in params:
            p.grad = None


def _sharded(value: Any, p: Tensor) -> Any:
    found = sharded_piece(p)
    if found is None or not isinstance(value, Tensor) or tuple(value.shape) != tuple(p.shape):
        return value  # (``step``, or a parameter fully_shard left alone)
    group, i = found
    return DTensor.from_local(value, group.mesh, group.placements, shape=group.shapes[i])


def _local(name: str, key: str, value: Any, p: Tensor) -> Any:
    found = sharded_piece(p)
    if found is None:
        return value.full_tensor() if isinstance(value, DTensor) else value
    group, i = found
    if isinstance(value, DTensor) or (isinstance(value, Tensor) and value.ndim
                                      and tuple(value.shape) == group.shapes[i]):
        return group.local_piece(f"{name}.{key}", value, i)
    return value
