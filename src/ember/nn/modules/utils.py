"""``torch.nn.modules.utils``' helpers, for code that imports them from there: argument
tuples (``_single``, ``_pair``, ``_triple``, ``_quadruple``), ``_reverse_repeat_tuple`` (a
module's padding as ``F.pad`` takes it) and ``consume_prefix_in_state_dict_if_present`` (a
checkpoint saved from a ``DistributedDataParallel`` or ``DataParallel`` wrapper loaded into the
bare model)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from ember.errors import ArgumentError

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """A function that makes ``n`` copies of a single value and a tuple of an iterable."""
    def parse(x: Any) -> tuple:
        return tuple(x) if isinstance(x, Iterable) else (x,) * n

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: Iterable, n: int) -> tuple:
    """``t`` reversed, each element ``n`` times: (1, 2) and 2 give (2, 2, 1, 1)."""
    return tuple(x for x in reversed(tuple(t)) for _ in range(n))


def _list_with_default(out_size: Any, defaults: list[int]) -> Any:
    """An adaptive pool's output size with None entries taken from ``defaults`` (the input's
    trailing sizes)."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ArgumentError(f"Input dimension should be at least {len(out_size) + 1}")
    return [d if v is None else v for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict: MutableMapping[str, Any],
                                            prefix: str) -> None:
    """Strips ``prefix`` from every key of ``state_dict`` that starts with it, in place (and
    from the keys of its ``_metadata``, if any).

    Example:
        >>> sd = {"module.weight": 1, "module.bias": 2}
        >>> consume_prefix_in_state_dict_if_present(sd, "module.")
        >>> sorted(sd)
        ['bias', 'weight']
    """
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in [k for k in metadata if k == prefix.rstrip(".") or k.startswith(prefix)]:
            new = "" if key == prefix.rstrip(".") else key[len(prefix):]
            metadata[new] = metadata.pop(key)
