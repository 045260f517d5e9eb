"""``nn.Module``: the base class of layers and models, with PyTorch's ergonomics.

Assigning a :class:`~ember.nn.Parameter`, a ``Module`` or (after :meth:`Module.register_buffer`)
a tensor to an attribute registers it; ``parameters()``, ``state_dict()``, ``to()``, hooks and
``train()``/``eval()`` then walk the tree. :meth:`Module.param_tree` gives the parameters as a
nested dict (a pytree) for functional use.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from ember.autograd.grad_mode import no_grad
from ember.errors import ArgumentError
from ember.hooks import ids_taken
from ember.nn.module_conversion import ConversionMixin
from ember.nn.module_hooks import (
    HOOK_DICTS,
    REGISTRATION_HOOKS,
    HookDict,
    ModuleHooksMixin,
    run_registration_hooks,
)
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer
from ember.nn.state_dict import StateDictMixin
from ember.ops.storage import share_tensors_
from ember.sparse.tensor import SparseTensor
from ember.tensor import STRUCTURE, Tensor

__all__ = ["Module"]


class _Members(dict):
    """A module's parameters, buffers or children: a dict that counts each change of what it
    holds in :data:`ember.tensor.STRUCTURE` (a compiled function then notices a replaced
    layer or parameter). Putting back the same object is no change."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> None:
        if self.get(key, _Members) is not value:
            STRUCTURE.value += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        STRUCTURE.value += 1
        super().__delitem__(key)

    def pop(self, *args: Any) -> Any:
        STRUCTURE.value += 1
        return super().pop(*args)

    def clear(self) -> None:
        STRUCTURE.value += 1
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return lines[0] if len(lines) == 1 else \
        "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])


