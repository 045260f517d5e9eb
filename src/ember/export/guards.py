"""What an exported program assumes about its inputs, checked when ``ep.module()`` is called:
each tensor's rank, dtype and static sizes, each dynamic size inside its dim's range and equal
to the other sizes of the same dim, and each non-tensor argument equal to the example's (its
value is baked into the graph)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ember.errors import ArgumentError, EmberError
from ember.export.dynamic_shapes import ValueRange
from ember.export.symbolic import SizeExpr
from ember.tensor import Tensor


class GuardError(EmberError, AssertionError):
    """An input of an exported module breaks an assumption of the export (as torch's
    ``Guard failed`` assertions)."""


@dataclass
class InputGuard:
    """One leaf of the call: where it sits (argument name, then keys inside it) and, for a
    tensor, its sizes (an int, or the name of its dynamic dim) and dtype; else its value."""

    name: str
    keys: tuple
    dims: tuple | None = None
    dtype: Any = None
    value: Any = None

    @property
    def label(self) -> str:
        return self.name + "".join(f"[{k!r}]" for k in self.keys)


@dataclass
class Guards:
    """The guards of every leaf, the range of each dynamic dim, the values of the
    arguments the example call left to their defaults, and the names of the ``*args``
    (``"*"``) and ``**kwargs`` (``"**"``) parameters."""

    inputs: list[InputGuard]
    ranges: dict[str, ValueRange]
    defaults: dict[str, Any] = field(default_factory=dict)
    packed: dict[str, str] = field(default_factory=dict)

    def check(self, values: dict[str, Any]) -> None:
        """Raises :class:`GuardError` unless the call's arguments (by name; the defaults
        where missing) satisfy all."""
        values = {**self.defaults, **values}
        seen: dict[str, tuple[int, str]] = {}
        derived: list[tuple[str, int, SizeExpr]] = []  # (checked once every dim is seen)
        for guard in self.inputs:
            leaf = values.get(guard.name)
            try:
                for key in guard.keys:
                    leaf = leaf[key]
            except (KeyError, IndexError, TypeError):
                raise ArgumentError(f"the exported module takes {guard.label}, which the call "
                                    "does not give (its inputs must have the example's "
                                    "structure)") from None
            if guard.dims is None:
                if not (type(leaf) is type(guard.value) and _same(leaf, guard.value)):
                    raise GuardError(f"Guard failed: {guard.label} == {guard.value!r} (got "
                                     f"{leaf!r}); the export baked this value into the graph. "
                                     "Hint: export again with the new value")
                continue
            self._check_tensor(guard, leaf, seen, derived)
        self._check_structure(values)
        for where, size, expr in derived:
            want = expr.evaluate({s: seen[s][0] for s in expr.symbols})
            if size != want:
                raise GuardError(f"Guard failed: {where} == {expr} (got {size}, and {expr} is "
                                 f"{want} for " + ", ".join(
                                     f"{s} = {seen[s][0]} (from {seen[s][1]})"
                                     for s in expr.symbols) + ")")

    def _check_structure(self, values: dict[str, Any]) -> None:
        """A ValueError, as torch's, where an argument's tuples, lists or dicts hold more
        than the example's (an element or key the graph would silently ignore)."""
        expected: dict[str, set[tuple]] = {}
        for guard in self.inputs:
            expected.setdefault(guard.name, set()).add(guard.keys)
        for name, value in values.items():
            extra = sorted((p for p in _leaf_paths(value) if p not in expected.get(name, ())),
                           key=repr)
            if extra:
                label = name + "".join(f"[{k!r}]" for k in extra[0])
                raise ArgumentError(f"the exported module does not take {label}: its inputs "
                                    "must have the example's structure (the same tuple and list "
                                    "lengths, the same dict keys)")

    def _check_tensor(self, guard: InputGuard, t: Any, seen: dict, derived: list) -> None:
        label = guard.label
        if not isinstance(t, Tensor):
            raise GuardError(f"Guard failed: {label} is a tensor in the export, got "
                             f"{type(t).__name__}")
        shape = tuple(t.shape)
        if len(shape) != len(guard.dims):
            raise GuardError(f"Guard failed: {label}.dim() == {len(guard.dims)} (got shape "
                             f"{shape})")
        if t.dtype is not guard.dtype:
            raise GuardError(f"Guard failed: {label}.dtype == {guard.dtype} (got {t.dtype})")
        for axis, (size, want) in enumerate(zip(shape, guard.dims)):
            where = f"{label}.size()[{axis}]"
            if isinstance(want, SizeExpr):
                derived.append((where, size, want))
                continue
            if isinstance(want, int):
                if size != want:
                    raise GuardError(f"Guard failed: {where} == {want} (got {size}); the export "
                                     "fixed this size. Hint: export with dynamic_shapes giving "
                                     "this axis a Dim to let it vary")
                continue
            bounds = self.ranges[want]
            if size not in bounds:
                raise GuardError(f"Guard failed: {where} = {size} is outside the range "
                                 f"{bounds} of the dynamic dim {want}")
            first = seen.setdefault(want, (size, where))
            if first[0] != size:
                raise GuardError(f"Guard failed: {where} == {first[1]} (the dim {want}): got "
                                 f"{size} and {first[0]}")


def _same(value: Any, baked: Any) -> bool:
    """Whether a non-tensor argument is the value the export baked in (NaN is NaN)."""
    if isinstance(value, float) and value != value:
        return baked != baked
    return value == baked


def _leaf_paths(value: Any, keys: tuple = ()) -> list[tuple]:
    """The keys that lead to each leaf inside ``value``'s tuples, lists and dicts."""
    if isinstance(value, (tuple, list)):
        return [p for i, item in enumerate(value) for p in _leaf_paths(item, (*keys, i))]
    if isinstance(value, dict):
        return [p for k, item in value.items() for p in _leaf_paths(item, (*keys, k))]
    return [keys]
