"""Variable-length sequences for recurrent layers, as in ``torch.nn.utils.rnn``.

A :class:`PackedSequence` stores a batch of sequences time step by time step with no padding:
``data`` holds, for each step ``t``, the ``batch_sizes[t]`` sequences still running (longest
first), so ``nn.RNN``/``LSTM``/``GRU`` compute nothing for padding. Every function here is
differentiable (slicing, concatenation and gathers).
"""

from __future__ import annotations

import numbers
import operator
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    OpError,
    ShapeError,
    not_a_tensor_error,
    type_name,
)
from ember.ops.fits import check_fits
from ember.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (``None`` stays ``None``)."""
    if permutation is None:
        return None
    order = np.asarray(permutation.numpy(), dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return ember.tensor(inverse, device=permutation.device)


class PackedSequenceError(ArgumentTypeError, AssertionError):
    """``PackedSequence(data)`` without a ``(data, batch_sizes)`` pair: an ArgumentTypeError
    that is also the AssertionError PyTorch raises."""


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A batch of variable-length sequences packed time step by time step.

    Attributes:
        data: ``(sum(lengths), *)``: the steps of all sequences, step 0 of each sequence
            first, then step 1 of those that have one, …
        batch_sizes: int64 ``(max_length,)``: how many sequences run at each step.
        sorted_indices: the batch order (longest first) the data is in, or ``None`` when the
            batch was given sorted.
        unsorted_indices: the inverse permutation, restoring the original batch order.

    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`.

    Example:
        >>> p = pack_sequence([ember.ones(3, 2), ember.ones(1, 2)])
        >>> p.data.shape, p.batch_sizes.tolist()
        (ember.Size([4, 2]), [2, 1, 1])
    """

    __slots__ = ()

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch's (data, batch_sizes) tuple form
            if not isinstance(data, (tuple, list)) or len(data) != 2:
                raise PackedSequenceError("PackedSequence: without batch_sizes, expected data "
                                          "to be a (data, batch_sizes) pair, got "
                                          f"{type_name(data)}")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The same sequence with ``data`` converted by ``Tensor.to(*args, **kwargs)``; the
        index tensors follow ``data``'s device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_, unsorted = (None if t is None else t.to(device=data.device)
                             for t in (self.sorted_indices, self.unsorted_indices))
        return type(self)(data, self.batch_sizes, sorted_, unsorted)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """On the CPU; the other arguments as :meth:`to`'s (a dtype, ``memory_format``), as
        PyTorch's."""
        if args:  # (a dtype or a device first: to's other forms take no device keyword)
            return self.to(*args, **kwargs).to(device="cpu")
        return self.to(**{**kwargs, "device": "cpu"})

    def cuda(self, device: Any = None, **kwargs: Any) -> PackedSequence:
        """On a CUDA device; ``kwargs`` as ``Tensor.cuda``'s (``non_blocking``,
        ``memory_format``)."""
        return self.to(device="cuda" if device is None else device, **kwargs)

    def double(self) -> PackedSequence:
        return self.to(dtype=ember.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=ember.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=ember.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=ember.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=ember.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=ember.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=ember.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def pin_memory(self) -> PackedSequence:
        """The sequence with its tensors pinned: as ``Tensor.pin_memory``, a clear error
        (Ember does not pin host memory; PyTorch too refuses without an accelerator)."""
        pin = [None if t is None else t.pin_memory() for t in self]
        return type(self)(*pin)

    def is_pinned(self) -> bool:
        """Always ``False``: Ember does not pin host memory."""
        return False


def _lengths_list(lengths: Any, what: str) -> list[int]:
    """``lengths`` as Python ints; a tensor of any real dtype is truncated to int64 first,
    as PyTorch does."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise ShapeError(f"{what}: 'lengths' should be a 1-D tensor or list, got a tensor "
                             f"of shape {tuple(lengths.shape)}")
        lengths = lengths.tolist()
    try:
        return [int(v) for v in lengths]
    except TypeError:
        raise ShapeError(f"{what}: 'lengths' should be a 1-D tensor or list of ints, got "
                         f"{lengths!r}") from None


def _check_tensors(op: str, name: str, sequences: list[Any]) -> None:
    """PyTorch's TypeError when a sequence is not an Ember tensor (a NumPy array, a
    torch.Tensor, a list)."""
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise not_a_tensor_error(op, f"{name}[{i}]", s)


def _padding_number(op: str, value: Any, dtype: ember.dtype) -> float:
    """``padding_value`` as the float PyTorch's ``pad_sequence`` takes (no None, string or
    complex number), checked to fit ``dtype`` as a float would be (-1 does not fit uint8)."""
    real = isinstance(value, (numbers.Real, np.bool_)) or isinstance(value, Tensor) and \
        value.ndim == 0 and not value.is_complex()
    if not real:
        raise ArgumentTypeError(f"{op}(): argument 'padding_value' must be float, not "
                                f"{type_name(value)}")
    value = float(value)
    check_fits(op, value, dtype)
    return value


def _batch_sizes(lengths: Sequence[int]) -> list[int]:
    """How many of the (sorted, decreasing) ``lengths`` exceed each step."""
    counts = np.asarray(lengths)
    return [int((counts > t).sum()) for t in range(int(counts.max()) if counts.size else 0)]


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int],
                         batch_first: bool = False, enforce_sorted: bool = True
                         ) -> PackedSequence:
    """Packs a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) whose sequence
    ``b`` has ``lengths[b]`` valid steps. With ``enforce_sorted`` the lengths must be
    decreasing; otherwise the batch is sorted here and the order is kept in the result.
    Sequences of equal length keep their batch order (a stable sort); PyTorch's sort does
    so for up to 16 sequences only, so past that its ``sorted_indices`` and the order of rows
    in ``data`` may differ from Ember's, while padded results and RNN outputs agree.

    Example:
        >>> x = ember.randn(4, 3, 2)
        >>> pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False).batch_sizes.tolist()
        [3, 2, 1, 1]
    """
    name = "pack_padded_sequence"
    if not isinstance(input, Tensor):
        raise not_a_tensor_error(name, "input", input)
    lengths = _lengths_list(lengths, name)
    if input.ndim < 2:
        raise ShapeError(f"{name}: expected input of shape (T, B, *) or (B, T, *) with "
                         f"batch_first, got {tuple(input.shape)}")
    batch_dim = 0 if batch_first else 1
    if not lengths or input.shape[batch_dim] == 0:
        raise ShapeError(f"{name}: Cannot pack empty tensors (input of shape "
                         f"{tuple(input.shape)}, {len(lengths)} lengths)")
    if len(lengths) != input.shape[batch_dim]:
        raise ShapeError(f"{name}: Expected `len(lengths)` to be equal to batch_size, but got "
                         f"{len(lengths)} (batch_size={input.shape[batch_dim]})")
    if any(n <= 0 for n in lengths):
        raise OpError(f"{name}: Length of all samples has to be greater than 0, but found "
                         "an element in 'lengths' that is <= 0")
    steps = input.shape[1 - batch_dim]
    if max(lengths) > steps:
        raise ShapeError(f"{name}: a length of {max(lengths)} exceeds the {steps} time steps "
                         f"of the input {tuple(input.shape)}")
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise OpError("`lengths` array must be sorted in decreasing order when "
                             "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                             "to pack_padded_sequence and/or pack_sequence to sidestep this "
                             "requirement if you do not need ONNX exportability.")
    else:
        order = np.argsort(-np.asarray(lengths), kind="stable")
        sorted_indices = ember.tensor(order.astype(np.int64), device=input.device)
        input = input.index_select(batch_dim, sorted_indices)
        lengths = [lengths[i] for i in order]
    if batch_first:
        input = input.transpose(0, 1)
    sizes = _batch_sizes(lengths)
    data = ember.cat([input[t, :n] for t, n in enumerate(sizes)])
    return PackedSequence(data, ember.tensor(sizes, dtype=ember.int64), sorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """Unpacks ``sequence`` into a padded batch ``(T, B, *)`` (``(B, T, *)`` with
    ``batch_first``) in the original batch order, padded with ``padding_value`` up to
    ``total_length`` steps (default: the longest sequence). Returns ``(padded, lengths)``.

    Example:
        >>> p = pack_sequence([ember.ones(3), ember.ones(1)])
        >>> out, lengths = pad_packed_sequence(p, batch_first=True)
        >>> out.tolist(), lengths.tolist()
        ([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]], [3, 1])
    """
    if not isinstance(sequence, PackedSequence):
        raise ArgumentTypeError("pad_packed_sequence: expected a PackedSequence, got "
                                f"{type_name(sequence)}")
    data = sequence.data
    sizes = [int(n) for n in sequence.batch_sizes.tolist()]
    steps = len(sizes)
    if total_length is not None:
        if not isinstance(total_length, Tensor):
            try:
                total_length = operator.index(total_length)
            except TypeError:
                raise ArgumentTypeError("pad_packed_sequence(): argument 'total_length' must be "
                                        f"int, not {type_name(total_length)}") from None
        if total_length < steps:
            raise ArgumentError("Expected total_length to be at least the length of the longest "
                                f"sequence in input, but got total_length={total_length} and max "
                                f"sequence length being {steps}")
        steps = total_length
    batch = sizes[0] if sizes else 0
    pad = ember.full((batch, *data.shape[1:]), padding_value, dtype=data.dtype,
                     device=data.device)
    rows, offset = [], 0
    for n in sizes:
        piece = data[offset:offset + n]
        rows.append(piece if n == batch else ember.cat([piece, pad[n:]]))
        offset += n
    rows += [pad] * (steps - len(sizes))
    padded = ember.stack(rows)
    lengths = np.asarray([sum(n > b for n in sizes) for b in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[np.asarray(sequence.unsorted_indices.tolist(), dtype=np.int64)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, ember.tensor(lengths)


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stacks tensors ``(L_i, *)`` of different lengths into ``(T, B, *)`` (``(B, T, *)``
    with ``batch_first``), padding each with ``padding_value`` on ``padding_side``
    ('right' or 'left') up to the longest.

    Example:
        >>> pad_sequence([ember.ones(2), ember.ones(1)], batch_first=True).tolist()
        [[1.0, 1.0], [1.0, 0.0]]
    """
    if padding_side not in ("left", "right"):
        raise ArgumentError(f"pad_sequence: Expected padding_side to be one of left or right, but "
                            f"got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise ArgumentError("pad_sequence: received an empty list of sequences")
    _check_tensors("pad_sequence", "sequences", sequences)
    first = sequences[0]
    padding_value = _padding_number("pad_sequence", padding_value, first.dtype)
    trailing = tuple(first.shape[1:])
    for i, s in enumerate(sequences):
        if s.ndim == 0:
            raise ShapeError(f"pad_sequence: sequence {i} is a 0-D tensor; each must be "
                             "(L_i, *) with at least one dimension")
        if tuple(s.shape[1:]) != trailing:
            raise ShapeError(f"pad_sequence: sequence {i} has shape {tuple(s.shape)} but "
                             f"sequence 0 has {tuple(first.shape)}; all must be (L_i, *) "
                             "with the same trailing sizes")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        s = s.to(first.dtype)  # the result has the first sequence's dtype, as in PyTorch
        missing = longest - s.shape[0]
        if missing:
            fill = ember.full((missing, *trailing), padding_value, dtype=s.dtype,
                              device=s.device)
            s = ember.cat([s, fill] if padding_side == "right" else [fill, s])
        padded.append(s)
    return ember.stack(padded, dim=0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """Splits a padded batch back into its sequences, the inverse of :func:`pad_sequence`.

    Example:
        >>> [s.shape for s in unpad_sequence(ember.zeros(3, 2, 4), [3, 1])]
        [ember.Size([3, 4]), ember.Size([1, 4])]
    """
    if not isinstance(padded_sequences, Tensor):
        raise not_a_tensor_error("unpad_sequence", "padded_sequences", padded_sequences)
    lengths = _lengths_list(lengths, "unpad_sequence")
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    if len(lengths) != padded_sequences.shape[0]:
        raise ShapeError(f"unpad_sequence: {len(lengths)} lengths for a batch of "
                         f"{padded_sequences.shape[0]} sequences")
    return [padded_sequences[b, :n] for b, n in enumerate(lengths)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Packs tensors ``(L_i, *)`` of different lengths (decreasing, unless
    ``enforce_sorted=False``) into a :class:`PackedSequence`.

    Example:
        >>> pack_sequence([ember.ones(1), ember.ones(2)], enforce_sorted=False).data.shape
        ember.Size([3])
    """
    sequences = list(sequences)
    _check_tensors("pack_sequence", "sequences", sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences ``(L_i, *)`` in a :class:`PackedSequence`, in the original
    order; the inverse of :func:`pack_sequence`.

    Example:
        >>> [s.shape for s in unpack_sequence(pack_sequence([ember.ones(2), ember.ones(1)]))]
        [ember.Size([2]), ember.Size([1])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
