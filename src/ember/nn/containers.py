"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict`` (PyTorch's, with the same key names in state dicts: ``"0.weight"``, …), and
PyTorch's deprecated ``Container``."""

from __future__ import annotations

import operator
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ember.errors import ArgumentError
from ember.nn.module import Module, _addindent
from ember.nn.parameter import Parameter
from ember.ops.tensor_methods import typename
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
    length, iteration and deletion over a store (``_modules``; ParameterList overrides)."""

    def _items(self) -> dict:
        return self._modules

    def _index(self, idx: int) -> str:
        idx = operator.index(idx)
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for {type(self).__name__} of "
                             f"length {n}")
        return self._key_at(idx % n)

    def _key_at(self, i: int) -> str:
        return list(self._items())[i]

    def _get(self, key: str) -> Any:
        return self._items()[key]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items().values())

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._items().values())[idx])
        return self._get(self._index(idx))

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
            raise ArgumentError("add operator supports only objects of Sequential class, but "
                                f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        """Appends ``other``'s modules to this same Sequential (PyTorch's ``s += other``)."""
        if not isinstance(other, Sequential):
            raise ArgumentError("add operator supports only objects of Sequential class, but "
                                f"{type(other)} is given.")
        return self.extend(list(other))

    def _check_factor(self, other: Any) -> None:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and "
                            f"{type(other)}")
        if other <= 0:
            raise ArgumentError(f"Non-positive multiplication factor {other} for {type(self)}")

    def __mul__(self, other: int) -> Sequential:
        """A new Sequential repeating these (same, shared) modules ``other`` times.

        Example:
            >>> len(nn.Sequential(nn.Linear(2, 2), nn.ReLU()) * 3)
            6
        """
        self._check_factor(other)
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def __imul__(self, other: int) -> Sequential:
        self._check_factor(other)
        return self.extend(list(self) * (other - 1))

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
        """PyTorch's: runs of equal module reprs in one line, ``(0-5): 6 x Linear(...)``."""
        runs: list[list] = []  # [first index, last index, repr]
        for i, module in enumerate(self):
            text = repr(module)
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        if not runs:
            return self._get_name() + "()"
        lines = [_addindent(f"({a}): {text}" if a == b else f"({a}-{b}): {b - a + 1} x {text}",
                            2) for a, b, text in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


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
    """A list of parameters (tensors given are wrapped as :class:`Parameter`). As in
    PyTorch, entry ``i`` is the attribute ``str(i)``: other objects are kept as they are (a
    module is registered as a submodule).

    Example:
        >>> ps = nn.ParameterList([nn.Parameter(ember.zeros(2)) for _ in range(2)])
        >>> ps += [ember.ones(3), "note"]
        >>> [n for n, _ in ps.named_parameters()], ps[3]
        (['0', '1', '2'], 'note')
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return self._size

    def _items(self) -> dict:
        return {str(i): getattr(self, str(i)) for i in range(self._size)}

    def _key_at(self, i: int) -> str:
        return str(i)

    def _get(self, key: str) -> Any:
        return getattr(self, key)

    def _register(self, name: str, value: Any) -> None:
        setattr(self, name, _as_parameter(value))

    def _append(self, value: Any) -> None:
        self._register(str(self._size), value)
        self._size += 1

    def _renumber(self, values: list) -> None:
        for i in range(self._size):
            delattr(self, str(i))
        self._size = 0
        for value in values:
            self._append(value)

    def __setitem__(self, idx: int, param: Any) -> None:
        self._set(idx, param)

    def append(self, value: Any) -> ParameterList:
        self._append(value)
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def extra_repr(self) -> str:
        return _entries_repr(enumerate(self), lambda p: repr(p.dtype))


class ParameterDict(Module):
    """A dict of parameters (tensors given are wrapped as :class:`Parameter`; other values
    are kept as plain attributes, as in PyTorch). A plain ``dict`` is added in sorted key
    order, an ``OrderedDict``, a ``ParameterDict`` or a sequence of pairs in its own.

    Example:
        >>> pd = nn.ParameterDict({"b": ember.zeros(2), "a": ember.ones(3)})
        >>> list(pd.state_dict()), pd.setdefault("c", 0.5), list(reversed(pd))
        (['a', 'b'], 0.5, ['c', 'b', 'a'])
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def _key(self, key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not "
                            f"a string (type is '{type(key).__name__}')")
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._key(key))

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, self._key(key), _as_parameter(value))
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same (not copied) values."""
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        """A new ParameterDict with ``default`` under each of ``keys``."""
        return ParameterDict([(k, default) for k in keys])

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        return self[key] if key in self else default

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, after storing ``default`` there if it had none."""
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        """Removes and returns the last inserted ``(key, value)``."""
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        return (self[k] for k in self._keys)

    def update(self, parameters: Mapping[str, Any] | ParameterDict | Iterable) -> None:
        """Adds the ``(key, value)`` pairs of a mapping (a plain ``dict`` in sorted key
        order, as PyTorch's), a ``ParameterDict`` or an iterable of pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            f"key/value pairs, but got {type(parameters).__name__}")
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = list(parameters)
            for j, pair in enumerate(pairs):
                if not isinstance(pair, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be "
                                    f"Iterable; is {type(pair).__name__}")
                if len(pair) != 2:
                    raise ArgumentError(f"ParameterDict update sequence element #{j} has length "
                                        f"{len(pair)}; 2 is required")
        for key, value in pairs:
            self[key] = value

    def __or__(self, other: ParameterDict) -> ParameterDict:
        new = self.copy()
        new.update(other)
        return new

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        new = other.copy()
        new.update(self)
        return new

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return _entries_repr(self.items(), typename)


def _entries_repr(items: Iterable[tuple[Any, Any]], type_name: Callable[[Tensor], str]
                  ) -> str:
    """PyTorch's lines for ParameterList and ParameterDict entries: tensors by
    ``type_name`` and size, other objects by type."""
    lines = []
    for key, value in items:
        if isinstance(value, Tensor):
            kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
            device = f" ({value.device})" if value.device.type == "cuda" else ""
            size = "x".join(map(str, value.shape))
            lines.append(f"  ({key}): {kind} containing: [{type_name(value)} of size "
                         f"{size}{device}]")
        else:
            lines.append(f"  ({key}): Object of type: {type(value).__name__}")
    return "\n".join(lines)


def _pairs(items: Any) -> Iterable:
    """The ``(key, value)`` pairs of a mapping or a dict-like container, or ``items`` itself
    (an iterable of pairs)."""
    return items.items() if isinstance(items, (Mapping, ModuleDict)) else items


def _as_parameter(value: Any) -> Any:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value
