"""Selective activation checkpointing (``torch.utils.checkpoint``'s
``create_selective_checkpoint_contexts``): inside :func:`~ember.utils.checkpoint.checkpoint`,
a policy decides per op whether its output is kept from the forward pass (and not computed
again) or recomputed in backward. Ember's ops are its primitives: the policy receives the
:class:`~ember.ops.primitive.Primitive` (``op.name`` is e.g. ``"matmul"``), its input tensors
and its parameters.

The forward context watches every op through a dispatch handler and keeps the outputs of the
ops to save, in order; the recompute context hands those back instead of computing them (the
op is still recorded on the tape, so backward reads what it saves as before).
"""

from __future__ import annotations

import difflib
import enum
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError
from ember.ops.primitive import (
    PRIMITIVES,
    Primitive,
    apply_below,
    pop_handler,
    push_handler,
)

__all__ = ["CheckpointPolicy", "SelectiveCheckpointContext",
           "create_selective_checkpoint_contexts"]


class CheckpointPolicy(enum.Enum):
    """What a selective-checkpoint policy answers for an op: save its output, or recompute
    it. ``MUST_*`` and ``PREFER_*`` differ only for compilers, and the ``*_CPU_OFFLOAD``
    answers are for compilers only: run eagerly, such an op is recomputed, as in PyTorch."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_SAVES = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)


class SelectiveCheckpointContext:
    """The ``ctx`` a policy receives: ``is_recompute`` (False: policies run during the
    forward pass) and ``op_output``, the op's output."""

    def __init__(self, *, is_recompute: bool, op_output: Any = None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


_RECOMPUTE = object()
_CONSUMED = object()


class _Cached:
    """An op output kept for the recompute, with its version when kept."""

    __slots__ = ("arrays", "versions")

    def __init__(self, out: Any) -> None:
        outs = out if isinstance(out, tuple) else (out,)
        self.arrays = tuple(t._data for t in outs)
        self.versions = tuple((t._vc, t._vc.value) for t in outs)

    def mutated(self) -> bool:
        return any(vc.value != v for vc, v in self.versions)


class _Replay:
    """A primitive whose forward hands back a cached output; everything else (its rules,
    name, what it saves) is the real primitive's."""

    def __init__(self, prim: Primitive, arrays: tuple) -> None:
        self._prim, self._arrays = prim, arrays

    def forward(self, xp: Any, *arrays: Any, **params: Any) -> Any:
        return self._arrays[0] if self._prim.nout == 1 else self._arrays

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._prim, attr)


class _Mode:
    """A dispatch handler active inside a ``with`` block (the op outputs it keeps, or hands
    back, are in ``storage``: op name -> [entry per call, in order])."""

    def __init__(self, storage: dict[str, list]) -> None:
        self.storage = storage
        self.counts: dict[str, int] = defaultdict(int)

    def __enter__(self) -> _Mode:
        self.counts.clear()
        push_handler(self, observer=True)
        return self

    def __exit__(self, *exc: object) -> None:
        pop_handler(self)


class _Caching(_Mode):
    """The forward side: runs each op and keeps the outputs the policy saves."""

    def __init__(self, policy_fn: Callable, storage: dict[str, list]) -> None:
        super().__init__(storage)
        self.policy_fn = policy_fn

    def __call__(self, prim: Primitive, inputs: tuple, params: dict) -> Any:
        out = apply_below(self, prim, inputs, params)
        if prim.view:  # (no work to save: a view is recomputed for free)
            return out
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                prim, *inputs, **params)
        if isinstance(policy, bool):
            policy = CheckpointPolicy.MUST_SAVE if policy else CheckpointPolicy.PREFER_RECOMPUTE
        self.storage[prim.name].append(_Cached(out) if policy in _SAVES else _RECOMPUTE)
        return out


