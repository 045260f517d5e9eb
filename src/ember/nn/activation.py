"""Activation modules over ``ember.nn.functional`` (PyTorch's names, arguments and reprs).

Example:
    >>> nn.ReLU()(ember.tensor([-1.0, 2.0]))
    tensor([0., 2.])
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from ember.errors import ArgumentError, ShapeError
from ember.nn import functional as F
from ember.nn import init as nn_init
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Softmax",
           "LogSoftmax", "Softmin", "LeakyReLU", "ELU", "SELU", "CELU", "Softplus", "Softsign",
           "Hardtanh", "Hardsigmoid", "Hardswish", "LogSigmoid", "Tanhshrink", "PReLU", "GLU",
           "Hardshrink", "Softshrink", "Threshold", "RReLU", "Softmax2d"]

_REQUIRED: Any = object()  # a constructor argument without a default


class _Activation(Module):
    """An elementwise activation: ``forward`` calls ``F.<fn>`` with the module's settings,
    which are the constructor's keyword arguments listed in ``_args`` (also the repr)."""

    _fn: str = ""
    _args: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        defaults = type(self)._defaults
        if len(args) > len(self._args):
            raise TypeError(f"{type(self).__name__} takes at most {len(self._args)} arguments")
        values = dict(zip(self._args, args, strict=False))
        for k, v in kwargs.items():
            if k not in self._args:
                raise TypeError(f"{type(self).__name__} got an unexpected argument {k!r}")
            values[k] = v
        for k in self._args:
            value = values.get(k, defaults[k])
            if value is _REQUIRED:
                raise TypeError(f"{type(self).__name__} missing required argument {k!r}")
            object.__setattr__(self, k, value)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A class with its own ``_defaults`` gets an ``__init__`` whose signature lists
        them, as PyTorch's (``inspect.signature(nn.ELU)`` reads ``alpha``, ``inplace``)."""
        super().__init_subclass__(**kwargs)
        if not vars(cls).get("_defaults") or "__init__" in vars(cls):
            return  # none: Module's (*args, **kwargs), as PyTorch's; or a written __init__

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            super(cls, self).__init__(*args, **kwargs)

        init.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = init  # type: ignore[misc]
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        init.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("self", kind)]
            + [inspect.Parameter(k, kind, default=v) if v is not _REQUIRED
               else inspect.Parameter(k, kind) for k, v in cls._defaults.items()],
            return_annotation=None)

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._fn)(input, **{k: getattr(self, k) for k in self._args})

    def extra_repr(self) -> str:
        parts = [f"{k}={getattr(self, k)!r}" for k in self._args if k != "inplace"]
        if getattr(self, "inplace", False):
            parts.append("inplace=True")
        return ", ".join(parts)


class _Shrink(_Activation):
    def extra_repr(self) -> str:
        return f"{self.lambd}"  # PyTorch's repr: the threshold alone


class _Silent(_Activation):
    def extra_repr(self) -> str:
        return ""  # PyTorch's Hardsigmoid and Hardswish show no settings, not even inplace


def _activation(name: str, fn: str, doc: str, base: type = _Activation, **defaults: Any) -> type:
    cls = type(name, (base,), {"_fn": fn, "_args": tuple(defaults),
                                      "_defaults": defaults, "__doc__": doc,
                                      "__module__": __name__})
    return cls


ReLU = _activation("ReLU", "relu", "max(0, x).", inplace=False)
GELU = _activation("GELU", "gelu", "x·Φ(x) (``approximate='tanh'`` for the tanh form).",
                   approximate="none")
SiLU = _activation("SiLU", "silu", "x·sigmoid(x).", inplace=False)
Mish = _activation("Mish", "mish", "x·tanh(softplus(x)).", inplace=False)
Tanh = _activation("Tanh", "tanh", "tanh(x).")
Sigmoid = _activation("Sigmoid", "sigmoid", "1 / (1 + exp(-x)).")
LogSigmoid = _activation("LogSigmoid", "logsigmoid", "log(sigmoid(x)).")
Softsign = _activation("Softsign", "softsign", "x / (1 + |x|).")
Tanhshrink = _activation("Tanhshrink", "tanhshrink", "x - tanh(x).")
LeakyReLU = _activation("LeakyReLU", "leaky_relu", "max(0, x) + negative_slope·min(0, x).",
                        negative_slope=0.01, inplace=False)
