"""PyTorch's ``torch.distributed.checkpoint.state_dict``: a model's and its optimizer's state
by parameter name whatever wraps the model (no ``module.`` of DistributedDataParallel in the
names; a ``fully_shard`` model's as ``Shard(0)`` DTensors, or full tensors with
``full_state_dict``), to save with :func:`ember.distributed.checkpoint.save` and load on any
number of ranks.

Example:
    >>> model_sd, optim_sd = get_state_dict(model, opt)
    >>> checkpoint.save({"model": model_sd, "optim": optim_sd}, checkpoint_id="ckpt")
    >>> checkpoint.load(state := {"model": model_sd, "optim": optim_sd}, checkpoint_id="ckpt")
    >>> set_state_dict(model, opt, model_state_dict=state["model"],
    ...                optim_state_dict=state["optim"])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ember import nn
from ember.distributed.ddp import DistributedDataParallel
from ember.distributed.fsdp import optim_state_dict as by_name
from ember.distributed.tensor.dtensor import DTensor
from ember.errors import ArgumentError
from ember.optim.optimizer import Optimizer

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict",
           "get_state_dict", "set_model_state_dict", "set_optimizer_state_dict",
           "set_state_dict"]


@dataclass
class StateDictOptions:
    """How the state dicts are made, as PyTorch's: ``full_state_dict`` gathers a sharded
    model's DTensors into full tensors; ``cpu_offload`` (the tensors are on the CPU here);
    ``ignore_frozen_params`` leaves out parameters that need no gradient; ``strict`` for
    loading. ``broadcast_from_rank0`` and ``flatten_optimizer_state_dict`` are not supported."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False


def get_model_state_dict(model: nn.Module, *, submodules: Any = None,
                         options: StateDictOptions | None = None) -> dict[str, Any]:
    """``model``'s state dict by the unwrapped model's names.

    Example:
        >>> get_model_state_dict(ddp_model).keys()  # (no ``module.`` prefix)
    """
    o = _options("get_model_state_dict", submodules, options)
    plain = _unwrapped(model)
    frozen = {name for name, p in plain.named_parameters() if not p.requires_grad}
    return {name: _full(value, o) for name, value in plain.state_dict().items()
            if not (o.ignore_frozen_params and name in frozen)}


def get_optimizer_state_dict(model: nn.Module, optimizers: Optimizer, *, submodules: Any = None,
                             options: StateDictOptions | None = None) -> dict[str, Any]:
    """``{"state": {name: {...}}, "param_groups": [...]}`` of ``optimizers`` keyed by the
    parameters' names (state not made yet is made, as PyTorch's: see
    :func:`ember.distributed.fsdp.get_optimizer_state_dict`).

    Example:
        >>> get_optimizer_state_dict(model, opt)["state"]["fc.weight"]["exp_avg"]
    """
    o = _options("get_optimizer_state_dict", submodules, options)
    osd = by_name.get_optimizer_state_dict(_unwrapped(model), optimizers)
    return {**osd, "state": {name: {k: _full(v, o) for k, v in s.items()}
                             for name, s in osd["state"].items()}}


def get_state_dict(model: nn.Module, optimizers: Optimizer, *, submodules: Any = None,
                   options: StateDictOptions | None = None) -> tuple[dict, dict]:
    """``(get_model_state_dict(...), get_optimizer_state_dict(...))``.

    Example:
        >>> model_sd, optim_sd = get_state_dict(model, opt)
    """
    return (get_model_state_dict(model, submodules=submodules, options=options),
            get_optimizer_state_dict(model, optimizers, submodules=submodules, options=options))


def set_model_state_dict(model: nn.Module, model_state_dict: dict[str, Any], *,
                         options: StateDictOptions | None = None) -> Any:
    """Loads ``model_state_dict`` (by the unwrapped model's names) into ``model``; returns
    the missing and unexpected keys, as ``load_state_dict``.

    Example:
        >>> set_model_state_dict(ddp_model, state["model"])
    """
    o = _options("set_model_state_dict", None, options)
    return _unwrapped(model).load_state_dict(model_state_dict, strict=o.strict)


def set_optimizer_state_dict(model: nn.Module, optimizers: Optimizer,
                             optim_state_dict: dict[str, Any], *,
                             options: StateDictOptions | None = None) -> None:
    """Loads what :func:`get_optimizer_state_dict` gives into ``optimizers``.

    Example:
        >>> set_optimizer_state_dict(model, opt, state["optim"])
    """
    _options("set_optimizer_state_dict", None, options)
    by_name.set_optimizer_state_dict(_unwrapped(model), optimizers, optim_state_dict)


def set_state_dict(model: nn.Module, optimizers: Optimizer, *, model_state_dict: dict[str, Any],
                   optim_state_dict: dict[str, Any],
                   options: StateDictOptions | None = None) -> Any:
    """Both setters; returns the model's missing and unexpected keys.

    Example:
        >>> set_state_dict(model, opt, model_state_dict=msd, optim_state_dict=osd)
    """
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return set_model_state_dict(model, model_state_dict, options=options)


def _options(who: str, submodules: Any, options: StateDictOptions | None) -> StateDictOptions:
    o = StateDictOptions() if options is None else options
    if not isinstance(o, StateDictOptions):
        raise ArgumentError(f"{who}: options must be a StateDictOptions, got "
                            f"{type(o).__name__}")
    refused = [name for name in ("broadcast_from_rank0", "flatten_optimizer_state_dict")
               if getattr(o, name)] + (["submodules"] if submodules is not None else [])
    if refused:
        raise ArgumentError(f"{who}: {', '.join(refused)} not supported. Hint: load the "
                            "state on every rank (checkpoint.load reads each rank's part)")
    return o


def _unwrapped(model: nn.Module) -> nn.Module:
    """The model DistributedDataParallel wraps (its names without ``module.``), or ``model``."""
    return model.module if isinstance(model, DistributedDataParallel) else model


def _full(value: Any, options: StateDictOptions) -> Any:
    return value.full_tensor() if options.full_state_dict and isinstance(value, DTensor) \
        else value
