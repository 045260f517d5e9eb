"""``dynamic_shapes`` for :func:`ember.onnx.export`, as ``torch.onnx.export`` (dynamo) takes it:
turned into the ``dynamic_axes`` the exporter follows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ember.errors import ArgumentError
from ember.export.dynamic_shapes import Dim, DimHint, hint_of

_WHO = "ember.onnx.export"


def as_dynamic_axes(dynamic_shapes: Any, leaf_names: list[str],
                    in_names: list[str]) -> dict[str, dict[int, str]]:
    """``dynamic_shapes`` (a dict by the model's argument names, or a tuple or list with one
    entry per tensor argument; each entry ``{axis: Dim | str | Dim.AUTO | None}`` or one item
    per axis) as ``dynamic_axes`` keyed by ``in_names``. ``leaf_names`` are the argument
    names of the tensors, in input order."""
    if isinstance(dynamic_shapes, Mapping):
        pairs = []
        for key, spec in dynamic_shapes.items():
            if key not in leaf_names:
                raise ArgumentError(f"{_WHO}: dynamic_shapes names {key!r}, which is no tensor "
                                    f"argument of the model ({leaf_names}); nested arguments "
                                    "take dynamic_axes by input name")
            pairs.append((leaf_names.index(key), spec))
    elif isinstance(dynamic_shapes, Sequence) and not isinstance(dynamic_shapes, str):
        if len(dynamic_shapes) != len(leaf_names):
            raise ArgumentError(f"{_WHO}: dynamic_shapes has {len(dynamic_shapes)} entries for "
                                f"{len(leaf_names)} tensor arguments ({leaf_names})")
        pairs = list(enumerate(dynamic_shapes))
    else:
        raise ArgumentError(f"{_WHO}: dynamic_shapes must be a dict by argument name or a "
                            f"tuple, got {type(dynamic_shapes).__name__}")
    axes = {}
    for i, spec in pairs:
        named = {a: _dim_name(d, leaf_names[i], a) for a, d in _by_axis(spec, leaf_names[i])}
        named = {a: n for a, n in named.items() if n is not None}
        if named:
            axes[in_names[i]] = named
    return axes


def _by_axis(spec: Any, arg: str) -> list[tuple[int, Any]]:
    if spec is None:
        return []
    if isinstance(spec, Mapping):
        return [(int(a), d) for a, d in spec.items()]
    if isinstance(spec, Sequence) and not isinstance(spec, str):
        return list(enumerate(spec))
    raise ArgumentError(f"{_WHO}: dynamic_shapes of {arg!r} must be a dict {{axis: Dim}} or "
                        f"one entry per axis, got {spec!r}")


def _dim_name(dim: Any, arg: str, axis: int) -> str | None:
    if dim is None or hint_of(dim) is DimHint.STATIC:
        return None
    if isinstance(dim, str):
        return dim
    if isinstance(dim, Dim):
        return dim.__name__
    if hint_of(dim) in (DimHint.AUTO, DimHint.DYNAMIC):  # (a range is not ONNX's to keep)
        return f"{arg}_dim_{axis}"
    raise ArgumentError(f"{_WHO}: dynamic_shapes axis {axis} of {arg!r} is {dim!r}; give a "
                        "Dim, a name, Dim.AUTO/Dim.DYNAMIC or None (a size derived from "
                        "another, Dim * k, is followed from the model without being named)")
