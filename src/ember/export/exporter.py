"""``export``: a module traced on example inputs into an :class:`ExportedProgram`, as
``torch.export.export``."""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ember.errors import ArgumentError
from ember.export.capture import Capture, retrace_resized, state_restored, trace, twins
from ember.export.dynamic_shapes import (
    DerivedDim,
    Dim,
    DimHint,
    RangedHint,
    ValueRange,
    bind_call,
    by_name,
    check_example,
    hint_of,
    leaf_axes,
)
from ember.export.errors import ConstraintViolationError, ExportError
from ember.export.graph_signature import InputKind
from ember.export.guards import Guards, InputGuard
from ember.export.lift import WHO, StateEntry, Twin, lift
from ember.export.program import ExportedProgram
from ember.func.pytree import tree_flatten
from ember.fx import GraphModule
from ember.fx.codegen import Namespace
from ember.jit.ir import Graph
from ember.nn import Module
from ember.tensor import Tensor

__all__ = ["export"]

# the check trace grows the k-th dynamic dim by 2·(k + 1)²: not in proportion to the first
# resized trace's k + 1, so that no size follows one dim in one and another dim in the other
_FARTHER, _FARTHER_POWER = 2, 2


def export(mod: Module, args: tuple, kwargs: Mapping[str, Any] | None = None, *,
           dynamic_shapes: Any = None, strict: bool = False,
           preserve_module_call_signature: tuple[str, ...] = ()) -> ExportedProgram:
    """Captures ``mod(*args, **kwargs)`` as a program of primitives, as
    ``torch.export.export`` does.

    The call is traced once on the example inputs (for real, under ``no_grad``, in the
    mode the module is in; its buffers are restored after). The result is functional: the
    parameters, buffers and tensor constants it reads are placeholders before the user's
    inputs, and a buffer the call updates (BatchNorm's running statistics in training mode)
    is an output (``graph_signature.buffers_to_mutate``). With ``dynamic_shapes`` the model is
    traced again with the dynamic sizes grown, to find which sizes follow them.

    Args:
        mod: the module to export.
        args: the example positional arguments (a tuple; tensors, nested in tuples, lists
            and dicts, and other values, which are baked into the program).
        kwargs: the example keyword arguments.
        dynamic_shapes: which sizes may change: per argument (a dict by the parameter names
            of ``forward``, or a tuple), each tensor's ``{axis: Dim}`` or per-axis tuple;
            or a :class:`ShapesCollection`.
        strict: accepted for torch's signature; Ember has one tracer, which always checks
            what torch's strict mode checks (Python that reads a traced value is an error).
        preserve_module_call_signature: must be empty (Ember has no ``unflatten``).

    Returns:
        The :class:`ExportedProgram`.

    Raises:
        ExportError: the model cannot be captured (it branches on tensor values, writes
            into its inputs, ...).
        ConstraintViolationError: the dynamic shapes ask for sizes the model fixes.

    Example:
        >>> batch = ember.export.Dim("batch", min=1, max=64)
        >>> ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),),
        ...                          dynamic_shapes={"input": {0: batch}})
        >>> ep.range_constraints
        {'batch': VR[1, 64]}
        >>> ep.module()(ember.randn(10, 4)).shape
        ember.Size([10, 2])
    """
    if not isinstance(mod, Module):
        raise ArgumentError(f"{WHO}: expected mod to be an instance of ember.nn.Module, got "
                            f"{type(mod).__name__}")
    if not isinstance(args, tuple):
        raise ArgumentError(f"{WHO}: expecting args to be a tuple of example positional inputs, "
                            f"got {type(args).__name__}. Hint: write (x,) for one input")
    if preserve_module_call_signature:
        raise ArgumentError(f"{WHO}: preserve_module_call_signature is for "
                            "torch.export.unflatten, which Ember does not have; pass ()")
    bound = bind_call(mod, args, dict(kwargs or {}))
    given = list(bound.arguments)
    labels = None  # (errors name a tuple's entries by position, as the user wrote them)
    if isinstance(dynamic_shapes, (tuple, list)):  # (the arguments given, not the defaults)
        dynamic_shapes = by_name(dynamic_shapes, given)
        labels = {name: f"[{i}]" for i, name in enumerate(given)}
    bound.apply_defaults()  # (the call is traced with every argument given)
    defaults = {k: v for k, v in bound.arguments.items() if k not in given}
    args, kwargs = bound.args, bound.kwargs
    leaves, spec = tree_flatten((args, kwargs))
    tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
    axes = leaf_axes(mod, args, kwargs, dynamic_shapes, labels)
    check_example(axes, tensors)
    guard_leaves = _guard_leaves(bound.arguments)
    names = Namespace()
    user_names = [names.create_name(re.sub(r"\W+", "_", _path(bound.arguments, g)).strip("_"))
                  for g in guard_leaves if g.dims is not None]
    state = _state(mod)
    attributes = _tensor_attributes(mod)
    with state_restored(mod):
        capture, graph = trace(mod, args, kwargs, False, WHO, state_writes=True)
        entry = capture.compiled.last
        dims = _dim_names(axes, tensors)
        derived = {i: {axis: dim.expr for axis, dim in spec.items() if isinstance(dim, DerivedDim)}
                   for i, spec in enumerate(axes)}

        def lowered(names: dict[int, dict[int, str]], cause: Exception | None = None) -> Any:
            others = _twins(capture, graph, leaves, spec, names, _ranges(names, axes), cause,
                            derived)
            return lift(graph, others, state, user_names, entry.out_consts, _symbols(names),
                        entry.device, attributes)

        try:
            lifted = lowered(dims)
        except ExportError as e:
            lifted, dims = _fallback(lowered, dims, axes, tensors, e)
    ranges = _ranges(dims, axes)
    for i, guard in enumerate(g for g in guard_leaves if g.dims is not None):
        named = {**dims.get(i, {}), **derived[i]}
        guard.dims = tuple(named.get(a, s) for a, s in enumerate(tensors[i].shape))
    return ExportedProgram(
        GraphModule({}, lifted.graph), lifted.signature,
        {s.target: e.tensor for s, e in zip(lifted.signature.input_specs, state)
         if s.persistent is not False}, ranges,
        {**{s.target: e.tensor for s, e in zip(lifted.signature.input_specs, state)
            if s.persistent is False}, **lifted.constants},
        (args, kwargs), Guards(guard_leaves, ranges, defaults, _packed(bound)),
        list(bound.arguments),
        entry.out_spec)


