"""``cat``/``stack`` of quantized tensors, as PyTorch's quantized CPU kernels: per-tensor
quantized tensors of one dtype join into one with the first's scale and zero point (``out``'s
when given). Inputs with other parameters are dequantized and quantized again with those
(PyTorch warns that this loses precision); per-channel tensors, mixed dtypes and ordinary
tensors among quantized ones are refused, as PyTorch (and quint4x2, which PyTorch does not
join). ``out=`` is written in place (a view's base sees it): ``cat`` as ``copy_`` (broadcast to
out's shape), ``stack`` resizing an out of another shape; ``hstack``/``vstack``/``dstack``/
``column_stack`` (quantized ``atleast_nd`` are views) take out as ``cat``.

``ember.cat``/``ember.stack`` hand a quantized tensor over here (:func:`handle_joins`,
registered for :class:`QuantizedTensor` in :mod:`ember.ops.overrides`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, type_name
from ember.ops.broadcast import broadcast_shapes
from ember.ops.creation import from_numpy
from ember.ops.join import cat, concat, hstack, stack, vstack
from ember.ops.overrides import register
from ember.ops.split_stack import column_stack, dstack
from ember.quant import kernels
from ember.quant.qtensor import QuantizedTensor
from ember.quant.qtypes import QuantizedOperandError, quint4x2
from ember.tensor import Tensor

__all__: list[str] = []


class JoinNotImplemented(DTypeError, NotImplementedError):
    """A join of quantized tensors of a dtype PyTorch's kernels do not join (quint4x2)."""


def _integers(op: str, tensors: Sequence[Any], out: Any) -> tuple[list[Tensor], QuantizedTensor]:
    """The integers of ``tensors`` in the result's parameters (those of ``out``, a quantized
    tensor, else of the first tensor), and the tensor whose parameters they are."""
    first = next((i for i, t in enumerate(tensors) if isinstance(t, QuantizedTensor)), None)
    if first is None:  # (a quantized out only)
        raise DTypeError(f"{op}: out is quantized but no input is (as PyTorch). Hint: quantize "
                         "the inputs, or give a float out")
    for i, t in enumerate(tensors):
        if not isinstance(t, QuantizedTensor):
            raise DTypeError(f"{op}: tensor {i} is {_kind(t)} while tensor {first} is quantized: "
                             "quantized and ordinary tensors do not join (as PyTorch). Hint: "
                             "quantize it with ember.quantize_per_tensor(...) or dequantize() "
                             "the others")
    params = out if out is not None else tensors[0]
    for i, t in enumerate((*tensors, params)):
        if t.qscheme().name != "per_tensor_affine":
            where = "out" if i == len(tensors) else f"tensor {i}"
            raise ArgumentError(f"{op}: only per-tensor quantized tensors join (as PyTorch), "
                                f"{where} is {t.qscheme()!r}. Hint: dequantize() them, join, "
                                "and quantize the result")
        if t.dtype is not params.dtype:
            raise DTypeError(f"{op}: all quantized tensors must have one dtype, got "
                             f"{params.dtype!r} and {t.dtype!r}")
    if params.dtype is quint4x2:
        raise JoinNotImplemented(f"{op}: quantized {op} is not implemented for quint4x2 (as "
                                 "PyTorch's 'qcat not implemented for QUInt4x2'). Hint: "
                                 "dequantize() them, join, and quantize the result")
    key, given = (params._scale, params._zero_point), (tensors[0]._scale, tensors[0]._zero_point)
    shared = all((t._scale, t._zero_point) == given for t in tensors)
    if shared and given == key:
        return [t._int for t in tensors], params
    if not shared and out is None:  # (as PyTorch: no warning in the out= form)
        warnings.warn(f"{op}: the quantized inputs' scales and zero points differ; they are "
                      "quantized again with the first's (or out's), which may lose precision",
                      UserWarning, stacklevel=4)
    dtype = params.dtype
    return [from_numpy(kernels.quantize(t.dequantize().numpy(), *key, dtype.min, dtype.max,
                                        dtype.storage.np))
            for t in tensors], params


