"""Dynamic shapes for :func:`ember.export.export`, as ``torch.export``'s: :class:`Dim` names a
size that may change (with a range), :data:`Dim.AUTO` / :data:`Dim.DYNAMIC` /
:data:`Dim.STATIC` hint without a name, :func:`dims` makes several, and
:class:`ShapesCollection` gives them per tensor instead of per argument.

``dynamic_shapes`` mirrors the arguments: a dict keyed by the parameter names of ``forward``
(or a tuple by position), each tensor's entry ``None`` (every size static), a dict
``{axis: Dim}`` or a tuple with one entry per axis.
"""

from __future__ import annotations

import enum
import inspect
import math
from dataclasses import dataclass
from typing import Any

from ember.errors import ArgumentError
from ember.export.errors import ConstraintViolationError
from ember.export.symbolic import SizeExpr
from ember.func.pytree import tree_flatten
from ember.tensor import Tensor

__all__ = ["DerivedDim", "Dim", "DimHint", "RangedHint", "ShapesCollection", "ValueRange",
           "bind_call", "by_name", "dims", "hint_of"]


class DimHint(enum.Enum):
    """A size's dynamism without a name: ``AUTO`` (dynamic unless the model fixes it),
    ``DYNAMIC`` (dynamic; an error if the model fixes it), ``STATIC`` (fixed)."""

    AUTO = "AUTO"
    STATIC = "STATIC"
    DYNAMIC = "DYNAMIC"

    def __repr__(self) -> str:
        return f"DimHint({self.value})"

    def __call__(self, min: int | None = None, max: int | None = None) -> RangedHint:
        """This hint with a range, as torch's: ``Dim.DYNAMIC(min=4, max=64)``."""
        if min is not None and max is not None and min > max:
            raise ArgumentError(f"Dim.{self.value}: the range [{min}, {max}] is empty")
        return RangedHint(self, min, max)


@dataclass(frozen=True)
class RangedHint:
    """A :class:`DimHint` with a range (``Dim.AUTO(max=64)``): the dim it makes, named
    ``s0``, ``s1``, ... as the hint's, takes ``[max(min, 2), max]`` (``[2, int_oo]`` unset).

    Example:
        >>> Dim.DYNAMIC(min=4, max=64)
        DimHint(DYNAMIC, min=4, max=64)
    """

    kind: DimHint
    min: int | None = None
    max: int | None = None

    def __repr__(self) -> str:
        bounds = "".join(f", {k}={v}" for k, v in (("min", self.min), ("max", self.max))
                         if v is not None)
        return f"DimHint({self.kind.value}{bounds})"

    def range(self) -> ValueRange:
        return ValueRange(2 if self.min is None else max(self.min, 2),
                          math.inf if self.max is None else self.max)


def hint_of(dim: Any) -> DimHint | None:
    """The :class:`DimHint` of an axis's entry (a ranged one's kind); None for a Dim."""
    return dim.kind if isinstance(dim, RangedHint) else dim if isinstance(dim, DimHint) else None


class Dim:
    """A named dynamic size with the range ``[min, max]`` it may take (``max=None``: no
    bound). Sizes given the same ``Dim`` are equal.

    Example:
        >>> batch = Dim("batch", min=1, max=64)
        >>> batch
        Dim('batch', min=1, max=64)
        >>> Dim.AUTO
        DimHint(AUTO)
    """

    AUTO = DimHint.AUTO
    STATIC = DimHint.STATIC
    DYNAMIC = DimHint.DYNAMIC

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ArgumentError(f"Dim: the name must be a Python identifier, got {name!r}")
        low = 0 if min is None else min
        if low < 0 or (max is not None and max < low):
            raise ArgumentError(f"Dim {name!r}: the range [{low}, {max}] is empty or negative")
        self.__name__, self.min, self.max = name, low, max

    def __repr__(self) -> str:
        bounds = [f"min={self.min}"] if self.min else []
        bounds += [f"max={self.max}"] if self.max is not None else []
        return f"Dim({', '.join([repr(self.__name__), *bounds])})"

    def __mul__(self, coeff: int) -> DerivedDim:
        return DerivedDim(self, 1, 0) * coeff

    def __add__(self, offset: int) -> DerivedDim:
        return DerivedDim(self, 1, 0) + offset

    def __sub__(self, offset: int) -> DerivedDim:
        return DerivedDim(self, 1, 0) - offset

    __rmul__, __radd__ = __mul__, __add__


