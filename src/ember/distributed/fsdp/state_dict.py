"""State dicts of FSDP models under the original parameter names.

For the full and sharded kinds, each unit's module is shown for a moment with its original
parameters back in place (the gathered leaves, in their original order, no ``_flat_param``),
so :class:`~ember.nn.Module`'s own state-dict code walks it; the keys lose the
``_fsdp_wrapped_module.`` parts. Full state dicts gather the parameters first; sharded ones
give this rank's piece of each parameter as a
:class:`~ember.distributed.checkpoint.ShardedTensor`.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ember import nn
from ember.autograd.grad_mode import no_grad
from ember.distributed.checkpoint import ShardedTensor
from ember.distributed.fsdp.api import ShardingStrategy, StateDictType
from ember.distributed.fsdp.flat_param import FLAT_PARAM
from ember.nn.state_dict import _IncompatibleKeys
from ember.ops.creation import tensor

_WRAPPED = "_fsdp_wrapped_module."
_BUSY: list[bool] = []


def busy() -> bool:
    """Whether a unit's state dict is being built (nested units then act as plain modules)."""
    return bool(_BUSY)


def clean(key: str) -> str:
    return key.replace(_WRAPPED, "")


@contextlib.contextmanager
def original_view(units: list) -> Iterator[dict[int, tuple[Any, int]]]:
    """Puts each unit's leaves back as its modules' parameters; yields ``{id(leaf): (handle,
    index)}``."""
    swapped = []
    leaves: dict[int, tuple[Any, int]] = {}
    _BUSY.append(True)
    try:
        for unit in units:
            h = unit._handle
            if h is None:
                continue
            for i, leaf in enumerate(h.leaves):
                leaves[id(leaf)] = (h, i)
            own = {(id(m), name): h.leaves[i] for m, name, i in h.slots}
            for key, (module, order) in unit._orig_order.items():
                current = dict(module._parameters)
                current.pop(FLAT_PARAM, None)
                shown = OrderedDict((n, own.get((key, n), current.get(n))) for n in order)
                swapped.append((module, dict(module._parameters)))
                dict.clear(module._parameters)
                dict.update(module._parameters, shown)
        yield leaves
    finally:
        for module, params in reversed(swapped):
            dict.clear(module._parameters)
            dict.update(module._parameters, params)
        _BUSY.pop()


def check_sharded(root: Any, units: list, what: str) -> None:
    """The sharded and local kinds need sharded units, as in PyTorch: a ``NO_SHARD`` unit's
    pieces would be whole copies on every rank."""
    kind = root._state_dict_type
    if kind is StateDictType.FULL_STATE_DICT:
        return
    for unit in units:
        if unit._handle is not None and unit.sharding_strategy is ShardingStrategy.NO_SHARD:
            raise RuntimeError(
                f"FullyShardedDataParallel.{what}: {kind.name} can only be used when "
                f"parameters are flattened and sharded, but {unit._handle.owner} uses "
                "NO_SHARD (every rank holds all of it). Hint: use FULL_STATE_DICT, with "
                "FullStateDictConfig(rank0_only=True) to save it once")


def save(root: Any, units: list, prefix: str, keep_vars: bool) -> dict[str, Any]:
    """``root``'s full or sharded state dict (as its ``_state_dict_type`` says)."""
    kind = root._state_dict_type
    if kind is StateDictType.FULL_STATE_DICT:
        config = root._state_dict_config
        with type(root).summon_full_params(root, writeback=False):
            with original_view(units):
                inner = root.state_dict(prefix=prefix, keep_vars=keep_vars)
            out = OrderedDict((clean(k), v if keep_vars else v.clone())
                              for k, v in inner.items())
        if config is not None and config.rank0_only and root._group.rank() != 0:
            return OrderedDict()
        return out
    with original_view(units) as leaves:
        inner = root.state_dict(prefix=prefix, keep_vars=True)
        out = OrderedDict()
        for k, v in inner.items():
            if id(v) in leaves:
                h, i = leaves[id(v)]
                piece, start = h.local_pieces()[i]
                out[clean(k)] = ShardedTensor(tensor(piece.copy()), h.shapes[i], start)
            else:
                out[clean(k)] = v if keep_vars else v.detach()
    return out


def load(root: Any, units: list, state_dict: Mapping[str, Any], strict: bool) -> Any:
    """Copies a full or sharded state dict into the shards (and buffers)."""
    sharded = root._state_dict_type is StateDictType.SHARDED_STATE_DICT
    summon = (contextlib.nullcontext() if sharded
              else type(root).summon_full_params(root, writeback=True))
    with summon, original_view(units) as leaves:
        inner = root.state_dict(keep_vars=True)
        internal = {clean(k): k for k in inner}
        renamed = OrderedDict((internal.get(k, k), v) for k, v in state_dict.items())
        if not sharded:
            try:
                result = nn.Module.load_state_dict(root, renamed, strict)
            except RuntimeError as e:  # (its message names the keys as the user gave them)
                raise type(e)(clean(str(e))) from None
        else:
            result = _load_sharded(inner, renamed, leaves, strict)
    return _IncompatibleKeys([clean(k) for k in result.missing_keys],
                             [clean(k) for k in result.unexpected_keys])


def _load_sharded(inner: dict, given: dict, leaves: dict, strict: bool) -> _IncompatibleKeys:
    missing = [k for k in inner if k not in given]
    unexpected = [k for k in given if k not in inner]
    errors = []
    for key, current in inner.items():
        if key not in given:
            continue
        value = given[key]
        if type(value) is tuple and len(value) == len(ShardedTensor._fields):
            value = ShardedTensor(*value)  # (ember.save keeps a ShardedTensor as a tuple)
        if id(current) in leaves:
            h, i = leaves[id(current)]
            piece, start = h.local_pieces()[i]
            if not isinstance(value, ShardedTensor) or value.start != start or \
                    value.local.numel() != piece.size or tuple(value.global_shape) != h.shapes[i]:
                errors.append(f"{clean(key)}: expected a ShardedTensor of shape {h.shapes[i]} "
                              f"starting at {start} with {piece.size} values, got "
                              f"{_describe(value)}")
                continue
            piece[...] = np.asarray(value.local._data).reshape(-1)
            h.flat_param._vc.value += 1
        else:
            with no_grad():
                current[...] = value
    if strict and (missing or unexpected):
        errors.insert(0, f"missing keys {[clean(k) for k in missing]}, unexpected keys "
                         f"{[clean(k) for k in unexpected]}")
    if errors:
        raise RuntimeError("FullyShardedDataParallel.load_state_dict (SHARDED_STATE_DICT): "
                           + "; ".join(errors) + ". Hint: load the checkpoint into "
                           "model.state_dict() as template (ember.distributed.checkpoint.load)")
    return _IncompatibleKeys(missing, unexpected)


def _describe(value: Any) -> str:
    if isinstance(value, ShardedTensor):
        return (f"a ShardedTensor of shape {tuple(value.global_shape)} starting at "
                f"{value.start} with {value.local.numel()} values")
    return type(value).__name__
