"""Forward-mode differentiation: tangents flow forward through each primitive's ``jvp`` rule
in the same pass as the values, and no tape is recorded for it.

A :class:`ForwardTrace` is one *level* of forward mode: a dispatch handler that carries a
tangent for every tensor it has seen get one. Levels nest (``jvp`` inside ``jvp``): each has
its own table, the inner one computes values and tangents through the handlers beneath it, so
the outer level differentiates the inner level's work and tangents of different levels never
mix. ``ember.func.jvp`` and ``ember.autograd.forward_ad`` are built on it; :func:`jvp` here is
the direct form.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ember.autograd.graph import Node
from ember.dtypes import FLOAT
from ember.errors import GradError


class _ForwardCtx(Node):
    """The ``ctx`` a jvp rule receives: the op's inputs, params and its actual output tensors
    (so a rule reading ``ctx.out`` computes with the very tensors outer levels know)."""

    __slots__ = ("_outs",)

    def __init__(self, prim: Any, inputs: tuple, params: dict, outs: tuple) -> None:
        # not Node.__init__: this ctx is never on the tape, so it computes no edges and never
        # goes through saved-tensor hooks
        self.prim, self.inputs, self.params, self.outputs = prim, inputs, params, outs
        self.device, self._outs = outs[0].device, outs
        self.edges = self.versions = self.hooks = self.retained = self.stack = None
        self.released = False

    def output(self, index: int) -> Any:
        return self._outs[index]


class ForwardTrace:
    """One level of forward mode: a dispatch handler holding a tangent per tensor.

    Tangents are found by tensor identity, or, for a tensor that a recorded node rebuilds
    from its saved output (the engine's ``ctx.out`` in a backward run inside this level, as in
    forward-over-reverse Hessian-vector products), by that node and output index.
    """

    def __init__(self) -> None:
        # id(tensor) -> (tensor, tangent, its version then: a view written since is stale)
        self.tangents: dict[int, tuple[Any, Any, int]] = {}
        self.by_node: dict[tuple[Any, int], Any] = {}   # (node, output index) -> tangent
        # id(base) -> views of it given a tangent while it had none (make_dual's result): the
        # tangent of such a view is its own, not part of one of the memory's base (PyTorch's)
        self.owners: dict[int, list] = {}
        # id(base) -> views with no tangent though the memory is a dual's (unpack_dual's
        # primal): nor have the views taken of them
        self.tangentless: dict[int, list] = {}

    def tangent(self, t: Any) -> Any:
        """The tangent of ``t`` at this level, or None."""
        entry = self.tangents.get(id(t))
        if entry is not None and entry[0] is t:
            if entry[2] == t._vc.value or t._view is None:
                return entry[1]
            return self._view_tangent(t, entry[1])
        if getattr(t, "_view", None) is not None:
            return self._view_tangent(t, None)
        node = getattr(t, "_node", None)
        if node is not None:
            return self.by_node.get((node, t._idx))
        return None

    def _view_tangent(self, t: Any, own: Any) -> Any:
        """The tangent of a view whose memory was written in place since its tangent ``own``
        was set (through its base or another view): the view chain applied to its owner's
        tangent; ``own`` still if it owns its tangent or its owner has none."""
        from ember.ops.primitive import replay_view, run_below

        owner, chain = self._owner(t)
        base = None if owner is t else self.tangent(owner)
        if base is None:
            return own
        tangent = run_below(self, replay_view, base, chain)
        self._put(t, tangent)
        return tangent

    def _owner(self, t: Any) -> tuple[Any, tuple]:
        """Whose tangent the view ``t``'s is a part of, and the view chain from it: a view
        with none that ``t`` is a view of (see ``tangentless``), else the outermost owner (see
        ``owners``), else the memory's base."""
        view = t._view
        for o in self.tangentless.get(id(view.base), ()):
            if _within(o._view.chain, view.chain):
                return o, view.chain[len(o._view.chain):]
        best, depth = view.base, -1
        for o in self.owners.get(id(view.base), ()):
            c = o._view.chain
            if (depth < 0 or len(c) < depth) and _within(c, view.chain):
                best, depth = o, len(c)
        return best, view.chain[max(depth, 0):]

    def set(self, t: Any, tangent: Any) -> None:
        """Gives ``t`` a tangent (an op's result, a dual): a view of memory whose base has no
        tangent owns it."""
        view = t._view
        if view is not None and self.tangent(view.base) is None:
            self.owners.setdefault(id(view.base), []).append(t)
        self._put(t, tangent)

    def set_none(self, t: Any) -> None:
        """``t`` has no tangent at this level, nor has a view taken of it, though its memory
        is a dual's (``unpack_dual``'s primal)."""
        if t._view is not None:
            self.tangentless.setdefault(id(t._view.base), []).append(t)
        self._put(t, None)

    def _put(self, t: Any, tangent: Any) -> None:
        self.tangents[id(t)] = (t, tangent, t._vc.value)
        if t._node is not None:
            self.by_node[(t._node, t._idx)] = tangent

    # -- in-place ops (told by ember.ops.inplace) --------------------------------------------
    def on_alias(self, alias: Any, original: Any) -> None:
        """An in-place op made an alias of ``original`` to compute from: same tangent."""
        tangent = self.tangent(original)
        if tangent is not None:
            self._put(alias, tangent)

    def on_metadata_change(self, x: Any, name: str, traceable: bool) -> None:
        """``x`` changes its shape or strides in place (``unsqueeze_``, ``t_``, ...):
        followed (see :meth:`on_reshaped`); a change of memory (``resize_``, ``set_``) of a
        tensor with a tangent is refused, as PyTorch refuses it."""
        if not traceable and self.tangent(x) is not None:
            raise GradError(f"{name}: cannot change the memory of a tensor (shape "
                            f"{tuple(x.shape)}) that has a forward-mode tangent (jvp, jacfwd). "
                            "Hint: make a new tensor instead (x.new_zeros(...), x.reshape(...))")

    def on_reshape_alias(self, alias: Any, x: Any) -> None:
        """The view op of an in-place shape change will read ``alias`` of ``x``."""
        self.on_alias(alias, x)

    def on_reshaped(self, x: Any, out: Any) -> None:
        """``x`` became the view ``out`` in place: it takes ``out``'s tangent."""
        tangent = self.tangent(out)
        if tangent is not None or id(x) in self.tangents:
            self._put(x, tangent)

    def on_inplace(self, target: Any, result: Any) -> None:
        """An in-place op wrote ``result`` into ``target``: its tangent moves along."""
        from ember.ops.creation import zeros_like
        from ember.ops.primitive import apply, run_below

        tangent = self.tangent(result)
        if tangent is None and self.tangent(target) is None:
            return
        tangent = run_below(self, zeros_like, target) if tangent is None else tangent
        self._put(target, tangent)
        if target._view is not None:  # its owner's tangent changes where the view writes
            from ember.ops.inplace import ViewScatter

            owner, chain = self._owner(target)
            if owner is not target:
                owned = self.tangent(owner)
                if owned is None:
                    owned = run_below(self, zeros_like, owner)
                self._put(owner, run_below(self, apply, ViewScatter, owned, tangent,
                                           chain=chain))

    # -- every primitive -------------------------------------------------------------------
    def __call__(self, prim: Any, inputs: tuple, params: dict) -> Any:
        from ember.ops.primitive import apply_below, run_below

        out = apply_below(self, prim, inputs, params)
        if not prim.differentiable:
            return out
        outs = out if isinstance(out, tuple) else (out,)
        if jvp_step(prim, inputs, params, outs, [self.tangent(t) for t in inputs], self.set,
                    partial(run_below, self)):
            self.stepped(prim, inputs, params, outs)
        return out

    def stepped(self, prim: Any, inputs: tuple, params: dict, outs: tuple) -> None:
        """Told of each primitive application a tangent went through (``linearize``'s
        recording keeps them)."""

    # -- custom Functions (told by ember.autograd.function) ------------------------------
    def apply_function(self, cls: type, args: tuple, kwargs: dict) -> tuple[Any, Any]:
        """Runs a custom Function at this level: its ``forward`` below this level, then its
        ``jvp`` static method for the output tangents. Returns ``(outputs, ctx)``."""
        from ember.autograd.function import Function, run_function
        from ember.ops.creation import zeros_like
        from ember.ops.primitive import run_below
        from ember.tensor import Tensor

        # the tangents as the arguments have them before forward (which may write one in place,
        # ctx.mark_dirty: jvp then gets its old tangent, as in PyTorch)
        tangents = [self.tangent(a) if isinstance(a, Tensor) else None for a in args]
        out, ctx = run_below(self, run_function, cls, args, kwargs)
        if all(d is None for d in tangents):
            return out, ctx
        if cls.jvp is Function.jvp:
            raise GradError(
                f"{cls.__name__}: forward-mode AD (jvp, jacfwd, hessian, forward_ad) reached "
                f"this custom Function, which has no jvp. Hint: define "
                f"`@staticmethod def jvp(ctx, *tangents)` on {cls.__name__} returning the "
                "output tangent(s); save what it needs with ctx.save_for_forward(...)")
        if ctx.materialize_grads:
            tangents = [run_below(self, zeros_like, a) if d is None and isinstance(a, Tensor)
                        else d for a, d in zip(args, tangents)]
        outs = out if isinstance(out, tuple) else (out,)
        ctx._in_jvp, ctx._jvp_outputs = True, outs  # (a saved output is read as returned)
        try:
            result = run_below(self, cls.jvp, ctx, *tangents)
        finally:
            ctx._in_jvp, ctx._jvp_outputs = False, ()
        results = result if isinstance(result, tuple) else (result,)
        if len(results) != len(outs):
            raise GradError(f"{cls.__name__}.jvp returned {len(results)} tangents for "
                            f"{len(outs)} outputs")
        for o, d in zip(outs, results):
            if d is None or not isinstance(o, Tensor) or o.dtype.category < FLOAT:
                continue
            if tuple(d.shape) != tuple(o.shape):
                raise GradError(f"{cls.__name__}.jvp returned a tangent of shape "
                                f"{tuple(d.shape)} for an output of shape {tuple(o.shape)}")
            self.set(o, d)
        return out, ctx


