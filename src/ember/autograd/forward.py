"""Forward-mode differentiation: tangents flow forward through each primitive's ``jvp`` rule
in the same pass as the values, and no tape is recorded.

This is the engine under ``ember.func.jvp``; :func:`jvp` is its direct form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.autograd.grad_mode import no_grad
from ember.autograd.graph import Node


class _ForwardTrace:
    """A dispatch handler carrying a tangent for every tensor that has one."""

    def __init__(self) -> None:
        self.tangents: dict[int, tuple[Any, Any]] = {}  # id(tensor) -> (tensor, tangent)

    def tangent(self, t: Any) -> Any:
        entry = self.tangents.get(id(t))
        return entry[1] if entry is not None and entry[0] is t else None

    def set(self, t: Any, tangent: Any) -> None:
        self.tangents[id(t)] = (t, tangent)

    def on_alias(self, alias: Any, original: Any) -> None:
        """An in-place op made an alias of ``original`` to compute from: same tangent."""
        tangent = self.tangent(original)
        if tangent is not None:
            self.set(alias, tangent)

    def on_inplace(self, target: Any, result: Any) -> None:
        """An in-place op wrote ``result`` into ``target``: its tangent moves along."""
        from ember.ops.creation import zeros_like

        tangent = self.tangent(result)
        if tangent is None and self.tangent(target) is None:
            return
        tangent = zeros_like(target) if tangent is None else tangent
        self.set(target, tangent)
        view = target._view
        if view is not None:  # the base's tangent changes where the view writes
            from ember.ops.inplace import ViewScatter
            from ember.ops.primitive import apply, run_below

            base_tangent = self.tangent(view.base)
            base_tangent = zeros_like(view.base) if base_tangent is None else base_tangent
            self.set(view.base, run_below(self, apply, ViewScatter, base_tangent, tangent,
                                          chain=view.chain))

    def __call__(self, prim: Any, inputs: tuple, params: dict) -> Any:
        from ember.ops.creation import zeros_like
        from ember.ops.primitive import apply_below, run_below

        out = apply_below(self, prim, inputs, params)
        tangents = [self.tangent(t) for t in inputs]
        if not prim.differentiable or all(d is None for d in tangents):
            return out
        outs = out if isinstance(out, tuple) else (out,)
        ctx = Node(prim, inputs, params, None,
                   tuple((o._data, o._vc, o._vc.value) for o in outs), outs[0].device)
        tangents = [zeros_like(t) if d is None else d for t, d in zip(inputs, tangents)]
        result = run_below(self, prim.jvp, ctx, *tangents)
        for o, d in zip(outs, result if isinstance(result, tuple) else (result,)):
            if d is not None:
                self.set(o, d)
        return out


def jvp(func: Callable[..., Any], primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    """Evaluates ``func(*primals)`` and its directional derivative along ``tangents``.

    Example:
        >>> out, dout = ember.autograd.forward.jvp(ember.sin, (x,), (ember.ones_like(x),))
        >>> # dout == cos(x)
    """
    from ember.ops.creation import zeros_like
    from ember.ops.primitive import pop_handler, push_handler

    trace = _ForwardTrace()
    for p, d in zip(primals, tangents):
        trace.set(p, d)
    push_handler(trace)
    try:
        with no_grad():
            out = func(*primals)
    finally:
        pop_handler(trace)
    outs = out if isinstance(out, tuple) else (out,)
    douts = tuple(trace.tangent(o) if trace.tangent(o) is not None else zeros_like(o)
                  for o in outs)
    return out, (douts if isinstance(out, tuple) else douts[0])
