"""``FlopCounterMode``: the FLOPs of the code in a ``with``, forward and backward, per module,
as ``torch.utils.flop_counter.FlopCounterMode``, with PyTorch's formulas
(:mod:`ember.utils.flop_formulas`).

It watches every primitive application (a dispatch observer, as the profiler) and every
backward rule (the engine's ``VJP_HOOK``); with no counter active neither costs anything.
"""

from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ember.autograd.engine import VJP_HOOK
from ember.nn.module import Module
from ember.ops.primitive import Primitive, apply_below, pop_handler, push_handler
from ember.utils.flop_formulas import (
    BACKWARD_FORMULAS,
    FORWARD_FORMULAS,
    op_name,
    register_flop_formula,
)
from ember.utils.module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]

_SUFFIXES = ["", "K", "M", "B", "T"]


def _suffix(number: int) -> str:
    """The unit of a table's FLOPs: the largest that leaves at least two digits (1001M, not
    1.001B), as PyTorch's."""
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def _with_suffix(number: int, suffix: str) -> str:
    """``number`` in units of ``suffix`` to 3 decimals; with no suffix a plain number (PyTorch
    formats "1234.000" so, but its table printer, tabulate, shows numeric text as "1234")."""
    value = number / 1000 ** _SUFFIXES.index(suffix)
    return f"{value:.3f}{suffix}" if suffix else f"{value:g}"


def _percent(part: int, total: int) -> str:
    return "0%" if total == 0 else f"{part / total:.2%}"


def _tabulate(rows: list[list[str]], header: list[str]) -> str:
    """A plain table as tabulate's "simple" format prints PyTorch's: the first column
    left-aligned, the others right-aligned, each at least its header's width + 2, and a rule
    of dashes under the header."""
    widths = [max(len(header[i]) + 2, *(len(r[i]) for r in rows)) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths),
                      *(line(r) for r in rows)])


class FlopCounterMode:
    """Counts the FLOPs of matrix products, convolutions and attention run inside the ``with``
    (forward and backward), per module, as ``torch.utils.flop_counter.FlopCounterMode``.

    ``mods`` is accepted for PyTorch's signature and not needed (modules are tracked as they
    run; passing it warns, as in PyTorch). ``depth`` limits the module levels of the table
    printed on exit when ``display``; ``custom_mapping`` maps primitives (or their names) to
    forward formulas used instead of the registered ones. Counts are keyed by primitive name
    (``"matmul"``, ``"conv"``; ``"matmul_backward"``, ``"conv_backward"`` for their backward).

    Example:
        >>> from ember.utils.flop_counter import FlopCounterMode
        >>> model = ember.nn.Linear(4, 3)
        >>> with FlopCounterMode(display=False) as counter:
        ...     model(ember.ones(2, 4)).sum().backward()
        >>> counter.get_total_flops()  # forward 2·2·4·3, the weight's gradient as much
        96
        >>> counter.get_flop_counts()["Linear"]
        {'matmul': 48, 'matmul_backward': 48}
    """

    def __init__(self, mods: Module | list[Module] | None = None, depth: int = 2,
                 display: bool = True,
                 custom_mapping: dict[Primitive | str, Callable[..., int]] | None = None
                 ) -> None:
        if mods is not None:
            warnings.warn("FlopCounterMode: mods argument is not needed anymore, you can stop "
                          "passing it", UserWarning, stacklevel=2)
        self.flop_counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.forward_formulas = {**FORWARD_FORMULAS, **{op_name(k): v for k, v in
                                                         (custom_mapping or {}).items()}}
        self.backward_formulas = dict(BACKWARD_FORMULAS)
        self.mod_tracker = ModuleTracker()
        self._handler: Callable | None = None
        self._in_counted_backward = 0

    def get_total_flops(self) -> int:
        """All FLOPs counted (the ``"Global"`` total)."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[str, int]]:
        """``{module name: {op name: FLOPs}}``; ``"Global"`` holds everything."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as a table of modules down to ``depth`` levels (``self.depth`` if None),
        each with its ops, in FLOPs and percent of the total, as PyTorch prints it."""
        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        total = self.get_total_flops()
        suffix = _suffix(total)
        global_subsumed = False

        def rows_of(name: str, level: int) -> list[list[str]]:
            nonlocal global_subsumed
            counts = self.flop_counts[name]
            flops = sum(counts.values())
            global_subsumed |= flops >= total
            pad = " " * level
            return [[pad + name, _with_suffix(flops, suffix), _percent(flops, total)]] + \
                [[pad + " - " + op, _with_suffix(v, suffix), _percent(v, total)]
                 for op, v in counts.items()]

        rows: list[list[str]] = []
        for name in sorted(self.flop_counts):
            level = name.count(".") + 1
            if name != "Global" and level <= depth:
                rows.extend(rows_of(name, level - 1))
        # "Global" is shown only when some FLOPs were counted outside every module
        if "Global" in self.flop_counts and not global_subsumed:
            rows = rows_of("Global", 0) + [[" " + r[0], *r[1:]] for r in rows]
        if not rows:
            rows = [["Global", "0", "0%"]]
        return _tabulate(rows, ["Module", "FLOP", "% Total"])

    def __enter__(self) -> FlopCounterMode:
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self._handler = functools.partial(_count_op, self)
        push_handler(self._handler, observer=True)
        self._saved_vjp_hook = VJP_HOOK.around
        VJP_HOOK.around = functools.partial(_count_vjp, self, self._saved_vjp_hook)
        return self

    def __exit__(self, *exc: object) -> None:
        VJP_HOOK.around = self._saved_vjp_hook
        pop_handler(self._handler)
        self._handler = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))

    def _add(self, op: str, flops: int) -> None:
        for parent in set(self.mod_tracker.parents):
            self.flop_counts[parent][op] += flops


def _count_op(counter: FlopCounterMode, prim: Primitive, inputs: tuple, params: dict) -> Any:
    out = apply_below(counter._handler, prim, inputs, params)
    formula = counter.forward_formulas.get(prim.name)
    if formula is not None and not counter._in_counted_backward:
        first = out[0] if isinstance(out, tuple) else out
        counter._add(prim.name, int(formula(*(tuple(t.shape) for t in inputs),
                                            out_shape=tuple(first.shape), **params)))
    return out


def _count_vjp(counter: FlopCounterMode, outer: Callable | None, node: Any,
               grads: tuple) -> Any:
    """A backward rule: one with a backward formula is counted by it, and the ops it applies
    are not counted again."""
    def run() -> Any:
        return node.prim.vjp(node, *grads) if outer is None else outer(node, grads)

    formula = counter.backward_formulas.get(node.prim.name)
    if formula is None or counter._in_counted_backward:
        return run()
    inputs = node.inputs
    grad_out = next(g for g in grads if g is not None)
    flops = formula(tuple(grad_out.shape), *(tuple(t.shape) for t in inputs),
                    output_mask=tuple(node.wants_grad(i) for i in range(len(inputs))),
                    **node.params)
    counter._add(f"{node.prim.name}_backward", int(flops))
    counter._in_counted_backward += 1
    try:
        return run()
    finally:
        counter._in_counted_backward -= 1