def jvp_step(prim: Any, inputs: tuple, params: dict, outs: tuple, tangents: list,
             put: Callable, run: Callable) -> bool:
    """One primitive application in forward mode: ``prim``'s jvp rule on the ``tangents`` of
    its ``inputs`` (None: no tangent; zeros unless the rule takes None), then ``put(output,
    tangent)`` for each floating output's. ``run(fn, *args)`` calls the rule where the level
    computes. False, and nothing run, where no input has a tangent. (A ForwardTrace's step,
    and each step of ``linearize``'s replay.)"""
    if all(d is None for d in tangents):
        return False
    if outs[0].dtype.is_complex and not prim.complex_grad:
        from ember.ops.primitive import complex_grad_error

        raise complex_grad_error(prim, inputs)
    ctx = _ForwardCtx(prim, inputs, params, outs)
    if not prim.jvp_takes_none and any(d is None for d in tangents):
        from ember.ops.creation import zeros_like

        tangents = [run(zeros_like, t) if d is None else d for t, d in zip(inputs, tangents)]
    result = run(prim.jvp, ctx, *tangents)
    for o, d in zip(outs, result if isinstance(result, tuple) else (result,)):
        if d is not None and o.dtype.category >= FLOAT:
            put(o, d)
    return True


def alias(x: Any) -> Any:
    """A new tensor object for ``x``'s value, made by an identity view op, so every active
    transform and the tape follow it (unlike ``detach``, which cuts them all)."""
    from ember.ops.primitive import apply
    from ember.ops.shape import Reshape

    return apply(Reshape, x, shape=tuple(x.shape))


