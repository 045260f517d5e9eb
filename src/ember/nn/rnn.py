"""Recurrent layers ``RNN``, ``LSTM`` and ``GRU`` with PyTorch's parameter names
(``weight_ih_l0``, ``weight_hh_l0_reverse``, …), shapes and gate order (LSTM: i, f, g, o;
GRU: r, z, n), so state dicts load across.

The time scans and the layer stack are ``ember.ops.rnn``'s (which PyTorch's top-level
``lstm``, ``gru``, ``rnn_tanh`` and ``rnn_relu`` also run); this module holds the parameters
and reads the inputs.
"""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    ShapeError,
    refuse_non_tensor,
    type_name,
)
from ember.nn import functional as F
from ember.nn import init
from ember.nn.linear import _empty
from ember.nn.module import Module
from ember.nn.rnn_checks import (
    check_dtypes,
    check_rnn_arguments,
    check_state_types,
    named_weights,
    state_pair,
)
from ember.nn.rnn_flat_weights import FlatWeights, assign
from ember.nn.utils.rnn import PackedSequence
from ember.ops.rnn import lowered_whole, run_layers
from ember.ops.rnn_cells import gru_step, lstm_step, relu_step, tanh_step
from ember.tensor import Tensor

__all__ = ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]


def _elman_cell(nonlinearity: str) -> Any:
    """The Elman step for ``nonlinearity`` ('tanh' or 'relu')."""
    if nonlinearity not in ("tanh", "relu"):
        raise ArgumentError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                            "'relu'.")
    return tanh_step if nonlinearity == "tanh" else relu_step


# each mode of RNNBase: gates per hidden unit (rows of weight_ih per hidden_size) and step
_MODES = {"LSTM": (4, lstm_step), "GRU": (3, gru_step), "RNN_TANH": (1, tanh_step),
          "RNN_RELU": (1, relu_step)}


def _init_uniform(module: Module) -> None:
    """PyTorch's initialisation of recurrent layers: every parameter from U(±1/√hidden)."""
    bound = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


_WEIGHT_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")


