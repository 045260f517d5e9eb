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

import contextlib
import importlib
import inspect
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ember.autograd.grad_mode import GRAD, enable_grad
from ember.autograd.graph import saved_tensors_hooks
from ember.autograd.graph_task import GRAPH_TASK
from ember.errors import ArgumentError, GradError
from ember.errors import RecomputeError as CheckpointError  # (PyTorch's name for it)
from ember.ops.random import get_rng_state, set_rng_state
from ember.optim.optimizer import OPTIMIZER_TRACE
from ember.tensor import Tensor
from ember.utils._pytree import _leaves_with_path_where, keystr, tree_leaves
from ember.utils.selective_checkpoint import (
    CheckpointPolicy,
    SelectiveCheckpointContext,
    create_selective_checkpoint_contexts,
)

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled", "detach_variable",
           "noop_context_fn", "check_backward_validity", "DefaultDeviceType",
           "get_device_states", "set_device_states"]

# layer-5 state (autocast) to capture at forward and restore at recompute: name -> (get, run)
# where ``run(state, fn)`` calls ``fn`` under ``state``. ember.amp registers itself here.
CONTEXTS: dict[str, tuple[Callable[[], Any], Callable[[Any, Callable], Any]]] = {}

_EARLY_STOP: list[bool | None] = [None]  # set_checkpoint_early_stop's choice, when given


class _StopRecompute(Exception):
    """Raised from the recompute once it has made every value backward needs (early stop)."""


