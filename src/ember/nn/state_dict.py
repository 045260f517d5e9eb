"""State dicts of modules: ``state_dict()`` and ``load_state_dict()`` with PyTorch's key names,
order and error messages (every missing, unexpected and wrongly shaped key in one error), and
the hooks around them (``register_state_dict_pre_hook`` and the rest, in PyTorch's registries:
``_state_dict_hooks``, ``_load_state_dict_pre_hooks``, …)."""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Mapping
from typing import Any

from ember.autograd.grad_mode import no_grad, refuse_inference_write
from ember.errors import DeviceError, GradError, ShapeError
from ember.hooks import RemovableHandle
from ember.nn.module_hooks import _WrappedHook, add_hook_to  # (PyTorch's class name)
from ember.nn.parameter import Parameter, is_lazy
from ember.ops.creation import as_tensor
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

_EXTRA_STATE = "_extra_state"  # the key suffix of get_extra_state()'s entry, PyTorch's


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What :meth:`Module.load_state_dict` returns (PyTorch's named tuple)."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


def _overrides(cls: type, method: str) -> bool:
    """Whether ``cls`` defines its own ``method`` instead of :class:`StateDictMixin`'s."""
    return getattr(cls, method, None) is not getattr(StateDictMixin, method)


class StateDictMixin:
    """The state-dict half of :class:`~ember.nn.Module` (it reads ``_parameters``,
    ``_buffers``, ``_non_persistent_buffers_set`` and ``_modules``)."""

    # the format of this module's entries, saved in the state dict's ``_metadata`` (as in
    # PyTorch): a subclass that changes its entries raises it, and its _load_from_state_dict
    # reads ``local_metadata["version"]`` to convert older checkpoints
    _version: int = 1

    def get_extra_state(self) -> Any:
        """State that is no parameter or buffer, to save in :meth:`state_dict` under
        ``"<prefix>_extra_state"``. A module overrides it together with
        :meth:`set_extra_state`; the base class's is never called.

        Example:
            >>> class Counter(nn.Module):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.steps = 0
            ...     def get_extra_state(self):
            ...         return {"steps": self.steps}
            ...     def set_extra_state(self, state):
            ...         self.steps = state["steps"]
            >>> list(nn.Sequential(Counter()).state_dict())
            ['0._extra_state']
        """
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called: override get_extra_state in the subclass")

    def set_extra_state(self, state: Any) -> None:
        """Takes back what :meth:`get_extra_state` returned, from :meth:`load_state_dict`."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called: override set_extra_state in the subclass")

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()
        if _overrides(type(self), "get_extra_state"):
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Tensor]:
        """Parameters and persistent buffers by dotted name (detached, sharing memory), in
        PyTorch's order and with PyTorch's key names.

        Example:
            >>> list(nn.Linear(2, 3).state_dict())
            ['weight', 'bias']
        """
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix,
                                                            keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                if getattr(hook, "_from_public_api", False):
                    raise RuntimeError(f"{type(self).__name__}: a state_dict post-hook must "
                                       "return None (it edits the state dict in place)")
                destination = result  # (a private-API hook's; only the root's is returned)
        return destination

    def _load_from_state_dict(self, state_dict: Mapping, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        """Copies this module's own entries from ``state_dict`` (PyTorch's signature, so
        subclasses can override it to convert old checkpoints)."""
        assign = local_metadata.get("assign_to_params_buffers", False)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        for store, items in (("_parameters", self._parameters), ("_buffers", persistent)):
            for name, current in list(items.items()):
                if current is None:
                    continue
                key = prefix + name
                if key not in state_dict:
                    missing_keys.append(key)
                    continue
                value = state_dict[key]
                if not isinstance(value, (Tensor, SparseTensor)):
                    if not hasattr(value, "__array__"):
                        error_msgs.append(f'While copying the parameter named "{key}", expected '
                                          "a tensor or array from the checkpoint but received "
                                          f"{type(value)}")
                        continue
                    value = as_tensor(value)
                if is_lazy(current):  # (still lazy: the checkpoint's entry was lazy too)
                    continue
                if current.ndim == 0 and tuple(value.shape) == (1,):
                    value = value[0]  # (old checkpoints saved 0-d entries as shape (1,))
                if tuple(value.shape) != tuple(current.shape):
                    error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                      f"{tuple(value.shape)} from checkpoint, the shape in "
                                      f"current model is {tuple(current.shape)}.")
                    continue
                if value.layout is not current.layout and not assign:
                    error_msgs.append(f'While copying the parameter named "{key}": the '
                                      f"checkpoint's {value.layout!r} tensor cannot be copied "
                                      f"into the model's {current.layout!r} one (as PyTorch's "
                                      "copy_). Hint: convert it (to_dense() / to_sparse()), or "
                                      "load with assign=True")
                    continue
                if assign:  # (the checkpoint's own tensor, as PyTorch: a Parameter takes
                    # the module's requires_grad)
                    if store == "_parameters" and isinstance(value, Parameter):
                        value.requires_grad_(current.requires_grad)
                    elif store == "_parameters":
                        value = Parameter(value.detach(), current.requires_grad)
                    setattr(self, name, value)  # (as PyTorch: registration hooks fire, a
                    # Parameter for a buffer key becomes a parameter)
                elif current.is_meta and not value.is_meta:
                    warnings.warn(f"for {key}: copying from a non-meta parameter in the "
                                  "checkpoint to a meta parameter in the current model, which "
                                  "is a no-op. (Did you mean to pass `assign=True` to assign "
                                  "items in the state dictionary to their corresponding key in "
                                  "the module instead of copying them in place?)", stacklevel=2)
                else:
                    try:
                        with no_grad():
                            if isinstance(current, SparseTensor):
                                current.copy_(value)  # (its pattern, as PyTorch's copy_)
                            else:
                                refuse_inference_write(current, "load_state_dict")
                                current[...] = value
                    except (DeviceError, GradError, ShapeError) as exc:  # (a meta entry
                        # into a real tensor; one into an inference tensor; a sparse one of
                        # other sparse dims, as PyTorch lists them)
                        error_msgs.append(f'While copying the parameter named "{key}": {exc}')
        extra_key = prefix + _EXTRA_STATE
        if _overrides(type(self), "set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:  # a dotted key must name a child; a plain one, a parameter or buffer here
            local = {k for store in (self._parameters, persistent)
                     for k, v in store.items() if v is not None}
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    name, dot, _ = key[len(prefix):].partition(".")
                    known = name in self._modules if dot else name in local
                    if not known:  # (no look-up in the list: linear in the keys)
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copies parameters and buffers from ``state_dict`` (values may be tensors or NumPy
        arrays) into this module. With ``strict`` every key must match, and one error lists
        all missing, unexpected and wrongly shaped keys; with ``assign`` the module takes the
        given tensors instead of copying into its own. Shape mismatches are errors even when
        not strict (as in PyTorch).

        Example:
            >>> b = nn.Linear(2, 3); b.load_state_dict(nn.Linear(2, 3).state_dict())
            <All keys matched successfully>
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # (pre-hooks edit it: a copy, as PyTorch's)
        if metadata is not None:
            state_dict._metadata = metadata  # type: ignore[attr-defined]

        def load(module: Any, state_dict: dict, prefix: str) -> None:  # (itself, its
            # children, each with the entries under its prefix only, as PyTorch; post-hooks)
            meta = dict({} if metadata is None else metadata.get(prefix[:-1], {}))
            if assign:
                meta["assign_to_params_buffers"] = True
            for hook in module._load_state_dict_pre_hooks.values():  # (strict=True, as
                # PyTorch's: the module's own check is strict, the caller's choice is not)
                if hook(state_dict, prefix, meta, True, missing, unexpected,
                        errors) is not None:
                    raise RuntimeError(f"{type(module).__name__}: a load_state_dict pre-hook "
                                       "must return None (it edits the state dict in place)")
            module._load_from_state_dict(state_dict, prefix, meta, True, missing, unexpected,
                                         errors)
            groups: dict[str, dict] = {}  # (each child's entries, in one pass: the sets
            # and order of PyTorch's per-child filter, as a child's name has no '.')
            start = len(prefix)
            for key, value in state_dict.items():
                dot = key.find(".", start) if key.startswith(prefix) else -1
                if dot >= 0:
                    groups.setdefault(key[start:dot], {})[key] = value
            for name, child in module._modules.items():
                if child is not None:
                    load(child, groups.get(name, {}), prefix + name + ".")
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, keys) is not None:
                    raise RuntimeError(f"{type(module).__name__}: a load_state_dict post-hook "
                                       "must return None (it edits the key lists in place)")

        try:
            load(self, state_dict, "")
        finally:
            load = None  # (it refers to itself: kept, the state dict would wait for the gc)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Calls ``hook(module, prefix, keep_vars)`` before :meth:`state_dict` saves this
        module's entries (under ``prefix``), e.g. to bring them up to date.

        Example:
            >>> fc = nn.Linear(2, 3)
            >>> h = fc.register_state_dict_pre_hook(lambda mod, prefix, keep: print(prefix))
            >>> _ = nn.Sequential(fc).state_dict()
            0.
        """
        return add_hook_to(self._state_dict_pre_hooks, hook)

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
        try:  # (PyTorch's mark, which tells it from a hook of _register_state_dict_hook)
            hook._from_public_api = True
        except AttributeError:  # (a bound method: its returned value is then not refused)
            pass
        return add_hook_to(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """PyTorch's private form of :meth:`register_state_dict_post_hook`, which much code
        calls: the hook may also return a new state dict, which the root module's
        :meth:`state_dict` returns.

        Example:
            >>> fc = nn.Linear(2, 3)
            >>> h = fc._register_state_dict_hook(lambda mod, sd, prefix, meta: {"w": 1})
            >>> fc.state_dict()
            {'w': 1}
        """
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via "
                               "register_state_dict_post_hook")
        return add_hook_to(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Calls ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before :meth:`load_state_dict` loads this module's
        entries (under ``prefix``); ``state_dict`` is a copy of the caller's holding only the
        entries under ``prefix`` (as PyTorch's), which the hook may edit in place, e.g. to
        convert old entries; it must return ``None``.

        Example:
            >>> def renamed(mod, sd, prefix, *_):
            ...     if prefix + "w" in sd:
            ...         sd[prefix + "weight"] = sd.pop(prefix + "w")
            >>> fc = nn.Linear(2, 3)
            >>> h = fc.register_load_state_dict_pre_hook(renamed)
            >>> fc.load_state_dict({"w": ember.zeros(3, 2), "bias": ember.zeros(3)})
            <All keys matched successfully>
        """
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Calls ``hook(module, incompatible_keys)`` once :meth:`load_state_dict` has loaded
        this module and its children; the hook may edit ``incompatible_keys.missing_keys``
        and ``.unexpected_keys`` in place (``strict`` then checks what is left) and must
        return ``None``.

        Example:
            >>> fc = nn.Linear(2, 3)
            >>> h = fc.register_load_state_dict_post_hook(
            ...     lambda mod, keys: keys.missing_keys.remove("bias"))
            >>> fc.load_state_dict({"weight": ember.zeros(3, 2)})
            <All keys matched successfully>
        """
        return add_hook_to(self._load_state_dict_post_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False
                                           ) -> RemovableHandle:
        """PyTorch's private form of :meth:`register_load_state_dict_pre_hook`, which much code
        calls: without ``with_module`` the hook is called without the module
        (``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)``).

        Example:
            >>> fc = nn.Linear(2, 3)
            >>> h = fc._register_load_state_dict_pre_hook(lambda sd, prefix, *_: None)
            >>> h.remove()
        """
        return add_hook_to(self._load_state_dict_pre_hooks,
                           _WrappedHook(hook, self if with_module else None))
