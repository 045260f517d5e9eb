"""In-place writes through views, as a trace records them: each value is a variable of its
own, so memory that several tensors share is followed by recomputing it.

A write into a view ``v`` of ``base`` (``y[:, 1:].mul_(2)``, ``y.view(-1).add_(1)``,
``y.diagonal().fill_(0)``) makes ``base``'s next variable ``view_scatter(base, new values of
v)`` and ``v``'s the view chain applied to it; a view taken earlier and read after its base
changed (``v = y[1:]; y.add_(1); v * 2``) is made again from the base's variable at that read.
That is how eager code sees such memory (PyTorch's compiler functionalizes it the same way).
"""

from __future__ import annotations

from typing import Any

from ember.jit.ir import Var
from ember.jit.sources import user_source
from ember.ops.primitive import PRIMITIVES, TensorSpec
from ember.tensor import Tensor


class ViewWrites:
    """The tracer's part that follows memory shared by views (see the module's docstring).
    Uses the tracer's ``count``, ``stale``, its variable lookups and its ``record`` and
    ``note_view``."""

    def view_record(self, t: Tensor) -> tuple[Tensor, tuple] | None:
        """The base and view chain of the memory ``t`` holds: its view record, or, for the
        ``detach()`` or ``.data`` of a view (which keep none), the record of the view made
        while tracing whose array it holds; None for a tensor that views nothing. A view of
        such a detach is followed to the memory the detach views."""
        view = t._view
        if view is None:
            return self.viewed_as(t)
        if view.base._data is t._data:
            return None
        outer = self.viewed_as(view.base)  # (a view of a detach() of a view)
        return (view.base, view.chain) if outer is None else (outer[0], outer[1] + view.chain)

    def traced_base(self, base: Tensor, chain: tuple) -> tuple[Tensor, tuple]:
        """The tensor a write through the view ``chain`` of ``base`` changes, and the chain of
        view ops from it: ``base``, or, where that base is outside the trace, the argument the
        view was taken from (``f(data[:32])``, the argument a view of the caller's ``data``:
        the argument is what the graph holds, and is written back)."""
        var = self.lookup(base._data)
        # (a base the trace met only as a constant: eager's autograd read it while writing a
        # value that needs grad through the view)
        if var is None or var.kind == "const":
            for t in self.inputs:
                known = t._view
                if known is not None and known.base is base and \
                        chain[:len(known.chain)] == known.chain:
                    return t, chain[len(known.chain):]
        return base, chain

    def write_into_view(self, x: Tensor, result: Tensor, base: Tensor, chain: tuple) -> None:
        """``result`` was written into ``x``, the view ``chain`` of ``base``: the base's
        variable becomes the scatter of ``result`` into it, and ``x``'s a view of that."""
        old = self.var_of(base)
        self.note_outside_write(old, base)
        self.invalidate_views(old, base._data)
        values = self.var_of(result)
        new = self.new_var(base._data, "eqn")
        self.record(PRIMITIVES["view_scatter"], [old, values], {"chain": chain}, [new],
                    user_source())
        self.rebind(x._data, self._view_of(new, chain))

    def view_anew(self, t: Tensor) -> Var | None:
        """A stale view ``t`` made again from its base's variable now; None where ``t`` is no
        view whose base the trace follows."""
        seen = self.view_record(t)
        if seen is None:
            return None
        base, chain = self.traced_base(*seen)
        var = self.lookup(base._data)
        if var is None or var in self.stale or not chain:
            return None
        var = self._view_of(var, chain)
        self.rebind(t._data, var)
        return var

    def _view_of(self, var: Var, chain: tuple) -> Var:
        """Equations applying the view ``chain`` to ``var``; the last one's variable, recorded
        as a view of ``var``'s root (a later write into that root makes it stale again)."""
        start, source = var, user_source()
        for prim, params in chain:
            spec: Any = prim.infer(TensorSpec(var.shape, var.dtype), **params)
            out = Var(self.count, tuple(spec.shape), spec.dtype, "eqn")
            self.count += 1
            self.record(prim, [var], params, [out], source)
            var = out
        self.note_view(var, start)
        return var
