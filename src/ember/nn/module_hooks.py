"""The hooks of ``nn.Module``: forward pre-hooks and hooks, backward pre-hooks and full
backward hooks, each registration returning a removable handle, as PyTorch's.
:class:`ModuleHooksMixin` holds the registration methods and the call path that runs them
(the state-dict hooks are registered by ``state_dict.py``'s mixin, in the same registries).

The registries are PyTorch's too, so code written against its internals works: each is an
ordered dict (a :class:`HookDict`) from the handle's ``id`` to the user's hook, named as
PyTorch names it (``module._forward_pre_hooks``, ``_forward_hooks``, ``_backward_hooks``,
``_backward_pre_hooks``, ``_state_dict_hooks``, ``_state_dict_pre_hooks``,
``_load_state_dict_pre_hooks``, ``_load_state_dict_post_hooks``), with the
flags in side dicts (``_forward_pre_hooks_with_kwargs``, ``_forward_hooks_with_kwargs``,
``_forward_hooks_always_called``: id -> True) that ``handle.remove()`` cleans too; the
global ones are this module's ``_global_forward_hooks`` and so on, reachable as
``ember.nn.modules.module._global_forward_hooks``.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ember.hooks import RemovableHandle
from ember.tensor import STRUCTURE


class HookDict(OrderedDict):
    """An ordered dict of hooks keyed by handle id, as PyTorch keeps them; each change counts
    in :data:`ember.tensor.STRUCTURE`, so a compiled function notices a hook added or
    deleted by hand (``del module._forward_pre_hooks[k]``) as one removed by its handle."""

    __slots__ = ()

    def _changed(self) -> None:
        STRUCTURE.value += 1

    def __setitem__(self, key: Any, value: Any) -> None:  # (update/setdefault/|= come here)
        super().__setitem__(key, value)
        self._changed()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self._changed()

    def pop(self, *args: Any) -> Any:
        value = super().pop(*args)
        self._changed()
        return value

    def popitem(self, last: bool = True) -> tuple:
        item = super().popitem(last)
        self._changed()
        return item

    def clear(self) -> None:
        super().clear()
        self._changed()

    def move_to_end(self, key: Any, last: bool = True) -> None:
        super().move_to_end(key, last)
        self._changed()


class _GlobalHookDict(HookDict):
    """A registry of hooks run around every module's call: a change may switch
    ``Module.__call__`` between the fast path and the one that always runs hooks."""

    __slots__ = ()

    def _changed(self) -> None:
        STRUCTURE.value += 1
        _choose_call_path()


#: the registries every module has, as PyTorch names them (``Module.__init__`` makes them)
HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
              "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_hooks",
              "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
              "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")

# the hooks of every module, run before each module's own (PyTorch's names)
_global_forward_pre_hooks = _GlobalHookDict()
_global_forward_hooks = _GlobalHookDict()
_global_forward_hooks_with_kwargs = HookDict()
_global_forward_hooks_always_called = HookDict()
_global_backward_pre_hooks = _GlobalHookDict()
_global_backward_hooks = _GlobalHookDict()
# whether the global backward hooks are full ones (True) or legacy ones (False), as PyTorch's
# flag; the registry filled by hand (None) runs as full hooks
_global_is_full_backward_hook: bool | None = None
# run as any module registers a parameter, a buffer or a child module
_global_parameter_registration_hooks = HookDict()
_global_buffer_registration_hooks = HookDict()
_global_module_registration_hooks = HookDict()
REGISTRATION_HOOKS = {"parameter": _global_parameter_registration_hooks,
                      "buffer": _global_buffer_registration_hooks,
                      "module": _global_module_registration_hooks}


def add_hook_to(hooks: HookDict, hook: Callable, prepend: bool = False,
                flags: tuple[tuple[HookDict, bool], ...] = ()) -> RemovableHandle:
    """Adds ``hook`` to ``hooks`` under a new handle's id (first with ``prepend``), marking
    the id in each flag dict whose flag is set; the handle removes it from all of them."""
    handle = RemovableHandle(hooks, extra_dict=[flag_dict for flag_dict, _ in flags])
    for flag_dict, on in flags:
        if on:
            flag_dict[handle.id] = True
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class _WrappedHook:
    """A load-state-dict pre-hook as PyTorch keeps it in ``_load_state_dict_pre_hooks`` (and a
    legacy backward hook as it registers it on an autograd node):
    called with the hook's arguments less the module, which it holds weakly (a module does
    not keep itself alive) and passes first; ``hook`` is the user's function."""

    def __init__(self, hook: Callable, module: Any = None) -> None:
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if self.with_module:
            self.module = weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.with_module:
            return self.hook(*args, **kwargs)
        module = self.module()
        if module is None:
            raise RuntimeError(f"hook {self.hook!r}: its module no longer exists")
        return self.hook(module, *args, **kwargs)

    def __getstate__(self) -> dict:  # (pickle and deepcopy: the module itself, not a weakref)
        state = dict(self.__dict__)
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.with_module:
            self.module = weakref.ref(state["module"])


