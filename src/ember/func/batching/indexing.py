"""Batching rules of indexing primitives: ``index``, ``index_put``, embeddings, ``nonzero``.

When an index tensor is batched, each sample indexes its own slice of the data: an
``arange(B)`` index on the batch axis, broadcast against the (rank-aligned) index tensors,
does that in one advanced-indexing call. NumPy then puts the broadcast index dims first
unless the indexed dims are adjacent, so the rules move that block to where the logical
result has it.
"""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.errors import OpError
from ember.func.batching import batched, pad_rank, prim, reshape, rule
from ember.ops.broadcast import broadcast_shapes
from ember.ops.creation import arange, full
from ember.ops.indexing import _basic_shape
from ember.ops.join import stack
from ember.ops.primitive import apply

FULL = (None, None, None)


def _batch_index(b: int, device: Any, rank: int) -> Any:
    """``arange(B)`` shaped ``(B, 1, …, 1)`` to broadcast against rank-``rank`` indices."""
    return reshape(arange(b, dtype=dtypes.int64, device=device), (b,) + (1,) * rank)


def _adjacent(dims: tuple) -> bool:
    return dims[-1] - dims[0] == len(dims) - 1


def _block_after(x: Any, nb: int, pre: int) -> Any:
    """``(B, *block[nb], *pre_axes[pre], …)`` as ``(B, *pre_axes, *block, …)``."""
    if not nb or not pre:
        return x
    order = [0] + list(range(1 + nb, 1 + nb + pre)) + list(range(1, 1 + nb)) + \
        list(range(1 + nb + pre, x.ndim))
    return apply(prim("permute"), x, dims=tuple(order))


def _block_before(x: Any, nb: int, pre: int) -> Any:
    """The inverse of :func:`_block_after`."""
    if not nb or not pre:
        return x
    order = [0] + list(range(1 + pre, 1 + pre + nb)) + list(range(1, 1 + pre)) + \
        list(range(1 + nb + pre, x.ndim))
    return apply(prim("permute"), x, dims=tuple(order))


def _batched_indices(b: int, idx: tuple, ibs: tuple, device: Any) -> tuple[tuple, int]:
    """``arange(B)`` and the index tensors, all batched and rank-aligned; their rank."""
    rank = max(i.ndim - ib for i, ib in zip(idx, ibs))
    idx = tuple(pad_rank(batched(i, b, ib), rank) for i, ib in zip(idx, ibs))
    return (_batch_index(b, device, rank),) + idx, rank


@rule("index")
def _index(b: int, xs: tuple, bs: tuple, *, dims: tuple, layout: bool = False,
           wide: bool = False) -> Any:
    a, *idx = xs  # (``layout``, eager ``x[key]``'s strides, has no meaning per sample)
    shifted = tuple(d + 1 for d in dims)
    if not any(bs[1:]):  # one index for all samples: index the data's axes, shifted
        out = apply(prim("index"), a, *idx, dims=shifted, wide=wide)
        if not _adjacent(dims):  # NumPy put the index dims before the batch axis
            nb = len(broadcast_shapes(*(tuple(i.shape) for i in idx)))
            order = [nb] + [i for i in range(out.ndim) if i != nb]
            out = apply(prim("permute"), out, dims=tuple(order))
        return out
    a = batched(a, b, bs[0])
    idx, nb = _batched_indices(b, tuple(idx), bs[1:], a.device)
    out = apply(prim("index"), a, *idx, dims=(0,) + shifted, wide=wide)
    if _adjacent(dims):  # logically the index block sits after the dims before it
        out = _block_after(out, nb, dims[0])
    return out


