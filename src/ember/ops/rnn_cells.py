"""One time step of the recurrent cells, with PyTorch's gate order (LSTM: i, f, g, o; GRU:
r, z, n, the reset gate multiplying ``h W_hnᵀ + b_hn``): the steps ``nn.RNN``/``LSTM``/``GRU``
and their ``*Cell`` modules scan, and PyTorch's top-level ``rnn_tanh_cell``,
``rnn_relu_cell``, ``lstm_cell`` and ``gru_cell``.

A step takes the input already projected (``x W_ihᵀ + b_ih``, one matrix product for all time
steps in the layers), the states ``h`` and ``c`` (None where the cell has none), ``W_hh`` and
``b_hh``, and returns ``(h', c')``; the LSTM and GRU gates are one primitive each
(:mod:`ember.ops.rnn_gates`). ``w_hh`` may instead be a callable giving ``h W_hhᵀ + b_hh``
(``b_hh`` then None): the dynamically quantized layers pass their int8 linear layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    ShapeError,
    refuse_non_tensor,
    type_name,
)
from ember.ops.linear import linear
from ember.ops.rnn_gates import gru_gates, lstm_gates
from ember.tensor import Tensor

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"]


def project(x: Tensor, w: Any, b: Tensor | None) -> Tensor:
    """``x Wᵀ + b``, or ``w(x)`` where ``w`` is a callable projection."""
    return w(x) if callable(w) else linear(x, w, b)


def tanh_step(x: Tensor, h: Tensor, c: Any, w_hh: Tensor, b_hh: Tensor | None) -> tuple:
    return project(h, w_hh, b_hh).add(x).tanh(), None


def relu_step(x: Tensor, h: Tensor, c: Any, w_hh: Tensor, b_hh: Tensor | None) -> tuple:
    return project(h, w_hh, b_hh).add(x).relu(), None


def lstm_step(x: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> tuple:
    return lstm_gates(x, project(h, w_hh, b_hh), c)


def gru_step(x: Tensor, h: Tensor, c: Any, w_hh: Tensor, b_hh: Tensor | None) -> tuple:
    return gru_gates(x, project(h, w_hh, b_hh), h), None


def _check_cell(op: str, input: Tensor, states: Sequence[Tensor], w_ih: Tensor,
                w_hh: Tensor) -> None:
    """PyTorch's checks of a cell function's operands: batches only (the ``*Cell`` modules
    add the dimension), ``w_ih``'s input size, and each state of the input's batch and
    ``w_hh``'s hidden size (a state of batch 1 would broadcast silently). Each shape is read
    once (a ``shape`` builds a new Size)."""
    try:
        x, shapes = input.shape, [s.shape for s in states]
        n_in, n_h = w_ih.shape[-1], w_hh.shape[-1]
    except AttributeError:
        _refuse_non_tensors(op, input, states, w_ih, w_hh)
        raise
    if len(x) != 2 or len(shapes[0]) != 2 or len(shapes[-1]) != 2:  # (one state or two)
        raise ShapeError(f"{op}: expected a batched 2-D input and hidden state, got shapes "
                         f"{tuple(x)} and {', '.join(str(tuple(s)) for s in shapes)}. Hint: "
                         "unsqueeze(0) adds the batch dimension")
    if x[1] != n_in:
        raise ShapeError(f"{op}: input has inconsistent input_size: got {x[1]} expected {n_in} "
                         f"(w_ih is {tuple(w_ih.shape)})")
    for i, s in enumerate(shapes):
        if s[0] != x[0]:
            raise ShapeError(f"{op}: Input batch size {x[0]} doesn't match hidden{i} batch size "
                             f"{s[0]}")
        if s[1] != n_h:
            raise ShapeError(f"{op}: hidden{i} has inconsistent hidden_size: got {s[1]}, "
                             f"expected {n_h}")


def _refuse_non_tensors(op: str, input: Any, states: Sequence[Any], w_ih: Any,
                        w_hh: Any) -> None:
    """The TypeError naming ``op`` and the argument for a None or other plain value where a
    cell function takes a tensor (the error path of :func:`_check_cell`)."""
    labels = ["hx[0]", "hx[1]"] if len(states) == 2 else ["hx"]
    for label, value in (("input", input), *zip(labels, states), ("w_ih", w_ih),
                         ("w_hh", w_hh)):
        if value is None and label.startswith("hx"):
            raise ArgumentTypeError(f"{op}(): argument '{label}' must be Tensor, not NoneType. "
                                    "Hint: the cell functions take no default state; pass "
                                    "zeros of shape (batch, hidden_size)")
        refuse_non_tensor(op, label, value)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step ``tanh(input W_ihᵀ + b_ih + hx W_hhᵀ + b_hh)``.

    Example:
        >>> w_ih, w_hh = ember.ones(3, 2), ember.zeros(3, 3)
        >>> ember.rnn_tanh_cell(ember.zeros(1, 2), ember.zeros(1, 3), w_ih, w_hh)
        tensor([[0., 0., 0.]])
    """
    _check_cell("rnn_tanh_cell", input, (hx,), w_ih, w_hh)
    return tanh_step(linear(input, w_ih, b_ih), hx, None, w_hh, b_hh)[0]


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step with relu: ``relu(input W_ihᵀ + b_ih + hx W_hhᵀ + b_hh)``.

    Example:
        >>> w_ih, w_hh = ember.ones(3, 2), ember.zeros(3, 3)
        >>> ember.rnn_relu_cell(ember.ones(1, 2), ember.zeros(1, 3), w_ih, w_hh)
        tensor([[2., 2., 2.]])
    """
    _check_cell("rnn_relu_cell", input, (hx,), w_ih, w_hh)
    return relu_step(linear(input, w_ih, b_ih), hx, None, w_hh, b_hh)[0]


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step; ``hx`` is ``(h, c)``, and so is the result.

    Example:
        >>> h, c = ember.lstm_cell(ember.zeros(1, 2), (ember.zeros(1, 3), ember.ones(1, 3)),
        ...                        ember.zeros(12, 2), ember.zeros(12, 3))
        >>> c
        tensor([[0.5000, 0.5000, 0.5000]])
    """
    try:
        n = len(hx)
    except TypeError:
        raise ArgumentTypeError(f"lstm_cell(): argument 'hx' must be a tuple of Tensors (h, c), "
                                f"not {type_name(hx)}") from None
    if n != 2:
        raise ArgumentError(f"lstm_cell: expected hx to have 2 elements (h, c), got {n}")
    _check_cell("lstm_cell", input, hx, w_ih, w_hh)
    h, c = lstm_step(linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh)
    return h, c


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One GRU step.

    Example:
        >>> ember.gru_cell(ember.zeros(1, 2), ember.ones(1, 3), ember.zeros(9, 2),
        ...                ember.zeros(9, 3))
        tensor([[0.5000, 0.5000, 0.5000]])
    """
    _check_cell("gru_cell", input, (hx,), w_ih, w_hh)
    return gru_step(linear(input, w_ih, b_ih), hx, None, w_hh, b_hh)[0]