class RNNBase(Module):
    """The shared machinery: parameters per layer and direction, the time loop, dropout
    between layers, batch-first, unbatched and packed (:class:`PackedSequence`) inputs. A
    packed input gives a packed output, and ``h_n`` holds each sequence's state at its own
    last step (at step 0 for the reverse direction). An LSTM with ``proj_size > 0`` projects
    each hidden state by ``weight_hr_l{k}`` (shape ``(proj_size, hidden_size)``), so that
    ``h`` and the output have ``proj_size`` features, ``c`` keeps ``hidden_size``.
    ``mode`` ('LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU') picks the gates and the step.

    Example:
        >>> nn.RNNBase("GRU", 2, 3).weight_ih_l0.shape
        ember.Size([9, 2])
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        check_rnn_arguments(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                             proj_size)
        if mode not in _MODES:
            raise ArgumentError(f"Unrecognized RNN mode: {mode}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        gate_size = _MODES[mode][0] * hidden_size
        real_hidden = proj_size or hidden_size
        kw = {"dtype": dtype, "device": device}
        self._flat_weights_names = []
        self._all_weights = []  # (PyTorch's names per layer and direction, read by wrappers)
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix, _empty(*shape, **kw))
                    self._flat_weights_names.append(name + suffix)
                self._all_weights.append([name + suffix for name, _ in shapes])
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_uniform(self)

    def flatten_parameters(self) -> None:
        """Does nothing: PyTorch packs the weights for cuDNN here; Ember needs no packing
        (kept so that code calling it runs unchanged)."""

    # PyTorch's public checks, which subclasses that override forward call
    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        """Raises unless ``input`` is 3-D (2-D packed data when ``batch_sizes`` is given), of
        the weights' dtype, with ``input_size`` features."""
        want = 2 if batch_sizes is not None else 3
        if input.ndim != want:
            raise ShapeError(f"input must have {want} dimensions, got {input.ndim}")
        check_dtypes(type(self).__name__, input, self._params(0, 0)[0], None, None)
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {input.shape[-1]}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None
                                 ) -> tuple[int, int, int]:
        """``(num_layers · directions, batch, proj_size or hidden_size)`` for ``input``."""
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.shape[0] if self.batch_first else input.shape[1]
        return (self.num_layers * (2 if self.bidirectional else 1), batch,
                self.proj_size or self.hidden_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, ...],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """Raises ``msg`` (formatted with the expected and actual sizes) unless ``hx`` has
        ``expected_hidden_size``."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise ShapeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Tensor | None
                           ) -> None:
        """PyTorch's checks of a padded (or packed) input and its initial state.

        Example:
            >>> gru = nn.GRU(3, 4)
            >>> gru.check_forward_args(ember.randn(5, 2, 3), ember.zeros(1, 2, 4), None)
        """
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor | None, permutation: Tensor | None) -> Tensor | None:
        """``hx`` with its batch (dimension 1) reordered by ``permutation`` (a packed
        sequence's ``sorted_indices``); ``hx`` itself when ``permutation`` is None."""
        if permutation is None or hx is None:
            return hx
        return hx.index_select(1, permutation)

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters per layer and direction, each ``[w_ih, w_hh, b_ih, b_hh, w_hr]``
        (without the biases when ``bias=False``, without ``w_hr`` when ``proj_size=0``)."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        """PyTorch's flat list of the parameters, in ``_flat_weights_names`` order (read by
        code that reaches into recurrent layers, such as weight-drop wrappers); writing an
        entry, or the whole list, sets the module's attributes."""
        return FlatWeights(self)

    @_flat_weights.setter
    def _flat_weights(self, weights: list[Tensor | None]) -> None:
        weights = list(weights)
        if len(weights) != len(self._flat_weights_names):
            raise ShapeError(f"{type(self).__name__}._flat_weights: got {len(weights)} "
                             f"weights for {len(self._flat_weights_names)} names "
                             f"({self._flat_weights_names})")
        for name, weight in zip(self._flat_weights_names, weights):
            assign(self, name, weight)

    def _cell(self) -> Any:
        return _MODES[self.mode][1]

    def _params(self, layer: int, d: int) -> tuple:
        # getattr where not in _parameters: a weight under a parametrization (weight_norm,
        # spectral_norm) or the older hook-based weight_norm is a computed attribute (and the
        # plain case is read first: a getattr that misses, no weight_hr, costs an exception)
        suffix = f"_l{layer}" + ("_reverse" if d else "")
        own = self._parameters
        return tuple(own[n] if n in own else getattr(self, n, None)
                     for n in (name + suffix for name in _WEIGHT_NAMES))

    def _run(self, input: Tensor | PackedSequence, hx: Tensor | None, cx: Tensor | None
             ) -> tuple:
        """The whole stack on a padded batch or a :class:`PackedSequence`: returns the
        output (packed like the input), ``h_n`` and ``c_n`` (``None`` but for LSTM). The
        checks and the states' batch order go through :meth:`check_forward_args` and
        :meth:`permute_hidden`, as PyTorch's forward does, so a subclass may override them."""
        name = type(self).__name__
        check_state_types(name, hx, cx)
        packed = isinstance(input, PackedSequence)
        batch_sizes = sorted_indices = unsorted_indices = None
        if packed:
            data, batch_sizes = input.data, input.batch_sizes
            sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
            sizes = [int(n) for n in batch_sizes.tolist()]
            if data.ndim != 2:
                raise ArgumentError(f"{name}: Expected packed data to be 2D, got {data.ndim}D")
            unbatched = False
        else:
            refuse_non_tensor(name, "input", input)
            unbatched = input.ndim == 2
            if input.ndim not in (2, 3):
                raise ArgumentError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D "
                                    "instead")
            if unbatched:
                for label, s in (("hx", hx), ("cx", cx)):
                    if s is not None and s.ndim != 2:
                        raise ArgumentError(f"{name}: For unbatched 2-D input, {label} should "
                                            f"also be 2-D but got a {s.ndim}-D tensor of shape "
                                            f"{tuple(s.shape)}")
                input = input.unsqueeze(0 if self.batch_first else 1)
                hx = None if hx is None else hx.unsqueeze(1)
                cx = None if cx is None else cx.unsqueeze(1)
            data = input
            if input.shape[1 if self.batch_first else 0] == 0:
                raise ShapeError(f"{name}: Expected sequence length to be larger than 0 in RNN, "
                                 f"got input of shape {tuple(input.shape)} (batch_first="
                                 f"{self.batch_first})")
        batch = sizes[0] if packed else input.shape[0 if self.batch_first else 1]
        hx, cx = self._checked_states(name, data, batch_sizes, batch, sorted_indices, hx, cx)
        if not packed:
            if self.batch_first:
                input = input.transpose(0, 1)
            sizes = [input.shape[1]] * input.shape[0]
            data = input.reshape(input.shape[0] * input.shape[1], input.shape[2])
        directions = 2 if self.bidirectional else 1
        weights = [self._params(layer, d) for layer in range(self.num_layers)
                   for d in range(directions)]
        if hasattr(self, "_all_weights"):  # (the dynamic quantized layers, which borrow
            # _run, keep their weights inside their projections)
            weights = [named_weights(name, names, ws, _WEIGHT_NAMES)
                       for names, ws in zip(self._all_weights, weights)]
        x, h_n, c_n = run_layers(self._cell(), data, sizes, hx, cx, weights, self.num_layers,
                                 self.bidirectional, self.dropout, self.training,
                                 lowered_whole(self._cell(), packed, weights))
        state = self.permute_hidden((h_n, c_n) if self.mode == "LSTM" else h_n,
                                    unsorted_indices)
        h_n, c_n = state if self.mode == "LSTM" else (state, None)
        if packed:
            return PackedSequence(x, batch_sizes, sorted_indices, unsorted_indices), h_n, c_n
        x = x.reshape(len(sizes), input.shape[1], x.shape[-1])
        if unbatched:
            x, h_n = x.squeeze(1), h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        return x, h_n, c_n

    def _checked_states(self, name: str, input: Tensor, batch_sizes: Tensor | None,
                        batch: int, sorted_indices: Tensor | None, hx: Tensor | None,
                        cx: Tensor | None) -> tuple:
        """The initial states (zeros where not given) after :meth:`check_forward_args`, in the
        packed data's batch order (:meth:`permute_hidden`); a shape error names the layer."""
        lstm = self.mode == "LSTM"
        given = hx is not None or cx is not None
        layers = self.num_layers * (2 if self.bidirectional else 1)
        dtype = None if input.is_quantized else input.dtype  # (check_input refuses that one)
        if hx is None:
            hx = ember.zeros(layers, batch, self.proj_size or self.hidden_size, dtype=dtype,
                             device=input.device)
        if cx is None and lstm:
            cx = ember.zeros(layers, batch, self.hidden_size, dtype=dtype, device=input.device)
        state = (hx, cx) if lstm else hx
        try:
            self.check_forward_args(input, state, batch_sizes)
        except ShapeError as e:
            if not str(e).startswith(name):
                e.args = (f"{name}: {e.args[0]}", *e.args[1:])
            raise
        check_dtypes(name, input, None, hx, cx)
        if given:
            state = self.permute_hidden(state, sorted_indices)
        return state if lstm else (state, None)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (or relu).

    Example:
        >>> rnn = nn.RNN(10, 20, 2)
        >>> out, h = rnn(ember.randn(5, 3, 10))
        >>> out.shape, h.shape
        (ember.Size([5, 3, 20]), ember.Size([2, 3, 20]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        _elman_cell(nonlinearity)  # checks the name
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None
                ) -> tuple[Tensor | PackedSequence, Tensor]:
        out, h, _ = self._run(input, hx, None)
        return out, h


class LSTM(RNNBase):
    """Long short-term memory; ``forward(input, (h0, c0))`` returns
    ``(output, (h_n, c_n))``.

    Example:
        >>> lstm = nn.LSTM(10, 20, batch_first=True, bidirectional=True)
        >>> out, (h, c) = lstm(ember.randn(3, 5, 10))
        >>> out.shape, h.shape
        (ember.Size([3, 5, 40]), ember.Size([2, 3, 20]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)

    def forward(self, input: Tensor | PackedSequence,
                hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor | PackedSequence, tuple[Tensor, Tensor]]:
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise ArgumentTypeError("LSTM: hx must be a tuple (h_0, c_0) of the initial "
                                    f"hidden and cell states, got {type_name(hx)}")
        h0, c0 = (None, None) if hx is None else state_pair("LSTM", hx)
        out, h, c = self._run(input, h0, c0)
        return out, (h, c)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Tensor | None
                               ) -> tuple[int, int, int]:
        """``(num_layers · directions, batch, hidden_size)``: the cell state's size."""
        return (*self.get_expected_hidden_size(input, batch_sizes)[:2], self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: tuple[Tensor, Tensor],
                           batch_sizes: Tensor | None) -> None:
        """PyTorch's checks of the input and the ``(h_0, c_0)`` pair."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: tuple[Tensor, Tensor] | None, permutation: Tensor | None
                       ) -> tuple[Tensor, Tensor] | None:
        """Both states with their batch reordered by ``permutation``."""
        if permutation is None or hx is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)


class GRU(RNNBase):
    """Gated recurrent unit (PyTorch's form: the reset gate multiplies ``h W_hnᵀ + b_hn``).

    Example:
        >>> out, h = nn.GRU(4, 6)(ember.randn(7, 2, 4))
        >>> out.shape
        ember.Size([7, 2, 6])
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None
                ) -> tuple[Tensor | PackedSequence, Tensor]:
        out, h, _ = self._run(input, hx, None)
        return out, h


class RNNCellBase(Module):
    """One time step of a recurrent layer, with PyTorch's parameters ``weight_ih``,
    ``weight_hh``, ``bias_ih`` and ``bias_hh``; inputs ``(N, input_size)`` or unbatched
    ``(input_size,)``, states zero when not given."""

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 num_chunks: int | None = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = {"dtype": dtype, "device": device}
        rows = (num_chunks or self._gates) * hidden_size  # (PyTorch's argument: gate count)
        self.weight_ih = _empty(rows, input_size, **kw)
        self.weight_hh = _empty(rows, hidden_size, **kw)
        if bias:
            self.bias_ih, self.bias_hh = _empty(rows, **kw), _empty(rows, **kw)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_uniform(self)

    def _cell(self) -> Any:
        raise NotImplementedError

    def _step(self, input: Tensor, hx: Tensor | None, cx: Tensor | None) -> tuple:
        name = type(self).__name__
        check_state_types(name, hx, cx)
        if isinstance(input, PackedSequence):
            raise ArgumentTypeError(f"{name}: got a PackedSequence; a cell runs one time step "
                                    f"of shape (batch, input_size). Hint: nn.{name[:-4]} runs "
                                    "packed sequences")
        refuse_non_tensor(name, "input", input)
        if input.ndim not in (1, 2):
            raise ArgumentError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                              f"{self.input_size}, got {input.shape[-1]}")
        shape = (*input.shape[:-1], self.hidden_size)
        for label, state in (("hx", hx), ("cx", cx)):
            if state is not None and tuple(state.shape) != shape:
                raise ShapeError(f"{name}: expected {label} of shape {shape}, got "
                                  f"{tuple(state.shape)}")
        check_dtypes(name, input, self.weight_ih, hx, cx)
        zeros = ember.zeros(*shape, dtype=input.dtype, device=input.device)
        return self._cell()(F.linear(input, self.weight_ih, self.bias_ih),
                            zeros if hx is None else hx, zeros if cx is None else cx,
                            self.weight_hh, self.bias_hh)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (or relu).

    Example:
        >>> cell = nn.RNNCell(10, 20)
        >>> cell(ember.randn(3, 10)).shape
        ember.Size([3, 20])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        _elman_cell(nonlinearity)  # checks the name
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def _cell(self) -> Any:
        return _elman_cell(self.nonlinearity)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx, None)[0]


class _GatedCell(RNNCellBase):
    """A cell whose gate count is its class's (``_gates``): PyTorch's LSTMCell/GRUCell
    signature, without ``num_chunks``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)


class LSTMCell(_GatedCell):
    """One LSTM step; ``forward(input, (h, c))`` returns ``(h', c')``.

    Example:
        >>> cell = nn.LSTMCell(10, 20)
        >>> h, c = cell(ember.randn(3, 10))
        >>> h.shape, c.shape
        (ember.Size([3, 20]), ember.Size([3, 20]))
    """

    _gates = 4

    def _cell(self) -> Any:
        return lstm_step

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise ArgumentTypeError("LSTMCell: hx must be a tuple (h, c) of the hidden and "
                                    f"cell states, got {type_name(hx)}")
        h, c = (None, None) if hx is None else state_pair("LSTMCell", hx)
        return self._step(input, h, c)


class GRUCell(_GatedCell):
    """One GRU step (PyTorch's form: the reset gate multiplies ``h W_hnᵀ + b_hn``).

    Example:
        >>> nn.GRUCell(10, 20)(ember.randn(3, 10)).shape
        ember.Size([3, 20])
    """

    _gates = 3

    def _cell(self) -> Any:
        return gru_step

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx, None)[0]
