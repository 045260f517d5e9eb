"""Activation checkpointing: run part of a model without keeping what its backward needs, and
recompute it when backward gets there (``torch.utils.checkpoint``).

Built on :class:`ember.autograd.graph.saved_tensors_hooks`: inside :func:`checkpoint` every
value an op saves for backward is replaced by its position in the order of saving. When
backward first reads one, the function runs again (same inputs, the RNG state replayed so
dropout draws the same masks, the same autocast state) and the values it saves, in the same
order, are handed out instead. Gradients are those of the plain run; parameters used inside get
their gradients through the ordinary graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.autograd.grad_mode import GRAD, enable_grad
from ember.autograd.graph import saved_tensors_hooks
from ember.errors import GradError
from ember.ops.random import get_rng_state, set_rng_state
from ember.optim.optimizer import OPTIMIZER_TRACE

__all__ = ["checkpoint", "checkpoint_sequential"]

# layer-5 state (autocast) to capture at forward and restore at recompute: name -> (get, run)
# where ``run(state, fn)`` calls ``fn`` under ``state``. ember.amp registers itself here.
CONTEXTS: dict[str, tuple[Callable[[], Any], Callable[[Any, Callable], Any]]] = {}


class _Frame:
    """One checkpointed call: what recomputing it needs, and the values it hands out."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng: dict | None) -> None:
        self.fn, self.args, self.kwargs, self.rng = fn, args, kwargs, rng
        self.contexts = {name: get() for name, (get, _) in CONTEXTS.items()}
        self.count = 0
        self.values: list | None = None

    def pack(self, _t: Any) -> int:
        self.count += 1
        return self.count - 1

    def unpack(self, i: int) -> Any:
        if self.values is None:
            self.recompute()
        value, self.values[i] = self.values[i], None  # handed out once: memory goes with it
        return value

    def recompute(self) -> None:
        values: list = []
        run: Callable = self._run
        for name, state in self.contexts.items():
            run = _under(CONTEXTS[name][1], state, run)
        now = get_rng_state() if self.rng is not None else None
        if self.rng is not None:
            set_rng_state(self.rng)
        try:
            with enable_grad(), saved_tensors_hooks(lambda t: values.append(t), _identity):
                run()
        finally:
            if now is not None:
                set_rng_state(now)
        if len(values) != self.count:
            raise GradError(f"checkpoint: the recomputed forward saved {len(values)} values "
                               f"for backward but the first run saved {self.count}; the "
                               "function must run the same ops each time it is called")
        self.values = values

    def _run(self) -> Any:
        return self.fn(*self.args, **self.kwargs)


def _under(run_in: Callable, state: Any, inner: Callable) -> Callable:
    return lambda: run_in(state, inner)


def _identity(x: Any) -> Any:
    return x


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool = False,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Calls ``function(*args, **kwargs)`` keeping none of its activations for backward; they
    are recomputed in backward (with the RNG state replayed when ``preserve_rng_state``).

    ``use_reentrant=True`` is accepted for PyTorch compatibility and runs the same
    (non-reentrant) mechanism, which gives the same gradients. Inside a function compiled by
    ``ember.jit.compile`` the function simply runs: the static graph keeps its activations.

    Example:
        >>> from ember.utils.checkpoint import checkpoint
        >>> block = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.GELU())
        >>> x = ember.randn(4, 8, requires_grad=True)
        >>> checkpoint(block, x).sum().backward()
        >>> x.grad.shape
        ember.Size([4, 8])
    """
    if not GRAD.enabled or OPTIMIZER_TRACE.tracer is not None:
        # (inside ember.jit.compile the graph keeps what backward reads, its buffers planned:
        # a recompute there would replay the trace's RNG state at every call)
        return function(*args, **kwargs)
    frame = _Frame(function, args, kwargs, get_rng_state() if preserve_rng_state else None)
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions: Sequence[Callable] | Any, segments: int, input: Any,
                          use_reentrant: bool = False, **kwargs: Any) -> Any:
    """Runs ``functions`` (a list or ``nn.Sequential``) in order, split into ``segments``
    chunks; every chunk but the last is checkpointed.

    Example:
        >>> from ember.utils.checkpoint import checkpoint_sequential
        >>> model = ember.nn.Sequential(*[ember.nn.Linear(8, 8) for _ in range(4)])
        >>> checkpoint_sequential(model, 2, ember.randn(3, 8)).shape
        ember.Size([3, 8])
    """
    layers = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be at least 1, got {segments}")
    size = -(-len(layers) // segments)
    chunks = [layers[i:i + size] for i in range(0, len(layers), size)]

    def run(chunk: list) -> Callable:
        def forward(x: Any) -> Any:
            for layer in chunk:
                x = layer(x)
            return x
        return forward

    for chunk in chunks[:-1]:
        input = checkpoint(run(chunk), input, use_reentrant=use_reentrant, **kwargs)
    return run(chunks[-1])(input) if chunks else input
