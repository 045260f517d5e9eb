"""Making nested tensors, and making dense ones of them: ``nested_tensor``,
``as_nested_tensor``, ``nested_tensor_from_jagged``, ``masked_select``, ``to_padded_tensor``
(PyTorch's ``torch.nested`` functions, for ``layout=torch.jagged``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRange, ShapeError
from ember.layouts import jagged
from ember.nested.functional import padded
from ember.nested.nested_tensor import NestedTensor
from ember.nested.ragged import ragged_for
from ember.ops.creation import as_tensor, from_numpy
from ember.ops.join import cat
from ember.tensor import Tensor

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "masked_select",
           "narrow", "to_padded_tensor"]


def _check_layout(op: str, layout: Any) -> None:
    if layout is not None and layout is not jagged:
        raise ArgumentError(f"{op}: ember.nested supports layout=ember.jagged only (PyTorch's "
                            "older strided nested layout is not implemented), got "
                            f"{layout!r}")


def _offsets_of(op: str, lengths: Sequence[int], device: Any) -> Tensor:
    if not len(lengths):
        raise ArgumentError(f"{op}: expected at least one tensor, got an empty list")
    return from_numpy(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)).to(device)


def _packed(op: str, tensors: Sequence[Any]) -> tuple[Tensor, Tensor, int]:
    """The components concatenated along the one dimension in which they differ (the first
    when none does), the offsets of that concatenation, and the dimension."""
    parts = [t if isinstance(t, Tensor) else as_tensor(t) for t in tensors]
    shapes = [tuple(p.shape) for p in parts]
    if parts and any(p.ndim == 0 for p in parts):
        raise ShapeError(f"{op}: components must have at least one dimension (the ragged "
                         f"one), got shapes {shapes}")
    if len({p.ndim for p in parts}) > 1:
        raise ShapeError(f"{op}: components must all have one number of dimensions, as in "
                         f"PyTorch, got shapes {shapes}")
    differ = [d for d in range(parts[0].ndim if parts else 0) if len({s[d] for s in shapes}) > 1]
    if len(differ) > 1:
        raise ShapeError(f"{op}: components may differ in one ragged dimension only (the "
                         f"jagged layout has one), got shapes {', '.join(map(str, shapes))}")
    for what in ("dtype", "device"):
        kinds = [getattr(p, what) for p in parts]
        if any(k != kinds[0] for k in kinds):
            raise DTypeError(f"{op}: components must all have one {what}, as in PyTorch, got "
                             f"{[str(k) for k in kinds]}. Hint: convert them first, e.g. "
                             f"[t.to({kinds[0]!r}) for t in tensors]")
    ragged = differ[0] if differ else 0
    offsets = _offsets_of(op, [s[ragged] for s in shapes], parts[0].device if parts else None)
    return cat(parts, ragged), offsets, ragged


def nested_tensor(tensor_list: Sequence[Any], *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: bool = False,
                  pin_memory: bool = False) -> NestedTensor:
    """A new nested tensor (a leaf) holding a copy of the tensors in ``tensor_list``, which
    share one dtype and device and may differ in one dimension: the ragged one (the first
    when none differs). Ember's default layout is ``ember.jagged``, the only one it has
    (PyTorch's default is its older strided nested layout).

    Example:
        >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.zeros(1, 3)],
        ...                                 requires_grad=True)
        >>> nt.shape, nt.requires_grad
        ((2, j..., 3), True)
        >>> nt.sum(1).sum().backward(); nt.grad.values().shape
        ember.Size([3, 3])
    """
    _check_layout("nested_tensor", layout)
    packed, offsets, ragged = _packed("nested_tensor", tensor_list)
    values = packed.detach().to(device=device, dtype=dtype, copy=True)
    if pin_memory:  # (as Tensor.pin_memory: refused without an accelerator, as in PyTorch)
        values = values.pin_memory()
    values.requires_grad_(requires_grad)
    return NestedTensor(values, ragged_for(offsets.to(values.device)), ragged + 1)


def as_nested_tensor(ts: Any, dtype: Any = None, device: Any = None,
                     layout: Any = None) -> NestedTensor:
    """A nested tensor of the tensors in ``ts`` that keeps their autograd history (gradients
    flow back to them); a dense ``ts`` (B, L, …) gives B sequences of length L; a nested one
    comes back converted to ``dtype`` and ``device``.

    Example:
        >>> a = ember.ones(2, 3, requires_grad=True)
        >>> nt = ember.nested.as_nested_tensor([a, ember.ones(1, 3)])
        >>> nt.sum(1).sum().backward(); a.grad
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
    """
    _check_layout("as_nested_tensor", layout)
    if isinstance(ts, NestedTensor):
        return ts.to(device=device, dtype=dtype)
    if isinstance(ts, Tensor):
        if ts.ndim < 2:
            raise ShapeError(f"as_nested_tensor: a dense input needs at least 2 dims (batch, "
                             f"length, …), got shape {tuple(ts.shape)}")
        batch, length = ts.shape[0], ts.shape[1]
        offsets = _offsets_of("as_nested_tensor", [length] * batch, ts.device)
        values, ragged = ts.flatten(0, 1), 0
    else:
        values, offsets, ragged = _packed("as_nested_tensor", ts)
    values = values.to(device=device, dtype=dtype)
    return NestedTensor(values, ragged_for(offsets.to(values.device)), ragged + 1)


def nested_tensor_from_jagged(values: Tensor, offsets: Tensor | None = None,
                              lengths: Tensor | None = None, jagged_dim: int | None = None,
                              min_seqlen: int | None = None,
                              max_seqlen: int | None = None) -> NestedTensor:
    """A nested tensor over ``values`` itself (no copy; gradients flow to it), sequence b being
    ``values[offsets[b]:offsets[b + 1]]`` along dim ``jagged_dim - 1`` (default: 0). Give
    ``offsets`` or ``lengths``; ``max_seqlen`` and ``min_seqlen`` may state the extremes (a
    larger ``max_seqlen`` pads further in ``to_padded_tensor``). Nested tensors built on one
    offsets tensor share one ragged size ``j``, so they combine elementwise.

    Example:
        >>> nt = ember.nested.nested_tensor_from_jagged(ember.arange(5.0),
        ...                                             lengths=ember.tensor([2, 3]))
        >>> nt.offsets(), nt.unbind()
        (tensor([0, 2, 5]), (tensor([0., 1.]), tensor([2., 3., 4.])))
    """
    op = "nested_tensor_from_jagged"
    jagged_dim = 1 if jagged_dim is None else jagged_dim
    if not 1 <= jagged_dim <= values.ndim:
        raise IndexOutOfRange(f"{op}: jagged_dim {jagged_dim} must lie in [1, {values.ndim}] for "
                              f"values of shape {tuple(values.shape)}")
    if offsets is not None and lengths is not None:
        raise NotImplementedError(f"{op}: offsets with lengths (a nested tensor with holes) "
                                  "is not supported. Hint: pass only lengths, or only offsets")
    if offsets is None:
        if lengths is None:
            raise ArgumentError(f"{op}: pass offsets or lengths")
        offsets = _offsets_of(op, lengths.tolist(), values.device)
    if offsets.ndim != 1 or offsets.dtype.is_floating_point or offsets.dtype.is_complex:
        raise DTypeError(f"{op}: offsets must be a 1-d integer tensor, got {offsets.dtype.name} "
                         f"of shape {tuple(offsets.shape)}")
    bounds = offsets.numpy()
    total = values.shape[jagged_dim - 1]
    rows = np.diff(bounds)
    if len(bounds) < 2 or bounds[0] != 0 or bounds[-1] != total or np.any(rows < 0):
        raise ArgumentError(f"{op}: offsets {bounds.tolist()} must start at 0, never decrease and "
                            f"end at {total}, the size of values {tuple(values.shape)} along dim "
                            f"{jagged_dim - 1}")
    if (max_seqlen is not None and max_seqlen < rows.max()) or \
            (min_seqlen is not None and min_seqlen > rows.min()):
        raise ArgumentError(f"{op}: min_seqlen {min_seqlen} and max_seqlen {max_seqlen} must "
                            f"bound the rows of the offsets, {rows.min()} to {rows.max()} long "
                            "(a larger max_seqlen pads further). Hint: leave them out")
    return NestedTensor(values, ragged_for(offsets, min_seqlen, max_seqlen), jagged_dim)


def narrow(tensor: Tensor, dim: int, start: int | Tensor, length: int | Tensor,
           layout: Any = None) -> NestedTensor:
    """Row b of the (B, T, …) ``tensor`` narrowed to ``[start_b, start_b + length_b)`` along
    ``dim`` 1, as one nested tensor; ``start`` and ``length`` are numbers or tensors of B
    entries. Differs from PyTorch's jagged ``narrow`` in one way: the result is a copy with
    packed values (gradients flow back to ``tensor``), not a view with holes.

    Example:
        >>> nt = ember.nested.narrow(ember.arange(8.0).reshape(2, 4), 1,
        ...                          ember.tensor([0, 1]), ember.tensor([3, 2]))
        >>> nt.unbind()
        (tensor([0., 1., 2.]), tensor([5., 6.]))
    """
    op = "nested.narrow"
    _check_layout(op, layout)
    if tensor.ndim < 2 or dim not in (1, 1 - tensor.ndim):
        raise ArgumentError(f"{op}: the jagged layout only supports dim=1 of a tensor of at "
                            f"least 2 dims, got dim={dim} for shape {tuple(tensor.shape)}")
    batch, size = tensor.shape[0], tensor.shape[1]
    starts, lengths = (np.broadcast_to(np.asarray(x.tolist() if isinstance(x, Tensor) else x,
                                                  dtype=np.int64), (batch,))
                       for x in (start, length))
    if np.any(starts < 0) or np.any(lengths < 0) or np.any(starts + lengths > size):
        raise IndexOutOfRange(f"{op}: start {starts.tolist()} and length {lengths.tolist()} "
                              f"must be non-negative with start + length <= {size}, the size of "
                              f"dim 1 of shape {tuple(tensor.shape)}")
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    rows = (np.repeat(np.arange(batch) * size + starts - offsets[:-1], lengths)
            + np.arange(offsets[-1]))
    values = tensor.flatten(0, 1).index_select(0, from_numpy(rows).to(tensor.device))
    return nested_tensor_from_jagged(values, from_numpy(offsets).to(tensor.device))


def masked_select(tensor: Tensor, mask: Tensor) -> NestedTensor:
    """The elements of ``tensor`` where ``mask`` (broadcast to it) is True, one sequence per
    row of the last dimension.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> nt = ember.nested.masked_select(x, x != 2.0)
        >>> nt.unbind()
        (tensor([1., 3.]), tensor([4., 5., 6.]))
    """
    if not isinstance(tensor, Tensor) or not isinstance(mask, Tensor):
        raise ArgumentTypeError("masked_select: tensor and mask must be dense tensors, got "
                                f"{type(tensor).__name__} and {type(mask).__name__}")
    full_mask = mask.expand(*tensor.shape)
    lengths = full_mask.sum(-1).reshape(-1)
    offsets = _offsets_of("masked_select", lengths.tolist(), tensor.device)
    return NestedTensor(tensor.masked_select(mask), ragged_for(offsets))


def to_padded_tensor(input: NestedTensor, padding: float,
                     output_size: Sequence[int] | None = None) -> Tensor:
    """``input`` as a dense tensor: each sequence padded with ``padding`` to the longest
    length, or to ``output_size[j]`` (``output_size`` is the padded shape; PyTorch reads
    only its ragged entry, Ember also checks the others). Differentiable.

    Example:
        >>> nt = ember.nested.nested_tensor([ember.ones(2), ember.ones(1)])
        >>> ember.nested.to_padded_tensor(nt, 0.0)
        tensor([[1., 1.],
                [1., 0.]])
    """
    if not isinstance(input, NestedTensor):
        raise ArgumentTypeError("to_padded_tensor: expected a nested tensor, got "
                                f"{type(input).__name__}")
    if output_size is None:
        return padded(input, padding)
    shape, size = input.shape, tuple(output_size)
    r = input._ragged_idx
    others = [(want, have) for i, (want, have) in enumerate(zip(size, shape)) if i != r]
    if len(size) != len(shape) or size[r] < input._ragged.max_seqlen or \
            any(want != have for want, have in others):
        raise ShapeError(f"to_padded_tensor: output_size {size} must have {len(shape)} entries, "
                         f"those of the shape {shape} but for the ragged one, and that one at "
                         f"least the longest length {input._ragged.max_seqlen}")
    return padded(input, padding, size[r])


NestedTensor.to_padded_tensor = to_padded_tensor
