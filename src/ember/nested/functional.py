"""The ops nested tensors support, as PyTorch's jagged layout does: each one computes on the
packed values with ordinary Ember ops (so gradients need no new rules), and pads only for ops
over the ragged dimension (``softmax``, ``sum``/``mean`` over it, attention).

Each op is bound as a :class:`NestedTensor` method and registered for the functional op of
its name (``ember.sum``, ``F.linear``, …): :mod:`ember.ops.overrides` hands those calls here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import ember.ops.unary as unary
from ember import return_types
from ember.dtypes import DType, bool_, extreme
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.nested.nested_tensor import NestedTensor, check_same_structure, unsupported
from ember.ops import activations, compare, creation, rounding
from ember.ops import arithmetic as arith
from ember.ops import reduce as reductions
from ember.ops.activations import gelu, relu, silu
from ember.ops.creation import from_numpy
from ember.ops.dims import normalize_dim, reduce_dims
from ember.ops.dropout import dropout
from ember.ops.embedding import embedding
from ember.ops.fused_arithmetic import lerp
from ember.ops.join import cat, stack
from ember.ops.layer_norm import layer_norm
from ember.ops.masking import masked_fill
from ember.ops.normalization import rms_norm
from ember.ops.overrides import register
from ember.ops.random import rand_like, randint_like, randn_like
from ember.ops.select import clamp, maximum, minimum, where
from ember.ops.shape import narrow, reshape, split, squeeze, transpose, unsqueeze
from ember.ops.softmax import implicit_dim, log_softmax, softmax, softmin
from ember.ops.special import atan2
from ember.tensor import Tensor

__all__: list[str] = []

IMPLEMENTATIONS: dict[Callable, Callable] = {}  # the ember function -> its nested version


def implements(*functions: Callable, methods: Sequence[str] = ()) -> Callable:
    """Registers the decorated function for ``functions`` and binds it as the methods named
    (by default those of the functions' names that are ``ember.Tensor`` methods)."""
    def bind(impl: Callable) -> Callable:
        for fn in functions:
            IMPLEMENTATIONS[fn] = impl
        names = methods or [fn.__name__ for fn in functions if hasattr(Tensor, fn.__name__)]
        for name in names:  # the methods ember.Tensor has
            setattr(NestedTensor, name, impl)
        return impl
    return bind


def _handle(op: Callable, args: tuple, kwargs: dict) -> Any:
    impl = IMPLEMENTATIONS.get(op)
    if impl is None and args and isinstance(args[0], NestedTensor):
        # ``ember.clone(nt)``, ``ember.max(nt)``: the method of the op's name, where the class
        # defines one (``NestedTensor.__getattr__``'s refusals are not found on the class)
        impl = getattr(NestedTensor, op.__name__, None)
    if impl is None:
        raise unsupported(op.__name__)
    return impl(*args, **kwargs)


register(NestedTensor, _handle)


def logical_dim(nt: NestedTensor, dim: int, op: str, *, batch: bool = False,
                ragged: bool = True) -> int:
    """``dim`` in ``[0, nt.dim())``; the batch dimension (unless ``batch``) and the ragged one
    (unless ``ragged``) raise PyTorch's kind of error."""
    d = normalize_dim(dim, nt.dim(), op)
    if d == 0 and not batch:
        raise ArgumentError(f"{op}: not supported along the batch dimension (dim 0) of a nested "
                            f"tensor of shape {nt.shape}. Hint: unbind() it into sequences")
    if d == nt._ragged_idx and not ragged:
        raise ArgumentError(f"{op}: not supported along the ragged dimension (dim {d}) of a "
                            f"nested tensor of shape {nt.shape}. Hint: to_padded_tensor() "
                            "makes a dense tensor")
    return d


def to_rows(nt: NestedTensor) -> Tensor:
    """The values with the packed dimension first: (total, …)."""
    return nt._values.movedim(nt._ragged_idx - 1, 0)


def from_rows(nt: NestedTensor, rows: Tensor) -> Tensor:
    """The inverse of :func:`to_rows` for rows of ``nt``'s structure."""
    return rows.movedim(0, nt._ragged_idx - 1)


def padded(nt: NestedTensor, padding: float, length: int | None = None) -> Tensor:
    """``nt`` as a dense tensor, each sequence padded with ``padding`` to ``length`` (its
    largest length by default) along the ragged dimension."""
    length = nt._ragged.max_seqlen if length is None else length
    dense = nt._ragged.pad_rows(to_rows(nt), padding, length)
    return dense.movedim(1, nt._ragged_idx)


def unpadded(nt: NestedTensor, dense: Tensor) -> NestedTensor:
    """A dense tensor of ``nt``'s padded layout back to a nested tensor of its structure."""
    rows = nt._ragged.unpad_rows(dense.movedim(nt._ragged_idx, 1))
    return nt._with(from_rows(nt, rows))


# -- elementwise ------------------------------------------------------------------------------
def pointwise(fn: Callable) -> Callable:
    def op(input: NestedTensor, *args: Any, **kwargs: Any) -> NestedTensor:
        if kwargs.get("inplace"):
            fn(input._values, *args, **kwargs)
            return input
        return input._with(fn(input._values, *args, **kwargs))
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = f"``{fn.__name__}`` of each element (of the packed values)."
    return op


for _name in unary.__all__:
    implements(getattr(unary, _name), methods=(_name,))(pointwise(getattr(unary, _name)))
for _fn in (relu, gelu, silu, dropout, rounding.floor, rounding.ceil, rounding.trunc,
            rounding.round, rounding.frac, compare.logical_not, compare.isnan, compare.isinf,
            compare.isfinite, compare.nan_to_num):
    implements(_fn, methods=(_fn.__name__,))(pointwise(_fn))
for _name in ("celu", "elu", "hardtanh", "leaky_relu", "mish", "selu", "softplus",
              "hardsigmoid", "hardswish", "softshrink", "hardshrink"):
    # (F's activations, no Tensor methods; relu6 is hardtanh's composite)
    implements(getattr(activations, _name))(pointwise(getattr(activations, _name)))
implements(arith.neg, methods=("neg", "negative"))(pointwise(arith.neg))
implements(compare.bitwise_not, methods=("bitwise_not", "__invert__"))(
    pointwise(compare.bitwise_not))
implements(embedding)(pointwise(embedding))  # (ids -> vectors: each id's row)


def _converter(name: str) -> Callable:
    def method(self: NestedTensor) -> NestedTensor:
        return self._with(getattr(self._values, name)())
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"The values converted by ``Tensor.{name}()``."
    return method


for _name in ("float", "double", "half", "bfloat16", "bool", "int", "long"):
    setattr(NestedTensor, _name, _converter(_name))


def type_as(input: NestedTensor, other: Any) -> NestedTensor:
    """The values converted to ``other``'s dtype."""
    return input.to(other.dtype)


NestedTensor.type_as = type_as


def dense_operand(op: str, nt: NestedTensor, other: Any) -> Any:
    """``other`` as an operand of ``nt``'s values: a nested tensor's values (same structure),
    a number as it is, or a dense tensor that broadcasts against ``nt`` (right-aligned, size 1
    on the ragged dimension, and on the batch one 1 or B) in the shape that broadcasts against
    the values. A dense tensor of ``nt``'s dims whose ragged size is the padded length
    (``to_padded_tensor``'s) is read as padded, each sequence's rows taken from it, as PyTorch
    does."""
    if isinstance(other, NestedTensor):
        return check_same_structure(op, nt, other)
    if not isinstance(other, Tensor):
        return other
    oshape, n, r = tuple(other.shape), nt.dim(), nt._ragged_idx
    batch, length = nt._ragged.batch, nt._ragged.max_seqlen
    at_ragged = other.ndim - n + r  # the operand's dim against the ragged one (< 0: none)
    fits = other.ndim <= n and (at_ragged < 0 or oshape[at_ragged] == 1)
    if fits and other.ndim < n:
        return other
    if fits and oshape[0] == 1:
        return other.squeeze(0)
    if fits and oshape[0] == batch:  # one slice per sequence: repeat it per row
        rows = other.squeeze(r).index_select(0, nt._ragged.row_batch())
        return rows.movedim(0, r - 1)
    if other.ndim == n and oshape[0] in (1, batch) and oshape[r] == length:  # padded
        padded_rows = other.expand(batch, *oshape[1:]).movedim(r, 1)
        return from_rows(nt, nt._ragged.unpad_rows(padded_rows))
    raise ShapeError(f"{op}: cannot broadcast a dense tensor of shape {oshape} with a nested "
                     f"tensor of shape {nt.shape}: a dense operand aligns with its last "
                     "dimensions, with size 1 on the ragged one and 1 or the batch size on "
                     f"the batch one, or has all {n} dims with the padded length {length} on "
                     "the ragged one (each sequence's rows are taken from it). Hint: "
                     "to_padded_tensor() makes a dense tensor")


def broadcasting(fn: Callable) -> Callable:
    """``fn`` with a nested tensor among its operands (anywhere), every other one read by
    :func:`dense_operand`: ``broadcasting(hypot)(dense, nt)`` is nested."""
    def op(*args: Any, **kwargs: Any) -> NestedTensor:
        nt = next(a for a in (*args, *kwargs.values()) if isinstance(a, NestedTensor))
        return nt._with(fn(*(dense_operand(fn.__name__, nt, a) for a in args),
                           **{k: dense_operand(fn.__name__, nt, v) for k, v in kwargs.items()}))
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = f"``{fn.__name__}`` elementwise, with nested tensors of the same structure, " \
                 "numbers or dense tensors that broadcast (see ``dense_operand``)."
    return op


def reflected(op: Callable) -> Callable:
    """The reflected operator of ``op`` (``__radd__`` of ``add``): ``op(other, self)``."""
    def reflected_op(self: NestedTensor, other: Any) -> NestedTensor:
        return op(other, self)
    return reflected_op


for _fn, _names in ((arith.add, ("add", "__add__")), (arith.sub, ("sub", "__sub__")),
                    (arith.mul, ("mul", "__mul__")),
                    (arith.div, ("div", "__truediv__")),
                    (arith.pow, ("pow", "__pow__")),
                    (arith.floor_divide, ("floor_divide", "__floordiv__")),
                    (arith.remainder, ("remainder", "__mod__")),
                    (compare.bitwise_and, ("bitwise_and", "__and__")),
                    (compare.bitwise_or, ("bitwise_or", "__or__")),
                    (compare.bitwise_xor, ("bitwise_xor", "__xor__"))):
    _op = implements(_fn, methods=_names)(broadcasting(_fn))
    setattr(NestedTensor, "__r" + _names[1][2:], reflected(_op))
NestedTensor.__neg__ = NestedTensor.neg
for _fn in (compare.lt, compare.le, compare.gt, compare.ge, compare.eq, compare.ne):
    implements(_fn, methods=(_fn.__name__, f"__{_fn.__name__}__"))(broadcasting(_fn))
for _fn in (maximum, minimum, arith.fmod, atan2, where, masked_fill, lerp, compare.isclose,
            clamp):
    implements(_fn, methods=(_fn.__name__,))(broadcasting(_fn))
NestedTensor.__abs__ = NestedTensor.abs
NestedTensor.clip = NestedTensor.clamp


def _where_method(self: NestedTensor, condition: Any, other: Any) -> NestedTensor:
    """``where(condition, self, other)``, as ``Tensor.where`` reads its operands."""
    return IMPLEMENTATIONS[where](condition, self, other)


NestedTensor.where = _where_method


def values_method(name: str) -> Callable:
    """The method ``name`` (``hypot``, ``add_``, …): the values' own, on the operands as
    :func:`dense_operand` makes them; an in-place one (``add_``) returns ``self``."""
    in_place = name.endswith("_") and not name.endswith("__")

    def method(self: NestedTensor, *args: Any, **kwargs: Any) -> NestedTensor:
        out = getattr(self._values, name)(
            *(dense_operand(name, self, a) for a in args),
            **{k: dense_operand(name, self, v) for k, v in kwargs.items()})
        return self if in_place else self._with(out)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"``{name[:-1]}`` written into the values in place." if in_place else
                      f"``Tensor.{name}`` of the values (nested operands of this structure).")
    return method


