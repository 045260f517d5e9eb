"""The :class:`Optimizer` base: parameter groups, per-parameter state, hooks and state dicts.

Subclasses implement ``step``; the layout of :meth:`Optimizer.state_dict` is PyTorch's, so a
checkpoint can write the tensors in ``state`` to safetensors and everything else to JSON.
"""

from __future__ import annotations

import copy
import functools
import threading
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import (
    GRAD,
    enable_grad,
    inference_tensors_may_exist,
    refuse_inference_write,
)
from ember.errors import ArgumentError, OpError, ShapeError
from ember.hooks import RemovableHandle, add_hook
from ember.tensor import STRUCTURE, Tensor, _wrap

__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook",
           "required"]


class _Required:
    """The default of a hyperparameter every parameter group must give (``lr`` of old SGD)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()

# Keyword options PyTorch offers to pick an implementation; Ember has one implementation, so
# they are accepted and kept in the groups (for the state-dict layout) but change nothing.
IMPLEMENTATION_OPTIONS = ("foreach", "fused", "capturable", "differentiable")


# The fallbacks of PyTorch's ``__setstate__`` that most optimizers share (see
# ``Optimizer.group_fallbacks``).
COMMON_FALLBACKS = {"maximize": False, "foreach": None, "differentiable": False}

# The hooks every optimizer's ``step`` runs (PyTorch's global optimizer hooks).
_GLOBAL_STEP_PRE_HOOKS: list[Callable] = []
_GLOBAL_STEP_POST_HOOKS: list[Callable] = []
_NO_STATE: dict[str, Any] = {}  # (what a parameter without state holds, to read)


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs)`` to run before the ``step`` of every
    optimizer (before its own pre-hooks), as PyTorch's; ``args`` starts with the optimizer,
    and the hook may return new ``(args, kwargs)`` for the step.

    Example:
        >>> seen = []
        >>> handle = ember.optim.optimizer.register_optimizer_step_pre_hook(
        ...     lambda opt, args, kwargs: seen.append(type(opt).__name__))
        >>> ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1).step()
        >>> handle.remove(); seen
        ['SGD']
    """
    return add_hook(_GLOBAL_STEP_PRE_HOOKS, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Registers ``hook(optimizer, args, kwargs)`` to run after the ``step`` of every
    optimizer (after its own post-hooks), as PyTorch's.

    Example:
        >>> seen = []
        >>> handle = ember.optim.optimizer.register_optimizer_step_post_hook(
        ...     lambda opt, args, kwargs: seen.append(len(args)))
        >>> ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1).step()
        >>> handle.remove(); seen
        [1]
    """
    return add_hook(_GLOBAL_STEP_POST_HOOKS, hook)


def implementation_defaults(**options: Any) -> dict[str, Any]:
    """Checks PyTorch's implementation switches and returns them for a ``defaults`` dict."""
    if options.get("fused") and options.get("foreach"):
        raise ArgumentError("`fused` and `foreach` cannot be `True` together.")
    if options.get("differentiable"):
        raise NotImplementedError("differentiable=True: Ember's optimizer updates are written in "
                                  "place on the parameters and are not recorded for autograd")
    return options