#: ``ember.compile``, registered by ``ember.jit`` (a layer above) for :meth:`Module.compile`.
COMPILER: list[Callable[..., Any] | None] = [None]


def _choose_call_path() -> None:
    """``Module.__call__`` checks the module's own hooks only while no global hook is set,
    so that check is all a module call without hooks pays; with one set, every call runs
    the hooks."""
    ModuleHooksMixin.__call__ = ModuleHooksMixin._call_always_with_hooks if (
        _global_forward_pre_hooks or _global_forward_hooks or _global_backward_pre_hooks or
        _global_backward_hooks) else ModuleHooksMixin._call_fast


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
    return add_hook_to(_global_forward_pre_hooks, hook)


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
    return add_hook_to(_global_forward_hooks, hook, flags=(
        (_global_forward_hooks_with_kwargs, with_kwargs),
        (_global_forward_hooks_always_called, always_call)))


def _check_backward_hook_kind(hooks: HookDict, is_full: bool | None, full: bool,
                              where: str) -> None:
    """Refuses a full backward hook where legacy ones are registered, and the reverse. (Once
    the hooks are removed either kind may come: PyTorch's flag stays, so after one legacy
    global hook no full global hook could ever be registered in the process.)"""
    if hooks and is_full is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                           f"{where}. Please use only one of them.")


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Deprecated, as PyTorch's: registers a legacy ``hook(module, grad_input, grad_output)``
    for every module (see :meth:`ember.nn.Module.register_backward_hook`), as
    ``torch.nn.modules.module.register_module_backward_hook``; use
    :func:`register_module_full_backward_hook`.

    Example:
        >>> h = ember.nn.modules.module.register_module_backward_hook(lambda m, gi, go: None)
        >>> h.remove()
    """
    return _register_global_backward(hook, full=False)


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
    return add_hook_to(_global_backward_pre_hooks, hook)


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
    return _register_global_backward(hook, full=True)


def _register_global_backward(hook: Callable[..., Any], full: bool) -> RemovableHandle:
    """A global backward hook of one kind: full or legacy (PyTorch's flag refuses the other
    kind while hooks of this one are registered)."""
    global _global_is_full_backward_hook
    _check_backward_hook_kind(_global_backward_hooks, _global_is_full_backward_hook, full,
                              "as a global Module hook")
    _global_is_full_backward_hook = full
    return add_hook_to(_global_backward_hooks, hook)


def _registration_hook(kind: str) -> Callable[[Callable[..., Any]], RemovableHandle]:
    def register(hook: Callable[..., Any]) -> RemovableHandle:
        return add_hook_to(REGISTRATION_HOOKS[kind], hook)

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
    for hook in tuple(REGISTRATION_HOOKS[kind].values()):
        result = hook(module, name, value)
        if result is not None:
            value = result
    return value


def hooks_around(module: Any) -> tuple[tuple[Callable, bool, bool], ...]:
    """The hooks that run around ``module``'s call, as ``(hook, with_kwargs, always_call)``:
    the global and its own forward pre-hooks, forward hooks, backward pre-hooks and backward
    hooks (what ``ember.jit`` traces and keys its graphs on)."""
    with_kwargs = (module._forward_pre_hooks_with_kwargs, module._forward_hooks_with_kwargs,
                   _global_forward_hooks_with_kwargs)
    always = (module._forward_hooks_always_called, _global_forward_hooks_always_called)
    return tuple((hook, any(key in d for d in with_kwargs), any(key in d for d in always))
                 for key, hook in (
                     *_global_forward_pre_hooks.items(), *module._forward_pre_hooks.items(),
                     *_global_forward_hooks.items(), *module._forward_hooks.items(),
                     *_global_backward_pre_hooks.items(), *module._backward_pre_hooks.items(),
                     *_global_backward_hooks.items(), *module._backward_hooks.items()))


def transfer_forward_hooks(old: Any, new: Any, but: Callable | None = None) -> None:
    """Registers ``old``'s forward pre-hooks and forward hooks (all but the hook ``but``) on
    ``new``, their flags kept: a layer swapped for its converted twin keeps its hooks."""
    for key, hook in old._forward_pre_hooks.items():
        if hook is not but:
            new.register_forward_pre_hook(
                hook, with_kwargs=key in old._forward_pre_hooks_with_kwargs)
    for key, hook in old._forward_hooks.items():
        if hook is not but:
            new.register_forward_hook(hook, with_kwargs=key in old._forward_hooks_with_kwargs,
                                      always_call=key in old._forward_hooks_always_called)


def _backward_hooks_of(module: Any) -> tuple[list[Callable], list[Callable]]:
    """``module``'s backward hooks, global ones first: ``(full, legacy)``."""
    full: list[Callable] = []
    legacy: list[Callable] = []
    (legacy if _global_is_full_backward_hook is False else full).extend(
        _global_backward_hooks.values())
    (legacy if module._is_full_backward_hook is False else full).extend(
        module._backward_hooks.values())
    return full, legacy


