"""Multi-layer recurrent networks over flat weight lists: the time scans and the layer stack
that ``nn.RNN``/``LSTM``/``GRU`` run, and PyTorch's top-level ``rnn_tanh``, ``rnn_relu``,
``lstm`` and ``gru`` with ATen's signatures.

The weights are per layer and direction, in PyTorch's flat order: ``w_ih, w_hh``, then
``b_ih, b_hh`` when ``has_biases``, then (LSTM with projections) ``w_hr``. The input is
``(time, batch, features)`` (``batch_first``: ``(batch, time, …)``), or packed: the packed
rows and the batch size of each time step (the ``data, batch_sizes`` of a
``PackedSequence``), a sequence that ends dropping out of the batch. The input projection of
all time steps is one matrix product; only the recurrence loops over time.

Example:
    >>> x, h = ember.zeros(5, 2, 3), ember.zeros(1, 2, 4)
    >>> out, h_n = ember.gru(x, h, [ember.ones(12, 3), ember.ones(12, 4)], False, 1, 0.0,
    ...                      False, False, False)
    >>> out.shape, h_n.shape
    (ember.Size([5, 2, 4]), ember.Size([1, 2, 4]))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember import dtypes
from ember.dtypes import DType
from ember.errors import ShapeError, describe, type_name
from ember.ops.convert import cast
from ember.ops.creation import zeros
from ember.ops.dropout import dropout as _dropout
from ember.ops.join import cat, stack
from ember.ops.linear import linear
from ember.ops.primitive import DISPATCH
from ember.ops.rnn_cells import gru_step, lstm_step, project, relu_step, tanh_step
from ember.ops.rnn_gates import _fused
from ember.ops.rnn_scan import gru_scan, lstm_scan
from ember.tensor import Tensor

__all__ = ["rnn_tanh", "rnn_relu", "lstm", "gru"]

Step = Callable[..., tuple]


def projected(step: Step, w_hr: Tensor) -> Step:
    """``step`` followed by the LSTM projection ``h' = h W_hrᵀ`` (``proj_size > 0``)."""
    def project(x: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> tuple:
        h, c = step(x, h, c, w_hh, b_hh)
        return linear(h, w_hr), c
    return project


def lowered_whole(step: Step, packed: bool, weights: Sequence[tuple]) -> bool:
    """Whether autocast lowers this network whole, states included: PyTorch's CPU LSTM on
    padded input without projections is oneDNN's ``mkldnn_rnn_layer``, on autocast's
    lower-precision list, so its output, ``h_n`` and ``c_n`` come out in the autocast dtype
    (the other networks compute their gates from lowered products and keep float32 states)."""
    return DISPATCH.casting and step is lstm_step and not packed and \
        all(w[4] is None for w in weights)


def _states_in(step: Step, dtype: DType) -> Step:
    """``step`` taking and giving its states in ``dtype``; its arithmetic in float32, as
    oneDNN's low-precision LSTM accumulates."""
    def lowered(x: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> tuple:
        h, c = step(cast(x, dtypes.float32), h, cast(c, dtypes.float32), w_hh, b_hh)
        return cast(h, dtype), cast(c, dtype)
    return lowered


def _offsets(sizes: list[int]) -> list[int]:
    """Where each time step starts in packed data with these batch sizes."""
    out, total = [], 0
    for n in sizes:
        out.append(total)
        total += n
    return out


def _cat_steps(ys: list[Tensor], like: Tensor, width: int) -> Tensor:
    return cat(ys) if ys else zeros((0, width), dtype=like.dtype, device=like.device)


def _scan_forward(step: Step, x: Tensor, sizes: list[int], h: Tensor, c: Tensor | None,
                  w_hh: Tensor, b_hh: Tensor | None) -> tuple:
    """Runs ``step`` over packed steps ``x`` from the first step on. A sequence that ends
    drops out of the batch (the last rows), its state frozen at its own last step."""
    ys, done_h, done_c = [], [], []
    for start, n in zip(_offsets(sizes), sizes):
        if n < h.shape[0]:
            done_h.append(h[n:])
            h = h[:n]
            if c is not None:
                done_c.append(c[n:])
                c = c[:n]
        h, c = step(x[start:start + n], h, c, w_hh, b_hh)
        ys.append(h)
    y = _cat_steps(ys, x, h.shape[-1])
    if done_h:  # the sequences that ended first are the last rows
        h = cat([h, *done_h[::-1]])
        c = None if c is None else cat([c, *done_c[::-1]])
    return y, h, c


def _scan_reverse(step: Step, x: Tensor, sizes: list[int], h0: Tensor, c0: Tensor | None,
                  w_hh: Tensor, b_hh: Tensor | None) -> tuple:
    """Runs ``step`` over packed steps ``x`` from the last step back. Each sequence joins
    the batch at its own last step, starting from its row of ``h0``/``c0``."""
    h, c = h0, c0
    if sizes and sizes[-1] < h0.shape[0]:
        h = h0[:sizes[-1]]
        c = None if c0 is None else c0[:sizes[-1]]
    ys: list[Any] = [None] * len(sizes)
    offsets = _offsets(sizes)
    for t in range(len(sizes) - 1, -1, -1):
        n, have = sizes[t], h.shape[0]
        if n > have:
            h = cat([h, h0[have:n]])
            c = None if c is None else cat([c, c0[have:n]])
        h, c = step(x[offsets[t]:offsets[t] + n], h, c, w_hh, b_hh)
        ys[t] = h
    return _cat_steps(ys, x, h.shape[-1]), h, c


def _whole_scan(step: Step, x: Tensor, sizes: list[int], h0: Tensor, c0: Tensor | None,
                w_hh: Any, b_hh: Tensor | None, reverse: bool) -> tuple | None:
    """A direction of an LSTM or GRU layer as one primitive (:mod:`ember.ops.rnn_scan`)
    where it takes it: padded steps (every batch size the same), float32 or float64 operands
    of one dtype, a weight (not a quantized layer's callable) and no autocast; else None."""
    if (step is not lstm_step and step is not gru_step) or callable(w_hh) or \
            DISPATCH.casting or not sizes or sizes[-1] != sizes[0]:
        return None
    states = (h0,) if c0 is None else (h0, c0)
    if not _fused(x, *states, w_hh, *(() if b_hh is None else (b_hh,))):
        return None
    px = x.reshape((len(sizes), sizes[0], x.shape[-1]))
    last = 0 if reverse else len(sizes) - 1
    if step is gru_step:
        y = gru_scan(px, h0, w_hh, b_hh, reverse)
        return y.reshape((x.shape[0], y.shape[-1])), y[last], None
    y, cs = lstm_scan(px, h0, c0, w_hh, b_hh, reverse)
    return y.reshape((x.shape[0], y.shape[-1])), y[last], cs[last]


def run_layers(step: Step, data: Tensor, sizes: list[int], hx: Tensor, cx: Tensor | None,
               weights: Sequence[tuple], num_layers: int, bidirectional: bool,
               dropout: float, train: bool, lowered: bool = False
               ) -> tuple[Tensor, Tensor, Tensor | None]:
    """The stack on packed ``data`` (rows of all time steps, ``sizes[t]`` rows at step
    ``t``): ``weights[layer * directions + d]`` is ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` (None
    for what is absent; ``w_ih`` and ``w_hh`` may be callable projections, see
    :mod:`ember.ops.rnn_cells`). Returns the last layer's packed output and the stacked final
    states ``h_n`` and ``c_n`` (None without a cell state). ``lowered`` (see
    :func:`lowered_whole`): the states go in the dtype autocast gives the input projection."""
    directions = 2 if bidirectional else 1
    x, h_out, c_out = data, [], []
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[k]
            cell = step if w_hr is None else projected(step, w_hr)
            scan = _scan_reverse if d else _scan_forward
            px, h0, c0 = project(x, w_ih, b_ih), hx[k], None if cx is None else cx[k]
            if lowered and px.dtype in (dtypes.bfloat16, dtypes.float16):
                cell = _states_in(cell, px.dtype)
                h0, c0 = cast(h0, px.dtype), cast(c0, px.dtype)
            whole = None if w_hr is not None else \
                _whole_scan(step, px, sizes, h0, c0, w_hh, b_hh, bool(d))
            y, h, c = whole or scan(cell, px, sizes, h0, c0, w_hh, b_hh)
            outs.append(y)
            h_out.append(h)
            c_out.append(c)
        x = outs[0] if directions == 1 else cat(outs, dim=-1)
        if dropout and train and layer < num_layers - 1:
            x = _dropout(x, dropout)
    return x, stack(h_out), None if cx is None else stack(c_out)


# -- PyTorch's flat-weight functions -----------------------------------------------------------
def _grouped(op: str, params: Sequence[Tensor], has_biases: bool, num_layers: int,
             bidirectional: bool) -> list[tuple]:
    """The flat ``params`` as ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` per layer and direction."""
    groups = num_layers * (2 if bidirectional else 1)
    per = len(params) // groups if groups else 0
    base = 4 if has_biases else 2
    if groups == 0 or per * groups != len(params) or per not in (base, base + 1):
        raise ShapeError(f"{op}: expected {base} (or {base + 1} with projections) weights per "
                         f"layer and direction, {groups} groups, got {len(params)} tensors")
    out = []
    for g in range(groups):
        ws = list(params[g * per:(g + 1) * per])
        w_ih, w_hh = ws[:2]
        b_ih, b_hh = ws[2:4] if has_biases else (None, None)
        out.append((w_ih, w_hh, b_ih, b_hh, ws[base] if per > base else None))
    return out


def _check_states(op: str, sizes: list[int], h0: Tensor, c0: Tensor | None,
                  weights: list[tuple]) -> None:
    """A non-empty sequence, and ``h_0`` (``c_0``) of shape (layers × directions, batch,
    hidden size): the hidden size read from ``w_hh`` (its columns; ``c_0``: its rows over 4)."""
    if not sizes:
        raise ShapeError(f"{op}: expected sequence length to be larger than 0 in RNN, got an "
                         "empty sequence")
    w_hh = weights[0][1]
    states = [("hx", h0, (len(weights), sizes[0], w_hh.shape[1]))]
    if c0 is not None:
        states.append(("cx", c0, (len(weights), sizes[0], w_hh.shape[0] // 4)))
    for name, state, expected in states:
        if tuple(state.shape) != expected:
            raise ShapeError(f"{op}: expected {name} of shape {expected} (layers × directions, "
                             f"batch, hidden size), got {describe(state.shape, state.dtype)}")


def _run(op: str, step: Step, input: Tensor, second: Any, rest: tuple,
         has_cell: bool) -> tuple:
    """Both ATen overloads: ``(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` and the packed ``(data, batch_sizes, hx, params,
    has_biases, num_layers, dropout, train, bidirectional)``."""
    packed = isinstance(second, Tensor) and not second.dtype.is_floating_point and \
        second.ndim == 1
    if len(rest) != 7:
        raise TypeError(f"{op}(): takes 9 arguments, (input, hx, params, has_biases, num_layers, "
                        "dropout, train, bidirectional, batch_first) or, packed, (data, "
                        "batch_sizes, hx, params, has_biases, num_layers, dropout, train, "
                        f"bidirectional); got {len(rest) + 2}")
    if packed:
        data, sizes = input, [int(n) for n in second.tolist()]
        hx, params, has_biases, num_layers, dropout, train, bidirectional = rest
        batch_first = False
    else:
        hx = second
        params, has_biases, num_layers, dropout, train, bidirectional, batch_first = rest
        if input.ndim != 3:
            raise ShapeError(f"{op}: expected a 3-D input (time, batch, features), or "
                             f"(batch, time, features) with batch_first, got "
                             f"{describe(input.shape, input.dtype)}")
        seq = input.transpose(0, 1) if batch_first else input
        sizes = [seq.shape[1]] * seq.shape[0]
        data = seq.reshape((seq.shape[0] * seq.shape[1], seq.shape[2]))
    h0, c0 = tuple(hx) if has_cell else (hx, None)
    weights = _grouped(op, params, has_biases, num_layers, bidirectional)
    _check_states(op, sizes, h0, c0, weights)
    y, h_n, c_n = run_layers(step, data, sizes, h0, c0, weights, num_layers, bidirectional,
                             dropout, train, lowered_whole(step, packed, weights))
    if not packed:
        y = y.reshape((len(sizes), seq.shape[1], y.shape[-1]))
        y = y.transpose(0, 1) if batch_first else y
    return (y, h_n, c_n) if has_cell else (y, h_n)


def rnn_tanh(input: Tensor, hx: Any, *args: Any) -> tuple[Tensor, Tensor]:
    """An Elman network with tanh over flat weights: ``(output, h_n)``. Called as
    ``rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` or, packed, ``rnn_tanh(data, batch_sizes, hx, params, has_biases,
    num_layers, dropout, train, bidirectional)``.

    Example:
        >>> out, h = ember.rnn_tanh(ember.ones(2, 1, 1), ember.zeros(1, 1, 1),
        ...                         [ember.ones(1, 1), ember.zeros(1, 1)], False, 1, 0.0, False,
        ...                         False, False)
        >>> out.flatten()
        tensor([0.7616, 0.7616])
    """
    return _run("rnn_tanh", tanh_step, input, hx, args, False)


def rnn_relu(input: Tensor, hx: Any, *args: Any) -> tuple[Tensor, Tensor]:
    """:func:`rnn_tanh` with ReLU.

    Example:
        >>> out, h = ember.rnn_relu(ember.ones(2, 1, 1), ember.zeros(1, 1, 1),
        ...                         [ember.ones(1, 1), ember.ones(1, 1)], False, 1, 0.0, False,
        ...                         False, False)
        >>> out.flatten()
        tensor([1., 2.])
    """
    return _run("rnn_relu", relu_step, input, hx, args, False)


def lstm(input: Tensor, hx: Any, *args: Any) -> tuple[Tensor, Tensor, Tensor]:
    """A long short-term memory network over flat weights (gates i, f, g, o; ``w_hr`` per
    layer and direction for projections): ``(output, h_n, c_n)``, with ``hx = (h_0, c_0)``;
    signatures as :func:`rnn_tanh` (packed: ``lstm(data, batch_sizes, hx, …)``).

    Example:
        >>> h = ember.zeros(1, 2, 4)
        >>> out, h_n, c_n = ember.lstm(ember.zeros(5, 2, 3), (h, h),
        ...                            [ember.ones(16, 3), ember.ones(16, 4)], False, 1, 0.0,
        ...                            False, False, False)
        >>> c_n.shape
        ember.Size([1, 2, 4])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"lstm: expected a tensor input, got {type_name(input)}")
    packed = isinstance(hx, Tensor)
    states = args[0] if packed and args else hx
    if not (isinstance(states, (tuple, list)) and len(states) == 2):
        raise TypeError("lstm: hx must be a pair (h_0, c_0)")
    return _run("lstm", lstm_step, input, hx, args, True)


def gru(input: Tensor, hx: Any, *args: Any) -> tuple[Tensor, Tensor]:
    """A gated recurrent unit network over flat weights (gates r, z, n): ``(output, h_n)``;
    signatures as :func:`rnn_tanh`.

    Example:
        >>> out, h = ember.gru(ember.zeros(2, 1, 1), ember.zeros(1, 1, 1),
        ...                    [ember.zeros(3, 1), ember.zeros(3, 1)], False, 1, 0.0, False,
        ...                    False, False)
        >>> h
        tensor([[[0.]]])
    """
    return _run("gru", gru_step, input, hx, args, False)