ELU = _activation("ELU", "elu", "x if x > 0 else alpha·(exp(x) - 1).", alpha=1.0,
                  inplace=False)
SELU = _activation("SELU", "selu", "scale·elu(x, alpha) with the self-normalising constants.",
                   inplace=False)
CELU = _activation("CELU", "celu", "max(0, x) + min(0, alpha·(exp(x/alpha) - 1)).", alpha=1.0,
                   inplace=False)
Softplus = _activation("Softplus", "softplus", "log(1 + exp(beta·x)) / beta (linear above "
                       "``threshold``).", beta=1.0, threshold=20.0)


class Hardtanh(_Activation):
    """``clamp(x, min_val, max_val)``, with ``min_val < max_val``.

    Example:
        >>> nn.Hardtanh(-2.0, 2.0)(ember.tensor([-3.0, 1.0, 3.0]))
        tensor([-2.,  1.,  2.])
    """

    _fn = "hardtanh"
    _defaults = {"min_val": -1.0, "max_val": 1.0, "inplace": False}
    _args = tuple(_defaults)

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        if min_value is not None or max_value is not None:  # PyTorch's deprecated names
            warnings.warn("Hardtanh: min_value and max_value are deprecated; use min_val and "
                          "max_val", FutureWarning, stacklevel=2)
            min_val = min_val if min_value is None else min_value
            max_val = max_val if max_value is None else max_value
        super().__init__(min_val, max_val, inplace)
        if not self.max_val > self.min_val:
            raise ArgumentError(f"Hardtanh: max_val ({self.max_val}) must be greater than "
                                f"min_val ({self.min_val})")


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)``: a ``Hardtanh(0.0, 6.0)``, as PyTorch's.

    Example:
        >>> nn.ReLU6()(ember.tensor([-1.0, 7.0]))
        tensor([0., 6.])
    """

    min_val, max_val = 0.0, 6.0  # (for a ReLU6 pickled before it had them: it ran forward)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""

Hardsigmoid = _activation("Hardsigmoid", "hardsigmoid", "relu6(x + 3) / 6.", _Silent,
                          inplace=False)
Hardswish = _activation("Hardswish", "hardswish", "x·relu6(x + 3) / 6.", _Silent,
                        inplace=False)
Softmax = _activation("Softmax", "softmax", "exp(x) / sum(exp(x)) along ``dim``.", dim=None)
LogSoftmax = _activation("LogSoftmax", "log_softmax", "log(softmax(x)) along ``dim``.",
                         dim=None)
Softmin = _activation("Softmin", "softmin", "softmax(-x) along ``dim``.", dim=None)
GLU = _activation("GLU", "glu", "a·sigmoid(b) for the halves a, b of ``dim``.", dim=-1)
Hardshrink = _activation("Hardshrink", "hardshrink", "x where |x| > lambd, else 0.", _Shrink,
                         lambd=0.5)
Softshrink = _activation("Softshrink", "softshrink", "x moved lambd toward 0, and 0 within "
                         "[-lambd, lambd].", _Shrink, lambd=0.5)
Threshold = _activation("Threshold", "threshold", "x where x > threshold, else ``value``.",
                        threshold=_REQUIRED, value=_REQUIRED, inplace=False)


class RReLU(Module):
    """Randomized leaky relu: slopes drawn from ``U(lower, upper)`` for the non-positive
    elements in training, the fixed slope ``(lower + upper) / 2`` in evaluation.

    Example:
        >>> nn.RReLU(0.1, 0.3).eval()(ember.tensor([-1.0, 2.0]))
        tensor([-0.2000,  2.0000])
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                             else "")


class Softmax2d(Module):
    """Softmax over the channels (dimension -3) of a (N, C, H, W) or (C, H, W) input.

    Example:
        >>> nn.Softmax2d()(ember.zeros(1, 2, 1, 1)).flatten()
        tensor([0.5000, 0.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expected a 3-D or 4-D input (N, C, H, W), got shape "
                             f"{tuple(input.shape)}")
        return F.softmax(input, -3)


class PReLU(Module):
    """``max(0, x) + weight·min(0, x)`` with a learnt slope (one, or one per channel), all
    initialised to ``init``.

    Example:
        >>> nn.PReLU(3)(ember.randn(2, 3)).shape
        ember.Size([2, 3])
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        import ember
        from ember.nn.parameter import Parameter

        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(ember.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn_init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
