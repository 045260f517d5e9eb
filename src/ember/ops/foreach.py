"""``torch._foreach_*``: one op over a list of tensors, as PyTorch code calls them (optimizer
updates, an EMA of a model's weights, gradient clipping). Each is the ordinary op applied
tensor by tensor, so autograd, ``ember.jit`` and every device see ordinary ops.

The second operand takes PyTorch's forms: a number for every tensor, a list of numbers (one
each), a list of tensors (one each, broadcast against its own), or a 0-d tensor; the
out-of-place ops return a tuple of tensors, the in-place ones (``_foreach_add_``) the list
they wrote.

Example:
    >>> params = [ember.ones(2), ember.ones(3)]
    >>> _ = ember._foreach_mul_(params, 0.5)
    >>> ember._foreach_add(params, [1.0, 2.0])
    (tensor([1.5000, 1.5000]), tensor([2.5000, 2.5000, 2.5000]))
    >>> ember._foreach_norm(params)
    (tensor(0.7071), tensor(0.8660))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ember.dtypes import DType
from ember.errors import ArgumentError
from ember.ops.arithmetic import pow as power
from ember.ops.norms import vector_norm
from ember.tensor import Tensor

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
# name -> (the method applied, whether it takes alpha=)
_BINARY = {"add": ("add", True), "sub": ("sub", True), "mul": ("mul", False),
           "div": ("div", False), "pow": ("pow", False), "clamp_min": ("clamp_min", False),
           "clamp_max": ("clamp_max", False), "maximum": ("clamp_min", False),
           "minimum": ("clamp_max", False)}


def _tensors(name: str, tensors: Any) -> list[Tensor]:
    if not isinstance(tensors, list | tuple) or not tensors or \
            not all(isinstance(t, Tensor) for t in tensors):
        raise ArgumentError(f"ember.{name}: expected a non-empty list of tensors, got "
                            f"{type(tensors).__name__}"
                            f"{' (empty)' if isinstance(tensors, list | tuple) else ''}")
    return list(tensors)


def _each(name: str, what: str, value: Any, n: int) -> list[Any]:
    """``value`` as one operand per tensor: a list (of ``n``), or one value for all (a
    number, or a 0-d tensor)."""
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise ArgumentError(f"ember.{name}: {n} tensors but {len(value)} {what}; the lists "
                                "pair up one to one")
        return list(value)
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ArgumentError(f"ember.{name}: a tensor {what} applies to every tensor and must be "
                            f"0-d, got shape {tuple(value.shape)}. Hint: pass a list of tensors, "
                            "one per tensor")
    return [value] * n


def _numbers(name: str, value: Any, n: int) -> list[Any]:
    """addcmul's and addcdiv's values: a number, a list, or a 1-D tensor of ``n`` numbers."""
    if isinstance(value, Tensor):
        if value.ndim != 1:
            raise ArgumentError(f"ember.{name}: a tensor of values must be 1-D (one per tensor), "
                                f"got shape {tuple(value.shape)}")
        value = value.tolist()
    return _each(name, "values", value, n)


def _unary(name: str, method: str, tensors: list[Tensor]) -> list[Tensor]:
    return [getattr(t, method)() for t in tensors]


def _binary(name: str, method: str, tensors: list[Tensor], other: Any, *,
            alpha: Any = 1) -> list[Tensor]:
    given = alpha != 1 or alpha.__class__ is not int  # (1.0 and 1+0j are checked as add's)
    if given and method.rstrip("_") not in ("add", "sub"):
        raise TypeError(f"ember.{name}: takes no alpha (add and sub do)")
    extra = {"alpha": alpha} if given else {}
    return [getattr(t, method)(o, **extra)
            for t, o in zip(tensors, _each(name, "operands", other, len(tensors)))]


def _products(name: str, method: str, tensors: list[Tensor], tensor1: Sequence[Tensor],
              tensor2: Sequence[Tensor], value: Any = 1) -> list[Tensor]:
    n = len(tensors)
    firsts, seconds = (_each(name, "tensors", _tensors(name, t), n) for t in (tensor1, tensor2))
    return [getattr(t, method)(a, b, value=v)
            for t, a, b, v in zip(tensors, firsts, seconds, _numbers(name, value, n))]


def _lerp(name: str, method: str, tensors: list[Tensor], tensors1: Sequence[Tensor],
          weight: Any) -> list[Tensor]:
    ends = _each(name, "ends", _tensors(name, tensors1), len(tensors))
    return [getattr(t, method)(e, w)
            for t, e, w in zip(tensors, ends, _each(name, "weights", weight, len(tensors)))]


__all__: list[str] = []
_LIST = "[ember.ones(2), ember.ones(1, 3)]"


def _define(op: str, each: Callable[..., list[Tensor]], doc: str, args: list[str],
            method: str | None = None) -> None:
    """``_foreach_<op>`` and ``_foreach_<op>_``: ``each(name, method, tensors, *args)``,
    whose results the first returns as a tuple; the second runs the in-place method and
    gives back its list."""
    for in_place in (False, True):
        name = f"_foreach_{op}{'_' * in_place}"
        run = _runner(name, (method or op) + "_" * in_place, each, in_place)
        run.__doc__ = (f"``torch.{name}``: {doc}{' (in place)' if in_place else ''}.\n\n"
                       f"    Example:\n        >>> [tuple(t.shape) for t in ember.{name}("
                       f"{', '.join([_LIST, *args])})]\n        [(2,), (1, 3)]\n")
        globals()[name] = run
        __all__.append(name)


def _runner(name: str, method: str, each: Callable[..., list[Tensor]],
            in_place: bool) -> Callable[..., Any]:
    def run(self: Sequence[Tensor], *args: Any, **kwargs: Any) -> Any:
        outs = each(name, method, _tensors(name, self), *args, **kwargs)
        return self if in_place else tuple(outs)  # (as PyTorch's binding: the list written)

    run.__name__ = run.__qualname__ = name
    run.__module__ = __name__
    operands = list(inspect.signature(each).parameters.values())[3:]  # (after the tensors)
    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *operands])
    return run


for _op in _UNARY:
    _define(_op, _unary, f"``{_op}`` of each tensor", [])
for _op, (_method, _alpha) in _BINARY.items():
    _define(_op, _binary, f"``{_op}`` of each tensor with its operand (a number, a list of "
            f"numbers or of tensors, or a 0-d tensor){'; ``alpha`` scales it' * _alpha}",
            ["[2.0, 3.0]"], _method)
for _op, _sign in (("addcmul", "·"), ("addcdiv", "/")):
    _define(_op, _products, f"``self + value · tensor1 {_sign} tensor2`` for each triple "
            "(``value`` a number, a list, or a 1-D tensor of one per tensor)", [_LIST, _LIST])
_define("lerp", _lerp, "each tensor moved toward its end by ``weight`` (a number, or one "
        "number or tensor per tensor: an EMA is ``_foreach_lerp_(ema, params, 1 - decay)``)",
        [_LIST, "0.1"])


_listed_pow = globals()["_foreach_pow"]  # (the list form made above; the name now takes both)


def _foreach_pow(self: Any, exponent: Any) -> tuple[Tensor, ...]:
    """``torch._foreach_pow``: each tensor to its power (a number, a list of numbers or of
    tensors), or a number to the power of each tensor (``_foreach_pow(2.0, tensors)``).

    Example:
        >>> ember._foreach_pow(2.0, [ember.tensor([1.0, 3.0])])
        (tensor([2., 8.]),)
    """
    if isinstance(self, list | tuple):
        return _listed_pow(self, exponent)
    return tuple(power(self, t) for t in _tensors("_foreach_pow", exponent))


def _foreach_norm(self: Sequence[Tensor], ord: float = 2,
                  dtype: DType | None = None) -> tuple[Tensor, ...]:
    """``torch._foreach_norm``: the vector ``ord``-norm of each tensor, as 0-d tensors.

    Example:
        >>> ember._foreach_norm([ember.tensor([3.0, 4.0]), ember.ones(2, 2)], 1)
        (tensor(7.), tensor(4.))
    """
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _tensors("_foreach_norm", self))


def _foreach_powsum(self: Sequence[Tensor], ord: float = 2,
                    dtype: DType | None = None) -> tuple[Tensor, ...]:
    """``torch._foreach_powsum``: the sum of ``|x|^ord`` over each tensor (a norm without its
    root), as 0-d tensors.

    Example:
        >>> ember._foreach_powsum([ember.tensor([1.0, -2.0])], 3)
        (tensor(9.),)
    """
    tensors = _tensors("_foreach_powsum", self)
    return tuple((t.to(dtype) if dtype is not None else t).abs().pow(ord).sum()
                 for t in tensors)


def _foreach_max(self: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """``torch._foreach_max``: the largest element of each tensor, as 0-d tensors.

    Example:
        >>> ember._foreach_max([ember.tensor([1.0, 5.0]), ember.tensor([-2.0])])
        (tensor(5.), tensor(-2.))
    """
    return tuple(t.max() for t in _tensors("_foreach_max", self))


def _foreach_mm(self: Sequence[Tensor], mat2: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """``torch._foreach_mm``: the matrix product of each pair.

    Example:
        >>> ember._foreach_mm([ember.ones(2, 3)], [ember.ones(3, 1)])
        (tensor([[3.],
                [3.]]),)
    """
    tensors = _tensors("_foreach_mm", self)
    return tuple(a.mm(b) for a, b in zip(tensors, _each("_foreach_mm", "matrices",
                                                         _tensors("_foreach_mm", mat2),
                                                         len(tensors))))


def _foreach_clone(self: Sequence[Tensor], *, memory_format: Any = None) -> tuple[Tensor, ...]:
    """``torch._foreach_clone``: a copy of each tensor.

    Example:
        >>> ember._foreach_clone([ember.ones(2)])
        (tensor([1., 1.]),)
    """
    extra = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(t.clone(**extra) for t in _tensors("_foreach_clone", self))


def _foreach_copy_(self: Sequence[Tensor], src: Sequence[Tensor],
                   non_blocking: bool = False) -> Sequence[Tensor]:
    """``torch._foreach_copy_``: each tensor gets its source's values (broadcast, cast).

    Example:
        >>> ember._foreach_copy_([ember.zeros(2)], [ember.ones(2)])
        [tensor([1., 1.])]
    """
    tensors = _tensors("_foreach_copy_", self)
    for t, s in zip(tensors, _each("_foreach_copy_", "sources", _tensors("_foreach_copy_", src),
                                   len(tensors))):
        t.copy_(s, non_blocking)
    return self


def _foreach_zero_(self: Sequence[Tensor]) -> Sequence[Tensor]:
    """``torch._foreach_zero_``: each tensor filled with zeros.

    Example:
        >>> ember._foreach_zero_([ember.ones(2)])
        [tensor([0., 0.])]
    """
    for t in _tensors("_foreach_zero_", self):
        t.zero_()
    return self


__all__ += ["_foreach_clone", "_foreach_copy_", "_foreach_max", "_foreach_mm", "_foreach_norm",
            "_foreach_powsum", "_foreach_zero_"]