for _name in [f"{n}_" for n in unary.__all__] + [
        "relu_", "add_", "sub_", "mul_", "div_", "pow_", "clamp_", "clip_", "fill_", "zero_",
        "copy_", "masked_fill_", "ceil_", "floor_", "round_", "trunc_", "frac_", "fix_", "neg_",
        "negative_", "nan_to_num_", "logical_not_", "fmod_", "remainder_", "atan2_",
        "arctan2_", "lerp_", "detach_"]:
    if hasattr(Tensor, _name):
        setattr(NestedTensor, _name, values_method(_name))
for _name, _method in (("add_", "__iadd__"), ("sub_", "__isub__"), ("mul_", "__imul__"),
                       ("div_", "__itruediv__")):
    setattr(NestedTensor, _method, getattr(NestedTensor, _name))


# -- over the last dimensions (linear, matmul and bmm: nested/products.py) ---------------
def _right_of_ragged(op: str, input: NestedTensor, normalized_shape: Any) -> None:
    count = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    if count > input.dim() - 1 - input._ragged_idx:
        raise ShapeError(f"{op}: normalized_shape {normalized_shape} reaches the ragged "
                         f"or batch dimension of a nested tensor of shape {input.shape}; "
                         "nested tensors normalize over dimensions right of the ragged one")


