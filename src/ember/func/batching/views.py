"""Batching rules of shape and view primitives: the batch axis stays in front.

:func:`view_params` gives a view primitive's params for a batched input; ``view_scatter``
uses it (through :func:`batched_view`) on its whole view chain, so in-place writes into views
of batched tensors batch too.
"""

from __future__ import annotations

from typing import Any

from ember.errors import OpError
from ember.func.batching import batched, pad_rank, prim, rule
from ember.ops.primitive import apply
from ember.ops.storage import as_strided

FULL = (None, None, None)  # ``:`` in a normalized basic index


def view_params(name: str, params: dict, b: int, rank: int) -> dict:
    """The params of view primitive ``name`` applied to a batched input of logical ``rank``
    whose logical output has the same rank as the physical (checked by the caller)."""
    if name == "reshape":
        return {"shape": (b,) + tuple(params["shape"])}
    if name == "permute":
        return {"dims": (0,) + tuple(d + 1 for d in params["dims"])}
    if name == "slice":
        return {"index": (FULL,) + tuple(params["index"])}
    if name in ("real", "imag", "view_as_real", "view_as_complex", "view_dtype"):  # (the
        return params                                      # batch axis untouched, in front)
    if name == "diagonal":
        return dict(params, dim1=params["dim1"] + 1, dim2=params["dim2"] + 1)
    if name == "unfold_view":
        if not rank:  # a logical 0-d input: :func:`batched_view` reshapes and slices instead
            raise OpError("vmap: unfold_view of a 0-d tensor has no batched unfold_view")
        return dict(params, dimension=params["dimension"] + 1)
    if name == "expand":
        if len(params["shape"]) != rank:
            raise OpError("vmap: an in-place write through an expand that adds dimensions "
                          "cannot be batched; clone() the expanded tensor first")
        return {"shape": (b,) + tuple(params["shape"])}
    raise OpError(f"vmap: {name} is not a view primitive")


def batched_view(view: Any, params: dict, b: int, rank: int) -> tuple:
    """The chain entries ``(primitive, params)`` that apply view ``view`` to a batched input of
    logical ``rank``: itself with :func:`view_params`, or (``unfold`` of a 0-d tensor, whose
    rule is not an ``unfold_view``) the reshape and slice its rule makes."""
    if view.name == "unfold_view" and not rank:
        return ((prim("reshape"), {"shape": (b, 1)}),
                (prim("slice"), {"index": (FULL, (0, params["size"], 1))}))
    return ((view, view_params(view.name, params, b, rank)),)


def _view_rule(name: str) -> Any:
    p = prim(name)

    def batch_view(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        (x,) = xs
        return apply(p, x, **view_params(name, params, b, x.ndim - 1))

    return batch_view


for _name in ("reshape", "permute", "slice", "diagonal"):
    rule(_name)(_view_rule(_name))


@rule("expand")
def _expand(b: int, xs: tuple, bs: tuple, *, shape: tuple) -> Any:
    x = pad_rank(xs[0], len(shape))
    return apply(prim("expand"), x, shape=(b,) + tuple(shape))


@rule("sum_to")
def _sum_to(b: int, xs: tuple, bs: tuple, *, shape: tuple) -> Any:
    (x,) = xs
    lead = x.ndim - 1 - len(shape)
    if lead > 0:  # logical leading axes go away: sum them explicitly (the batch axis stays)
        x = apply(prim("sum"), x, dims=tuple(range(1, 1 + lead)), keepdim=False)
        if tuple(x.shape[1:]) == tuple(shape):  # (the sum was all: a scalar's gradient)
            return x
    return apply(prim("sum_to"), x, shape=(b,) + tuple(shape))


@rule("triangular")
def _triangular(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
    return apply(prim("triangular"), xs[0], **params)  # it works on the last two axes


def _joining(name: str) -> Any:
    """The rule of ``cat`` or ``stack``: the batched inputs joined one dim further in."""
    def run(b: int, xs: tuple, bs: tuple, *, dim: int) -> Any:
        xs = tuple(batched(x, b, is_b) for x, is_b in zip(xs, bs))
        return apply(prim(name), *xs, dim=dim + 1)
    return run


for _name in ("cat", "stack"):
    rule(_name)(_joining(_name))


def _rank_after(name: str, params: dict, rank: int) -> int:
    """The logical rank a view primitive gives an input of logical ``rank``."""
    if name in ("reshape", "expand"):
        return len(params["shape"])
    if name == "slice":
        index = params["index"]
        return rank - sum(type(e) is int for e in index) + sum(e is None for e in index)
    if name == "view_as_real":
        return rank + 1
    if name == "view_as_complex":
        return rank - 1
    if name == "diagonal":
        return rank - 1
    if name == "unfold_view":
        return rank + 1 if rank else 1
    return rank


@rule("view_scatter")
def _view_scatter(b: int, xs: tuple, bs: tuple, *, chain: tuple) -> Any:
    base, src = (batched(x, b, is_b) for x, is_b in zip(xs, bs))
    rank = base.ndim - 1
    new_chain = []
    for view, params in chain:
        new_chain += batched_view(view, params, b, rank)
        rank = _rank_after(view.name, params, rank)
    return apply(prim("view_scatter"), base, pad_rank(src, rank), chain=tuple(new_chain))


@rule("as_strided")
def _as_strided(b: int, xs: tuple, bs: tuple, *, size: tuple, stride: tuple,
                storage_offset: int, source: tuple) -> Any:
    (x,) = xs  # one view of the batch's memory: sample i starts i batch strides further on
    return as_strided(x, (b,) + tuple(size), (x.stride(0),) + tuple(stride), storage_offset)