def _forward_hooks_of(module: Any) -> tuple[tuple[int, Callable], ...]:
    return (*_global_forward_hooks.items(), *module._forward_hooks.items())


def _always_called(module: Any, key: int) -> bool:
    return key in module._forward_hooks_always_called or \
        key in _global_forward_hooks_always_called


def _run_forward_hook(module: Any, key: int, hook: Callable, args: tuple, kwargs: dict,
                      output: Any) -> Any:
    if key in module._forward_hooks_with_kwargs or key in _global_forward_hooks_with_kwargs:
        return hook(module, args, kwargs, output)
    return hook(module, args, output)


class ModuleHooksMixin:
    """Hook registration and the hooked call path of :class:`ember.nn.Module`."""

    _forward_pre_hooks: HookDict
    _forward_pre_hooks_with_kwargs: HookDict
    _forward_hooks: HookDict
    _forward_hooks_with_kwargs: HookDict
    _forward_hooks_always_called: HookDict
    _backward_hooks: HookDict
    _backward_pre_hooks: HookDict
    _state_dict_hooks: HookDict
    _state_dict_pre_hooks: HookDict
    _load_state_dict_pre_hooks: HookDict
    _load_state_dict_post_hooks: HookDict
    forward: Callable[..., Any]

    _compiled_call: Callable[..., Any] | None = None  # set by Module.compile
    # whether _backward_hooks holds full hooks (True) or legacy ones (False), as PyTorch's flag
    _is_full_backward_hook: bool | None = None

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
        output, ran = None, set()  # (the ids of the always_call hooks that ran)
        try:
            for key, hook in (*_global_forward_pre_hooks.items(),
                              *self._forward_pre_hooks.items()):
                if key in self._forward_pre_hooks_with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError("forward pre-hook with kwargs must return None "
                                               f"or a tuple (args, kwargs), got {result!r}")
                        args, kwargs = result
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
            state = None
            full, legacy = _backward_hooks_of(self)
            pre = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            if full or pre:
                from ember.nn.backward_hooks import BackwardHookState

                state = BackwardHookState(self, full, pre)
                args = state.wrap_inputs(args)
            output = self.forward(*args, **kwargs)
            for key, hook in _forward_hooks_of(self):
                if _always_called(self, key):
                    ran.add(key)
                result = _run_forward_hook(self, key, hook, args, kwargs, output)
                if result is not None:
                    output = result
            if state is not None:
                output = state.wrap_outputs(output)
            if legacy:
                from ember.nn.backward_hooks import attach_legacy_hooks

                attach_legacy_hooks(self, legacy, args, output)
            return output
        except Exception:
            # as PyTorch: the always_call hooks not run yet run (with the output so far,
            # None if forward raised); their own errors become warnings, the first one raises
            for key, hook in _forward_hooks_of(self):
                if _always_called(self, key) and key not in ran:
                    try:
                        result = _run_forward_hook(self, key, hook, args, kwargs, output)
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
        return add_hook_to(self._forward_pre_hooks, hook, prepend,
                           ((self._forward_pre_hooks_with_kwargs, with_kwargs),))

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Calls ``hook(module, args, output)`` after ``forward`` (``hook(module, args, kwargs,
        output)`` with ``with_kwargs=True``); a returned value replaces the output.

        Example:
            >>> feats = []
            >>> h = m.register_forward_hook(lambda mod, args, out: feats.append(out))
        """
        return add_hook_to(self._forward_hooks, hook, prepend,
                           ((self._forward_hooks_with_kwargs, with_kwargs),
                            (self._forward_hooks_always_called, always_call)))

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> RemovableHandle:
        """Calls ``hook(module, grad_output)`` when the gradients with respect to the module's
        outputs are computed, before they go into its backward; a returned tuple replaces
        ``grad_output`` (one entry per output, None for one without gradient).

        Example:
            >>> h = m.register_full_backward_pre_hook(lambda mod, go: (go[0].clamp(-1, 1),))
        """
        return add_hook_to(self._backward_pre_hooks, hook, prepend)

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
        _check_backward_hook_kind(self._backward_hooks, self._is_full_backward_hook, True,
                                  "on a single Module")
        object.__setattr__(self, "_is_full_backward_hook", True)
        return add_hook_to(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated, as PyTorch's: use :meth:`register_full_backward_hook`. Calls
        ``hook(module, grad_input, grad_output)`` with the gradients of the last autograd
        node of the module's (first) output, which are the module's only when its forward is
        a single op; a returned tuple replaces ``grad_input``. It warns, as PyTorch does, when
        the gradients would miss some of the module's. A module holds legacy or full backward
        hooks, not both.

        Example:
            >>> act = nn.Sigmoid()
            >>> h = act.register_backward_hook(lambda mod, gi, go: print(gi[0].shape))
            >>> act(ember.zeros(3, requires_grad=True)).sum().backward()
            ember.Size([3])
        """
        _check_backward_hook_kind(self._backward_hooks, self._is_full_backward_hook, False,
                                  "on a single Module")
        object.__setattr__(self, "_is_full_backward_hook", False)
        return add_hook_to(self._backward_hooks, hook)
