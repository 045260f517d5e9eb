"""In-place writes through views, as a trace records them: each value is a variable of its
own, so memory that several tensors share is followed by recomputing it.

A write into a view ``v`` of ``base`` (``y[:, 1:].mul_(2)``, ``y.view(-1).add_(1)``,
``y.diagonal().fill_(0)``) makes ``base``'s next variable ``view_scatter(base, new values of
v)`` and ``v``'s the view chain applied to it; a view taken earlier and read after its base
changed (``v = y[1:]; y.add_(1); v * 2``) is made again from the base's variable at that read.
That is how eager code sees such memory (PyTorch's compiler functionalizes it the same way).
"""

from __future__ import annotations

import weakref
from typing import Any

from ember.jit.ir import Var
from ember.jit.sources import TraceError, _at, user_source
from ember.ops.primitive import PRIMITIVES, TensorSpec
from ember.tensor import Tensor, _wrap


class ViewWrites:
    """The tracer's part that follows memory shared by views (see the module's docstring),
    and in-place changes of a tensor's shape. Uses the tracer's ``count``, ``stale``,
    ``view_root``, ``views``, ``view_arrays``, ``inputs``, ``known``, ``labels``, ``fresh``,
    its variable lookups and its ``record``."""

    def note_view(self, view: Var, of: Var) -> None:
        """``view`` views ``of``'s memory: a write into its root makes it stale."""
        root = self.view_root.get(of, of)
        self.view_root[view] = root
        self.views.setdefault(root, []).append(view)

    def note_view_array(self, view: Tensor, base: Tensor, chain: tuple) -> None:
        """Keeps, while ``view``'s array lives, that it is the view ``chain`` of ``base``: the
        base itself while it lives (the base of the arguments, state or outputs the plan
        finds), else a stand-in sharing its memory and version counter (for a ``.detach()``
        of a view of a value the function made, read or written after the tensor it viewed
        is gone); the memory is the view's own, so nothing lives longer. Only tensors that
        share the view's version counter (its ``detach()``, ``.data``) are that view: a
        gradient the engine wraps around a view's array is a value of its own."""
        array = view._data
        key, arrays = id(array), self.view_arrays

        def forget(ref: weakref.ref) -> None:
            if arrays.get(key, (None,))[0] is ref:
                del arrays[key]

        fresh = self.just_fresh  # (the stand-in is no tensor of the function's)
        stand_in = _wrap(base._data, base._device, False, None, 0, base._vc)
        self.just_fresh = fresh
        arrays[key] = (weakref.ref(array, forget), weakref.ref(base), stand_in, chain,
                       (view._vc,))

    def share_view(self, t: Tensor, value: Tensor) -> None:
        """``t.data = value``, a view (``T.data = U[1]``, or a view from before the call):
        ``t`` is that view too, as its ``detach()`` is (a write into ``t``
        is one into ``U``; ``t`` read after a write into ``U`` is made again)."""
        key, view = id(value._data), value._view
        entry = self.view_arrays.get(key)
        if (entry is None or entry[0]() is not value._data) and view is not None and \
                view.base._data is not value._data:  # (a view made before the call)
            self.note_view_array(value, view.base, view.chain)
            entry = self.view_arrays[key]
        if entry is not None and entry[0]() is value._data:
            self.view_arrays[key] = (*entry[:4], (*entry[4], t._vc))

    def link_state_view(self, t: Tensor, var: Var) -> None:
        """State that views other state (``V = U[1]``, both reached), ``var`` ``t``'s: a
        write into the base makes it stale (read again, it is made from the base's variable),
        and where the base has a variable already, it is made from that."""
        view = t._view
        if view is not None and view.base._data is not t._data:
            base = self.lookup(view.base._data)
            if base is None:
                self.state_views.setdefault(id(view.base), []).append(var)
            else:
                self.note_view(var, base)
                self.stale[var] = t._data
        for v in self.state_views.pop(id(t), ()):
            self.note_view(v, var)

    def viewed_as(self, t: Tensor) -> tuple[Tensor, tuple] | None:
        """The base and view chain of the view whose array ``t`` holds, where a view op made
        that array while tracing (``t`` may be its ``detach()`` or ``.data``, which keep no
        view record)."""
        entry = self.view_arrays.get(id(t._data))
        if entry is None or entry[0]() is not t._data or \
                all(vc is not t._vc and vc is not t._vc.source for vc in entry[4]):
            return None
        base = entry[1]()
        return (entry[2] if base is None else base), entry[3]

    def on_metadata_change(self, x: Tensor, name: str, traceable: bool) -> None:
        """``x`` is about to change its shape or strides in place (``unsqueeze_``, ``t_``,
        ``as_strided_``: ``traceable``, its view op is recorded) or its memory (``resize_``,
        ``set_``). Followed for a tensor the function made; refused, naming the line, for one
        the caller holds (an argument, a parameter, a buffer, a captured tensor), whose shape
        later calls would leave as it was, and for a change of memory."""
        where = _at(user_source())
        if not traceable:
            raise TraceError(f"ember.jit: {name} cannot be compiled{where}: it points the "
                             f"tensor (shape {tuple(x.shape)}) at other memory, which a graph "
                             "cannot follow. Hint: make a new tensor instead (x.new_zeros(...), "
                             "x.reshape(...)), or call it outside the compiled function", where)
        holder = self.held_outside(x)
        if holder is not None:
            raise TraceError(f"ember.jit: {name} changes the shape of {holder} (shape "
                             f"{tuple(x.shape)}) in place{where}; later calls of the compiled "
                             "graph would leave its shape as it was. Hint: use the out-of-"
                             f"place form (x = x.{name[:-1]}(...)) and return it", where)

    def held_outside(self, x: Tensor) -> str | None:
        """What ``x`` is to the caller, if the caller holds it: an argument, state (a
        parameter, buffer or captured tensor) or another tensor from outside; None for a
        tensor the function made (a view or ``detach()`` of an argument too)."""
        for i, t in enumerate(self.inputs):
            if t is x:
                return f"argument {i}"
        known = self.known.get(id(x._data))
        if id(x) in self.labels or (known is not None and known[1] is x):
            return self.labels.get(id(x), "a tensor the function reaches")
        var = self.lookup(x._data)
        if var is None or (var.kind == "const" and id(x._data) not in self.fresh):
            return "a tensor from outside the function"
        return None

    def view_record(self, t: Tensor) -> tuple[Tensor, tuple] | None:
        """The base and view chain of the memory ``t`` holds: its view record, or, for the
        ``detach()`` or ``.data`` of a view (which keep none), the record of the view made
        while tracing whose array it holds; None for a tensor that views nothing, or nothing
        now: its base holds other memory since (``U.data = ...``). A view of such a detach is
        followed to the memory the detach views."""
        view = t._view
        if view is None:
            seen = self.viewed_as(t)
        elif view.base._data is t._data:
            return None
        else:
            outer = self.viewed_as(view.base)  # (a view of a detach() of a view)
            seen = (view.base, view.chain) if outer is None else \
                (outer[0], outer[1] + view.chain)
        if seen is None or not t._device.xp.may_share_memory(seen[0]._data, t._data):
            return None
        return seen

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