@implements(layer_norm)
def nested_layer_norm(input: NestedTensor, normalized_shape: int | Sequence[int],
                      weight: Tensor | None = None, bias: Tensor | None = None,
                      eps: float = 1e-5) -> NestedTensor:
    """``F.layer_norm`` over trailing dimensions right of the ragged one."""
    _right_of_ragged("layer_norm", input, normalized_shape)
    return input._with(layer_norm(input._values, normalized_shape, weight, bias, eps))


@implements(rms_norm)
def nested_rms_norm(input: NestedTensor, normalized_shape: int | Sequence[int],
                    weight: Tensor | None = None, eps: float | None = None) -> NestedTensor:
    """``F.rms_norm`` over trailing dimensions right of the ragged one."""
    _right_of_ragged("rms_norm", input, normalized_shape)
    return input._with(rms_norm(input._values, normalized_shape, weight, eps))


def _softmax(fn: Callable, padding: float = -math.inf) -> Callable:
    def op(input: NestedTensor, dim: int | None = None, _stacklevel: int = 3,
           dtype: DType | None = None) -> NestedTensor:
        if dim is None:  # (PyTorch's deprecated implicit dim, with its warning)
            dim = implicit_dim(fn.__name__, input.dim())
        d = logical_dim(input, dim, fn.__name__)
        if d != input._ragged_idx:
            return input._with(fn(input._values, d - 1, dtype=dtype))
        if dtype is not None:
            input, dtype = input.to(dtype), None
        if not input.dtype.is_floating_point:  # (before padding an int with ±inf)
            raise DTypeError(f"{fn.__name__}: expected a floating input, got "
                             f"{input.dtype.name}. Hint: pass dtype=ember.float32 or call "
                             ".float() first")
        dense = padded(input, padding)  # (weight 0 past each sequence's end)
        return unpadded(input, fn(dense, d))
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = f"``{fn.__name__}`` along ``dim``; along the ragged one, over each sequence."
    return op


