"""``linearize``: a function's value at a point and its Jacobian-vector product there as a
function of the tangents, with ``func`` run once in forward mode (the *recording*) and each
``jvp_fn`` call replaying the recorded primitives' ``jvp`` rules on its tangents.

A recording that saw an in-place write, a custom Function or a tangent taken back off a tensor
(``unpack_dual``) cannot be replayed from the rules alone; there each ``jvp_fn`` call runs
``func`` again in forward mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.autograd.forward import ForwardTrace, _ForwardCtx
from ember.dtypes import FLOAT
from ember.errors import GradError
from ember.func.forward import _checked, _jvp_of_leaves, jvp_leaves
from ember.func.pytree import tree_flatten, tree_unflatten
from ember.ops.creation import zeros_like
from ember.tensor import Tensor

__all__ = ["linearize"]


class _Recording(ForwardTrace):
    """A forward-mode level that also keeps each primitive application that had a tangent in,
    and notes whether anything happened that the ``jvp`` rules alone cannot replay."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[tuple] = []
        self.replayable = True
        self.outs: list = []

    def __call__(self, prim: Any, inputs: tuple, params: dict) -> Any:
        tangent_in = prim.differentiable and any(
            isinstance(t, Tensor) and self.tangent(t) is not None for t in inputs)
        out = super().__call__(prim, inputs, params)
        if tangent_in:
            self.steps.append((prim, inputs, params, out if isinstance(out, tuple) else (out,)))
        return out

    def replay(self, inputs: list, tangents: list) -> Callable[[Tensor], Tensor]:
        """Runs the recorded ``jvp`` rules on ``tangents`` of the recording's ``inputs``;
        returns ``tangent_of(tensor)`` (zeros where none reached it)."""
        table = ForwardTrace()  # (only its table: never on the dispatch stack)
        for p, d in zip(inputs, tangents):
            if d is not None:
                table._put(p, d if d.dtype is p.dtype else d.to(p.dtype))
        for prim, ins, params, outs in self.steps:
            ds = [table.tangent(t) if isinstance(t, Tensor) else None for t in ins]
            if all(d is None for d in ds):
                continue
            if not prim.jvp_takes_none:
                ds = [zeros_like(t) if d is None else d for t, d in zip(ins, ds)]
            result = prim.jvp(_ForwardCtx(prim, ins, params, outs), *ds)
            for o, d in zip(outs, result if isinstance(result, tuple) else (result,)):
                if d is not None and o.dtype.category >= FLOAT:
                    table._put(o, d)
        return lambda o: _or_zeros(table.tangent(o), o)


def _not_replayable(name: str) -> Callable:
    def hook(self: _Recording, *args: Any) -> Any:
        self.replayable = False
        return getattr(ForwardTrace, name)(self, *args)
    return hook


# ForwardTrace's entries for in-place writes, aliases, custom Functions and unpacked duals
for _name in ("on_alias", "on_metadata_change", "on_reshape_alias", "on_reshaped",
              "on_inplace", "set_none", "apply_function"):
    setattr(_Recording, _name, _not_replayable(_name))


def _or_zeros(d: Any, o: Tensor) -> Tensor:
    return zeros_like(o) if d is None else d


def linearize(func: Callable, *primals: Any) -> tuple[Any, Callable]:
    """Returns ``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian-vector
    product at ``primals`` (their values when linearize was called: a copy is kept, so an
    in-place change later, or by ``func`` itself, does not move the point). As PyTorch's,
    ``func`` runs twice here (once for the value, once recorded in forward mode) and
    ``jvp_fn`` replays the recorded linear map without running ``func`` (its side effects
    and random draws do not repeat); a ``func`` with an in-place write or a custom Function
    runs again in forward mode on each call.

    Example:
        >>> out, jvp_fn = ember.func.linearize(ember.exp, ember.zeros(2))
        >>> jvp_fn(ember.ones(2))
        tensor([1., 1.])
    """
    leaves, spec = tree_flatten(primals)
    copies = [x.clone() if isinstance(x, Tensor) else x for x in leaves]
    point, versions = tree_unflatten(copies, spec), _versions(leaves)
    out = func(*primals)
    # (a func that changed its input in place runs on a fresh copy of the point each call)
    changes_input = _versions(leaves) != versions
    versions = _versions(copies)
    recording, inputs = _record(func, copies, spec) if not changes_input else (None, None)
    outs, out_spec = tree_flatten(out)

    def jvp_fn(*tangents: Any) -> Any:
        p_leaves, _, t_leaves = _checked(point, tangents, "linearize's jvp_fn",
                                         same_dtype=True)
        if recording is not None and recording.replayable:
            tangent_of = recording.replay(inputs, t_leaves)
            return tree_unflatten([tangent_of(o) for o in recording.outs], out_spec)
        if changes_input:
            p_leaves = [x.clone() for x in p_leaves]
        dout = _jvp_of_leaves(func, p_leaves, spec, t_leaves, False, "linearize's jvp_fn")[1]
        if _versions(copies) != versions:
            raise GradError("linearize's jvp_fn: func changed its input in place on a call "
                            "(not when linearize ran it), which moved the point of the "
                            "linearization. Hint: linearize needs a function that leaves its "
                            "inputs alone: clone them in func before an in-place op")
        return dout
    return out, jvp_fn


def _record(func: Callable, copies: list, spec: Any) -> tuple[_Recording, list]:
    """``func`` run once at the point in a recording forward-mode level (zero tangents: only
    which primitives the tangents pass through matters)."""
    recording, inputs = _Recording(), []

    def call(*xs: Any) -> Any:
        inputs.extend(xs)
        return func(*tree_unflatten(list(xs), spec))
    zeros = [zeros_like(x) if isinstance(x, Tensor) else None for x in copies]
    recording.outs = tree_flatten(jvp_leaves(call, copies, zeros, trace=recording)[0])[0]
    if not all(isinstance(o, Tensor) for o in recording.outs):
        recording.replayable = False  # (jvp_fn's rerun names the bad output)
    return recording, inputs


def _versions(leaves: list) -> list[int]:
    return [x._version for x in leaves if isinstance(x, Tensor)]