class _Frame:
    """One checkpointed call: what recomputing it needs, and the values it hands out."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng: dict | None,
                 recompute_context: Any, early_stop: bool, check: bool) -> None:
        self.fn, self.args, self.kwargs, self.rng = fn, args, kwargs, rng
        self.contexts = {name: get() for name, (get, _) in CONTEXTS.items()}
        self.recompute_context, self.early_stop, self.check = recompute_context, early_stop, check
        self.saved: list[tuple] = []  # (shape, dtype) of each value saved, in order
        # the recomputed values not yet handed out, per backward pass (its id; None: reads
        # outside backward, grad_fn._saved_*), as PyTorch keys them by graph task: passes in
        # several threads each recompute once
        self.values: dict[int | None, list] = {}
        self.versions: list[tuple] = []  # (tensor argument, its version, where it is)

    def stamp(self) -> None:
        """The first run has returned: the versions the tensor arguments must keep. Those
        at the top level (PyTorch checks its positional ones), and those inside a container
        argument only when they require grad: a nested counter or mask that no gradient reads
        may change (as in PyTorch)."""
        where: dict[int, tuple] = {}  # id -> (tensor, ("args" or "kwargs", key, key path))
        others = []
        for top, items in (("args", enumerate(self.args)), ("kwargs", self.kwargs.items())):
            for key, arg in items:
                if isinstance(arg, Tensor):
                    where[id(arg)] = (arg, (top, key, ()))
                else:
                    others.append((top, key, arg))
        for top, key, arg in others:
            for path, t in _leaves_with_path_where(arg, _requires_grad):
                where.setdefault(id(t), (t, (top, key, path)))
        self.versions = [(t, t._vc.value, at) for t, at in where.values()]

    def pack(self, t: Any) -> int:
        self.saved.append((tuple(t.shape), t.dtype))
        return len(self.saved) - 1

    def unpack(self, i: int) -> Any:
        task = GRAPH_TASK.current
        key = None if task is None else task[0] if type(task) is tuple else task.id
        values = self.values.get(key)
        if values is None and key is not None:  # (dropped when the pass ends, read or not)
            at_exit = task[5] if type(task) is tuple else task.at_exit
            at_exit.append(lambda: self.values.pop(key, None))
        if values is None or values[i] is None:  # (a second read of one value in a pass: a
            # Function reading ctx.saved_tensors twice, a hook reading grad_fn._saved_*, or
            # another thread's backward emptying a node's slots: recomputed again, where
            # PyTorch refuses the first two)
            values = self.values[key] = self.recompute()
        value, values[i] = values[i], None  # handed out once: memory goes with it
        if not self.check and tuple(value.shape) != self.saved[i][0]:
            # (under determinism_check='none' only a value backward reads: one of another
            # shape cannot give gradients, and torch hands it on to a wrong or failing one)
            raise self._differs(i, value)
        return value

    def recompute(self) -> list:
        for t, version, path in self.versions:
            if t._vc.value != version:
                raise GradError(
                    f"checkpoint: the tensor argument {_argument_name(path)} (shape "
                    f"{tuple(t.shape)}, dtype {t.dtype.name}) was modified in place after "
                    f"the checkpointed call: it was at version {version} and is now at "
                    f"version {t._vc.value}, so "
                    "recomputing from it would give wrong gradients. Hint: pass a .clone(), "
                    "modify it only after backward, or pass state the gradient does not "
                    "read (a counter) through a closure instead of an argument")
        values: list = []
        run: Callable = self._run
        for name, state in self.contexts.items():
            run = _under(CONTEXTS[name][1], state, run)
        now = get_rng_state() if self.rng is not None else None
        if self.rng is not None:
            set_rng_state(self.rng)

        def keep(t: Any) -> None:
            values.append(t)
            if self.early_stop and len(values) == len(self.saved):
                raise _StopRecompute

        try:
            with enable_grad(), saved_tensors_hooks(keep, _identity), self.recompute_context:
                run()
        except _StopRecompute:
            pass
        finally:
            if now is not None:
                set_rng_state(now)
        self._compare(values)
        return values

    def _compare(self, values: list) -> None:
        if len(values) != len(self.saved):
            raise CheckpointError(f"checkpoint: the recomputed forward saved {len(values)} "
                                  f"values for backward but the first run saved "
                                  f"{len(self.saved)}; the function must run the same ops "
                                  "each time it is called")
        for i, (value, (shape, dtype)) in enumerate(zip(values, self.saved)):
            if self.check and (tuple(value.shape) != shape or value.dtype != dtype):
                raise self._differs(i, value)

    def _differs(self, i: int, value: Any) -> CheckpointError:
        shape, dtype = self.saved[i]
        return CheckpointError(
            f"checkpoint: saved value {i} was {dtype.name} of shape {shape} in the first run "
            f"but is {value.dtype.name} of shape {tuple(value.shape)} in the recomputation; "
            "the function must compute the same way each time (determinism_check='none' "
            "checks only the shapes of the values backward reads)")

    def _run(self) -> Any:
        return self.fn(*self.args, **self.kwargs)


def _under(run_in: Callable, state: Any, inner: Callable) -> Callable:
    return lambda: run_in(state, inner)


def _identity(x: Any) -> Any:
    return x


def _requires_grad(x: Any) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


def _argument_name(at: tuple) -> str:
    """``args[1]['count']`` for where :meth:`_Frame.stamp` found a tensor."""
    top, key, path = at
    return f"{top}[{key!r}]{keystr(path)}"


def noop_context_fn() -> tuple[contextlib.nullcontext, contextlib.nullcontext]:
    """The default ``context_fn`` of :func:`checkpoint`: no context around either run.

    Example:
        >>> from ember.utils.checkpoint import noop_context_fn
        >>> len(noop_context_fn())
        2
    """
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn,
               determinism_check: str = "default", early_stop: bool = True,
               preserve_rng_state: bool = True, debug: bool = False, **kwargs: Any) -> Any:
    """Calls ``function(*args, **kwargs)`` keeping none of its activations for backward; they
    are recomputed in backward (with the RNG state replayed when ``preserve_rng_state``).

    Args:
        context_fn: returns two context managers, the first entered around the forward run,
            the second around the recomputation (see
            :func:`create_selective_checkpoint_contexts`).
        determinism_check: ``"default"`` checks that the recomputation saves values of the
            same shapes and dtypes as the first run (:class:`CheckpointError` if not);
            ``"none"`` checks only their number, and the shape of each value backward
            reads.
        early_stop: stop the recomputation as soon as it has made every value backward needs
            (overridden by :func:`set_checkpoint_early_stop`).
        debug: PyTorch's switch for a trace of both runs in :class:`CheckpointError`;
            accepted, and Ember's error always names the first value that differs.

    As in PyTorch, backward refuses to recompute from a tensor argument that was modified in
    place after the call. Ember checks keyword arguments too, and a tensor inside a container
    argument (list, dict...) when it requires grad; PyTorch checks neither and recomputes from
    the new values. A nested tensor that does not require grad is not checked, as in
    PyTorch (so a counter or mask that no gradient reads may change): changing one that the
    gradient depends on gives a wrong gradient, as there, unless an op saved it directly
    (that op's backward refuses).

    ``use_reentrant=True`` (PyTorch's older mechanism) runs the same (non-reentrant) mechanism,
    which gives the same gradients; as in PyTorch it takes no ``context_fn``. Inside a function
    compiled by ``ember.jit.compile`` the function simply runs: the static graph keeps its
    activations.

    Example:
        >>> from ember.utils.checkpoint import checkpoint
        >>> block = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.GELU())
        >>> x = ember.randn(4, 8, requires_grad=True)
        >>> checkpoint(block, x).sum().backward()
        >>> x.grad.shape
        ember.Size([4, 8])
    """
    if use_reentrant and (context_fn is not noop_context_fn or debug):
        raise ArgumentError("Passing `context_fn` or `debug` is only supported when "
                            "use_reentrant=False.")
    if determinism_check not in ("default", "none"):
        raise ArgumentError(f"determinism_check should be one of ['default', 'none'], but got "
                            f"{determinism_check}")
    if not GRAD.enabled or OPTIMIZER_TRACE.tracer is not None:
        # (inside ember.jit.compile the graph keeps what backward reads, its buffers planned:
        # a recompute there would replay the trace's RNG state at every call)
        return function(*args, **kwargs)
    forward_context, recompute_context = context_fn()
    frame = _Frame(function, args, kwargs, get_rng_state() if preserve_rng_state else None,
                   recompute_context, early_stop if _EARLY_STOP[0] is None else _EARLY_STOP[0],
                   determinism_check == "default")
    failed: BaseException | None = None
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        try:
            out = function(*args, **kwargs)
        except BaseException as exc:
            failed = exc
            raise
    if failed is not None:  # (the forward context swallowed the function's exception)
        raise RuntimeError(f"checkpoint: the forward context provided by context_fn suppressed "
                           f"an exception raised during the checkpointed forward "
                           f"({type(failed).__name__}: {failed}); checkpoint has no value to "
                           f"return for a failed forward. Hint: let the exception propagate "
                           f"from context_fn's first context manager") from failed
    frame.stamp()
    return out


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Context manager: whether checkpoints made inside it stop recomputing once every value
    backward needs is made (default: each checkpoint's ``early_stop``, True).

    Example:
        >>> from ember.utils.checkpoint import checkpoint, set_checkpoint_early_stop
        >>> x = ember.randn(3, requires_grad=True)
        >>> with set_checkpoint_early_stop(False):
        ...     y = checkpoint(lambda t: t.sin().exp(), x)
        >>> y.sum().backward()
    """
    previous, _EARLY_STOP[0] = _EARLY_STOP[0], enable
    try:
        yield
    finally:
        _EARLY_STOP[0] = previous


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """PyTorch's switch for :func:`checkpoint`'s ``debug`` traces inside a region; accepted,
    as ``debug`` is: Ember's :class:`CheckpointError` always names the first value that
    differs.

    Example:
        >>> from ember.utils.checkpoint import checkpoint, set_checkpoint_debug_enabled
        >>> with set_checkpoint_debug_enabled(True):
        ...     y = checkpoint(ember.sin, ember.ones(2, requires_grad=True), use_reentrant=False)
    """
    yield


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor of ``inputs`` detached, with its ``requires_grad`` kept (other entries as
    they are), as PyTorch's.

    Example:
        >>> from ember.utils.checkpoint import detach_variable
        >>> (x,) = detach_variable(((ember.ones(2, requires_grad=True) * 2),))
        >>> x.grad_fn is None, x.requires_grad
        (True, True)
    """
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    return tuple(t.detach().requires_grad_(t.requires_grad) if isinstance(t, Tensor) else t
                 for t in inputs)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warns, as PyTorch's, when no tensor of ``inputs`` requires grad (a reentrant checkpoint
    of them would give no gradients).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     check_backward_validity((ember.ones(2), 3))
        >>> str(caught[0].message)
        'None of the inputs have requires_grad=True. Gradients will be None'
    """
    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class DefaultDeviceType:
    """The device type whose RNG states :func:`set_device_states` restores when not told
    (PyTorch's): the accelerator's, else ``"cpu"``, until :meth:`set_device_type`.

    Example:
        >>> DefaultDeviceType.get_device_type()
        'cpu'
    """

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        if not DefaultDeviceType._default_device_type:
            from ember.accelerator import current_accelerator

            accelerator = current_accelerator(True)
            DefaultDeviceType._default_device_type = getattr(accelerator, "type", "cpu")
        return DefaultDeviceType._default_device_type


def get_device_states(*args: Any) -> tuple[list[int], list[Any]]:
    """The device index of each tensor in ``args`` (pytrees) that is not on the CPU or the
    meta device, and the RNG state of each of those devices (PyTorch's, for a checkpoint of
    one's own: :func:`set_device_states` restores them); two empty lists on the CPU.

    Example:
        >>> get_device_states(ember.ones(2), [ember.zeros(1), 3])
        ([], [])
    """
    on_devices = [x for x in tree_leaves(args) if isinstance(x, Tensor)
                  and x.device.type not in ("cpu", "meta")]
    if not on_devices:
        return [], []
    kinds = [x.device.type for x in on_devices]
    module = importlib.import_module(f"ember.{'cuda' if 'cuda' in kinds else kinds[0]}")
    ids = [x.get_device() for x in on_devices]
    return ids, [module.get_rng_state(i) for i in ids]


def set_device_states(devices: Sequence[int], states: Sequence[Any], *,
                      device_type: str | None = None) -> None:
    """Restores the RNG state of each device index in ``devices`` (of ``device_type``,
    default :meth:`DefaultDeviceType.get_device_type`) from :func:`get_device_states`.

    Example:
        >>> set_device_states(*get_device_states(ember.ones(2)))
    """
    device_type = device_type or DefaultDeviceType.get_device_type()
    if device_type == "meta" or not devices:
        return
    module = importlib.import_module(f"ember.{device_type}")
    for device, state in zip(devices, states, strict=False):
        module.set_rng_state(state, device)


# checkpoint's options that checkpoint_sequential passes on (torch's takes preserve_rng_state)
_SEQUENTIAL_OPTIONS = {name for name, p in inspect.signature(checkpoint).parameters.items()
                       if p.kind is p.KEYWORD_ONLY and name != "use_reentrant"}


def checkpoint_sequential(functions: Sequence[Callable] | Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Runs ``functions`` (a list or ``nn.Sequential``) in order, split into ``segments``
    chunks as PyTorch splits them (``segments - 1`` chunks of ``len(functions) // segments``
    layers, then the rest); every chunk but the last is checkpointed, with
    :func:`checkpoint`'s options given as keywords (``preserve_rng_state``, ``context_fn``,
    ``determinism_check``, ...).

    Example:
        >>> from ember.utils.checkpoint import checkpoint_sequential
        >>> model = ember.nn.Sequential(*[ember.nn.Linear(8, 8) for _ in range(4)])
        >>> checkpoint_sequential(model, 2, ember.randn(3, 8)).shape
        ember.Size([3, 8])
    """
    layers = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments < 1:
        raise ArgumentError(f"checkpoint_sequential: segments must be at least 1, got {segments}")
    if not layers:
        raise ArgumentError("checkpoint_sequential: functions is empty; give at least one")
    unexpected = sorted(set(kwargs) - _SEQUENTIAL_OPTIONS)
    if unexpected:
        raise ArgumentError(f"checkpoint_sequential: unexpected keyword arguments: "
                            f"{', '.join(unexpected)} (it takes {sorted(_SEQUENTIAL_OPTIONS)})")
    # PyTorch's split: segments - 1 checkpointed chunks of len // segments layers, the rest
    # last (with more segments than layers, where PyTorch fails, one layer per chunk)
    size = max(len(layers) // segments, 1)
    cut = size * (min(segments, len(layers)) - 1)
    chunks = [layers[i:i + size] for i in range(0, cut, size)] + [layers[cut:]]

    def run(chunk: list) -> Callable:
        def forward(x: Any) -> Any:
            for layer in chunk:
                x = layer(x)
            return x
        return forward

    for chunk in chunks[:-1]:
        input = checkpoint(run(chunk), input, use_reentrant=use_reentrant, **kwargs)
    return run(chunks[-1])(input)
