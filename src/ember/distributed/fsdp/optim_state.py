"""Optimizer state dicts of FSDP models keyed by the original parameter names, with full
(unsharded) state tensors: what one process training the plain model would save.

A flat shard's per-element state (Adam's moments, momentum buffers) is all-gathered and cut
into the original parameters; scalar state (``step``) is given to each of them. Loading cuts
the full tensors back into this rank's shard.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import nn
from ember.distributed.fsdp.flat_param import FlatParamHandle
from ember.distributed.fsdp.state_dict import clean, original_view
from ember.errors import ArgumentError
from ember.ops.creation import tensor
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor


def _layout(model: nn.Module, units: list) -> tuple[dict, dict]:
    """``{id(flat_param): handle}`` and ``{id(param or flat_param): [original names]}``."""
    handles = {id(u._handle.flat_param): u._handle for u in units if u._handle is not None}
    names: dict[int, list[str]] = {}
    with original_view(units):
        by_leaf = {id(t): clean(n) for n, t in model.named_parameters()}
    for key, h in handles.items():
        names[key] = [by_leaf[id(leaf)] for leaf in h.leaves]
    for n, p in model.named_parameters():
        names.setdefault(id(p), [clean(n)])
    return handles, names


def _params(optim: Optimizer, names: dict[int, list[str]], caller: str) -> list[Tensor]:
    """The optimizer's parameters in its state dict's index order; all must be the model's."""
    seen: dict[int, Tensor] = {}
    for group in optim.param_groups:
        for p in group["params"]:
            seen.setdefault(id(p), p)
    foreign = [i for i, p in enumerate(seen.values()) if id(p) not in names]
    if foreign:
        raise ArgumentError(
            f"FullyShardedDataParallel.{caller}: {len(foreign)} of the optimizer's "
            f"{len(seen)} parameters (indices {foreign[:5]}) are not the FSDP model's; make "
            f"the optimizer after wrapping, over model.parameters() (its flat shards)")
    return list(seen.values())


def _per_element(h: FlatParamHandle, value: Any) -> bool:
    return isinstance(value, Tensor) and tuple(value.shape) == tuple(h.flat_param.shape) \
        and value.ndim > 0


def optim_state_dict(model: nn.Module, optim: Optimizer, units: list,
                     saved: dict[str, Any] | None = None) -> dict[str, Any]:
    """The full optimizer state dict (of ``saved``, ``optim``'s by default) under the original
    parameter names."""
    handles, names = _layout(model, units)
    saved = saved if saved is not None else optim.state_dict()
    params = _params(optim, names, "optim_state_dict")
    state: dict[str, Any] = {}
    for index, p in enumerate(params):
        entry = saved["state"].get(index)
        if entry is None:
            continue
        h = handles.get(id(p))
        if h is None:
            state[names[id(p)][0]] = {k: v.clone() if isinstance(v, Tensor) else v
                                      for k, v in entry.items()}
            continue
        pieces: list[dict[str, Any]] = [{} for _ in h.leaves]
        for key, value in entry.items():
            full = h.all_gather(value._data) if _per_element(h, value) else None
            for i, shape in enumerate(h.shapes):
                if full is not None:
                    part = full[h.offsets[i] : h.offsets[i + 1]].reshape(shape).copy()
                    pieces[i][key] = tensor(part)
                else:
                    pieces[i][key] = value.clone() if isinstance(value, Tensor) else value
        state.update(zip(names[id(p)], pieces))
    groups = []
    for group in saved["param_groups"]:
        groups.append({**{k: v for k, v in group.items() if k != "params"},
                       "params": [n for i in group["params"] for n in names[id(params[i])]]})
    return {"state": state, "param_groups": groups}


def optim_state_dict_to_load(model: nn.Module, optim: Optimizer, full: dict[str, Any],
                             units: list) -> dict[str, Any]:
    """``full`` (from :func:`optim_state_dict`) in ``optim``'s own layout, for this rank."""
    handles, names = _layout(model, units)
    state: dict[int, dict[str, Any]] = {}
    for index, p in enumerate(_params(optim, names, "optim_state_dict_to_load")):
        entries = [full["state"].get(n) for n in names[id(p)]]
        h = handles.get(id(p))
        if h is None or all(e is None for e in entries):
            if entries[0] is not None:
                state[index] = entries[0]
            continue
        first = next(e for e in entries if e is not None)
        mine: dict[str, Any] = {}
        for key, value in first.items():
            if isinstance(value, Tensor) and value.ndim > 0:
                mine[key] = tensor(h.mine([None if e is None else e[key]._data
                                           for e in entries], np.asarray(value._data).dtype))
            else:
                mine[key] = value
        state[index] = mine
    own = optim.state_dict()["param_groups"]
    if len(own) != len(full["param_groups"]):
        raise ArgumentError(f"FullyShardedDataParallel.optim_state_dict_to_load: the state dict "
                            f"has {len(full['param_groups'])} parameter groups, the optimizer "
                            f"{len(own)}")
    groups = [{**{k: v for k, v in saved.items() if k != "params"}, "params": mine["params"]}
              for saved, mine in zip(full["param_groups"], own)]
    return {"state": state, "param_groups": groups}
