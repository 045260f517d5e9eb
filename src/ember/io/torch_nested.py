"""PyTorch's jagged nested tensor (``torch.nested._internal.nested_tensor._rebuild_njt``'s
keyword arguments in a ``torch.save`` file) as Ember's, checked as a file's data must be."""

from __future__ import annotations

import reprlib
from typing import Any

import numpy as np

from ember.errors import CheckpointError, EmberError
from ember.io.placement import refuse_meta
from ember.nested.creation import nested_tensor_from_jagged
from ember.nested.nested_tensor import NestedTensor
from ember.ops.creation import from_numpy
from ember.tensor import Tensor


def njt(kwargs: Any, where: str, dry: bool = False) -> NestedTensor | None:
    """The nested tensor of ``_rebuild_njt(kwargs)``; one with holes (offsets and lengths, as
    ``torch.nested.narrow`` makes) packed, as Ember's ``narrow`` makes it (``dry``: checked
    only, None)."""
    got = kwargs if isinstance(kwargs, dict) else {}
    values, offsets, lengths = (got.get(k) for k in ("values", "offsets", "lengths"))
    cache, dim = got.get("_metadata_cache") or {}, got.get("_ragged_idx", 1)
    if not (isinstance(values, Tensor) and isinstance(offsets, Tensor) and type(dim) is int
            and isinstance(lengths, (Tensor, type(None))) and isinstance(cache, dict)):
        raise CheckpointError(f"{where}: a nested tensor is rebuilt from {kwargs!r:.200}, not "
                              "values and offsets; the file is corrupted")
    if dry:
        return None
    refuse_meta((values, offsets, lengths), "nested tensor", where)
    seqlens = [t.shape[0] if isinstance(t, Tensor) else None  # (PyTorch's: zeros(n, 0))
               for t in (cache.get("min_seqlen"), cache.get("max_seqlen"))]
    if lengths is not None:
        values, offsets = _packed(values, offsets, lengths, dim, where)
    try:
        nt = nested_tensor_from_jagged(values, offsets, jagged_dim=dim,
                                       min_seqlen=seqlens[0], max_seqlen=seqlens[1])
        return nt.requires_grad_() if got.get("requires_grad") is True else nt
    except EmberError as e:
        raise CheckpointError(f"{where}: a nested tensor: {e}") from None


def _packed(values: Tensor, offsets: Tensor, lengths: Tensor, dim: int, where: str
            ) -> tuple[Tensor, Tensor]:
    """The rows of a nested tensor with holes (row i: ``lengths[i]`` values from
    ``offsets[i]``) gathered into one values tensor, and its offsets; rows outside the values
    are refused before anything is allocated for them."""
    o, n = offsets.numpy(), lengths.numpy()
    size = values.shape[dim - 1] if 0 < dim <= values.dim() else 0
    if not (o.ndim == n.ndim == 1 and o.dtype.kind in "iu" and n.dtype.kind in "iu"
            and len(o) >= len(n)):
        raise CheckpointError(f"{where}: a nested tensor's offsets {tuple(offsets.shape)} and "
                              f"lengths {tuple(lengths.shape)} are not 1-d integer tensors, one "
                              "offset a row; the file is corrupted")
    o, n = o[:len(n)].astype(np.int64), n.astype(np.int64)
    if ((o < 0) | (n < 0) | (o > size) | (n > size - o)).any():
        raise CheckpointError(f"{where}: a nested tensor's rows (offsets "
                              f"{reprlib.repr(o.tolist())}, lengths {reprlib.repr(n.tolist())}) "
                              f"lie outside its {size} values; the file is corrupted")
    ends = np.cumsum(n)
    index = np.arange(int(ends[-1]) if len(n) else 0) + np.repeat(o - (ends - n), n)
    return values.index_select(dim - 1, from_numpy(index)), \
        from_numpy(np.concatenate([[0], ends]))
