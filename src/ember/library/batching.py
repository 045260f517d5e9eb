"""vmap for custom ops: the op's registered batching rule (``register_vmap``), else the op run
once per sample and the results stacked (PyTorch's fallback for custom ops)."""

from __future__ import annotations

from typing import Any

from ember.errors import OpError
from ember.func.batching import ALWAYS, RULES, batched, move
from ember.func.vmap import VmapInfo
from ember.library.custom_op import CustomOpDef
from ember.library.schema import VALUE
from ember.ops.join import stack
from ember.ops.primitive import apply
from ember.tensor import Tensor


def register_batching(op: CustomOpDef) -> None:
    """Registers ``op``'s batching rule in ``ember.func.batching``'s table (one that always
    runs, so that a user's rule gets vmap's ``randomness``)."""
    def rule(b: int, xs: tuple, bs: tuple, *, randomness: str, args: tuple,
             counts: tuple, lens: tuple = ()) -> tuple[Any, bool]:
        layout = (args, counts)
        if not any(bs):  # (nothing batched: the primitive itself, as PyTorch; the op's
            return apply(op.primitive(lens), *xs, args=args, counts=counts, lens=lens), False
        outs = _by_user_rule(op, b, xs, bs, layout, randomness, lens) \
            if op._vmap is not None else _per_sample(op, b, xs, bs, layout, lens)
        return (outs[0] if len(outs) == 1 else tuple(outs)), True

    RULES[op.qualname] = rule
    ALWAYS.add(op.qualname)


def _per_sample(op: CustomOpDef, b: int, xs: tuple, bs: tuple, layout: tuple,
                lens: tuple) -> list:
    samples = [op.apply_lens([x[i] if is_b else x for x, is_b in zip(xs, bs)], layout)
               for i in range(b)]
    for _, got in samples:
        if got != lens:
            raise OpError(f"{op.qualname}: under vmap, a sample's list outputs have lengths "
                          f"{list(got)}, the fake impl says {list(lens)}; vmap needs the same "
                          "lengths for every sample")
    return [stack([s[k] for s, _ in samples]) for k in range(op.primitive(lens).nout)]


def _by_user_rule(op: CustomOpDef, b: int, xs: tuple, bs: tuple, layout: tuple,
                  randomness: str, lens: tuple) -> list:
    values = op.join(xs, layout)
    dims = op.join([0 if is_b else None for is_b in bs], layout)
    for p in op._schema.params:  # non-tensor arguments have no batch dim
        if p.kind == VALUE:
            dims[p.name] = None
    pos, kw = op.call_kwargs(values)
    in_dims = tuple(dims[p.name] for p in op._schema.params if not p.kwarg_only)
    result = op._vmap(VmapInfo(b, randomness), in_dims, *pos, **kw)
    if not isinstance(result, tuple) or len(result) != 2:
        raise OpError(f"{op.qualname}: the vmap rule must return (output, out_dims), got "
                      f"{type(result).__name__}")
    out, out_dims = result
    outs = _flat(out if op._schema.tupled else (out,))
    out_dims = _flat(out_dims) if isinstance(out_dims, (tuple, list)) else \
        (out_dims,) * len(outs)
    if len(out_dims) != len(outs):
        raise OpError(f"{op.qualname}: the vmap rule returned {len(outs)} outputs but "
                      f"{len(out_dims)} out_dims")
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise OpError(f"{op.qualname}: the vmap rule returned {type(o).__name__} as output "
                          f"{i}, expected a Tensor")
    return [batched(o, b, False) if d is None else move(o, d, 0) for o, d in zip(outs, out_dims)]


def _flat(values: Any) -> list:
    """A rule's outputs (or out_dims) with the items of lists (``Tensor[]`` outputs) in line."""
    return [v for item in values
            for v in (item if isinstance(item, list) else [item])]