class DerivedDim:
    """A size that is ``coeff * root + offset`` of a :class:`Dim` (``2 * n``, ``n + 1``), as
    torch.export's derived dims: made by arithmetic on a Dim, its range follows the root's,
    and the program computes it from the root (guarding that the input's size equals it).

    Example:
        >>> n = Dim("n", min=1, max=8)
        >>> 2 * n + 1
        DerivedDim('2*n + 1', min=3, max=17)
    """

    def __init__(self, root: Dim, coeff: int, offset: int) -> None:
        self.root, self.coeff, self.offset = root, coeff, offset
        self.__name__ = str(self.expr)

    @property
    def expr(self) -> SizeExpr:
        """The size as an expression of the root's name."""
        return SizeExpr(self.coeff, (self.root.__name__,), self.offset)

    @property
    def min(self) -> int:
        return self.coeff * self.root.min + self.offset

    @property
    def max(self) -> int | None:
        return None if self.root.max is None else self.coeff * self.root.max + self.offset

    def __mul__(self, coeff: int) -> DerivedDim:
        if not isinstance(coeff, int) or isinstance(coeff, bool) or coeff < 1:
            raise TypeError(f"Dim {self.__name__!r}: a derived dim multiplies by a positive "
                            f"integer, got {coeff!r}")
        return DerivedDim(self.root, self.coeff * coeff, self.offset * coeff)

    def __add__(self, offset: int) -> DerivedDim:
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise TypeError(f"Dim {self.__name__!r}: a derived dim adds an integer, got "
                            f"{offset!r}")
        return DerivedDim(self.root, self.coeff, self.offset + offset)

    def __sub__(self, offset: int) -> DerivedDim:
        return self + (-offset if isinstance(offset, int) else offset)

    __rmul__, __radd__ = __mul__, __add__

    def __repr__(self) -> str:
        bounds = [f"min={self.min}"] + ([f"max={self.max}"] if self.max is not None else [])
        return f"DerivedDim({', '.join([repr(self.__name__), *bounds])})"


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple[Dim, ...]:
    """One :class:`Dim` per name, all with the same range.

    Example:
        >>> dims("batch", "seq", max=128)
        (Dim('batch', max=128), Dim('seq', max=128))
    """
    return tuple(Dim(name, min=min, max=max) for name in names)


@dataclass(frozen=True)
class ValueRange:
    """The sizes a dynamic dim may take: ``[lower, upper]`` (``upper`` ``math.inf``: no
    bound); printed as torch prints its ranges (``VR[2, int_oo]``)."""

    lower: int
    upper: float

    def __contains__(self, size: int) -> bool:
        return self.lower <= size <= self.upper

    def __repr__(self) -> str:
        upper = "int_oo" if self.upper == math.inf else str(int(self.upper))
        return f"VR[{self.lower}, {upper}]"


class ShapesCollection:
    """Dynamic shapes given per tensor: ``sc[x] = {0: batch}``, then
    ``export(..., dynamic_shapes=sc)``.

    Example:
        >>> x = ember.randn(3, 4)
        >>> sc = ShapesCollection()
        >>> sc[x] = {0: Dim("batch")}
        >>> sc.dynamic_shapes(ember.nn.Linear(4, 2), (x,))
        ({0: Dim('batch')},)
    """

    def __init__(self) -> None:
        self._shapes: dict[int, tuple[Tensor, Any]] = {}

    def __setitem__(self, t: Tensor, shape: Any) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"ShapesCollection: keys are tensors, got {type(t).__name__}")
        self._shapes[id(t)] = (t, shape)

    def __getitem__(self, t: Tensor) -> Any:
        return self._shapes[id(t)][1]

    def __contains__(self, t: Any) -> bool:
        return id(t) in self._shapes

    def dynamic_shapes(self, m: Any, args: tuple, kwargs: dict | None = None) -> Any:
        """The ``dynamic_shapes`` argument these tensors' shapes make for ``m(*args,
        **kwargs)``: the arguments' structure, each tensor's shape or None."""
        def walk(a: Any) -> Any:
            if isinstance(a, Tensor):
                return self[a] if a in self else None
            if isinstance(a, (tuple, list)):
                return type(a)(walk(x) for x in a)
            if isinstance(a, dict):
                return {k: walk(v) for k, v in a.items()}
            return None

        if kwargs:
            bound = bind_call(m, args, kwargs).arguments
            return {name: walk(value) for name, value in bound.items()}
        return walk(tuple(args))


class _Axes:
    """One tensor's dynamic axes (a pytree leaf): ``{axis: Dim | DimHint}``."""

    def __init__(self, axes: dict[int, Dim | DimHint]) -> None:
        self.axes = axes


def bind_call(m: Any, args: tuple, kwargs: dict) -> inspect.BoundArguments:
    """The call's arguments bound to the parameters of ``m``'s ``forward``."""
    fn = getattr(m, "forward", m)
    try:
        return inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        owner = type(m).__name__ + ".forward" if fn is not m else fn.__name__
        raise TypeError(f"ember.export.export: the example inputs do not fit {owner}: {e}") \
            from None


