"""``linearize``: a function's value at a point and its Jacobian-vector product there as a
function of the tangents, with ``func`` run once in forward mode (the *recording*, which also
gives the value) and each ``jvp_fn`` call replaying the recorded primitives' ``jvp`` rules on
its tangents (``ForwardTrace``'s own step, :func:`ember.autograd.forward.jvp_step`).

A recording that saw a random draw (an impure primitive: PyTorch's ``jvp_fn`` draws again on
each call), an in-place write, a custom Function or a tangent taken back off a tensor
(``unpack_dual``) cannot be replayed from the rules alone; there it is dropped and each
``jvp_fn`` call runs ``func`` again in forward mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.autograd.forward import ForwardTrace, jvp_step
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

    def __call__(self, prim: Any, inputs: tuple, params: dict) -> Any:
        if not prim.pure:  # (a random draw: PyTorch's jvp_fn draws again on each call)
            self.replayable = False
        return super().__call__(prim, inputs, params)

    def stepped(self, prim: Any, inputs: tuple, params: dict, outs: tuple) -> None:
        self.steps.append((prim, inputs, params, outs))

    def replay(self, inputs: list, tangents: list) -> Callable[[Tensor], Tensor]:
        """Runs the recorded ``jvp`` rules on ``tangents`` of the recording's ``inputs``;
        returns ``tangent_of(tensor)`` (zeros where none reached it)."""
        table = ForwardTrace()  # (only its table: never on the dispatch stack)
        for p, d in zip(inputs, tangents):
            if d is not None:
                table.set(p, d if d.dtype is p.dtype else d.to(p.dtype))
        for prim, ins, params, outs in self.steps:
            jvp_step(prim, ins, params, outs, [table.tangent(t) for t in ins], table.set,
                     _call)
        return lambda o: _or_zeros(table.tangent(o), o)


def _call(fn: Callable, *args: Any) -> Any:
    return fn(*args)


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
    in-place change later, or by ``func`` itself, does not move the point). ``func`` runs once
    here, recorded in forward mode (PyTorch's runs it twice), and ``jvp_fn`` replays the
    recorded linear map without running ``func`` (its Python side effects do not repeat).
    Values ``func`` computed from other tensors (``w.sin()`` of a closure's ``w``) are the
    ones of that run (PyTorch's: of ``jvp_fn``'s first call). A ``func`` with a random draw,
    an in-place write or a custom Function runs again in forward mode on each call: as
    PyTorch's, each call draws anew.

    Example:
        >>> out, jvp_fn = ember.func.linearize(ember.exp, ember.zeros(2))
        >>> jvp_fn(ember.ones(2))
        tensor([1., 1.])
    """
    leaves, spec = tree_flatten(primals)
    copies = [x.clone() if isinstance(x, Tensor) else x for x in leaves]
    point, versions = tree_unflatten(copies, spec), _versions(leaves)
    recording, inputs, out = _record(func, leaves, spec)
    outs, out_spec = tree_flatten(out)
    primal_of = {id(a): p for a, p in zip(inputs, leaves)}  # (an input returned: the primal)
    out = tree_unflatten([primal_of.get(id(o), o) for o in outs], out_spec)
    # (a func that changed its input in place runs on a fresh copy of the point each call)
    changes_input = _versions(leaves) != versions
    if changes_input or not recording.replayable:
        recording = inputs = None  # (frees the intermediates it kept)
    # the replay reads the primals and outputs themselves: once one changed, it reruns func
    read, versions = leaves + outs, _versions(copies)
    read_versions = _versions(read)

    def jvp_fn(*tangents: Any) -> Any:
        p_leaves, _, t_leaves = _checked(point, tangents, "linearize's jvp_fn",
                                         same_dtype=True)
        if recording is not None and _versions(read) == read_versions:
            tangent_of = recording.replay(inputs, t_leaves)
            mine = {id(_root(t)) for t in t_leaves if isinstance(t, Tensor)}
            return tree_unflatten([_fresh(tangent_of(o), mine) for o in outs], out_spec)
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


def _record(func: Callable, leaves: list, spec: Any) -> tuple[_Recording, list, Any]:
    """``func`` run once at ``leaves`` in a recording forward-mode level (zero tangents: only
    which primitives the tangents pass through matters): the recording, the inputs it saw
    and ``func``'s result."""
    recording, inputs = _Recording(), []

    def call(*xs: Any) -> Any:
        inputs.extend(xs)
        return func(*tree_unflatten(list(xs), spec))
    zeros = [zeros_like(x) if isinstance(x, Tensor) else None for x in leaves]
    out = jvp_leaves(call, leaves, zeros, trace=recording)[0]
    if not all(isinstance(o, Tensor) for o in tree_flatten(out)[0]):
        recording.replayable = False  # (jvp_fn's rerun names the bad output)
    return recording, inputs, out


def _root(t: Tensor) -> Tensor:
    return t if t._base is None else t._base


def _fresh(d: Tensor, tangents: set[int]) -> Tensor:
    """``d``, or a copy of it where it is (a view of) a tangent given to jvp_fn: as
    PyTorch's jvp_fn, the result never shares memory with the caller's tangents."""
    return d.clone() if id(_root(d)) in tangents else d


def _versions(leaves: list) -> list[int]:
    return [x._version for x in leaves if isinstance(x, Tensor)]