implements(softmax)(_softmax(softmax))
implements(log_softmax)(_softmax(log_softmax))
implements(softmin)(_softmax(softmin, math.inf))


# -- reductions ------------------------------------------------------------------------------


def _reduce(op: str, fn: Callable, input: NestedTensor, dim: Any, keepdim: bool,
            padding: Callable[[DType], Any] | None) -> Tensor | NestedTensor:
    """``fn(values, dims, keepdim)`` over ``dim`` (an int, several, or ``None`` and ``()`` for
    all), as PyTorch's jagged layout reduces: over dims other than batch and ragged a nested
    tensor; over the ragged one alone (each sequence padded with ``padding(dtype)``, the
    reduction's identity) or over batch and ragged together (every row of every sequence) a
    dense tensor."""
    r = input._ragged_idx
    dims = list(reduce_dims(input, dim, op))  # None and () mean every dim, as in PyTorch
    inner = tuple(d - 1 for d in dims if d not in (0, r))
    if 0 not in dims and r not in dims:
        shift = 0 if keepdim else len([d for d in dims if d < r])
        return input._with(fn(input._values, inner, keepdim), r - shift)
    if dims == [r] and padding is not None:
        return fn(padded(input, padding(input.dtype)), (r,), keepdim)
    if 0 in dims and r in dims:
        out = fn(input._values, (r - 1, *inner), keepdim)
        return out.unsqueeze(0) if keepdim else out
    raise ArgumentError(f"{op}: reducing a nested tensor of shape {input.shape} over dims {dim} "
                        "is not supported, as in PyTorch: the batch dimension only together "
                        "with the ragged one, the ragged one alone or with the batch one. Hint: "
                        "to_padded_tensor() makes a dense tensor")