@rule("index_put")
def _index_put(b: int, xs: tuple, bs: tuple, *, basic: tuple, dims: tuple, mode: str,
               wide: bool = False) -> Any:
    a, v, *idx = xs
    a = batched(a, b, bs[0])
    region = _basic_shape(tuple(a.shape)[1:], basic, "index_put")
    basic = (FULL,) + tuple(basic)
    if not idx:
        v = pad_rank(v, len(region)) if bs[1] else v
        return apply(prim("index_put"), a, v, basic=basic, dims=(), mode=mode)
    block = broadcast_shapes(*(tuple(i.shape)[ib:] for i, ib in zip(idx, bs[2:])))
    rest = tuple(s for i, s in enumerate(region) if i not in dims)
    if _adjacent(dims):
        target = region[:dims[0]] + block + region[dims[-1] + 1:]
    else:
        target = block + rest
    v = pad_rank(batched(v, b, bs[1]), len(target))
    v = apply(prim("expand"), v, shape=(b,) + target)
    if _adjacent(dims):
        v = _block_before(v, len(block), dims[0])
    idx, _ = _batched_indices(b, tuple(idx), bs[2:], a.device)
    return apply(prim("index_put"), a, v, *idx, basic=basic,
                 dims=(0,) + tuple(d + 1 for d in dims), mode=mode, wide=wide)


@rule("nonzero")
def _nonzero(b: int, xs: tuple, bs: tuple) -> Any:
    raise OpError("vmap: nonzero (and boolean-mask indexing, which uses it) has an output "
                  "size that depends on each sample's data, so it cannot be batched. Hint: "
                  "use ember.where(mask, x, other) or multiply by the mask instead")


@rule("nonzero_static")
def _nonzero_static(b: int, xs: tuple, bs: tuple, *, size: int, fill_value: int) -> Any:
    # each sample's indices are its own (size, ndim) block: one call per sample
    (x,) = xs
    if b == 0:
        return full((0, size, x.ndim - 1), fill_value, dtype=dtypes.int64, device=x.device)
    one = prim("nonzero_static")
    return stack([apply(one, x[i], size=size, fill_value=fill_value) for i in range(b)])


def _shifted(indices: Any, b: int, per: int, op: str) -> Any:
    """Batched ``indices`` as int64 (a narrower dtype would wrap past its range), sample
    ``i``'s moved by ``i * per``, once each is checked to lie in ``[0, per)`` (shifted, one
    outside would read or write another sample's rows)."""
    indices = apply(prim("index_check"), indices, size=per, dim=0, op=op, negative=False)
    off = arange(0, b * per, per, dtype=dtypes.int64, device=indices.device) if b else \
        arange(0, dtype=dtypes.int64, device=indices.device)
    wide = apply(prim("cast"), indices, dtype=dtypes.int64)
    return wide + reshape(off, (b,) + (1,) * (indices.ndim - 1))


@rule("embedding", "embedding_sparse_grad")  # (under vmap, sparse=True's gradient is dense)
def _embedding(b: int, xs: tuple, bs: tuple, *, padding_idx: Any,
               scale_grad_by_freq: bool) -> Any:
    weight, indices = xs
    p = prim("embedding")
    if not bs[0]:
        return apply(p, weight, indices, padding_idx=padding_idx,
                     scale_grad_by_freq=scale_grad_by_freq)
    n, dim = tuple(weight.shape)[1:]
    indices = batched(indices, b, bs[1])
    flat = apply(p, reshape(weight, (b * n, dim)), _shifted(indices, b, n, "embedding"),
                 padding_idx=None, scale_grad_by_freq=scale_grad_by_freq)
    if padding_idx is not None:  # that row gets no gradient: read it through a detach
        pad = reshape(indices == padding_idx, tuple(indices.shape) + (1,))
        flat = apply(prim("where"), pad, flat.detach(), flat)
    return flat


@rule("embedding_backward")
def _embedding_backward(b: int, xs: tuple, bs: tuple, *, num_weights: int, padding_idx: Any,
                        scale_grad_by_freq: bool) -> Any:
    grad, indices = (batched(x, b, is_b) for x, is_b in zip(xs, bs))
    if padding_idx is not None:
        pad = reshape(indices == padding_idx, tuple(indices.shape) + (1,))
        grad = apply(prim("where"), pad, apply(prim("cast"), pad, dtype=grad.dtype) * 0, grad)
    shifted = _shifted(indices, b, num_weights, "embedding_backward")
    out = apply(prim("embedding_backward"), grad, shifted,
                num_weights=b * num_weights, padding_idx=None,
                scale_grad_by_freq=scale_grad_by_freq)
    return reshape(out, (b, num_weights) + tuple(out.shape)[1:])