class Optimizer:
    """Base class of the optimizers: holds parameter groups and per-parameter state.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts that each
            define a parameter group (``{"params": [...], "lr": 0.1}``).
        defaults: the hyperparameters a group takes when it does not give them.

    Example:
        >>> w, b = ember.ones(2, requires_grad=True), ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.1)
        >>> opt.zero_grad(); ((w * 3).sum() + b.sum()).backward(); opt.step()
        >>> w, b
        (tensor([0.7000, 0.7000], requires_grad=True), tensor([-0.0100], requires_grad=True))
        >>> opt.state_dict()["param_groups"][1]["params"]
        [1]
    """

    # Keys PyTorch's ``__setstate__`` fills in groups that lack them (a state dict saved by an
    # older version): each optimizer names its own.
    group_fallbacks: dict[str, Any] = {}
    # The state keys whose tensors a step writes in place (None: every tensor), which may not
    # be inference tensors outside ``inference_mode``, as PyTorch's in-place writes refuse.
    state_written_in_place: tuple[str, ...] | None = None
    # Whether each state tensor of a parameter is 0-d or of the parameter's shape (then
    # ``load_state_dict`` refuses others, which a step could only fail on).
    state_shaped_like_params = False

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got a Tensor of shape {tuple(params.shape)}; "
                            "wrap it in a list")
        self.defaults = defaults
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        self._init_hooks()
        self._opt_called = False
        groups = list(params)
        if not groups:
            raise ArgumentError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _with_hooks(cls.__dict__["step"])

    # -- parameter groups ----------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters with its own hyperparameters (e.g. when unfreezing layers).

        Example:
            >>> opt = ember.optim.SGD([ember.ones(2, requires_grad=True)], lr=0.1)
            >>> opt.add_param_group({"params": [ember.ones(3, requires_grad=True)], "lr": 1e-3})
            >>> [group["lr"] for group in opt.param_groups]
            [0.1, 0.001]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set | frozenset):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs; "
                            "use a list instead")
        else:
            params = list(params)
        named = [isinstance(p, tuple) for p in params]
        if any(named):
            if not all(named):
                raise ArgumentError("all optimizer params should be with/without names. Some "
                                    "param names are missing; give every parameter as a "
                                    "(name, tensor) pair, or none")
            group["param_names"] = [name for name, _ in params]
            params = [p for _, p in params]
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not (p.is_leaf or p.retains_grad):
                raise ArgumentError("can't optimize a non-leaf Tensor; optimize the leaf it was "
                                    "computed from, or detach it and set requires_grad")
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ArgumentError("parameter group didn't specify a value of required "
                                    f"optimization parameter {name}")
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error", stacklevel=3)
        if any(("param_names" in g) != ("param_names" in group) for g in self.param_groups):
            raise ArgumentError("all optimizer param groups should be with/without names. cannot "
                                "add param group "
                                f"{'with' if 'param_names' in group else 'without'} names to the "
                                "optimizer")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ArgumentError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)
        STRUCTURE.value += 1  # (a compiled step looks again at what it updates)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all parameters: to ``None`` (default) or to zeros."""
        if OPTIMIZER_TRACE.tracer is not None and not set_to_none:
            return traced("optimizer_zero_grad", self, lambda: self.zero_grad(False))
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif not isinstance(grad, Tensor):  # sparse: no entries left, as PyTorch's
                    grad.zero_()
                else:
                    if grad._vc.inference and not GRAD.inference:
                        refuse_inference_write(grad, "zero_grad")
                    grad._node, grad._requires_grad = None, False
                    grad._data[...] = 0
                    grad._vc.value += 1

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one optimization step; ``closure`` re-evaluates the model and returns the
        loss (needed by optimizers such as LBFGS)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    @staticmethod
    def _evaluate(closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def can_split_step(self) -> bool:
        """Whether ``step()`` may run as parts over subsets of the parameters (as an
        elementwise optimizer's ``step_part`` runs them): False unless an optimizer's update
        of each parameter is its own."""
        return False

    def _check_writable(self, params: list[Tensor]) -> None:
        """An OpError, before any parameter moves, naming one of ``params`` whose memory is
        read-only (a read-only NumPy array given to ``from_numpy``): a step updates
        parameters in place. Outside ``inference_mode``, PyTorch's GradError for one that is
        an inference tensor, or whose state holds one the step writes in place (a step
        inside the mode made it, ``load_state_dict`` there, or a hand): looked for only while
        an inference tensor exists in the process, as a look at every state
        costs a step ~0.3 µs a parameter."""
        inside = GRAD.inference
        states = self.state if not inside and inference_tensors_may_exist() else None
        written = self.state_written_in_place
        for p in params:
            if p._vc.inference and not inside:
                refuse_inference_write(p, f"{type(self).__name__}.step")
            if states is not None:
                for key, value in states.get(p, _NO_STATE).items():
                    if isinstance(value, Tensor) and value._vc.inference and \
                            (written is None or key in written):
                        refuse_inference_write(value, f"{type(self).__name__}.step (its state "
                                                      f"{key!r})")
            data = p._data
            if isinstance(data, np.ndarray) and not data.flags.writeable:
                g, i = next((g, i) for g, group in enumerate(self.param_groups)
                            for i, q in enumerate(group["params"]) if q is p)
                raise OpError(
                    f"{type(self).__name__}.step: parameter {i} of group {g} (shape "
                    f"{tuple(data.shape)}, {p.dtype.name}) is read-only memory, so it "
                    f"cannot be updated in place; no parameter was changed. Hint: give "
                    f"the model a writable copy first, e.g. `p.data = p.data.clone()` (a "
                    f"read-only NumPy array passed to from_numpy stays read-only)")

    # -- hooks ---------------------------------------------------------------------------------
    _HOOK_LISTS = ("_step_pre_hooks", "_step_post_hooks", "_state_dict_pre_hooks",
                   "_state_dict_post_hooks", "_load_state_dict_pre_hooks",
                   "_load_state_dict_post_hooks")

    def _init_hooks(self) -> None:
        """Gives the optimizer each of its (empty) hook lists that it lacks."""
        for name in self._HOOK_LISTS:
            self.__dict__.setdefault(name, [])

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)`` to run before each ``step``, as
        PyTorch's: ``args`` are the step's positional arguments with the optimizer first
        (``(opt,)`` for ``opt.step()``); the hook may return new ``(args, kwargs)``, which
        the step is called with (``step(*args, **kwargs)``).

        Example:
            >>> opt = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
            >>> handle = opt.register_step_pre_hook(lambda o, args, kwargs: print(args[0] is o))
            >>> opt.step()
            True
        """
        return add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Registers ``hook(optimizer, args, kwargs)`` to run after each ``step`` (``args``
        as the pre-hooks see them).

        Example:
            >>> opt = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
            >>> handle = opt.register_step_post_hook(lambda o, args, kwargs: print(len(args)))
            >>> opt.step()
            1
        """
        return add_hook(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[[Optimizer], None],
                                     prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer)`` to run at the start of :meth:`state_dict` (first of
        those registered if ``prepend``).

        Example:
            >>> opt = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
            >>> handle = opt.register_state_dict_pre_hook(lambda o: print("saving"))
            >>> _ = opt.state_dict()
            saving
        """
        return _add_hook(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(
            self, hook: Callable[[Optimizer, dict[str, Any]], dict[str, Any] | None],
            prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict)`` to run at the end of :meth:`state_dict`:
        it may change the dict in place or return the one to give instead.

        Example:
            >>> opt = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
            >>> handle = opt.register_state_dict_post_hook(
            ...     lambda o, sd: {**sd, "epoch": 3})
            >>> opt.state_dict()["epoch"]
            3
        """
        return _add_hook(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(
            self, hook: Callable[[Optimizer, dict[str, Any]], dict[str, Any] | None],
            prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict)`` to run at the start of
        :meth:`load_state_dict` on a shallow copy of the given dict: it may change that copy
        or return the dict to load instead.

        Example:
            >>> opt = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
            >>> saved = opt.state_dict()
            >>> handle = opt.register_load_state_dict_pre_hook(
            ...     lambda o, sd: {**sd, "param_groups": [{**sd["param_groups"][0], "lr": 0.5}]})
            >>> opt.load_state_dict(saved); opt.param_groups[0]["lr"]
            0.5
        """
        return _add_hook(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[[Optimizer], None],
                                           prepend: bool = False) -> RemovableHandle:
        """Registers ``hook(optimizer)`` to run at the end of :meth:`load_state_dict`.

        Example:
            >>> opt = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
            >>> handle = opt.register_load_state_dict_post_hook(lambda o: print("loaded"))
            >>> opt.load_state_dict(opt.state_dict())
            loaded
        """
        return _add_hook(self._load_state_dict_post_hooks, hook, prepend)

    def _has_step_hooks(self) -> bool:
        """Whether a step runs any hook (its own or a global one)."""
        return any(self._step_hooks())

    def _step_hooks(self) -> tuple[tuple[Callable, ...], tuple[Callable, ...]]:
        """The hooks a step runs before it (global ones first) and after it (its own first)."""
        return ((*_GLOBAL_STEP_PRE_HOOKS, *self._step_pre_hooks),
                (*self._step_post_hooks, *_GLOBAL_STEP_POST_HOOKS))

    # -- state dicts ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout: parameters replaced by their indices.

        ``{"state": {index: {name: tensor or number}}, "param_groups": [{..., "params":
        [indices]}]}``; indices count through the groups in order. The state tensors are the
        optimizer's own (not copies): save or clone them before stepping again. The state of
        a complex parameter is complex, of the parameter's shape, as PyTorch's. The hooks of
        :meth:`register_state_dict_pre_hook` run first, those of
        :meth:`register_state_dict_post_hook` last.
        """
        for pre_hook in tuple(self._state_dict_pre_hooks):
            pre_hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(p)] if isinstance(p, Tensor) else p): dict(s)
                 for p, s in self.state.items() if not isinstance(p, Tensor) or id(p) in index}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in tuple(self._state_dict_post_hooks):
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict` (this optimizer's or PyTorch's layout).

        State tensors (and NumPy arrays, also in lists) are copied to each parameter's
        device, and floating ones but ``step`` to a floating parameter's dtype. Saved parameter
        ids map to this optimizer's parameters by position, as in PyTorch, whatever they are
        (ints, their ASCII strings as JSON gives them, or names; two that read as one id, 3 and
        '3', are refused). Options a group lacks that PyTorch fills in (``nesterov``,
        ``amsgrad``, ...) take PyTorch's fallback values. The hooks of
        :meth:`register_load_state_dict_pre_hook` run first (on a shallow copy of
        ``state_dict``), those of :meth:`register_load_state_dict_post_hook` last.
        """
        state_dict = dict(state_dict)
        for pre_hook in tuple(self._load_state_dict_pre_hooks):
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ArgumentError("loaded state dict has a different number of parameter groups: "
                                f"{len(saved_groups)}, the optimizer has {len(self.param_groups)}")
        for saved, group in zip(saved_groups, self.param_groups, strict=True):
            if len(saved["params"]) != len(group["params"]):
                raise ArgumentError("loaded state dict contains a parameter group that doesn't "
                                    f"match the size of optimizer's group ({len(saved['params'])} "
                                    f"parameters saved, {len(group['params'])} in the optimizer)")
        by_index = dict(zip(_saved_ids([i for saved in saved_groups for i in saved["params"]],
                                       "param ids"),
                            [p for group in self.param_groups for p in group["params"]],
                            strict=True))
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        saved_state = state_dict["state"]
        for k, values in zip(_saved_ids(list(saved_state), "state keys"), saved_state.values(),
                             strict=True):
            p = by_index.get(k)
            if p is None:
                state[k] = copy.deepcopy(values)
            else:
                state[p] = {name: _state_value(p, name, v) for name, v in values.items()}
                if self.state_shaped_like_params:
                    _check_state_shapes(p, k, state[p])
        groups = []
        for saved, group in zip(saved_groups, self.param_groups, strict=True):
            new = copy.deepcopy({k: v for k, v in saved.items() if k != "params"})
            for key, value in new.items():  # JSON turns tuples (betas, eps, ...) into lists
                if isinstance(value, list) and isinstance(group.get(key), tuple):
                    new[key] = tuple(value)
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:  # (saved names win,
                new["param_names"] = group["param_names"]             # as in PyTorch)
            groups.append(new)
        self.__setstate__({"state": state, "param_groups": groups})
        for post_hook in tuple(self._load_state_dict_post_hooks):
            post_hook(self)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Takes ``state`` (unpickled, or loaded by :meth:`load_state_dict`), filling what it
        lacks as PyTorch's ``__setstate__`` does (the groups' :attr:`group_fallbacks`)."""
        self.__dict__.update(state)
        self._init_hooks()
        self.__dict__.setdefault("_opt_called", False)
        for group in self.param_groups:
            for key, value in self.group_fallbacks.items():
                group.setdefault(key, value)

    def __repr__(self) -> str:
        groups = ["".join([f"\nParameter Group {i}\n"] +
                          [f"    {k}: {group[k]}\n" for k in sorted(group) if k != "params"])
                  for i, group in enumerate(self.param_groups)]
        return f"{type(self).__name__} (" + "".join(groups) + ")"


class _OptimizerTrace(threading.local):
    """``tracer`` is None, or the ``ember.jit`` tracer that records ``step()`` and
    ``zero_grad()`` as effect equations (the layer above registers itself here; one attribute
    check per call when off). Per thread: another thread's steps are not this trace's."""

    def __init__(self) -> None:
        self.tracer: Any = None


OPTIMIZER_TRACE = _OptimizerTrace()


def traced(kind: str, owner: Any, run: Callable[[], Any], *args: Any) -> Any:
    """Hands a call to the active tracer, which records it and calls ``run`` untraced (also
    used by the learning-rate schedulers)."""
    tracer = OPTIMIZER_TRACE.tracer
    OPTIMIZER_TRACE.tracer = None
    try:
        return getattr(tracer, kind)(owner, run, *args)
    finally:
        OPTIMIZER_TRACE.tracer = tracer


def _with_hooks(step: Callable) -> Callable:
    """Wraps a subclass's ``step``: runs the step hooks and marks that ``step`` was called
    (learning-rate schedulers warn when they are stepped before the optimizer)."""

    @functools.wraps(step)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if OPTIMIZER_TRACE.tracer is not None:
            closure = args[0] if args else kwargs.get("closure")
            return traced("optimizer_step", self, lambda: wrapper(self, *args, **kwargs),
                          closure)
        args = (self, *args)  # (the hooks see PyTorch's arguments: the optimizer first)
        pre, post = self._step_hooks()
        for hook in pre:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("a step pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {result!r}")
                args, kwargs = result
        self._opt_called = True
        out = step(*args, **kwargs)
        for hook in post:
            hook(self, args, kwargs)
        return out

    return wrapper


def _add_hook(hooks: list, hook: Callable, prepend: bool) -> RemovableHandle:
    """Registers ``hook`` last in ``hooks``, or first if ``prepend``."""
    handle = add_hook(hooks, hook)
    if prepend:
        hooks.insert(0, hooks.pop())
    return handle


def _saved_id(key: Any) -> Any:
    """A parameter's id in a saved state dict: an int, or its ASCII decimal string (as JSON
    gives it), is one id; any other hashable id (a name, '٣') is kept as it is."""
    return int(key) if isinstance(key, str) and key.isascii() and key.isdecimal() else key


def _saved_ids(keys: list[Any], where: str) -> list[Any]:
    """``_saved_id`` of each key; two keys that read as one id (3 and '3') are refused."""
    first: dict[Any, Any] = {}
    for key in keys:
        if (other := first.setdefault(_saved_id(key), key)) != key:
            raise ArgumentError(f"load_state_dict: the saved {where} {other!r} and {key!r} both "
                                f"read as parameter id {_saved_id(key)!r}; hint: give each "
                                "parameter one id (ints, or their strings as JSON writes them)")
    return [_saved_id(key) for key in keys]


def _check_state_shapes(p: Tensor, index: Any, state: dict[str, Any]) -> None:
    """A ShapeError for a loaded state tensor neither 0-d nor of its parameter's shape."""
    for name, value in state.items():
        if isinstance(value, Tensor) and value.ndim and value.shape != p.shape:
            raise ShapeError(f"load_state_dict: state {name!r} of parameter {index} has shape "
                             f"{tuple(value.shape)}, but the parameter has shape "
                             f"{tuple(p.shape)}; was the state dict saved by an optimizer of "
                             "other parameters, or of the same ones in another order?")


def _state_value(p: Tensor, name: str, value: Any) -> Any:
    """A loaded state entry, as a fresh tensor on the parameter's device, in PyTorch's dtype
    policy: floating values but ``step`` in a floating parameter's dtype, complex ones in a
    complex parameter's (which also takes the real pairs an older Ember saved, as complex
    values of its shape); lists and tuples (LBFGS's histories) entry by entry."""
    if name == "step" and isinstance(value, int | float):
        value = np.asarray(value, dtype=np.float32)
    if isinstance(value, dict):
        return {k: _state_value(p, k, v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_state_value(p, name, v) for v in value)
    if isinstance(value, Tensor):
        value = value._data if value._device.type == "cpu" else value.numpy(force=True)
    elif isinstance(value, bool | int | float | str) or value is None \
            or not hasattr(value, "__array__"):
        return copy.deepcopy(value)
    array = np.asarray(value)  # NumPy arrays, and tensors of other frameworks on the CPU
    dtype = dtypes.from_numpy(array.dtype)
    if name != "step" and p.dtype.is_floating_point and dtype.is_floating_point:
        dtype = p.dtype
    elif name != "step" and p.dtype.is_complex:
        pairs = (*p.shape[:-1], 2 * p.shape[-1]) if p.ndim else (2,)
        if dtype.is_floating_point and array.shape == pairs:  # (earlier Ember versions saved these)
            real = np.finfo(p.dtype.np).dtype
            array = np.ascontiguousarray(array, dtype=real).view(p.dtype.np).reshape(p.shape)
            dtype = p.dtype
        elif dtype.is_complex:
            dtype = p.dtype
    xp = p._device.xp  # (complex state C-ordered: the update steps it as real pairs)
    return _wrap(xp.array(array, dtype=dtype.np, copy=True, order="C" if dtype.is_complex
                          else "K"), p._device)
