"""The tape: one :class:`Node` per recorded op application.

A node is also the ``ctx`` a primitive's rules receive: ``ctx.inputs`` (the input tensors, with
their own history, so rules written in Ember ops are differentiable again), ``ctx.params``,
``ctx.outputs`` / ``ctx.out`` (rebuilt on demand, so a node never holds its outputs and no
reference cycle forms), and ``ctx.needs_input_grad``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ember.errors import GradError

if TYPE_CHECKING:
    from ember.ops.primitive import Primitive
    from ember.tensor import Tensor


class Node:
    """A recorded application of a primitive (PyTorch's ``grad_fn``)."""

    __slots__ = ("prim", "inputs", "edges", "params", "versions", "outputs", "device", "hooks",
                 "retained", "stack", "released", "__weakref__")

    def __init__(self, prim: Primitive, inputs: tuple, params: dict, versions: tuple | None,
                 outputs: tuple | None, device: Any) -> None:
        self.prim = prim
        self.inputs = inputs
        # Where each input's gradient goes, fixed now: (producing node or None for a leaf,
        # output index), or None for an input that needs no gradient. An in-place op later
        # gives a tensor new history; it does not change what was recorded before it.
        self.edges = tuple((t._node, t._idx) if t.requires_grad else None for t in inputs)
        self.params = params
        self.versions = versions  # input versions when recorded, if the rule reads inputs
        self.outputs = outputs    # ((array, version counter, version), …) if the rule reads them
        self.device = device
        self.hooks = None         # {output index: [hook, …]} of non-leaf tensors
        self.retained = None      # {output index: weakref to a tensor that retains its grad}
        self.stack = None         # the user's stack at creation, in anomaly mode
        self.released = False

    def name(self) -> str:
        """PyTorch-style name, e.g. ``MulBackward``."""
        name = self.prim.name
        return "".join(part[:1].upper() + part[1:] for part in name.split("_")) + "Backward"

    def __repr__(self) -> str:
        return f"<{self.name()}>"

    # -- what rules read ---------------------------------------------------------------------
    @property
    def out(self) -> Tensor:
        """The (first) output, as a tensor whose history is this node."""
        return self.output(0)

    @property
    def out_tensors(self) -> tuple[Tensor, ...]:
        """All outputs, as tensors whose history is this node."""
        return tuple(self.output(i) for i in range(len(self.outputs)))

    def output(self, index: int) -> Tensor:
        """Output ``index`` as a tensor; needs the primitive's ``save_outputs``."""
        from ember.tensor import _wrap

        if self.outputs is None:
            raise GradError(f"{self.prim.name}: its rule reads its outputs but the primitive "
                            "does not set save_outputs = True")
        array, counter, _ = self.outputs[index]
        return _wrap(array, self.device, True, self, index, counter)

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        """For each input, whether it requires a gradient."""
        return tuple(t.requires_grad for t in self.inputs)

    # -- bookkeeping the engine does ---------------------------------------------------------
    def check_versions(self) -> None:
        """Raises if a tensor this node's rule reads was modified in place since recording."""
        if self.versions is not None:
            for i, (t, v) in enumerate(zip(self.inputs, self.versions)):
                if t._vc.value != v and self.prim.reads(self, i):
                    self._modified("input", i, t.shape, t.dtype, v, t._vc.value)
        if self.outputs is not None:
            for i, (array, counter, v) in enumerate(self.outputs):
                if counter.value != v:
                    self._modified("output", i, array.shape, array.dtype, v, counter.value)

    def _modified(self, role: str, i: int, shape: tuple, dtype: object, saved: int,
                  now: int) -> None:
        raise GradError(
            f"backward of {self.prim.name}: {role} {i} of {self.prim.name} (a tensor of shape "
            f"{tuple(shape)}, dtype {getattr(dtype, 'name', dtype)}) was modified in place after "
            f"{self.prim.name} saved it for backward: it was at version {saved} and is now at "
            f"version {now}. Hint: call .clone() on it before the in-place op, or use the "
            f"out-of-place form (e.g. x = x + 1 instead of x += 1)."
            + self.where())

    def where(self) -> str:
        """In anomaly mode, the user's source line that made this node."""
        if not self.stack:
            return ""
        frame = self.stack[-1]
        return (f"\nThe forward op {self.prim.name} was called at {frame.filename}:"
                f"{frame.lineno}:\n    {frame.line}")

    def release(self) -> None:
        """Frees what backward needed, after backward (unless ``retain_graph``)."""
        self.inputs = self.edges = self.outputs = self.versions = None
        self.released = True