def _packed(bound: inspect.BoundArguments) -> dict[str, str]:
    """The names of the call's ``*args`` (``"*"``) and ``**kwargs`` (``"**"``) parameters."""
    kinds = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return {name: kinds[p.kind] for name, p in bound.signature.parameters.items()
            if p.kind in kinds}


def _guard_leaves(arguments: dict[str, Any]) -> list[InputGuard]:
    """A guard per leaf of the call (tensor guards' sizes filled in later)."""
    out: list[InputGuard] = []

    def walk(name: str, value: Any, keys: tuple) -> None:
        if isinstance(value, Tensor):
            out.append(InputGuard(name, keys, dims=(), dtype=value.dtype))
        elif isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                walk(name, item, (*keys, i))
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(name, item, (*keys, key))
        elif value is None or isinstance(value, (bool, int, float, str)):
            out.append(InputGuard(name, keys, value=value))
        else:
            raise ExportError(f"{WHO}: argument {name}{''.join(f'[{k!r}]' for k in keys)} "
                              f"holds {_class_hint(value)}")

    for name, value in arguments.items():
        walk(name, value, ())
    return out


def _path(arguments: dict[str, Any], guard: InputGuard) -> str:
    """The leaf's argument name and keys joined by ``_``, a namedtuple's entries by field,
    as torch names placeholders (``p_a`` for ``p.a``, ``x_0``, ``d_k``)."""
    value, parts = arguments[guard.name], [guard.name]
    for key in guard.keys:
        named = isinstance(value, tuple) and hasattr(type(value), "_fields")
        parts.append(type(value)._fields[key] if named else str(key))
        value = value[key]
    return "_".join(parts)


