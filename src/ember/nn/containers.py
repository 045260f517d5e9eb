"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict`` (PyTorch's, with the same key names in state dicts: ``"0.weight"``, …), and
PyTorch's deprecated ``Container``."""

from __future__ import annotations

import operator
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.tensor import Tensor

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]


class Container(Module):
    """PyTorch's deprecated module holding the modules given by keyword (it warns, as
    PyTorch's does): subclass :class:`~ember.nn.Module` instead.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     list(nn.Container(fc=nn.Linear(2, 3)).state_dict())
        ['fc.weight', 'fc.bias']
    """

    def __init__(self, **kwargs: Module) -> None:
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class _Indexed(Module):
    """Shared behaviour of the containers keyed ``"0"``, ``"1"``, …: indexing, slicing,
    length, iteration and deletion over a store (``_modules`` or ``_parameters``)."""

    _store = "_modules"

    def _items(self) -> dict:
        return self.__dict__[self._store]

    def _index(self, idx: int) -> str:
        idx = operator.index(idx)
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for {type(self).__name__} of "
                             f"length {n}")
        return list(self._items())[idx % n]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items().values())

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._items().values())[idx])
        return self._items()[self._index(idx)]

    def __delitem__(self, idx: int | slice) -> None:
        items = self._items()
        keys = list(items)[idx] if isinstance(idx, slice) else [self._index(idx)]
        for key in keys:
            del items[key]
        self._renumber(list(items.values()))

    def _renumber(self, values: list) -> None:
        """Stores ``values`` under the keys "0", "1", … (PyTorch's, after a deletion or an
        insertion)."""
        items = self._items()
        items.clear()
        items.update((str(i), v) for i, v in enumerate(values))

    def _register(self, name: str, value: Any) -> None:
        """Registers one element (raising on a wrong type, where ``setattr`` would quietly
        keep it as a plain attribute)."""
        self.add_module(name, value)

    def _set(self, idx: int, value: Any) -> None:
        self._register(self._index(idx), value)

    def _append(self, value: Any) -> None:
        self._register(str(len(self)), value)

    def _insert(self, index: int, value: Any) -> None:
        """Inserts before ``index``, negative counting from the end, as ``list.insert``."""
        self._append(value)
        values = list(self._items().values())
        values.insert(index, values.pop())
        self._renumber(values)

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]


class Sequential(_Indexed):
    """Modules called one after another; built from modules or an ``OrderedDict``.

    Example:
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> net(ember.randn(3, 4)).shape
        ember.Size([3, 2])
        >>> len(net), type(net[1:]).__name__
        (3, 'Sequential')
    """

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return super().__getitem__(idx)

    def __setitem__(self, idx: int, module: Module) -> None:
        self._set(idx, module)

    def append(self, module: Module) -> Sequential:
        self._append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        self._insert(index, module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for module in sequential:
            self.append(module)
        return self

    def pop(self, key: int | slice) -> Module:
        v = self[key]
        del self[key]
        return v

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(_Indexed):
    """A list of modules, registered so their parameters are found.

    Example:
        >>> layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        >>> len(list(layers.parameters()))
        6
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __setitem__(self, idx: int, module: Module) -> None:
        self._set(idx, module)

    def append(self, module: Module) -> ModuleList:
        self._append(module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        self._insert(index, module)

    def pop(self, key: int | slice) -> Module:
        v = self[key]
        del self[key]
        return v

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        if not self._modules:
            return "ModuleList()"
        return super().__repr__()


class ModuleDict(Module):
    """A dict of modules, registered so their parameters are found (insertion order).

    Example:
        >>> heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "box": nn.Linear(4, 4)})
        >>> list(heads.keys())
        ['cls', 'box']
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | ModuleDict | Iterable) -> None:
        """Adds the ``(key, module)`` pairs of a mapping, a ``ModuleDict`` or an iterable."""
        for key, module in _pairs(modules):
            self[key] = module


class ParameterList(_Indexed):
    """A list of parameters (tensors given are wrapped as :class:`Parameter`).

    Example:
        >>> ps = nn.ParameterList([nn.Parameter(ember.zeros(2)) for _ in range(2)])
        >>> [n for n, _ in ps.named_parameters()]
        ['0', '1']
    """

    _store = "_parameters"

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def _register(self, name: str, value: Any) -> None:
        self.register_parameter(name, _as_parameter(value))

    def __setitem__(self, idx: int, param: Any) -> None:
        self._set(idx, param)

    def append(self, value: Any) -> ParameterList:
        self._append(value)
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): Parameter containing: [{p.dtype.name} of size "
                         f"{'x'.join(map(str, p.shape))}]" for i, p in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters (tensors given are wrapped as :class:`Parameter`)."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable | None = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The parameter under ``key``, or ``default``."""
        return self._parameters.get(key, default)

    def __setitem__(self, key: str, value: Any) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self) -> Iterable[str]:
        return self._parameters.keys()

    def items(self) -> Iterable[tuple[str, Parameter]]:
        return self._parameters.items()

    def values(self) -> Iterable[Parameter]:
        return self._parameters.values()

    def pop(self, key: str) -> Parameter:
        return self._parameters.pop(key)

    def clear(self) -> None:
        self._parameters.clear()

    def update(self, parameters: Mapping[str, Any] | ParameterDict | Iterable) -> None:
        """Adds the ``(key, tensor)`` pairs of a mapping, a ``ParameterDict`` or an iterable."""
        for key, value in _pairs(parameters):
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): Parameter containing: [{p.dtype.name} of size "
                         f"{'x'.join(map(str, p.shape))}]" for k, p in self.items())


def _pairs(items: Any) -> Iterable:
    """The ``(key, value)`` pairs of a mapping or a dict-like container, or ``items`` itself
    (an iterable of pairs)."""
    return items.items() if isinstance(items, (Mapping, ModuleDict, ParameterDict)) else items


def _as_parameter(value: Any) -> Any:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value