def by_name(dynamic_shapes: tuple | list, names: list[str]) -> dict[str, Any]:
    """A ``dynamic_shapes`` tuple (one entry per argument the call gives, in the order of
    ``forward``'s parameters) as a dict by those parameters' names."""
    if len(dynamic_shapes) != len(names):
        raise ArgumentError(f"ember.export.export: dynamic_shapes has {len(dynamic_shapes)} "
                            f"entries for {len(names)} arguments ({', '.join(names)})")
    return dict(zip(names, dynamic_shapes))


def leaf_axes(m: Any, args: tuple, kwargs: dict, dynamic_shapes: Any,
              labels: dict[str, str] | None = None) -> list[dict]:
    """For each tensor among the leaves of ``(args, kwargs)`` (in ``tree_flatten`` order),
    its axes ``{axis: Dim | DimHint}`` that ``dynamic_shapes`` does not make static. Errors
    name a dict's entry ``dynamic_shapes['x']``, or as ``labels`` says (``{'x': '[0]'}``,
    where the user gave a tuple)."""
    if isinstance(dynamic_shapes, ShapesCollection):
        dynamic_shapes = dynamic_shapes.dynamic_shapes(m, args, kwargs)
    if dynamic_shapes is None:
        tree: Any = None
    elif isinstance(dynamic_shapes, dict):
        tree = _by_parameter(m, args, kwargs, dynamic_shapes, labels or {})
    elif isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) != len(args) + len(kwargs):
            raise ArgumentError(f"ember.export.export: dynamic_shapes has {len(dynamic_shapes)} "
                                f"entries for {len(args) + len(kwargs)} arguments")
        # (each entry named in errors as the user's dynamic_shapes[i])
        tree = [(f"[{i}]", value, spec) for i, (value, spec) in
                enumerate(zip([*args, *kwargs.values()], dynamic_shapes))]
    else:
        raise TypeError("ember.export.export: dynamic_shapes is a dict (by argument name), a "
                        f"tuple, a ShapesCollection or None, got {type(dynamic_shapes).__name__}")
    out: list[dict] = []
    if tree is None:
        _walk((tuple(args), dict(kwargs)), None, "", out)
        return out
    for where, value, spec in tree:
        _walk(value, spec, where, out)
    return out


def _by_parameter(m: Any, args: tuple, kwargs: dict, dynamic_shapes: dict,
                  labels: dict[str, str]) -> list[tuple]:
    """``(label, value, spec)`` for a dict ``dynamic_shapes`` (by ``forward``'s parameter
    names), in the order of the leaves of ``(args, kwargs)``: the positional arguments (a
    ``*args`` parameter's as one tuple, its spec one entry per argument), then the keyword
    ones (one a ``**kwargs`` parameter takes under that parameter's dict entry)."""
    bound = bind_call(m, args, kwargs)
    unknown = sorted(set(dynamic_shapes) - set(bound.arguments))
    if unknown:
        raise ArgumentError(f"ember.export.export: dynamic_shapes names {unknown}, which are "
                            f"not arguments of the call (those are {list(bound.arguments)})")
    params = bound.signature.parameters
    tree, taken = [], 0
    for name, value in bound.arguments.items():
        if taken == len(args):
            break
        kind = params[name].kind
        if kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) \
                and name not in kwargs:
            tree.append((labels.get(name, f"[{name!r}]"), value, dynamic_shapes.get(name)))
            taken += 1
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            tree.append((labels.get(name, f"[{name!r}]"), tuple(value),
                         dynamic_shapes.get(name)))
            taken += len(value)
    many = next((n for n, p in params.items() if p.kind is inspect.Parameter.VAR_KEYWORD), None)
    for key, value in kwargs.items():
        if key in params and params[key].kind is not inspect.Parameter.VAR_KEYWORD:
            tree.append((labels.get(key, f"[{key!r}]"), value, dynamic_shapes.get(key)))
        else:  # (taken by **many: its entry is a dict by keyword)
            specs = dynamic_shapes.get(many)
            tree.append((f"[{many!r}][{key!r}]", value,
                         specs.get(key) if isinstance(specs, dict) else None))
    return tree