class _Replaying(_Mode):
    """The recompute side: computes the ops the policy recomputes and hands back the
    others' kept outputs."""

    def __init__(self, storage: dict[str, list], allow_cache_entry_mutation: bool) -> None:
        super().__init__(storage)
        self.allow_mutation = allow_cache_entry_mutation

    def __call__(self, prim: Primitive, inputs: tuple, params: dict) -> Any:
        if prim.view:
            return apply_below(self, prim, inputs, params)
        calls = self.storage.get(prim.name)
        idx = self.counts[prim.name]
        self.counts[prim.name] += 1
        if calls is None or idx >= len(calls):
            raise RuntimeError(f"selective checkpoint: call {idx} of {prim.name} happened in "
                               "the recompute but not in the forward pass; the checkpointed "
                               "function must run the same ops each time it is called")
        entry = calls[idx]
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to "
                               "backward once on any region computed under selective "
                               "activation checkpoint.")
        if entry is _RECOMPUTE:
            return apply_below(self, prim, inputs, params)
        if entry.mutated() and not self.allow_mutation:
            raise RuntimeError(f"selective checkpoint: the output of {prim.name} kept for "
                               "backward was modified in place after the forward pass. Hint: "
                               "pass allow_cache_entry_mutation=True to "
                               "create_selective_checkpoint_contexts, or recompute this op")
        calls[idx] = _CONSUMED
        return apply_below(self, _Replay(prim, entry.arrays), inputs, params)


def _op_name(op: Any) -> str:
    """The primitive name an entry of a policy's op list stands for (a clear error if none)."""
    if isinstance(op, Primitive):
        return op.name
    if isinstance(op, str) and op in PRIMITIVES:
        return op
    given = op if isinstance(op, str) else getattr(op, "__name__", None)
    close = difflib.get_close_matches(given, PRIMITIVES, n=3) if isinstance(given, str) else []
    hint = (f"did you mean {' or '.join(map(repr, close))}?" if close else
            "ember.ops.primitive.PRIMITIVES lists the names")
    what = (f"{op!r}, which is not the name of a primitive" if isinstance(op, str) else
            f"{op!r} of type {type(op).__name__}")
    raise ArgumentError(f"create_selective_checkpoint_contexts: Expected op in `op_list` to be "
                        f"a primitive or a primitive's name (such as 'matmul') but got: {what}; "
                        f"{hint} (torch's aten.mm and aten.bmm, and the products in addmm and "
                        f"linear, are Ember's 'matmul')")


def create_selective_checkpoint_contexts(
        policy_fn_or_list: Callable[..., CheckpointPolicy | bool] | list,
        allow_cache_entry_mutation: bool = False) -> tuple[_Mode, _Mode]:
    """The two contexts for ``checkpoint(..., context_fn=...)`` that make it selective:
    ``policy_fn(ctx, op, *inputs, **params)`` returns a :class:`CheckpointPolicy` (or a bool:
    True saves) for each op of the forward pass; or, given a list of primitives (or their
    names), those are saved and the rest recomputed. Make new contexts for each call (pass
    ``functools.partial(create_selective_checkpoint_contexts, policy)`` as ``context_fn``).

    Example:
        >>> import functools
        >>> from ember.utils.checkpoint import (checkpoint, CheckpointPolicy,
        ...                                     create_selective_checkpoint_contexts)
        >>> def policy(ctx, op, *args, **kwargs):
        ...     save = op.name == "matmul"
        ...     return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
        >>> w = ember.randn(4, 4, requires_grad=True)
        >>> y = checkpoint(lambda x: (x @ w).sin(), ember.randn(2, 4), context_fn=
        ...                functools.partial(create_selective_checkpoint_contexts, policy))
        >>> y.sum().backward()           # the matmul is not computed again
        >>> w.grad.shape
        ember.Size([4, 4])
    """
    if isinstance(policy_fn_or_list, list):
        names = {_op_name(op) for op in policy_fn_or_list}

        def policy_fn(ctx: SelectiveCheckpointContext, op: Primitive, *args: Any,
                      **kwargs: Any) -> CheckpointPolicy:
            return CheckpointPolicy.MUST_SAVE if op.name in names else \
                CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage: dict[str, list] = defaultdict(list)
    return _Caching(policy_fn, storage), _Replaying(storage, allow_cache_entry_mutation)