class Module(ModuleHooksMixin, StateDictMixin, ConversionMixin):
    """Base class for all neural-network modules; subclasses define ``forward``.

    Example:
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
        >>> net = Net()
        >>> [name for name, _ in net.named_parameters()]
        ['fc.weight', 'fc.bias']
    """

    training: bool
    # attributes a subclass rewrites on every call for its own bookkeeping, which no compiled
    # graph reads: their writes are not counted in STRUCTURE (DistributedDataParallel's)
    _untracked_attributes: frozenset[str] = frozenset()
    # True: __init__ passes its arguments on to the next class in the MRO (a mixin's)
    call_super_init: bool = False
    dump_patches: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if (args or kwargs) and not self.call_super_init:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments; "
                            "Module.__init__ takes none")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", _Members())
        setattr_(self, "_buffers", _Members())
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", _Members())
        for name in HOOK_DICTS:
            setattr_(self, name, HookDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    # -- registration ------------------------------------------------------------------------
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Adds a parameter (or ``None``, a placeholder) under ``name``."""
        self._check_name("register_parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ArgumentError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                                f"parameters must be created explicitly; use .detach() first")
        if REGISTRATION_HOOKS["parameter"]:
            param = run_registration_hooks("parameter", self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True
                        ) -> None:
        """Adds a buffer: state that is not trained (running statistics, …). Persistent
        buffers are part of :meth:`state_dict`.

        A sparse tensor may be a buffer too (a graph's adjacency matrix), as in PyTorch.

        Example:
            >>> m.register_buffer("running_mean", ember.zeros(3))
        """
        self._check_name("register_buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, (Tensor, SparseTensor)):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (ember Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.unwrap()
        elif isinstance(tensor, UninitializedBuffer):
            persistent = tensor.persistent
        if REGISTRATION_HOOKS["buffer"]:
            tensor = run_registration_hooks("buffer", self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds a child module under ``name`` (also ``register_module``)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name("add_module", name, self._modules)
        if REGISTRATION_HOOKS["module"]:
            module = run_registration_hooks("module", self, name, module)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, what: str, name: str, own: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{what}: name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f"{what}: name {name!r} can't be empty or contain \".\"")
        if name not in own and hasattr(self, name):
            raise KeyError(f"{what}: attribute '{name}' already exists")

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, self._parameters)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, self._modules)
            if REGISTRATION_HOOKS["module"]:
                value = run_registration_hooks("module", self, name, value)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (nn.Module or None expected)")
            if REGISTRATION_HOOKS["module"]:  # (PyTorch's hooks see the None too)
                value = run_registration_hooks("module", self, name, value)
            self._modules[name] = value
        elif isinstance(value, (Buffer, UninitializedBuffer)):
            if params is None:
                raise AttributeError("cannot assign buffers before Module.__init__() call")
            self._forget(name, self._buffers)
            self.register_buffer(name, value)
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, (Tensor, SparseTensor)):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(ember Tensor or None expected)")
            if REGISTRATION_HOOKS["buffer"]:
                value = run_registration_hooks("buffer", self, name, value)
            self._buffers[name] = value
        else:  # (a compiled graph holds the numbers it read, eps or p)
            if isinstance(value, dict) and name in HOOK_DICTS and not isinstance(value, HookDict):
                # PyTorch code strips hooks by ``m._forward_hooks = OrderedDict()``: what goes
                # into that registry later must count for ember.jit as well
                value = HookDict(value)
            if self.__dict__.get(name, _Members) is not value and \
                    name not in self._untracked_attributes:
                STRUCTURE.value += 1
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: dict) -> None:
        """Drops ``name`` from the plain attributes and every store but ``keep`` (where a new
        value then takes the old one's place, so the order of members stays PyTorch's)."""
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            if store is not keep and name in store:
                del store[name]
        if keep is not self._buffers:
            self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    # -- walking the tree --------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for this module and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """This module and every submodule, depth first; a module reached twice is given
        once unless ``remove_duplicate`` is False, as PyTorch's.

        Example:
            >>> relu = nn.ReLU()
            >>> len(list(nn.Sequential(relu, relu).modules(remove_duplicate=False)))
            3
        """
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs; a shared parameter appears once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters, as an optimizer wants them: ``SGD(model.parameters(), lr=0.1)``."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The descendant at a dotted path: ``model.get_submodule("encoder.0")``."""
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Puts ``module`` at a dotted path, replacing what is there:
        ``model.set_submodule("encoder.0", nn.Identity())`` (with ``strict``, if it exists)."""
        if not target:
            raise ArgumentError("set_submodule: the target name is empty")
        if not isinstance(module, Module):
            raise ArgumentError(f"set_submodule: `module` is not an nn.Module, found "
                                f"{type(module).__name__}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        mod, _, name = target.rpartition(".")
        module = self.get_submodule(mod)
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter `{name}`")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        mod, _, name = target.rpartition(".")
        module = self.get_submodule(mod)
        if name not in module._buffers:
            raise AttributeError(f"{type(module).__name__} has no buffer `{name}`")
        return module._buffers[name]

    def param_tree(self) -> dict[str, Any]:
        """The parameters as a nested dict mirroring the module tree (a pytree), e.g.
        ``{"0": {"weight": w, "bias": b}, "2": {…}}`` for a ``Sequential``. Ember's own
        addition (MLX's ``parameters()``): ``ember.func`` and ``jit`` treat a model as a
        function of this tree. Leaves are the Parameter objects themselves; submodules with
        no parameters are left out; joining a leaf's path with ``"."`` gives its
        :meth:`named_parameters` name.

        Example:
            >>> tree = nn.Sequential(nn.Linear(2, 3), nn.ReLU()).param_tree()
            >>> {k: sorted(v) for k, v in tree.items()}
            {'0': ['bias', 'weight']}
        """
        tree: dict[str, Any] = {k: v for k, v in self._parameters.items() if v is not None}
        for name, module in self._modules.items():
            if module is not None:
                sub = module.param_tree()
                if sub:
                    tree[name] = sub
        return tree

    # -- modes and conversions ---------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Sets training mode (dropout active, batch norm on batch statistics) recursively."""
        if not isinstance(mode, bool):
            raise ArgumentError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets every parameter's gradient: to ``None`` (default) or, in place, to zeros."""
        grads = [p for p in self.parameters() if p.grad is not None]
        if set_to_none:
            for p in grads:
                p.grad = None
            return
        with no_grad():  # (in place, as PyTorch: who holds the gradient sees the zeros)
            for p in grads:
                g = p.grad
                if g.grad_fn is not None:  # a gradient with history (create_graph=True)
                    g.detach_()  # (a view of another tensor refuses, as PyTorch's)
                elif g.requires_grad:
                    g.requires_grad_(False)
                g.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Calls ``fn`` on every submodule (children first), then on this module.

        Example:
            >>> _ = model.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear)
            ...                 else None)
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Converts every parameter (in place, keeping the Parameter objects, as PyTorch
        does), its gradient and every buffer with ``fn`` (of submodules too, with
        ``recurse``)."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                p.data = fn(p)
                if p.grad is not None:  # (the same gradient tensor, as PyTorch's)
                    p.grad.data = fn(p.grad)
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def share_memory(self) -> Module:
        """Moves every parameter and buffer into shared memory (``Tensor.share_memory_``),
        so that processes forked afterwards train the same weights (Hogwild).

        Example:
            >>> nn.Linear(2, 3).share_memory().weight.is_shared()
            True
        """
        tensors = []
        for m in self.modules():
            for p in m._parameters.values():
                tensors += [] if p is None else [p] if p.grad is None else [p, p.grad]
            for b in m._buffers.values():  # (a sparse buffer: its index and values tensors)
                tensors += [] if b is None else [b._vals, *b._index] \
                    if isinstance(b, SparseTensor) else [b]
        share_tensors_(tensors)  # (one search for the tensors on their memory, not one each)
        return self

    # -- printing ----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in its repr; layers override it."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        if len(lines) <= 1 and not self._modules:
            return f"{self._get_name()}({extra})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        # a module pickled without some registry, or with one as the (empty) list Ember kept
        # before its registries were PyTorch's dicts, gets an empty dict; the keys of its
        # hooks (handle ids of the process that saved it) are not handed out again here
        for name in HOOK_DICTS:
            if not isinstance(self.__dict__.get(name), dict):
                self.__dict__[name] = HookDict()
            ids_taken(self.__dict__[name])

    def __deepcopy__(self, memo: dict) -> Module:
        """A copy with its own parameters and buffers; parameters come without ``.grad``, as
        PyTorch's ``Parameter.__deepcopy__`` leaves them."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            if key in ("_parameters", "_buffers"):
                value = _Members({k: _copy_tensor(v, memo) for k, v in value.items()})
            elif isinstance(value, Tensor):
                value = _copy_tensor(value, memo)
            else:
                value = copy.deepcopy(value, memo)
            object.__setattr__(new, key, value)
        return new


def _copy_tensor(t: Tensor | None, memo: dict) -> Tensor | None:
    if t is None:
        return None
    if isinstance(t, SparseTensor):  # (a sparse buffer: its parts copied)
        return copy.deepcopy(t, memo)
    if id(t) not in memo:
        memo[id(t)] = t.__deepcopy__(memo) if t.is_leaf else t.detach().clone()
    return memo[id(t)]

