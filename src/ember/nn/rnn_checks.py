"""The argument and state checks of the recurrent layers and cells (:mod:`ember.nn.rnn`):
PyTorch's checks of ``RNNBase``'s arguments, in its order and with its messages, and the
initial states' and input's types and dtypes, as errors naming the layer.

Example:
    >>> check_rnn_arguments(3, 4, 1, True, False, 0.0, 5)
    Traceback (most recent call last):
    ember.errors.ArgumentError: proj_size has to be smaller than hidden_size
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import ember
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    dtype_name,
    not_a_tensor_error,
    refuse_non_tensor,
    type_name,
)
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

__all__ = ["check_rnn_arguments", "check_state_types", "state_pair", "check_dtypes",
           "named_weights"]


def check_rnn_arguments(input_size: Any, hidden_size: Any, num_layers: Any, bias: Any,
                         batch_first: Any, dropout: Any, proj_size: Any) -> None:
    """PyTorch's checks of RNNBase's arguments, in its order and with its messages."""
    if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) \
            or not 0 <= dropout <= 1:
        raise ArgumentError("dropout should be a number in range [0, 1] representing the "
                            "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=4)
    for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                              ("input_size", input_size, int),
                              ("hidden_size", hidden_size, int)):
        if not isinstance(value, kind):
            raise ArgumentTypeError(f"{name} should be of type {kind.__name__}, got: "
                                    f"{type_name(value)}")
        if kind is int and value <= 0:
            raise ArgumentError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ArgumentError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ArgumentError("proj_size should be a positive integer or zero to disable "
                            "projections")
    if proj_size >= hidden_size:
        raise ArgumentError("proj_size has to be smaller than hidden_size")


_AUTOCAST_DTYPES = {ember.float32, ember.bfloat16, ember.float16}  # (what autocast casts)


def check_state_types(name: str, hx: Any, cx: Any) -> None:
    """Initial states that are not tensors (a tuple given to GRU) as errors naming the layer,
    not an AttributeError from deep inside."""
    for label, s in (("hx", hx), ("cx", cx)):
        if s is None or isinstance(s, Tensor):
            continue
        if isinstance(s, (tuple, list)):
            raise ArgumentTypeError(f"{name}(): argument '{label}' must be Tensor, not "
                                    f"{type_name(s)}. Hint: only LSTM and LSTMCell take a "
                                    "tuple (h, c)")
        raise not_a_tensor_error(name, label, s)


def state_pair(name: str, hx: Any) -> tuple:
    """An LSTM's ``(h, c)``, both given: a None in the pair is an error, as in PyTorch (not
    zeros for the missing one)."""
    if hx[0] is None or hx[1] is None:
        raise ArgumentTypeError(f"{name}: hx must be a pair of tensors (h, c), got "
                                f"({type_name(hx[0])}, {type_name(hx[1])}). Hint: pass "
                                "hx=None for zero initial states")
    return tuple(hx)


def check_dtypes(name: str, input: Tensor, weight: Tensor | None, hx: Tensor | None,
                  cx: Tensor | None) -> None:
    """A layer's or cell's input of another dtype than its weights, or states of another
    dtype than the input, as errors naming the layer (not a linear's deep inside). Under
    autocast the products cast input and weights to one dtype: a low-precision input runs,
    as PyTorch's CPU autocast runs it."""
    def cast(a: Tensor, b: Tensor) -> bool:
        return DISPATCH.casting and {a.dtype, b.dtype} <= _AUTOCAST_DTYPES

    if weight is not None and input.dtype != weight.dtype and not cast(input, weight):
        refuse_non_tensor(name, "input", input)
        if input.is_quantized:
            raise DTypeError(f"{name}: the input is a quantized tensor ({input.dtype}), and "
                             f"Ember has no quantized {name} (see docs/quantization.md). Hint: "
                             "dequantize its input first (a DeQuantStub before it), and a "
                             "QuantStub after it to quantize again")
        raise ArgumentError(f"{name}: input dtype ({input.dtype}) does not match weight dtype "
                            f"({weight.dtype}). Convert input: input.to({weight.dtype}), or "
                            f"convert model: model.to({input.dtype})")
    for label, s in (("hx", hx), ("cx", cx)):
        if s is not None and s.dtype != input.dtype and not cast(s, input):
            raise DTypeError(f"{name}: {label} is {dtype_name(name, label, s)} but the input "
                             f"is {dtype_name(name, 'input', input)}; they must match")


def named_weights(name: str, names: list[str], weights: tuple, kinds: tuple) -> tuple:
    """One layer and direction's ``weights`` (one per kind of ``kinds``: ``weight_ih``, ...)
    as the layer names them (``names``, from ``_all_weights``), as PyTorch runs them: a weight
    it does not name (a bias set on a layer built with ``bias=False``) is left out (None),
    and one it names may not be None.

    Example:
        >>> named_weights("RNN", ["weight_ih_l0"], (1, 2), ("weight_ih", "bias_ih"))
        (1, None)
    """
    named = {n.rsplit("_l", 1)[0]: n for n in names}
    for kind, w in zip(kinds, weights):
        if w is None and kind in named:
            raise ArgumentTypeError(f"{name}: {named[kind]} is None; each layer and direction "
                                    f"needs all its weights ({', '.join(names)})")
    return tuple(w if kind in named else None for kind, w in zip(kinds, weights))
