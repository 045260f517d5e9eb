"""One more trace of an exported model, with every dynamic axis at 1 (else 2) where it was
traced larger: the near and far check traces all grow (or barely shrink) the sizes, so a
bound clamped from below (``pos[:max(T, 4)]`` traced at T = 6) follows T in each of them and
only a trace below the example size tells it from ``pos[:T]``. Made once, when a converter
first asks (a slice of a fixed-size table whose bound moves with a dynamic size)."""

from __future__ import annotations

from typing import Any

from ember.export.capture import Capture, retrace_resized, twins
from ember.export.errors import ExportError
from ember.jit.ir import Eqn, Graph, Var
from ember.tensor import Tensor

_UNSET = object()


class BelowTrace:
    """``self()``: the variable mapping and equation pairs (by ``id``) of ``graph`` to the
    graph traced with the dynamic axes small (1, else 2), or None where the model refuses
    those sizes or takes another path there."""

    def __init__(self, capture: Capture, graph: Graph, leaves: list, spec: Any,
                 axes: dict[int, dict[int, str]], who: str) -> None:
        self.capture, self.graph, self.leaves, self.spec = capture, graph, leaves, spec
        self.axes, self.who = axes, who
        self._made: Any = _UNSET

    def __call__(self) -> tuple[dict[Var, Var], dict[int, Eqn]] | None:
        if self._made is _UNSET:
            self._made = self._trace()
        return self._made

    def _trace(self) -> tuple[dict[Var, Var], dict[int, Eqn]] | None:
        tensors = [leaf for leaf in self.leaves if isinstance(leaf, Tensor)]
        traced: dict[str, int] = {}
        for index, t in enumerate(tensors):
            for axis, name in self.axes.get(index, {}).items():
                traced.setdefault(name, t.shape[axis])
        for small in (1, 2):
            sizes = {name: min(size, small) for name, size in traced.items()}
            try:
                low = retrace_resized(self.capture, self.leaves, self.spec, self.axes,
                                      sizes=sizes)
                mapping, _, pairs = twins(self.graph, low, self.who)
            except ExportError:
                continue
            return mapping, pairs
        return None