def _class_hint(value: Any) -> str:
    """The class of an argument export refuses (with its module: ``torch.Tensor``), why,
    and what to pass instead."""
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else \
        f"{kind.__module__}.{kind.__qualname__}"
    fields = [f.name for f in dataclasses.fields(value)] if dataclasses.is_dataclass(value) \
        else []
    torch_tensor = any(c.__module__ == "torch" and c.__name__ == "Tensor" for c in kind.__mro__)
    instead = f"its fields ({', '.join(fields)}) as arguments or in a dict " \
        "(dataclasses.asdict)" if fields else "ember.from_numpy(array)" if \
        isinstance(value, np.ndarray) else "ember.tensor(t.numpy()), an Ember tensor of its " \
        "values" if torch_tensor else "the tensors it holds in a tuple, list or dict"
    aside = " (torch.export takes a dataclass registered with " \
        "torch.export.register_dataclass; Ember's export does not, even one registered with " \
        "ember.utils._pytree.register_dataclass, as its input guards and the program's " \
        "calls follow tuples, lists and dicts only; a registered class may be an output)" \
        if fields else ""
    return (f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"
            f"{' (a dataclass)' if fields else ''}; export takes Ember tensors and numbers "
            "(int, float, bool, str, None), nested in tuples, lists and dicts, as inputs"
            f"{aside}. Hint: pass {instead}")


def _state(mod: Module) -> list[StateEntry]:
    """The module's parameters, then its buffers (with their persistence), by key: a tensor
    the model holds under several keys (tied weights, a shared submodule) under each, as
    torch lists them (the graph reads it through the last)."""
    entries = [StateEntry(p, InputKind.PARAMETER, k)
               for k, p in mod.named_parameters(remove_duplicate=False)]
    for key, buffer in mod.named_buffers(remove_duplicate=False):
        *path, name = key.split(".")
        owner = mod.get_submodule(".".join(path)) if path else mod
        persistent = name not in owner._non_persistent_buffers_set
        entries.append(StateEntry(buffer, InputKind.BUFFER, key, persistent))
    return entries


def _tensor_attributes(mod: Module) -> dict[int, tuple[str, Tensor]]:
    """The model's tensors that are no parameter or buffer (``self.offset = ember.ones(3)``),
    by the ``id`` of their array (as the traced graph holds them): ``(path, tensor)``."""
    found: dict[int, tuple[str, Tensor]] = {}
    for prefix, module in mod.named_modules():
        for name, value in vars(module).items():
            if isinstance(value, Tensor):
                found.setdefault(id(value._data), (f"{prefix}.{name}" if prefix else name, value))
    return found


def _dim_names(axes: list[dict], tensors: list[Tensor]) -> dict[int, dict[int, str]]:
    """``{tensor index: {axis: dim name}}``: a Dim by its name, a hint by ``s0``, ``s1`` ...
    (a hint on a size below 2 is static, as torch specializes 0 and 1)."""
    taken = {d.__name__ for spec in axes for d in spec.values() if isinstance(d, Dim)}
    counter = iter(range(10**9))
    named: dict[int, dict[int, str]] = {}
    for i, spec in enumerate(axes):
        for axis, dim in spec.items():
            if isinstance(dim, Dim):
                named.setdefault(i, {})[axis] = dim.__name__
                continue
            if isinstance(dim, DerivedDim):  # (its size follows its root's: no dim of its own)
                continue
            if tensors[i].shape[axis] < 2:
                if hint_of(dim) is DimHint.DYNAMIC:
                    raise ConstraintViolationError(
                        f"{WHO}: Constraints violated! Dim.DYNAMIC on axis {axis} of input {i}, "
                        f"whose example size is {tensors[i].shape[axis]}: sizes 0 and 1 are "
                        "specialized. Hint: export with an example size of 2 or more")
                continue
            name = next(f"s{k}" for k in counter if f"s{k}" not in taken)
            named.setdefault(i, {})[axis] = name
    return named


