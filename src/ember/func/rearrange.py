"""``rearrange``: einops-style reordering of axes (``torch.func.rearrange``).

A pattern ``"left -> right"`` names the axes of the input and of the result. Each side is a
list of axis names; a parenthesized group ``(h w)`` is one dimension made of several axes
(split on the left, merged on the right), ``...`` stands for the axes not named, ``1`` and
``()`` for a dimension of size 1. The result is a reshape, a permute and a reshape, so it is
a view where the strides allow and runs under every transform.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

from ember.errors import ArgumentError, ArgumentTypeError, ShapeError
from ember.tensor import Tensor

__all__ = ["rearrange"]

_ELLIPSIS = "…"  # (the ellipsis' name in a parsed side; its axes are "…0", "…1", ...)
_TOKEN = re.compile(r"\.\.\.|\(|\)|[^\s()]+")


def _axes(dims: Sequence) -> tuple[str, ...]:
    """The axis names of ``dims`` in order, with the groups opened and the unit axes (``1``)
    left out."""
    return tuple(a for d in dims for a in (d if isinstance(d, tuple) else (d,)) if a != "1")


def _parse_side(side: str, pattern: str) -> tuple[tuple[str, ...] | str, ...]:
    """One side of the pattern: its dimensions, each an axis name, ``"1"``, the ellipsis, or
    a tuple of those in parentheses (a composed dimension)."""
    dims: list[tuple[str, ...] | str] = []
    group: list[str] | None = None
    for tok in _TOKEN.findall(side):
        if tok == "(":
            if group is not None:
                raise ArgumentError(f"rearrange: nested parentheses in {pattern!r}")
            group = []
            continue
        if tok == ")":
            if group is None:
                raise ArgumentError(f"rearrange: unbalanced ')' in {pattern!r}")
            dims.append(tuple(group))
            group = None
            continue
        if tok == "...":
            tok = _ELLIPSIS
        elif "." in tok:
            raise ArgumentError(f"rearrange: dots may only appear as an ellipsis '...', got "
                                f"{tok!r} in {pattern!r}")
        elif tok != "1" and (not tok.isidentifier() or tok.startswith("_")
                             or tok.endswith("_")):
            raise ArgumentError(f"rearrange: invalid axis name {tok!r} in {pattern!r}: a name "
                                "is a Python identifier that does not start or end with '_'"
                                + (" (only unnamed axes of size 1 are allowed)"
                                   if tok.isdigit() else ""))
        (dims if group is None else group).append(tok)
    if group is not None:
        raise ArgumentError(f"rearrange: unbalanced '(' in {pattern!r}")
    names = _axes(dims)
    for n in set(names):
        if names.count(n) > 1:
            what = "the ellipsis '...'" if n == _ELLIPSIS else f"the axis {n!r}"
            raise ArgumentError(f"rearrange: {what} appears twice on one side of {pattern!r}")
    return tuple(dims)


def _expand_ellipsis(dims: tuple, n_ell: int) -> tuple:
    """Replaces the ellipsis (alone, or inside a group) by ``n_ell`` axis names."""
    ell = tuple(f"{_ELLIPSIS}{i}" for i in range(n_ell))
    out: list = []
    for d in dims:
        if d == _ELLIPSIS:
            out.extend(ell)
        elif isinstance(d, tuple):
            out.append(tuple(a for n in d for a in (ell if n == _ELLIPSIS else (n,))))
        else:
            out.append(d)
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _parse(pattern: str, length_names: tuple[str, ...]) -> tuple[tuple, tuple]:
    """Both sides of ``pattern``, checked against each other and against the names given in
    ``axes_lengths`` (cached: a pattern is parsed once, not on every call)."""
    if pattern.count("->") != 1:
        raise ArgumentError(f"rearrange: the pattern must be a string 'left -> right', got "
                            f"{pattern!r}")
    lhs, rhs = pattern.split("->")
    left, right = _parse_side(lhs, pattern), _parse_side(rhs, pattern)
    if any(isinstance(d, tuple) and _ELLIPSIS in d for d in left):
        raise ArgumentError(f"rearrange: the ellipsis cannot be inside parentheses on the left "
                            f"of {pattern!r}")
    names_l, names_r = set(_axes(left)), set(_axes(right))
    if names_l != names_r:
        only = sorted((names_l ^ names_r) - {_ELLIPSIS}) or ["..."]
        raise ArgumentError(f"rearrange: {', '.join(map(repr, only))} on one side of {pattern!r} "
                            "only; every axis (and '...') must be on both sides")
    extra = sorted(set(length_names) - names_l)
    if extra:
        raise ArgumentError(f"rearrange: axes_lengths names {extra}, not axes of {pattern!r}")
    return left, right


@functools.lru_cache(maxsize=256)
def _layout(pattern: str, length_names: tuple[str, ...], n_ell: int) -> tuple:
    """For an input whose ellipsis stands for ``n_ell`` axes: the left side with the ellipsis
    expanded, the axis names of each of its dimensions, all its axis names, the permutation
    to the right side's order (None where it is the identity), and the axis names of each
    result dimension (cached as ``_parse``)."""
    left, right = (_expand_ellipsis(side, n_ell) for side in _parse(pattern, length_names))
    flat_l, flat_r = _axes(left), _axes(right)
    order = tuple(flat_l.index(a) for a in flat_r)
    return (left, tuple(_axes((d,)) for d in left), flat_l,
            None if order == tuple(range(len(order))) else order,
            tuple(_axes((d,)) for d in right))


def _show(d: tuple | str) -> str:
    return f"({' '.join(d)})" if isinstance(d, tuple) else d


def _axis_sizes(left: tuple, groups: tuple, shape: tuple, axes_lengths: dict,
                pattern: str) -> dict[str, int]:
    """The size of every named axis, from the input's shape and ``axes_lengths``; ``groups``
    holds the axis names of each dimension of ``left``."""
    sizes = dict(axes_lengths)
    for d, members, n in zip(left, groups, shape):
        if len(members) == 1 and members[0] not in sizes:  # (a plain axis: the common case)
            sizes[members[0]] = n
            continue
        if d == "1":
            if n != 1:
                raise ShapeError(f"rearrange: {pattern!r} has an axis of size 1 where the input "
                                 f"(shape {shape}) has size {n}")
            continue
        unknown = [a for a in members if a not in sizes]
        known = math.prod(sizes[a] for a in members if a in sizes)
        if len(unknown) > 1:
            raise ShapeError(f"rearrange: cannot infer the sizes of both {unknown[0]!r} and "
                             f"{unknown[1]!r} from one dimension of size {n} in {pattern!r}. "
                             f"Hint: give one, e.g. rearrange(x, pattern, {unknown[0]}=...)")
        if unknown:
            if known == 0 or n % known:
                raise ShapeError(f"rearrange: the dimension of size {n} does not split evenly "
                                 f"into {_show(d)} with {known} for the known axes in {pattern!r}")
            sizes[unknown[0]] = n // known
        elif known != n:
            raise ShapeError(f"rearrange: the dimension of size {n} does not match {_show(d)} = "
                             f"{known} in {pattern!r} (input shape {shape})")
    return sizes


def rearrange(tensor: Tensor | Sequence[Tensor], pattern: str, **axes_lengths: int) -> Tensor:
    """Reorders, splits and merges axes by an einops pattern, as ``torch.func.rearrange``
    (a list of tensors is stacked along a new first axis first).

    Args:
        tensor: a tensor, or a list/tuple of tensors of one shape.
        pattern: ``"left -> right"``, e.g. ``"b c h w -> b (h w) c"``; ``...`` for the axes
            not named, ``1`` or ``()`` for a dimension of size 1.
        axes_lengths: sizes of axes that cannot be inferred (``h=2`` in ``"(h w) -> h w"``).

    Example:
        >>> x = ember.arange(24).reshape(2, 3, 4)
        >>> ember.func.rearrange(x, "b c h -> b (h c)").shape
        ember.Size([2, 12])
        >>> ember.func.rearrange(x, "b (c1 c2) h -> c2 b c1 h", c1=3).shape
        ember.Size([1, 2, 3, 4])
    """
    if isinstance(tensor, (list, tuple)):
        from ember.ops.join import stack

        tensor = stack(list(tensor))
    if not isinstance(tensor, Tensor):
        raise ArgumentError(f"rearrange: expected a tensor or a list of tensors, got "
                            f"{type(tensor).__name__}")
    if not isinstance(pattern, str):
        raise ArgumentError(f"rearrange: the pattern must be a string 'left -> right', got "
                            f"{pattern!r}")
    length_names = tuple(sorted(axes_lengths))
    left, _ = _parse(pattern, length_names)
    for k, v in axes_lengths.items():
        if type(v) is not int:  # (bool and NumPy ints too, as torch)
            raise ArgumentTypeError(f"rearrange: axis lengths must be Python ints, got {k}={v!r} "
                                    f"({type(v).__name__}) for {pattern!r}. Hint: {k}=int(...)")
        if v < 0:
            raise ArgumentError(f"rearrange: axis lengths must be >= 0, got {k}={v} for "
                                f"{pattern!r}")
    shape = tuple(tensor.shape)
    has_ell = _ELLIPSIS in left
    n_ell = len(shape) - (len(left) - 1) if has_ell else 0
    if (has_ell and n_ell < 0) or (not has_ell and len(left) != len(shape)):
        raise ShapeError(f"rearrange: {pattern!r} names {len(left) - has_ell} dimensions"
                         f"{' and more' if has_ell else ''}, the input has {len(shape)} "
                         f"(shape {shape})")
    left, groups_l, flat_l, order, groups_r = _layout(pattern, length_names, n_ell)
    sizes = _axis_sizes(left, groups_l, shape, axes_lengths, pattern)
    out = tensor.reshape(tuple(sizes[a] for a in flat_l))
    if order is not None:
        out = out.permute(order)
    return out.reshape(tuple(math.prod(sizes[a] for a in g) for g in groups_r))