def _walk(value: Any, spec: Any, where: str, out: list[dict]) -> None:
    if isinstance(value, Tensor):
        out.append(_tensor_axes(value, spec, where or "input"))
        return
    leaves, _ = tree_flatten(value)
    if spec is None:
        out.extend({} for leaf in leaves if isinstance(leaf, Tensor))
        return
    if isinstance(value, (tuple, list)) and isinstance(spec, (tuple, list)) \
            and len(spec) == len(value):
        for i, (v, s) in enumerate(zip(value, spec)):
            _walk(v, s, f"{where}[{i}]", out)
        return
    if isinstance(value, dict) and isinstance(spec, dict):
        for k, v in value.items():
            _walk(v, spec.get(k), f"{where}[{k!r}]", out)
        return
    if not any(isinstance(leaf, Tensor) for leaf in leaves):
        return
    raise ArgumentError(f"ember.export.export: dynamic_shapes{where} is {spec!r}, which does not "
                        f"follow the structure of the argument ({type(value).__name__})")


def _tensor_axes(t: Tensor, spec: Any, where: str) -> dict[int, Dim | DimHint]:
    if spec is None:
        return {}
    if isinstance(spec, (tuple, list)):
        if len(spec) != t.ndim:
            raise ArgumentError(f"ember.export.export: dynamic_shapes{where} has {len(spec)} "
                                f"entries for a tensor of {t.ndim} dims (shape {tuple(t.shape)})")
        spec = dict(enumerate(spec))
    if not isinstance(spec, dict):
        raise ArgumentError(f"ember.export.export: dynamic_shapes{where} is {spec!r}; a tensor's "
                            "entry is None, {axis: Dim} or a tuple with one entry per axis")
    axes: dict[int, Dim | DimHint] = {}
    for axis, dim in spec.items():
        if not isinstance(axis, int) or not -t.ndim <= axis < t.ndim:
            raise ArgumentError(f"ember.export.export: dynamic_shapes{where} names axis {axis!r} "
                                f"of a tensor of shape {tuple(t.shape)}")
        if dim is None or hint_of(dim) is DimHint.STATIC:
            continue
        if not isinstance(dim, (Dim, DerivedDim, DimHint, RangedHint)):
            raise TypeError(f"ember.export.export: dynamic_shapes{where}[{axis}] is {dim!r}; "
                            "use a Dim, a derived dim (2 * n, n + 1), Dim.AUTO, Dim.DYNAMIC, "
                            "Dim.STATIC or None")
        axes[axis % t.ndim] = dim
    return axes


def check_example(axes: list[dict], tensors: list[Tensor]) -> None:
    """Refuses an example size outside its Dim's range, one Dim given two sizes, and a
    derived dim's size that no size of its root gives (or whose root is given nowhere)."""
    seen: dict[str, tuple[Dim, int]] = {}
    for t, spec in zip(tensors, axes):
        for axis, dim in spec.items():
            if isinstance(dim, RangedHint) and t.shape[axis] not in dim.range() \
                    and t.shape[axis] >= 2:  # (0 and 1 stay static, as every hint's)
                raise ConstraintViolationError(
                    f"ember.export.export: Constraints violated! The example input's size "
                    f"{t.shape[axis]} is not in the range of {dim!r}. Hint: widen the range or "
                    "export with an example inside it")
            if not isinstance(dim, Dim):
                continue
            size = t.shape[axis]
            if size not in ValueRange(dim.min, math.inf if dim.max is None else dim.max):
                raise ConstraintViolationError(
                    f"ember.export.export: Constraints violated ({dim.__name__})! The example "
                    f"input's size {size} is not in the range of {dim!r}. Hint: widen the "
                    "range or export with an example inside it")
            other = seen.setdefault(dim.__name__, (dim, size))
            if (other[0].min, other[0].max) != (dim.min, dim.max):  # (one name: one dim)
                raise ArgumentError(f"ember.export.export: found different definitions "
                                    f"{other[0]!r} and {dim!r} for the same dim "
                                    f"{dim.__name__!r}; give both sizes one Dim")
            if other[1] != size:
                raise ConstraintViolationError(
                    f"ember.export.export: Constraints violated ({dim.__name__})! The sizes "
                    f"given {dim!r} differ in the example inputs ({other[1]} and {size}); "
                    "sizes sharing a Dim must be equal")
    for t, spec in zip(tensors, axes):
        for axis, dim in spec.items():
            if not isinstance(dim, DerivedDim):
                continue
            root = seen.get(dim.root.__name__)
            if root is None:
                raise ConstraintViolationError(
                    f"ember.export.export: the derived dim {dim.__name__} has a root "
                    f"{dim.root.__name__} that no input's size is given. Hint: give the axis "
                    f"{dim.root.__name__} stands for that Dim too")
            if t.shape[axis] != dim.expr.evaluate({dim.root.__name__: root[1]}):
                raise ConstraintViolationError(
                    f"ember.export.export: Constraints violated ({dim.__name__})! The example "
                    f"input's size {t.shape[axis]} is not {dim.__name__} for "
                    f"{dim.root.__name__} = {root[1]}. Hint: export with example inputs whose "
                    "sizes keep the relation")
