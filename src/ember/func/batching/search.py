"""Batching rules of searching and counting (ember/ops/search.py).

``searchsorted`` with shared 1-D boundaries runs on the physical values as they are; batched
boundaries make the batch a leading dim both operands share. ``histc`` has a per-row mode
(each row its own histogram and range). ``isin`` against per-sample test sets sorts each set
and searches it. ``unique``, ``unique_consecutive`` and ``bincount`` of batched indices have
an output size that depends on each sample's data: like ``nonzero``, they refuse, except
``bincount`` where every sample's count has the same length.
"""

from __future__ import annotations

from math import prod
from typing import Any

from ember import dtypes
from ember.errors import OpError
from ember.func.batching import batched, prim, reshape, rule
from ember.ops.creation import arange
from ember.ops.primitive import DISPATCH, apply


@rule("searchsorted")
def _searchsorted(b: int, xs: tuple, bs: tuple, *, right: bool, out_int32: bool) -> Any:
    p = prim("searchsorted")
    seq, vals, *sorter = xs
    seq_batched = bs[0] or (bool(sorter) and bs[2])
    if not seq_batched and seq.ndim == 1:  # one sequence for every value
        return apply(p, seq, vals, *sorter, right=right, out_int32=out_int32)
    seq = batched(seq, b, bs[0])
    sorter = [batched(s, b, s_b) for s, s_b in zip(sorter, bs[2:])]
    vals = batched(vals, b, bs[1])
    if seq.ndim == 2:  # logically 1-D boundaries: the values become one row per sample
        shape = tuple(vals.shape)
        flat = reshape(vals, (b, prod(shape[1:])))
        return reshape(apply(p, seq, flat, *sorter, right=right, out_int32=out_int32), shape)
    return apply(p, seq, vals, *sorter, right=right, out_int32=out_int32)


@rule("histc")
def _histc(b: int, xs: tuple, bs: tuple, *, bins: int, min: float, max: float,  # noqa: A002
           batch: bool) -> Any:
    p = prim("histc")
    (x,) = xs
    if not batch:
        return apply(p, x, bins=bins, min=min, max=max, batch=True)
    shape = tuple(x.shape)  # (B, R, …): an inner per-row histc, under an outer vmap
    out = apply(p, reshape(x, (b * shape[1],) + shape[2:]), bins=bins, min=min, max=max,
                batch=True)
    return reshape(out, (b, shape[1], bins))


@rule("isin")
def _isin(b: int, xs: tuple, bs: tuple, *, invert: bool) -> Any:
    p = prim("isin")
    elements, test = xs
    if not bs[1]:  # one test set for all samples: elementwise already
        return apply(p, elements, test, invert=invert)
    # per-sample sets: sort each, replace its NaNs (which match nothing) by its largest other
    # value so the rows stay sorted for searchsorted, and compare with what the search finds
    elements = batched(elements, b, bs[0])
    shape = tuple(elements.shape)
    flat = reshape(elements, (b, prod(shape[1:])))
    rows = reshape(test, (b, prod(tuple(test.shape)[1:])))
    if rows.shape[1] == 0:
        found = apply(prim("cast"), flat * 0, dtype=dtypes.bool_)
    else:
        order = apply(prim("argsort"), rows, dim=1, descending=False, stable=False)
        s = rows.gather(1, order)
        nan = s.isnan()
        low = s.masked_fill(nan, float("-inf")) if s.dtype.is_floating_point else s
        s_fixed = s.where(~nan, low.amax(1, keepdim=True)) if s.dtype.is_floating_point else s
        at = apply(prim("searchsorted"), s_fixed, flat, right=False, out_int32=False)
        at = at.clamp(max=rows.shape[1] - 1)
        found = s.gather(1, at) == flat
    if invert:
        found = ~found
    return reshape(found, shape)


@rule("bincount")
def _bincount(b: int, xs: tuple, bs: tuple, *, minlength: int) -> Any:
    # the samples side by side, each in bins of its own, counted at once; batched values
    # stack when every sample's count has the same length (as torch.func's loop would)
    p = prim("bincount")
    x = batched(xs[0], b, bs[0])
    n = x.shape[1]
    ws = tuple(reshape(batched(w, b, w_b), (b * n,)) for w, w_b in zip(xs[1:], bs[1:]))
    every = _outermost(x) if bs[0] else x  # every sample, under a nested vmap too
    size = every.numel()
    if not size:
        lengths = {minlength}
    elif not bs[0]:
        lengths = {apply(p, xs[0], minlength=minlength).shape[0]}
    else:
        if every.amin().item() < 0:  # (the op's own error: offsets would hide them)
            apply(p, reshape(every, (size,)), minlength=minlength)
        rows = reshape(every, (size // n, n))
        lengths = {max(minlength, m + 1) for m in rows.amax(1).tolist()}
    if len(lengths) > 1:
        raise OpError(f"vmap: bincount of batched values: the samples' counts have different "
                      f"lengths {sorted(lengths)} (each its max + 1, or minlength when that "
                      f"is larger), so they cannot be stacked. Hint: pass "
                      f"minlength={max(lengths)} (or more)")
    (length,) = lengths
    offsets = reshape(arange(b, dtype=dtypes.int64, device=x.device) * length, (b, 1))
    at = offsets + apply(prim("cast"), x, dtype=dtypes.int64)  # (b * length overflows uint8)
    out = apply(p, reshape(at, (b * n,)), *ws, minlength=b * length)
    return reshape(out, (b, length))


def _outermost(t: Any) -> Any:
    """The tensor holding every sample of ``t`` at every active vmap level: ``t`` itself
    when no vmap owns it; else its physical batch, whose trailing dims are ``t``'s shape."""
    for handler in reversed(DISPATCH.stack):
        owner = getattr(handler, "physical", None)
        phys = owner(t) if owner is not None else None
        t = t if phys is None else phys
    return t


@rule("unique", "unique_consecutive")
def _unique(b: int, xs: tuple, bs: tuple, *, dim: Any) -> Any:
    raise OpError("vmap: unique (and unique_consecutive) has an output size that depends on "
                  "each sample's data (its number of distinct values), so it cannot be "
                  "batched. Hint: call it outside vmap, or use sort, which keeps the size")
