"""Which ops a MaskedTensor has and how each treats the mask, as torch's MaskedTensor tables:

- unary (``exp``, ``abs``, ``clamp``, ...): act on the data, keep the mask;
- binary (``add``, ``mul``, comparisons, ...): the other operand is a tensor, a number or a
  MaskedTensor with the *same* mask; the result keeps that mask;
- reductions (``sum``, ``mean``, ``amax``, ...): :mod:`ember.masked`'s functions on the data,
  masking out the slices that had no element;
- pass-through (indexing, ``transpose``, ``reshape``, ...): applied to data and mask alike.

The methods are installed on :class:`~ember.masked.MaskedTensor` when this module is imported.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable
from typing import Any

import ember
from ember.autograd.engine import backward, grad
from ember.errors import ArgumentError
from ember.masked import normalizations, reductions
from ember.masked.autograd import differentiate
from ember.masked.masks import canonical_dims, first_dim
from ember.masked.tensor import MaskedOperand, MaskedTensor, check_condition
from ember.ops.overrides import register
from ember.ops.softmax import implicit_dim
from ember.tensor import Tensor

UNARY = ("abs", "absolute", "acos", "arccos", "acosh", "arccosh", "angle", "asin", "arcsin",
         "asinh", "arcsinh", "atan", "arctan", "atanh", "arctanh", "bitwise_not", "ceil", "clamp",
         "clip", "conj_physical", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv",
         "exp", "exp2", "expm1", "fix", "floor", "frac", "lgamma", "log", "log10", "log1p",
         "log2", "logit", "i0", "isnan", "isfinite", "nan_to_num", "neg", "negative", "positive",
         "pow", "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn", "signbit",
         "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc")
UNARY_INPLACE = tuple(n + "_" for n in UNARY
                      if n not in ("angle", "positive", "signbit", "isnan", "isfinite",
                                   "conj_physical"))
BINARY = ("add", "atan2", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor",
          "bitwise_left_shift", "bitwise_right_shift", "div", "divide", "floor_divide", "fmod",
          "logaddexp", "logaddexp2", "mul", "multiply", "nextafter", "remainder", "sub",
          "subtract", "true_divide", "eq", "ne", "le", "ge", "greater", "greater_equal", "gt",
          "less_equal", "lt", "less", "maximum", "minimum", "fmax", "fmin", "not_equal")
BINARY_INPLACE = tuple(n + "_" for n in BINARY if n not in (
    "logaddexp", "logaddexp2", "maximum", "minimum", "fmax", "fmin"))
REDUCTIONS = ("sum", "mean", "amin", "amax", "argmin", "argmax", "prod", "all", "var", "std")
PASS_THROUGH = ("__getitem__", "select", "transpose", "t", "view", "reshape", "flatten",
                "expand", "unsqueeze", "unfold", "split", "chunk", "clone", "contiguous", "narrow")
# Python's operators: (dunder, function of the two data operands)
OPERATORS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul,
    "__truediv__": operator.truediv, "__floordiv__": operator.floordiv, "__mod__": operator.mod,
    "__and__": operator.and_, "__or__": operator.or_, "__xor__": operator.xor,
    "__lshift__": operator.lshift, "__rshift__": operator.rshift,
    "__eq__": operator.eq, "__ne__": operator.ne, "__lt__": operator.lt, "__le__": operator.le,
    "__gt__": operator.gt, "__ge__": operator.ge,
}
REFLECTED = ("add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor")
UNARY_OPERATORS = {"__neg__": "neg", "__abs__": "abs", "__invert__": "bitwise_not",
                   "__pow__": "pow"}
INPLACE_OPERATORS = {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
                     "__itruediv__": "div_"}


def _check_args(op: str, args: tuple, kwargs: dict) -> None:
    """As torch's MaskedTensor: extra arguments are not tensors and not keyword-only."""
    if kwargs:
        raise TypeError(f"MaskedTensor.{op}: takes no keyword-only arguments (got "
                        f"{', '.join(kwargs)}), as in PyTorch. Hint: apply the op to "
                        "mt.get_data() and wrap the result with "
                        "ember.masked.as_masked_tensor(result, mt.get_mask())")
    for value in args:
        if isinstance(value, (Tensor, MaskedTensor)):
            raise TypeError(f"MaskedTensor.{op}: takes no tensor arguments besides the input "
                            f"(got a {type(value).__name__}). Hint: use mt.get_data() and "
                            "combine the data yourself")