def _symbols(dims: dict[int, dict[int, str]]) -> dict[str, tuple[int, int]]:
    symbols: dict[str, tuple[int, int]] = {}
    for i, spec in sorted(dims.items()):
        for axis, name in sorted(spec.items()):
            symbols.setdefault(name, (i, axis))
    return symbols


def _fallback(lowered: Callable, dims: dict[int, dict[int, str]], axes: list[dict],
              tensors: list[Tensor], error: ExportError) -> tuple[Any, dict]:
    """The export of a model that failed with the dims ``dims``: unnamed dims the model makes
    equal become one (torch unifies their symbols); failing that, AUTO dims are static where
    the model fixes them. Named Dims the model makes equal are an error naming them, as
    torch's; else ``error`` (or the last fallback's)."""
    for fallback in (_merged(dims, axes, tensors), _without_automatic(dims, axes)):
        if fallback != dims:
            try:
                return lowered(fallback, error), fallback
            except ExportError as e:
                error = e
    equal = _merged(dims, axes, tensors, named_too=True)
    if equal != dims:
        try:
            lowered(equal, error)
        except ExportError:
            pass
        else:
            pairs = sorted({(name, equal[i][axis]) for i, spec in dims.items()
                            for axis, name in spec.items() if name != equal[i][axis]})
            raise ConstraintViolationError(
                f"{WHO}: Constraints violated ({', '.join(n for pair in pairs for n in pair)})! "
                + "; ".join(f"The values of {a} and {b} must always be equal" for a, b in pairs)
                + " (the model adds or matches those sizes). Hint: use one Dim for them: "
                + ", ".join(f"{a} = {b}" for a, b in pairs)) from error
    raise error


def _merged(dims: dict[int, dict[int, str]], axes: list[dict], tensors: list[Tensor],
            named_too: bool = False) -> dict[int, dict[int, str]]:
    """The unnamed dims (and the named ones, if ``named_too``) with one example size as one
    dim (named as a Dim of that size, if there is one): what the model needs where it adds
    or matches two such sizes."""
    by_size: dict[int, str] = {}
    for named in (True, False):
        for i, spec in sorted(dims.items()):
            for axis, name in sorted(spec.items()):
                if isinstance(axes[i][axis], Dim) is named:
                    by_size.setdefault(tensors[i].shape[axis], name)
    return {i: {axis: name if isinstance(axes[i][axis], Dim) and not named_too else
                by_size[tensors[i].shape[axis]] for axis, name in spec.items()}
            for i, spec in dims.items()}


def _without_automatic(dims: dict, axes: list[dict]) -> dict[int, dict[int, str]]:
    kept = {i: {a: n for a, n in spec.items() if hint_of(axes[i][a]) is not DimHint.AUTO}
            for i, spec in dims.items()}
    return {i: spec for i, spec in kept.items() if spec}


def _twins(capture: Capture, graph: Graph, leaves: list, spec: Any,
           dims: dict[int, dict[int, str]], bounds: dict[str, ValueRange],
           cause: Exception | None = None, derived: dict | None = None) -> list[Twin]:
    """The model traced with its dynamic dims grown (and grown farther, when the model takes
    those sizes; shrunk where the dim's range ``bounds`` ends below) and the sizes of derived
    dims (``{tensor index: {axis: SizeExpr}}``) following them, each trace matched to the
    first."""
    if not dims:
        return []
    resizing = {i: {**dims.get(i, {}), **(derived or {}).get(i, {})}
                for i in {*dims, *(derived or {})}}
    try:
        second = retrace_resized(capture, leaves, spec, resizing, bounds=bounds, odd=True)
        out = [Twin(second, *_matched(graph, second))]
    except ConstraintViolationError:
        raise
    except ExportError as e:
        raise _violated(dims, e) from (cause or e)
    try:
        third = retrace_resized(capture, leaves, spec, resizing, _FARTHER, _FARTHER_POWER,
                                bounds)
    except ExportError:  # (the model bounds the size: a GPT's block size)
        return out
    try:
        out.append(Twin(third, *_matched(graph, third)))
    except ExportError as e:  # (a branch on a size that only the farther trace crosses)
        if not _within(third, dims, bounds):  # (beyond the dims' ranges the model may differ)
            return out
        raise _violated(dims, e) from (cause or e)
    for sizes in _range_ends(graph, dims, derived or {}, bounds):
        try:  # (a branch on a size between the example's and an end of the range)
            probe = retrace_resized(capture, leaves, spec, resizing, sizes=sizes)
        except ExportError:  # (the model bounds the size below the range's end)
            continue
        try:
            out.append(Twin(probe, *_matched(graph, probe)))
        except ExportError as e:
            raise _violated(dims, e, sizes) from (cause or e)
    return out