@implements(reductions.sum)
def nested_sum(input: NestedTensor, dim: Any = None, keepdim: bool = False, *,
               dtype: DType | None = None) -> Tensor | NestedTensor:
    """The sum of all elements (dim None), along the ragged dimension (a dense (B, …) tensor)
    or along others (see ``_reduce``)."""
    return _reduce("sum", lambda v, d, k: v.sum(d, k, dtype=dtype), input, dim, keepdim,
                   lambda _: 0)


@implements(reductions.mean)
def nested_mean(input: NestedTensor, dim: Any = None, keepdim: bool = False, *,
                dtype: DType | None = None) -> Tensor | NestedTensor:
    """The mean over all elements, along the ragged dimension (each sequence's mean, a dense
    tensor) or along others (see ``_reduce``)."""
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    if dim in (input._ragged_idx, input._ragged_idx - input.dim()):
        total = nested_sum(input, dim, keepdim, dtype=dtype)
        lengths = from_numpy(input._ragged.lengths).to(total.dtype)
        return total / lengths.reshape((-1,) + (1,) * (total.ndim - 1))
    return _reduce("mean", lambda v, d, k: v.mean(d, k, dtype=dtype), input, dim, keepdim, None)


def _extremum(op: str, padding: Callable[[DType], Any]) -> Callable:
    def reduction(input: NestedTensor, dim: Any = (), keepdim: bool = False
                  ) -> Tensor | NestedTensor:
        return _reduce(op, lambda v, d, k: getattr(v, op)(d, k), input, dim, keepdim, padding)
    reduction.__name__ = reduction.__qualname__ = op
    reduction.__doc__ = f"``{op}`` of all elements, or over ``dim`` (see ``_reduce``)."
    return reduction


_highest = functools.partial(extreme, highest=True)
for _fn, _padding in ((reductions.amax, extreme), (reductions.amin, _highest),
                      (reductions.all, lambda _: True), (reductions.any, lambda _: False)):
    implements(_fn, methods=(_fn.__name__,))(_extremum(_fn.__name__, _padding))


@implements(reductions.prod)
def nested_prod(input: NestedTensor, dim: Any = None, keepdim: bool = False, *,
                dtype: DType | None = None) -> Tensor | NestedTensor:
    """The product of all elements, or over ``dim`` (see ``_reduce``)."""
    return _reduce("prod", lambda v, d, k: v.prod(d, k, dtype=dtype), input, dim, keepdim,
                   lambda _: 1)


def _arg_extremum(op: str, padding: Callable[[DType], Any]) -> Callable:
    def reduction(input: NestedTensor, dim: int | None = None, keepdim: bool = False
                  ) -> Tensor | NestedTensor:
        if dim is None:  # (an index into the flattened values, as PyTorch's; keepdim: 1s)
            index = getattr(input._values, op)()
            return index.reshape((1,) * input.dim()) if keepdim else index
        if not isinstance(dim, int):
            raise unsupported(f"{op} with dim={dim!r} (give one dimension)")
        return _reduce(op, lambda v, d, k: getattr(v, op)(d[0], k), input, dim, keepdim,
                       padding)
    reduction.__name__ = reduction.__qualname__ = op
    reduction.__doc__ = f"``{op}`` along ``dim`` (see ``_reduce``), or of all the values."
    return reduction


