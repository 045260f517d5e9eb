"""Activation modules over ``ember.nn.functional`` (PyTorch's names, arguments and reprs).

Example:
    >>> nn.ReLU()(ember.tensor([-1.0, 2.0]))
    tensor([0., 2.])
"""

from __future__ import annotations

from typing import Any

from ember.nn import functional as F
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Softmax",
           "LogSoftmax", "Softmin", "LeakyReLU", "ELU", "SELU", "CELU", "Softplus", "Softsign",
           "Hardtanh", "Hardsigmoid", "Hardswish", "LogSigmoid", "Tanhshrink", "PReLU", "GLU"]


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
            object.__setattr__(self, k, values.get(k, defaults[k]))

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._fn)(input, **{k: getattr(self, k) for k in self._args})

    def extra_repr(self) -> str:
        parts = [f"{k}={getattr(self, k)!r}" for k in self._args if k != "inplace"]
        if getattr(self, "inplace", False):
            parts.append("inplace=True")
        return ", ".join(parts)


def _activation(name: str, fn: str, doc: str, **defaults: Any) -> type:
    cls = type(name, (_Activation,), {"_fn": fn, "_args": tuple(defaults),
                                      "_defaults": defaults, "__doc__": doc,
                                      "__module__": __name__})
    return cls


ReLU = _activation("ReLU", "relu", "max(0, x).", inplace=False)
ReLU6 = _activation("ReLU6", "relu6", "min(max(0, x), 6).", inplace=False)
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
Hardtanh = _activation("Hardtanh", "hardtanh", "clamp(x, min_val, max_val).", min_val=-1.0,
                       max_val=1.0, inplace=False)
Hardsigmoid = _activation("Hardsigmoid", "hardsigmoid", "relu6(x + 3) / 6.", inplace=False)
Hardswish = _activation("Hardswish", "hardswish", "x·relu6(x + 3) / 6.", inplace=False)
Softmax = _activation("Softmax", "softmax", "exp(x) / sum(exp(x)) along ``dim``.", dim=None)
LogSoftmax = _activation("LogSoftmax", "log_softmax", "log(softmax(x)) along ``dim``.",
                         dim=None)
Softmin = _activation("Softmin", "softmin", "softmax(-x) along ``dim``.", dim=None)
GLU = _activation("GLU", "glu", "a·sigmoid(b) for the halves a, b of ``dim``.", dim=-1)


class PReLU(Module):
    """``max(0, x) + weight·min(0, x)`` with a learnt slope (one, or one per channel), all
    initialised to ``init``.

    Example:
        >>> nn.PReLU(3)(ember.randn(2, 3)).shape
        (2, 3)
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        import ember
        from ember.nn.parameter import Parameter

        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(ember.full((num_parameters,), init, dtype=dtype,
                                           device=device))

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