def _range_ends(graph: Graph, dims: dict[int, dict[int, str]], derived: dict,
                bounds: dict[str, ValueRange]) -> list[dict[str, int]]:
    """The sizes of more traces: every dim at the low end of its range (2 at least, for its
    derived dims too: sizes 0 and 1 are specialized), then each dim in turn at its high end
    (for a dim without one, the larger of twice the example's size and 32 more) with the
    others at their low ends: a
    branch on a size inside the range is then seen when the traces take its two sides, as
    torch's symbolic sizes see every branch. (One dim high at a time: a batch and a sequence
    both at their largest would cost, in time and memory, their product.)"""
    example = {name: graph.inputs[i].shape[axis]
               for i, spec in dims.items() for axis, name in spec.items()}
    low = {n: max(bounds[n].lower, 2) for n in example}
    for e in (e for spec in derived.values() for e in spec.values()):  # (n - 1: n is 3)
        root = e.symbols[0]
        low[root] = int(min(max(low[root], -((e.offset - 2) // e.coeff)), bounds[root].upper))
    high = {n: int(bounds[n].upper) if bounds[n].upper != math.inf else
            max(2 * size, size + 32) for n, size in example.items()}
    ends: list[dict[str, int]] = []
    for sizes in [low, *({**low, n: high[n]} for n in example)]:
        follow = [e.evaluate(sizes) for spec in derived.values() for e in spec.values()]
        if sizes != example and sizes not in ends and all(s >= 2 for s in follow):
            ends.append(sizes)
    return ends


def _within(traced: Graph, dims: dict[int, dict[int, str]],
            bounds: dict[str, ValueRange]) -> bool:
    """Whether the trace's dynamic sizes all lie in their dims' ranges."""
    return all(traced.inputs[i].shape[axis] in bounds[name]
               for i, spec in dims.items() for axis, name in spec.items())


def _violated(dims: dict[int, dict[int, str]], e: ExportError,
              sizes: dict[str, int] | None = None) -> ConstraintViolationError:
    marked = ", ".join(sorted({n for spec in dims.values() for n in spec.values()}))
    at = "" if sizes is None else " (traced again at the ends of the dims' ranges: " + \
        ", ".join(f"{n} = {s}" for n, s in sizes.items()) + ")"
    return ConstraintViolationError(
        f"{WHO}: Constraints violated ({marked})! You marked {marked} as dynamic but the model "
        f"fixes the size (it specializes it to the example's, computes with it in Python or "
        f"branches on it){at}: {e}. Hint: use Dim.STATIC (or no Dim) for such a size, "
        "Dim.AUTO to let the export decide, or give the dim a range on one side of the "
        "branch (Dim(..., max=...))")


def _matched(graph: Graph, other: Graph) -> tuple[dict, dict]:
    mapping, _, pairs = twins(graph, other, WHO)
    return mapping, pairs


def _ranges(dims: dict[int, dict[int, str]], axes: list[dict]) -> dict[str, ValueRange]:
    """Each dim's range: a Dim's own, a ranged hint's, ``[2, int_oo]`` for other hints."""
    ranges: dict[str, ValueRange] = {}
    for i, spec in sorted(dims.items()):
        for axis, name in sorted(spec.items()):
            dim = axes[i][axis]
            if isinstance(dim, Dim):
                upper = math.inf if dim.max is None else dim.max
                ranges[name] = ValueRange(dim.min, upper)
            else:
                ranges.setdefault(name, dim.range() if isinstance(dim, RangedHint) else
                                  ValueRange(2, math.inf))
    return ranges