implements(reductions.argmax)(_arg_extremum("argmax", extreme))
implements(reductions.argmin)(_arg_extremum("argmin", _highest))


def _max_min(op: str, values: str, indices: str) -> Callable:
    def reduction(input: NestedTensor, dim: int | None = None, keepdim: bool = False
                  ) -> Any:
        if dim is None:
            return getattr(input._values, op)()
        ranked = input.int() if input.dtype == bool_ else input  # (argmax refuses bools)
        return getattr(return_types, op)(getattr(input, values)(dim, keepdim),
                                         getattr(ranked, indices)(dim, keepdim))
    reduction.__name__ = reduction.__qualname__ = op
    reduction.__doc__ = (f"``{op}`` of all elements, or ``(values, indices)`` along ``dim``: "
                         f"``{values}`` and ``{indices}`` (ties share the gradient, as ``{values}``"
                         " does).")
    return reduction


NestedTensor.max = _max_min("max", "amax", "argmax")
NestedTensor.min = _max_min("min", "amin", "argmin")


# -- shape -----------------------------------------------------------------------------------
@implements(transpose)
def nested_transpose(input: NestedTensor, dim0: int, dim1: int) -> NestedTensor:
    """Dimensions ``dim0`` and ``dim1`` (neither the batch one) swapped; the ragged one may
    move, as attention's (B, j, H, D) -> (B, H, j, D)."""
    a, b = logical_dim(input, dim0, "transpose"), logical_dim(input, dim1, "transpose")
    r = input._ragged_idx
    ragged_idx = b if r == a else a if r == b else r
    return input._with(input._values.transpose(a - 1, b - 1), ragged_idx)


def _reshaped(op: str, input: NestedTensor, sizes: tuple) -> NestedTensor:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    ragged = input._ragged
    if input._ragged_idx != 1 or len(sizes) < 2 or sizes[0] not in (-1, ragged.batch) or \
            not (sizes[1] is ragged.dim or sizes[1] == -1):
        raise ShapeError(f"{op}: a nested tensor of shape {input.shape} reshapes only the "
                         f"dims right of its ragged one: give ({ragged.batch} or -1, "
                         f"{ragged.dim} or -1, …), got {sizes}. Hint: to_padded_tensor() "
                         "makes a dense tensor")
    values = input._values
    return input._with(getattr(values, op)(values.shape[0], *sizes[2:]))


@implements(reshape)
def nested_reshape(input: NestedTensor, *sizes: Any) -> NestedTensor:
    """A new shape for the dims right of the ragged one; batch and ragged dims stay, given
    as their sizes or -1 (``nt.reshape(B, -1, heads, head_dim)``)."""
    return _reshaped("reshape", input, sizes)


def view(input: NestedTensor, *sizes: Any) -> NestedTensor:
    """:func:`nested_reshape` as a view."""
    return _reshaped("view", input, sizes)


@implements(unsqueeze)
def nested_unsqueeze(input: NestedTensor, dim: int) -> NestedTensor:
    """A size-1 dimension inserted at ``dim`` (not the batch dimension 0)."""
    d = normalize_dim(dim, input.dim() + 1, "unsqueeze")
    if d == 0:
        raise ArgumentError(f"unsqueeze: not supported at dim 0 of a nested tensor of shape "
                            f"{input.shape} (its batch dimension)")
    r = input._ragged_idx
    return input._with(input._values.unsqueeze(d - 1), r + (d <= r))


@implements(squeeze)
def nested_squeeze(input: NestedTensor, dim: int | None = None) -> NestedTensor:
    """Dimension ``dim`` (neither batch nor ragged) removed when its size is 1."""
    if not isinstance(dim, int):
        raise unsupported(f"squeeze with dim={dim!r} (give one dimension)")
    d = logical_dim(input, dim, "squeeze", ragged=False)
    if input._values.shape[d - 1] != 1:
        return input
    r = input._ragged_idx
    return input._with(input._values.squeeze(d - 1), r - (d < r))