def _kind(x: Any) -> str:
    return f"a {x.dtype.name} tensor" if isinstance(x, Tensor) else type_name(x)


def _checked(op: str, tensors: Any) -> None:
    if not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(f"{op}: tensors must be a list or tuple of tensors, got "
                                f"{type_name(tensors)}")


def _joined(join: Callable, op: str, tensors: Sequence[Any], dim: int, out: Any
            ) -> QuantizedTensor:
    _checked(op, tensors)
    ints, params = _integers(op, tensors, out)
    joined = join(ints, dim)
    if out is None:
        return QuantizedTensor(joined, params.dtype, params._scale, params._zero_point)
    return _written(op, joined, out, resize=join is stack)


def _written(op: str, joined: Tensor, out: QuantizedTensor, resize: bool) -> QuantizedTensor:
    """``out`` holding the integers ``joined``, as PyTorch's out=: written into out's memory
    (a view's base sees them). ``stack`` resizes an out of another shape in place (with a
    warning when it had elements); ``cat`` writes as ``copy_``, broadcast to out's shape,
    never resized."""
    if resize and out.shape != joined.shape:
        if out.numel():
            warnings.warn(f"{op}: an output with one or more elements was resized since it "
                          f"had shape {list(out.shape)}, which does not match the required "
                          f"output shape {list(joined.shape)}", UserWarning, stacklevel=4)
        out._int.resize_(joined.shape)
    elif broadcast_shapes(out.shape, joined.shape, op=op) != out.shape:
        raise ShapeError(f"{op}: output with shape {list(out.shape)} doesn't match the "
                         f"broadcast shape {list(joined.shape)}. Hint: give an out of shape "
                         f"{tuple(joined.shape)}")
    out._int.copy_(joined)
    return out


def _composite_into(op: Callable, tensors: Sequence[Any], out: QuantizedTensor
                    ) -> QuantizedTensor:
    """``op`` (``hstack``, ``vstack``, ``dstack``, ``column_stack``: a ``cat`` of reshaped
    tensors) into ``out``: the inputs quantized with out's parameters, then joined."""
    _checked(op.__name__, tensors)
    ints, params = _integers(op.__name__, tensors, out)
    joined = op([QuantizedTensor(i, params.dtype, params._scale, params._zero_point)
                 for i in ints])
    return _written(op.__name__, joined._int, out, resize=False)


def quantized_cat(tensors: Sequence[QuantizedTensor], dim: int = 0, *,
                  out: QuantizedTensor | None = None) -> QuantizedTensor:
    """``ember.cat`` of quantized tensors (per tensor, one dtype).

    Example:
        >>> q = ember.quantize_per_tensor(ember.ones(2), 0.1, 0, ember.qint8)
        >>> ember.cat([q, q]).int_repr()
        tensor([10, 10, 10, 10], dtype=ember.int8)
    """
    return _joined(cat, "cat", tensors, dim, out)


def quantized_stack(tensors: Sequence[QuantizedTensor], dim: int = 0, *,
                    out: QuantizedTensor | None = None) -> QuantizedTensor:
    """``ember.stack`` of quantized tensors (per tensor, one dtype, one shape)."""
    return _joined(stack, "stack", tensors, dim, out)


_JOINS = {cat: quantized_cat, concat: quantized_cat, stack: quantized_stack}
_COMPOSITES = (hstack, vstack, dstack, column_stack)  # (their out= forms: cat_out's rules)


def handle_joins(op: Callable, args: tuple, kwargs: dict) -> Any:
    """The quantized form of ``op`` (``cat``, ``stack``); the other ops refuse quantized
    tensors."""
    if op in _COMPOSITES and kwargs.get("out") is not None:
        return _composite_into(op, *args, **kwargs)
    impl = _JOINS.get(op)
    if impl is None:
        error = QuantizedOperandError(op.__name__)
        error.obj = QuantizedTensor  # (a tensor-like's own error: see forwarding.not_a_tensor)
        raise error
    return impl(*args, **kwargs)


handle_joins.takes_out = True  # (ember.cat(qs, out=q): see ember.ops.overrides)
register(QuantizedTensor, handle_joins)