def jvp(func: Callable[..., Any], primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """Evaluates ``func(*primals)`` and its directional derivative along ``tangents``, in one
    forward pass. (``ember.func.jvp`` is the full form: pytrees, ``has_aux``.)

    Example:
        >>> x = ember.randn(3)
        >>> out, dout = ember.autograd.forward.jvp(ember.sin, (x,), (ember.ones_like(x),))
        >>> bool(ember.allclose(dout, ember.cos(x)))
        True
    """
    from ember.ops.creation import zeros_like
    from ember.ops.primitive import pop_handler, push_handler

    trace = ForwardTrace()
    primals = tuple(alias(p) for p in primals)
    for p, d in zip(primals, tangents):
        if d is not None:
            trace.set(p, d)
    push_handler(trace)
    try:
        out = func(*primals)
    finally:
        pop_handler(trace)
    outs = out if isinstance(out, tuple) else (out,)
    douts = []
    for o in outs:
        d = trace.tangent(o)
        douts.append(zeros_like(o) if d is None else d)
    return out, (tuple(douts) if isinstance(out, tuple) else douts[0])


def _within(chain: tuple, view_chain: tuple) -> bool:
    """Whether a view made by ``view_chain`` is one made by ``chain`` or a view of it."""
    return len(chain) <= len(view_chain) and all(a is b for a, b in zip(chain, view_chain))