def _like(fn: Callable) -> Callable:
    def op(input: NestedTensor, *args: Any, **kwargs: Any) -> NestedTensor:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        return input._with(fn(input._values, *args, **kwargs))
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = f"``{fn.__name__}`` of the values: a nested tensor of the same structure."
    return op


for _fn in (creation.zeros_like, creation.ones_like, creation.empty_like, creation.full_like,
            rand_like, randn_like, randint_like):
    implements(_fn)(_like(_fn))


def unflatten(input: NestedTensor, dim: int, sizes: Sequence[int]) -> NestedTensor:
    """Dimension ``dim`` (neither batch nor ragged) split into ``sizes``, as
    ``Tensor.unflatten``."""
    d = logical_dim(input, dim, "unflatten", ragged=False)
    shift = (len(sizes) - 1) if d < input._ragged_idx else 0
    return input._with(input._values.unflatten(d - 1, sizes), input._ragged_idx + shift)


def flatten(input: NestedTensor, start_dim: int = 0, end_dim: int = -1) -> NestedTensor:
    """Dimensions ``start_dim`` to ``end_dim`` merged; they must all lie right of the ragged
    one, or all between it and the batch one."""
    a = logical_dim(input, start_dim, "flatten", ragged=False)
    b = logical_dim(input, end_dim, "flatten", ragged=False)
    r = input._ragged_idx
    if a <= r <= b:
        raise ArgumentError(f"flatten: dims {start_dim}..{end_dim} of a nested tensor of shape "
                            f"{input.shape} include its ragged dimension")
    shift = (b - a) if b < r else 0
    return input._with(input._values.flatten(a - 1, b - 1), r - shift)


NestedTensor.unflatten = unflatten
NestedTensor.flatten = flatten
NestedTensor.view = view


@implements(split)
def nested_split(tensor: NestedTensor, split_size_or_sections: int | Sequence[int],
                 dim: int = 0) -> tuple[NestedTensor, ...]:
    """Pieces along ``dim`` (neither batch nor ragged), each of the same ragged structure."""
    d = logical_dim(tensor, dim, "split", ragged=False)
    return tuple(tensor._with(v) for v in tensor._values.split(split_size_or_sections, d - 1))


@implements(narrow)
def nested_narrow(input: NestedTensor, dim: int, start: int, length: int) -> NestedTensor:
    """The view ``[start, start + length)`` along ``dim`` (neither batch nor ragged), as
    ``Tensor.narrow``."""
    d = logical_dim(input, dim, "narrow", ragged=False)
    return input._with(input._values.narrow(d - 1, start, length))


@implements(cat)
def nested_cat(tensors: Sequence[NestedTensor], dim: int = 0) -> NestedTensor:
    """Nested tensors of one structure joined along ``dim`` (neither batch nor ragged)."""
    first = tensors[0]
    d = logical_dim(first, dim, "cat", ragged=False)
    values = [check_same_structure("cat", first, t) for t in tensors]
    return first._with(cat(values, d - 1))


@implements(stack)
def nested_stack(tensors: Sequence[NestedTensor], dim: int = 0) -> NestedTensor:
    """Nested tensors of one structure stacked along a new dimension ``dim`` (not the batch
    one)."""
    first = tensors[0]
    d = normalize_dim(dim, first.dim() + 1, "stack")
    if d == 0:
        raise ArgumentError(f"stack: not supported at dim 0 of nested tensors of shape "
                            f"{first.shape} (their batch dimension)")
    values = [check_same_structure("stack", first, t) for t in tensors]
    r = first._ragged_idx
    return first._with(stack(values, d - 1), r + (d <= r))


def unbind(input: NestedTensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The B sequences, as dense tensors (views of the values, so gradients flow back)."""
    if normalize_dim(dim, input.dim(), "unbind") != 0:
        raise ArgumentError("unbind: nested tensors unbind only along the batch dimension 0")
    pieces = to_rows(input).split(input._ragged.lengths.tolist(), 0)
    return tuple(p.movedim(0, input._ragged_idx - 1) for p in pieces)


NestedTensor.unbind = unbind
