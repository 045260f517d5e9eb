"""Averaging parameters over a group in one flat all-reduce (PyTorch's
``model_averaging.utils``).

Example:
    >>> average_parameters(iter(model.parameters()), None)   # every rank: the mean model
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import ember
from ember.distributed.collectives import all_reduce
from ember.distributed.process_group import GroupMember, ProcessGroup, resolve
from ember.tensor import Tensor

__all__ = ["average_parameters", "get_params_to_average",
           "average_parameters_or_parameter_groups"]

Params = Iterable[Tensor] | Iterable[dict]


def average_parameters(params: Iterator[Tensor], process_group: ProcessGroup | None) -> None:
    """Replaces each parameter by its mean over ``process_group`` (None: the world), all of
    them in one all-reduce; nothing on a rank outside the group.

    Example:
        >>> average_parameters(iter(model.parameters()), None)
    """
    if process_group is GroupMember.NON_GROUP_MEMBER:
        return
    group = resolve(process_group, "average_parameters")
    params = list(params)
    if not params:
        return
    with ember.no_grad():
        flat = ember.cat([p.detach().reshape(-1) for p in params])  # (promoted, as torch)
        flat.div_(group.size())
        all_reduce(flat, group=group)
        at = 0
        for p in params:
            p.copy_(flat[at : at + p.numel()].view(tuple(p.shape)))
            at += p.numel()


def get_params_to_average(params: Params) -> list[Tensor]:
    """The parameters (or those of parameter groups, dicts with ``"params"``) that have a
    gradient: the ones an optimizer step changed.

    Example:
        >>> get_params_to_average(opt.param_groups)
    """
    out = []
    for param in params:
        if isinstance(param, Tensor):
            if param.grad is not None:
                out.append(param)
        elif isinstance(param, dict):
            out.extend(p for p in param["params"] if p.grad is not None)
        else:
            raise NotImplementedError(
                f"get_params_to_average: parameter input of type {type(param)} is not "
                "supported; pass parameters or parameter groups (dicts with 'params')")
    return out


def average_parameters_or_parameter_groups(params: Params,
                                           process_group: ProcessGroup | None) -> None:
    """:func:`average_parameters` of the parameters that have a gradient.

    Example:
        >>> average_parameters_or_parameter_groups(model.parameters(), None)
    """
    average_parameters(iter(get_params_to_average(params)), process_group)