def _keyword_folder(op: str) -> Callable[[tuple, dict], tuple[tuple, dict]]:
    """What folds unary ``op``'s keywords into its positional arguments, as PyTorch's argument
    parser does before its MaskedTensor sees the call: ``mt.clamp(max=1)`` is
    ``mt.clamp(None, 1)``, ``mt.nan_to_num(nan=0.0)`` is ``mt.nan_to_num(0.0)``. Keyword-only
    arguments (``round``'s ``decimals``) stay keywords, which :func:`_check_args` refuses."""
    params = list(inspect.signature(getattr(Tensor, op.removesuffix("_"))).parameters.values())
    positional = inspect.Signature([p for p in params[1:] if p.kind == p.POSITIONAL_OR_KEYWORD])

    known = {p.name for p in params[1:]}

    def fold(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        for key in kwargs:
            if key not in known:
                takes = (f"its arguments are {', '.join(sorted(known))}" if known else
                         f"{op} takes no arguments")
                raise TypeError(f"MaskedTensor.{op}: got an unexpected keyword argument "
                                f"{key!r} ({takes})")
        named = {k: v for k, v in kwargs.items() if k in positional.parameters}
        if not named:
            return args, kwargs
        try:
            bound = positional.bind_partial(*args, **named)
        except TypeError as error:
            raise TypeError(f"MaskedTensor.{op}: {error}") from None
        last = max(list(positional.parameters).index(k) for k in bound.arguments)
        bound.apply_defaults()
        folded = tuple(bound.arguments.values())[:last + 1]
        return folded, {k: v for k, v in kwargs.items() if k not in named}
    return fold


def _gated(value: Any, mask: Tensor) -> Any:
    """``value`` itself, but gradients stop at its masked-out elements: a masked-out nan or inf
    times the 0 gradient of a masked-out output gives nan, which would reach ``value``'s source
    (or, summed over a broadcast, a plain operand's gradient at masked-in elements too)."""
    if not isinstance(value, Tensor) or not value.requires_grad:
        return value
    return ember.where(mask, value, value.detach())


def _unary(op: str) -> Callable[..., MaskedTensor]:
    fold = _keyword_folder(op)

    def method(self: MaskedTensor, *args: Any, **kwargs: Any) -> MaskedTensor:
        args, kwargs = fold(args, kwargs)
        _check_args(op, args, kwargs)
        data = getattr(_gated(self._masked_data, self._mask), op)(*args)
        return MaskedTensor._wrap(data, self._mask)
    method.__name__ = op
    method.__doc__ = f"``Tensor.{op}`` of the data; the mask is kept."
    return method


def _unary_inplace(op: str) -> Callable[..., MaskedTensor]:
    fold = _keyword_folder(op)

    def method(self: MaskedTensor, *args: Any, **kwargs: Any) -> MaskedTensor:
        args, kwargs = fold(args, kwargs)
        _check_args(op, args, kwargs)
        data = self._masked_data
        if data.requires_grad and not data.is_leaf:  # through the gate, written back
            data.copy_(getattr(_gated(data, self._mask), op[:-1])(*args))
        else:
            getattr(data, op)(*args)
        return self
    method.__name__ = op
    method.__doc__ = f"``Tensor.{op}`` of the data in place; the mask is kept."
    return method


def _operand(op: str, self: MaskedTensor, other: Any) -> Any:
    """``other``'s data, after checking that a MaskedTensor ``other`` has ``self``'s mask."""
    if not isinstance(other, MaskedTensor):
        return other
    same = (tuple(other._mask.shape) == tuple(self._mask.shape)
            and bool((other._mask == self._mask).all()))
    if not same:
        raise ArgumentError(f"MaskedTensor.{op}: input masks must match; binary ops need both "
                            "MaskedTensors to have the same mask. Hint: combine a.to_tensor(fill) "
                            "and b.to_tensor(fill), or build the result's mask yourself")
    return other._masked_data


def _binary_result(self: MaskedTensor, data: Tensor) -> MaskedTensor:
    mask = self._mask
    if tuple(data.shape) != tuple(mask.shape):  # a plain operand broadcast the data
        mask = ember.broadcast_to(mask, data.shape)
    return MaskedTensor._wrap(data, mask)


def _binary(op: str, fn: Callable[[Any, Any], Any] | None = None,
            reflected: bool = False) -> Callable[..., MaskedTensor]:
    def method(self: MaskedTensor, other: Any, *args: Any, **kwargs: Any) -> MaskedTensor:
        _check_args(op, args, kwargs)
        data, other_data = (_gated(x, self._mask)
                            for x in (self._masked_data, _operand(op, self, other)))
        if fn is None:
            data = getattr(data, op)(other_data, *args)
        else:
            data = fn(other_data, data) if reflected else fn(data, other_data)
        return _binary_result(self, data)
    method.__name__ = op
    method.__doc__ = (f"``{op}`` of the data and ``other`` (a tensor, a number or a "
                      "MaskedTensor with the same mask); the mask is kept.")
    return method


def isclose(self: MaskedTensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> MaskedTensor:
    """``isclose`` of the data and ``other`` (a tensor, a number or a MaskedTensor of the same
    mask) with the mask kept, as torch's MaskedTensor (which takes its tolerances)."""
    return _binary("isclose", functools.partial(_close, rtol, atol, equal_nan))(self, other)


def _close(rtol: float, atol: float, equal_nan: bool, input: Any, other: Any) -> Tensor:
    return ember.isclose(input, other, rtol, atol, equal_nan)


def _binary_inplace(op: str) -> Callable[..., MaskedTensor]:
    def method(self: MaskedTensor, other: Any, *args: Any, **kwargs: Any) -> MaskedTensor:
        _check_args(op, args, kwargs)
        getattr(self._masked_data, op)(_gated(_operand(op, self, other), self._mask), *args)
        return self
    method.__name__ = op
    method.__doc__ = f"``Tensor.{op}`` of the data in place; the mask is kept."
    return method


def _masked_all(data: Tensor, dims: Any, keepdim: bool, dtype: Any, mask: Tensor) -> Tensor:
    """``all`` over the masked-in elements (True where none is), as torch's MaskedTensor."""
    del dtype
    return ember.all(data.masked_fill(~mask, True), dims, keepdim)


def _reduction(op: str) -> Callable[..., MaskedTensor]:
    function = _masked_all if op == "all" else getattr(reductions, op)

    def method(self: MaskedTensor, dim: Any = None, keepdim: bool = False,
               dtype: Any = None, **options: Any) -> MaskedTensor:
        dims = canonical_dims(dim, self.ndim, op) or None
        along = dim if op in ("argmax", "argmin") else dims
        data = function(self._masked_data, along, keepdim=keepdim, dtype=dtype, mask=self._mask,
                        **options)
        return MaskedTensor._wrap(data, ember.any(self._mask, dims, keepdim))
    method.__name__ = op
    method.__doc__ = (f"``ember.masked.{op}`` of the data over ``dim`` (all dims when ``None``),"
                      " as a MaskedTensor that masks out the slices with no element (``var`` "
                      "and ``std`` also take ``unbiased`` and ``correction``).")
    return method


def softmax(self: MaskedTensor, dim: int, dtype: Any = None) -> MaskedTensor:
    """Softmax along ``dim`` over the specified elements (the data converted to ``dtype``
    first when given); the mask is kept.

    Example:
        >>> mt = ember.masked.masked_tensor(ember.tensor([1.0, 2.0, 3.0]),
        ...                                 ember.tensor([True, False, True]))
        >>> mt.softmax(0)
        MaskedTensor(
          [  0.1192,       --,   0.8808]
        )
    """
    d = first_dim(dim, self.ndim, "softmax")
    values = self._masked_data if dtype is None else self._masked_data.to(dtype)
    if not values.dtype.is_floating_point:
        raise TypeError(f"MaskedTensor.softmax: expected floating point data, got "
                        f"{values.dtype}. Hint: mt.float().softmax(dim), or pass dtype=")
    # slices with nothing specified compute on zeros, so no nan reaches data or gradients
    anything = self._mask.any(d, keepdim=True)
    inputs = ember.where(anything, values, 0.0)
    data = normalizations.softmax(inputs, d, mask=self._mask | ~anything)
    return MaskedTensor._wrap(ember.where(self._mask, data, 0.0), self._mask)


def copy_(self: MaskedTensor, src: Any) -> MaskedTensor:
    """Copies ``src``'s data in place (a plain tensor or number, broadcast, or a MaskedTensor
    with the same mask); the mask is kept.

    Example:
        >>> mt = ember.masked.masked_tensor(ember.tensor([1.0, 2.0]),
        ...                                 ember.tensor([True, False]))
        >>> mt.copy_(ember.tensor([5.0, 6.0]))
        MaskedTensor(
          [  5.0000,       --]
        )
    """
    self._masked_data.copy_(_operand("copy_", self, src))
    return self


def _pass_through(op: str) -> Callable[..., Any]:
    def method(self: MaskedTensor, *args: Any, **kwargs: Any) -> Any:
        data = getattr(self._masked_data, op)(*args, **kwargs)
        mask = getattr(self._mask, op)(*args, **kwargs)
        if isinstance(data, (tuple, list)):
            return type(data)(MaskedTensor._wrap(d, m) for d, m in zip(data, mask))
        return MaskedTensor._wrap(data, mask)
    method.__name__ = op
    method.__doc__ = f"``Tensor.{op}`` applied to the data and the mask alike."
    return method


def _unsupported(op: str) -> Callable[..., Any]:
    def method(self: MaskedTensor, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"MaskedTensor: {op} is not supported on a MaskedTensor. Hint: "
                        "mt.to_tensor(fill) gives a plain tensor with masked-out elements set "
                        "to fill, mt.get_data() the raw data")
    method.__name__ = op
    return method


_DIFFERENTIATE = (backward, grad)
# what ember.add/sub/div/round hand over untouched
_DEFAULTS = {"alpha": 1, "rounding_mode": None, "decimals": 0}
_METHODS = frozenset(UNARY + REDUCTIONS + PASS_THROUGH + ("softmax",))


def _joined(op: Callable, tensors: Any, dim: int = 0) -> MaskedTensor:
    """``ember.cat``/``ember.stack`` of MaskedTensors: data and masks joined alike."""
    if not all(isinstance(t, MaskedTensor) for t in tensors):
        raise TypeError(f"{op.__name__}: expected only MaskedTensors, got "
                        f"{', '.join(type(t).__name__ for t in tensors)}. Hint: make a plain "
                        "tensor t one with ember.masked.masked_tensor(t, ember.ones_like(t, "
                        "dtype=ember.bool))")
    return MaskedTensor._wrap(op([t._masked_data for t in tensors], dim),
                              op([t._mask for t in tensors], dim))


def handle(op: Callable, args: tuple, kwargs: dict) -> MaskedTensor:
    """``ember.<op>(*args)`` with a MaskedTensor among the operands (``ember.exp(mt)``, or
    ``t + mt`` through ``Tensor.__add__``), as torch's MaskedTensor answers it: the ops of the
    tables (unary, binary, reductions, pass-through, ``softmax``; ``softmin`` as the softmax
    of ``-mt``) as the MaskedTensor's methods, ``cat``/``stack`` on data and masks alike,
    ``where`` choosing the masks as the data, ``ones_like`` (and ``zeros_like``,
    ``full_like``, ``empty_like``) keeping the mask; any other op raises."""
    name = op.__name__
    if op in _DIFFERENTIATE:  # (ember.autograd's backward and grad)
        return differentiate(op, args, kwargs)
    given = {k: v for k, v in kwargs.items() if v is not None and _DEFAULTS.get(k, op) != v}
    if name in BINARY and len(args) == 2:
        _check_args(name, (), given)
        input, other = args
        if isinstance(input, MaskedTensor):
            return getattr(input, name)(other)
        return _binary(name, op, reflected=True)(other, input)
    if name == "isclose":  # (its tolerances come positionally: ember.isclose's hand-over)
        input, other, *tolerances = args
        if isinstance(input, MaskedTensor):
            return isclose(input, other, *tolerances, **kwargs)
        return _binary(name, functools.partial(_close, *tolerances), reflected=True)(other, input)
    if name in ("softmax", "softmin"):  # (F.softmax(mt, dim=None) picks the dim as for tensors)
        input, dim = args
        dim = implicit_dim(name, input.ndim) if dim is None else dim
        return (input if name == "softmax" else -input).softmax(dim, **given)
    if name in _METHODS and isinstance(args[0], MaskedTensor):
        return getattr(args[0], name)(*args[1:], **given)
    if name in ("cat", "stack"):
        return _joined(op, *args, **given)
    if name in ("ones_like", "zeros_like", "full_like", "empty_like"):
        input, *rest = args
        return MaskedTensor._wrap(op(input._masked_data, *rest, **kwargs), input._mask)
    if name == "where" and len(args) == 3:
        condition, input, other = args
        check_condition(condition)
        if isinstance(input, MaskedTensor):
            return input.where(condition, other)
        return other.where(~condition, input)
    raise MaskedOperand(name)


def _install() -> None:
    table: dict[str, Callable[..., Any]] = {}
    table.update({op: _unary(op) for op in UNARY})
    table.update({op: _unary_inplace(op) for op in UNARY_INPLACE})
    table.update({op: _binary(op) for op in BINARY})
    table.update({op: _binary_inplace(op) for op in BINARY_INPLACE})
    table.update({op: _reduction(op) for op in REDUCTIONS})
    table.update({op: _pass_through(op) for op in PASS_THROUGH})
    table.update({op: _binary(op, fn) for op, fn in OPERATORS.items()})
    table.update({f"__r{name}__": _binary(f"__r{name}__", OPERATORS[f"__{name}__"], True)
                  for name in REFLECTED})
    table.update({dunder: table[op] for dunder, op in UNARY_OPERATORS.items()})
    table.update({dunder: table[op] for dunder, op in INPLACE_OPERATORS.items()})
    table.update({op: _unsupported(op) for op in ("__matmul__", "__rmatmul__", "__iter__")})
    table["softmax"], table["copy_"], table["isclose"] = softmax, copy_, isclose
    for name, method in table.items():
        setattr(MaskedTensor, name, method)
    register(MaskedTensor, handle)


_install()
