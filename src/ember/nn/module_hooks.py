"""The hooks of ``nn.Module``: forward pre-hooks and hooks, backward pre-hooks and full
backward hooks, state-dict post-hooks, each registration returning a removable handle, as
PyTorch's. :class:`ModuleHooksMixin` holds the registration methods and the call path that
runs them; ``Module.__init__`` makes the lists.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ember.hooks import add_hook
from ember.tensor import RemovableHandle


class _Hook:
    """One registered hook; identity-compared so a handle removes exactly its registration."""

    __slots__ = ("fn", "with_kwargs", "always_call")

    def __init__(self, fn: Callable, with_kwargs: bool = False, always_call: bool = False):
        self.fn, self.with_kwargs, self.always_call = fn, with_kwargs, always_call


GLOBAL_FORWARD_PRE_HOOKS: list[_Hook] = []  # run before each module's own, for every module
GLOBAL_FORWARD_HOOKS: list[_Hook] = []
GLOBAL_BACKWARD_PRE_HOOKS: list[_Hook] = []
GLOBAL_BACKWARD_HOOKS: list[_Hook] = []
#: hooks run as any module registers a parameter, a buffer or a child module
REGISTRATION_HOOKS: dict[str, list[_Hook]] = {"parameter": [], "buffer": [], "module": []}


class _GlobalHookHandle(RemovableHandle):
    """The handle of a global module hook: removing it may put back the fast call path."""

    __slots__ = ()

    def remove(self) -> None:
        super().remove()
        _choose_call_path()


def _add_global_hook(hooks: list[_Hook], hook: _Hook) -> RemovableHandle:
    handle = add_hook(hooks, hook, handle_type=_GlobalHookHandle)
    _choose_call_path()
    return handle


#: ``ember.compile``, registered by ``ember.jit`` (a layer above) for :meth:`Module.compile`.
COMPILER: list[Callable[..., Any] | None] = [None]


def _choose_call_path() -> None:
    """``Module.__call__`` checks the module's own hooks only while no global hook is set,
    so that check is all a module call without hooks pays; with one set, every call runs
    the hooks."""
    ModuleHooksMixin.__call__ = ModuleHooksMixin._call_always_with_hooks if (
        GLOBAL_FORWARD_PRE_HOOKS or GLOBAL_FORWARD_HOOKS or GLOBAL_BACKWARD_PRE_HOOKS or
        GLOBAL_BACKWARD_HOOKS) else ModuleHooksMixin._call_fast


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Registers ``hook(module, args)`` to run before the forward of every module (before the
    module's own pre-hooks), as ``torch.nn.modules.module.register_module_forward_pre_hook``.
    It may return new positional arguments.

    Example:
        >>> seen = []
        >>> h = ember.nn.register_module_forward_pre_hook(
        ...     lambda mod, args: seen.append(type(mod).__name__))
        >>> _ = ember.nn.Sequential(ember.nn.ReLU())(ember.ones(1))
        >>> h.remove(); seen
        ['Sequential', 'ReLU']
    """
    return _add_global_hook(GLOBAL_FORWARD_PRE_HOOKS, _Hook(hook))


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Registers ``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs,
    output)``) to run after the forward of every module, before the module's own hooks, as
    ``torch.nn.modules.module.register_module_forward_hook``; ``always_call`` runs it when
    forward raises too (with output None). It may return a new output.

    Example:
        >>> h = ember.nn.register_module_forward_hook(lambda mod, args, out: out * 2)
        >>> ember.nn.Identity()(ember.ones(1))
        tensor([2.])
        >>> h.remove()
    """
    return _add_global_hook(GLOBAL_FORWARD_HOOKS, _Hook(hook, with_kwargs, always_call))


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Registers ``hook(module, grad_output)`` to run for every module, before the module's own
    backward pre-hooks, as ``torch.nn.modules.module.register_module_full_backward_pre_hook``.

    Example:
        >>> seen = []
        >>> h = ember.nn.register_module_full_backward_pre_hook(
        ...     lambda mod, go: seen.append(type(mod).__name__))
        >>> ember.nn.Linear(2, 1)(ember.ones(1, 2, requires_grad=True)).sum().backward()
        >>> h.remove(); seen
        ['Linear']
    """
    return _add_global_hook(GLOBAL_BACKWARD_PRE_HOOKS, _Hook(hook))


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Registers ``hook(module, grad_input, grad_output)`` to run for every module, before the
    module's own full backward hooks, as
    ``torch.nn.modules.module.register_module_full_backward_hook``.

    Example:
        >>> h = ember.nn.register_module_full_backward_hook(
        ...     lambda mod, gi, go: print(type(mod).__name__, gi[0].shape))
        >>> ember.nn.Linear(2, 1)(ember.ones(1, 2, requires_grad=True)).sum().backward()
        Linear ember.Size([1, 2])
        >>> h.remove()
    """
    return _add_global_hook(GLOBAL_BACKWARD_HOOKS, _Hook(hook))


def _registration_hook(kind: str) -> Callable[[Callable[..., Any]], RemovableHandle]:
    def register(hook: Callable[..., Any]) -> RemovableHandle:
        return add_hook(REGISTRATION_HOOKS[kind], _Hook(hook))

    register.__name__ = register.__qualname__ = f"register_module_{kind}_registration_hook"
    register.__doc__ = (
        f"Registers ``hook(module, name, {kind})`` to run whenever any module registers a "
        f"{kind}; a value it returns is registered instead, as PyTorch's "
        f"``register_module_{kind}_registration_hook``.")
    return register


register_module_parameter_registration_hook = _registration_hook("parameter")
register_module_buffer_registration_hook = _registration_hook("buffer")
register_module_module_registration_hook = _registration_hook("module")


def run_registration_hooks(kind: str, module: Any, name: str, value: Any) -> Any:
    """``value`` after the registration hooks of ``kind`` (each may return a replacement)."""
    for hook in REGISTRATION_HOOKS[kind]:
        result = hook.fn(module, name, value)
        if result is not None:
            value = result
    return value


def _run_forward_hook(module: Any, hook: _Hook, args: tuple, kwargs: dict, output: Any) -> Any:
    return hook.fn(module, args, kwargs, output) if hook.with_kwargs else \
        hook.fn(module, args, output)


class ModuleHooksMixin:
    """Hook registration and the hooked call path of :class:`ember.nn.Module`."""

    _forward_pre_hooks: list
    _forward_hooks: list
    _backward_hooks: list
    _backward_pre_hooks: list
    _state_dict_hooks: list
    _load_state_dict_pre_hooks: list
    forward: Callable[..., Any]

    _compiled_call: Callable[..., Any] | None = None  # set by Module.compile

    def _call_fast(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or self._compiled_call):
            return self.forward(*args, **kwargs)
        if self._compiled_call is not None:
            return self._compiled_call(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_always_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        if self._compiled_call is not None:
            return self._compiled_call(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compiles this module's call in place, as PyTorch's ``Module.compile``: later calls
        run ``ember.compile``'s graph (the arguments are ``ember.compile``'s). The module's
        hooks are traced with it, as any Python in a compiled function (see docs/jit.md).

        Example:
            >>> net = nn.Linear(3, 2)
            >>> net.compile()
            >>> net(ember.ones(1, 3)).shape
            ember.Size([1, 2])
        """
        if COMPILER[0] is None:
            raise RuntimeError("Module.compile: ember.jit is not loaded (import ember)")
        self._compiled_call = COMPILER[0](lambda *a, **k: self._call_with_hooks(a, k),
                                          *args, **kwargs)

    __call__ = _call_fast  # (``_choose_call_path`` switches it while global hooks are set)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        output, ran = None, set()  # (the always_call hooks that ran)
        try:
            for hook in [*GLOBAL_FORWARD_PRE_HOOKS, *self._forward_pre_hooks]:
                if hook.with_kwargs:
                    result = hook.fn(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError("forward pre-hook with kwargs must return None "
                                               f"or a tuple (args, kwargs), got {result!r}")
                        args, kwargs = result
                else:
                    result = hook.fn(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
            state = None
            if self._backward_hooks or self._backward_pre_hooks or GLOBAL_BACKWARD_HOOKS or \
                    GLOBAL_BACKWARD_PRE_HOOKS:
                from ember.nn.backward_hooks import BackwardHookState

                state = BackwardHookState(self, [*GLOBAL_BACKWARD_HOOKS, *self._backward_hooks],
                                          [*GLOBAL_BACKWARD_PRE_HOOKS,
                                           *self._backward_pre_hooks])
                args = state.wrap_inputs(args)
            output = self.forward(*args, **kwargs)
            for hook in [*GLOBAL_FORWARD_HOOKS, *self._forward_hooks]:
                if hook.always_call:
                    ran.add(hook)
                result = _run_forward_hook(self, hook, args, kwargs, output)
                if result is not None:
                    output = result
            return output if state is None else state.wrap_outputs(output)
        except Exception:
            # as PyTorch: the always_call hooks not run yet run (with the output so far,
            # None if forward raised); their own errors become warnings, the first one raises
            for hook in [*GLOBAL_FORWARD_HOOKS, *self._forward_hooks]:
                if hook.always_call and hook not in ran:
                    try:
                        result = _run_forward_hook(self, hook, args, kwargs, output)
                    except Exception as exc:
                        warnings.warn("module forward hook with ``always_call=True`` raised an "
                                      "exception that was silenced as another error was raised "
                                      f"in forward: {exc}", stacklevel=2)
                        continue
                    if result is not None:
                        output = result
            raise

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Calls ``hook(module, args)`` before ``forward`` (``hook(module, args, kwargs)`` with
        ``with_kwargs=True``); a returned value replaces the arguments.

        Example:
            >>> h = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
            >>> h.remove()
        """
        return add_hook(self._forward_pre_hooks, _Hook(hook, with_kwargs), prepend)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Calls ``hook(module, args, output)`` after ``forward`` (``hook(module, args, kwargs,
        output)`` with ``with_kwargs=True``); a returned value replaces the output.

        Example:
            >>> feats = []
            >>> h = m.register_forward_hook(lambda mod, args, out: feats.append(out))
        """
        return add_hook(self._forward_hooks, _Hook(hook, with_kwargs, always_call), prepend)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> RemovableHandle:
        """Calls ``hook(module, grad_output)`` when the gradients with respect to the module's
        outputs are computed, before they go into its backward; a returned tuple replaces
        ``grad_output`` (one entry per output, None for one without gradient).

        Example:
            >>> h = m.register_full_backward_pre_hook(lambda mod, go: (go[0].clamp(-1, 1),))
        """
        return add_hook(self._backward_pre_hooks, _Hook(hook), prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False
                                    ) -> RemovableHandle:
        """Calls ``hook(module, grad_input, grad_output)`` when the gradients with respect to
        the module's positional inputs are computed; a returned tuple replaces
        ``grad_input``. Entries are None for non-tensor arguments and for outputs that got no
        gradient; a tensor input needing no gradient gets zeros, as in PyTorch. If no input
        requires grad, the hook runs with the output gradients and ``grad_input`` all None.

        Example:
            >>> h = m.register_full_backward_hook(lambda mod, gi, go: print(go[0].shape))
        """
        return add_hook(self._backward_hooks, _Hook(hook), prepend)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Calls ``hook(module, state_dict, prefix, local_metadata)`` once :meth:`state_dict`
        has added this module's entries (under ``prefix``); the hook may edit ``state_dict``
        in place and must return ``None``.

        Example:
            >>> def drop_bias(mod, sd, prefix, meta):
            ...     del sd[prefix + "bias"]
            >>> fc = nn.Linear(2, 3)
            >>> h = fc.register_state_dict_post_hook(drop_bias)
            >>> list(fc.state_dict())
            ['weight']
            >>> h.remove()
        """
        return add_hook(self._state_dict_hooks, _Hook(hook))

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Calls ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before :meth:`load_state_dict` loads this module's
        entries (under ``prefix``); the hook may edit ``state_dict`` (a copy of the caller's)
        in place, e.g. to convert old entries, and must return ``None``.

        Example:
            >>> def renamed(mod, sd, prefix, *_):
            ...     if prefix + "w" in sd:
            ...         sd[prefix + "weight"] = sd.pop(prefix + "w")
            >>> fc = nn.Linear(2, 3)
            >>> h = fc.register_load_state_dict_pre_hook(renamed)
            >>> fc.load_state_dict({"w": ember.zeros(3, 2), "bias": ember.zeros(3)})
            <All keys matched successfully>
        """
        return add_hook(self._load_state_dict_pre_hooks, _Hook(hook))
