"""Why a compiled function traced again, in words: the differences between two cache keys
(:mod:`ember.jit.compiled`) as :func:`ember.jit.explain` and the ``ember.jit`` logger give them.
"""

from __future__ import annotations

import os
import re

from ember.dtypes import DType
from ember.jit.discover import Reach
from ember.jit.reached_values import is_plain
from ember.optim.lr_scheduler import LRScheduler
from ember.optim.optimizer import Optimizer


def differences(old: tuple, new: tuple, found: Reach, names: list[str],
                layouts: tuple[dict, dict]) -> list[str]:
    """What differs between two cache keys of a compiled function, one phrase each (such as
    ``argument x: shape (32, 784) -> (16, 784)``). A key is (argument structure, one entry per
    argument leaf, static arguments, grad mode, :meth:`Reach.guard`, layout index, (default
    dtype, default device, ``sdpa_kernel``'s setting, primitives replaced)); ``names`` names
    the leaves, ``found`` is what the function reaches now, ``layouts`` the two keys'
    :meth:`Reach.layout`."""
    out = []
    if old[0] != new[0]:
        out.append("the arguments' structure changed")
    else:
        for i, (a, b) in enumerate(zip(old[1], new[1])):
            if a != b:
                out.append(_leaf_change(names, i, a, b))
    if old[2] != new[2]:
        out.append(f"static arguments {old[2]} -> {new[2]}")
    if old[3] != new[3]:
        out.append(f"grad mode {'on' if old[3] else 'off'} -> {'on' if new[3] else 'off'}")
    for what, a, b in zip(("default dtype", "default device"), old[6], new[6]):
        if a != b:
            out.append(f"{what} {getattr(a, 'name', a)} -> {getattr(b, 'name', b)}")
    if old[6][2] != new[6][2]:
        (a, a_ordered), (b, b_ordered) = old[6][2], new[6][2]
        out.append(f"scaled_dot_product_attention backends {[x.name for x in a]}"
                   f"{' in order' * a_ordered} -> {[x.name for x in b]}"
                   f"{' in order' * b_ordered} (sdpa_kernel)")
    if old[6][3] != new[6][3]:
        out.append("a custom op was redefined (ember.library)")
    if old[5] != new[5]:  # (another layout: its guard is another list; what a new argument
        told = {c.split(":")[0].removeprefix("argument ") for c in out}  # holds: not again)
        return out + [m for m in moves(*layouts) if m.split(":")[0].split(".")[0] not in told]
    names = found.guard_names()
    for kind_names, a_part, b_part in zip(names, old[4], new[4]):
        for name, a, b in zip(kind_names, a_part, b_part):
            if a != b:
                out.append(f"{name}: {a} -> {b}")
    return out


def moves(old: dict, new: dict) -> list[str]:
    """What differs between two layouts (:meth:`Reach.layout`), readably: an object that a
    rebound name held, and the members of a replaced module, are not named again."""
    out, told, replaced = [], set(), []
    for label in (*old, *(k for k in new if k not in old)):
        a, b = old.get(label), new.get(label)
        if a == b or label.startswith(tuple(replaced)):
            continue
        if a is None or b is None:
            out.append(f"{label}: {'no longer reached' if b is None else 'newly reached'}")
        elif a[0] == b[0] == "tensor" and a[2:] != b[2:]:
            out.append(f"{label}: " + ", ".join(
                f"{what} {x} -> {y}" for what, x, y in
                (("shape", a[2], b[2]), ("dtype", a[3].name, b[3].name),
                 ("layout", _layout(a[4], a[3]), _layout(b[4], b[3]))) if x != y))
        elif a[0] in _OBJECTS and b[0] in _OBJECTS:
            replaced.append(f"{label}.")
            if (a[1], b[1]) not in told:
                told.add((a[1], b[1]))
                out.append(f"{label}: another object")
        else:
            out.append(f"{label}: {_change(a, b)}")
    return out


_OBJECTS = ("object", "tensor")  # layout keys by identity


def _layout(strides: tuple[int, ...] | None, dtype: DType) -> str:
    """A tensor's :func:`~ember.layouts.strides_key` (byte strides) in words, in elements."""
    return "row-major" if strides is None else \
        f"strides {tuple(s // dtype.itemsize for s in strides)}"


def _change(a: tuple, b: tuple) -> str:
    """``old -> new`` for two layout keys; hooks whose functions have the same names (a
    ``lambda`` replaced by another) by where those functions were defined, too."""
    old, new = _shown(a), _shown(b)
    if old == new and a[0] == "state":
        return f"{old}, other tensors or values in it"
    if old == new and a[0] == "hooks":
        old, new = _shown(a, where=True), _shown(b, where=True)
        if old == new:
            return f"{old} -> the same, made again (new function objects)"
    return f"{old} -> {new}"


def _shown(key: tuple, where: bool = False) -> str:
    """A layout key as the user would write its value (hooks by their functions' names, with
    ``where`` their definitions' lines, an optimizer's parameters by their count, its state
    by its keys)."""
    kind, value = key[0], key[1]
    if kind == "float":
        return repr(float.fromhex(value))
    if kind == "hooks":
        return "[" + ", ".join(_function_name(f, where) for f in value) + "]"
    if kind == "state":
        keys = ", ".join(dict.fromkeys(k for _, items in value if isinstance(items, tuple)
                                       for k, _ in items))
        return f"{len(value)} parameters' ({keys})" if value else "empty"
    if kind == "parameters":
        return f"{sum(map(len, value))} parameters in {len(value)} group{'s' * (len(value) != 1)}"
    return "an object" if kind in _OBJECTS else repr(value)


def _function_name(fn: object, where: bool) -> str:
    name = getattr(fn, "__qualname__", type(fn).__name__)
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if not where or code is None:
        return name
    return f"{name} at {os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def _value_or_tensor(part: tuple) -> str:
    """An argument leaf's key part as words: its value (``None``, ``2.0``), an object, or a
    tensor's shape and dtype (``shift=None`` at one call, a tensor at the next)."""
    if part[0] != "value":
        return f"a tensor of shape {part[0]} ({part[1].name})"
    return repr(part[-1]) if is_plain(part[-1]) else "an object"


def _leaf_change(names: list[str], i: int, a: tuple, b: tuple) -> str:
    if a[0] == "value" or b[0] == "value":
        if a[0] == b[0] and not (is_plain(a[-1]) and is_plain(b[-1])):  # (a module: by
            return f"argument {names[i]}: another object"  # identity, not its repr)
        return f"argument {names[i]}: {_value_or_tensor(a)} -> {_value_or_tensor(b)}"
    labels = ("shape", "dtype", "device", "requires_grad")
    changes = [f"{label} {getattr(x, 'name', x)} -> {getattr(y, 'name', y)}"
               for label, x, y in zip(labels, a, b) if x != y]
    if a[4] != b[4]:
        changes.append(" -> ".join("its own memory" if j is None else f"memory of {names[j]}"
                                   if isinstance(j, int) else j if j.startswith("a view")
                                   else f"memory of {j}"
                                   for j in (a[4], b[4])))
    if a[5] != b[5]:
        changes.append(f"hooks {_change(('hooks', a[5]), ('hooks', b[5]))}")
    if a[7] != b[7] and a[0] == b[0]:  # (a new shape has new strides: not told again)
        changes.append(f"layout {_layout(a[7], a[1])} -> {_layout(b[7], b[1])}")
    if a[6] != b[6]:
        changes.append(".grad " + " -> ".join("None" if g is None else f"set ({g})"
                                              for g in (a[6], b[6])))
    return f"argument {names[i]}: " + ", ".join(changes)


_FUNCTION = re.compile(r"^[\w.<>]+: ")  # (what a closure's or a global's label starts with)


def counted_in_trace(name: str, labels: set[str], found: Reach) -> str | None:
    """The warning for values that each trace of ``name`` changes again (a counter): the
    graph does not repeat a Python change, so they move only when it traces. None when
    each is an optimizer's or a scheduler's, which the graph's effects step at every call
    (an lr a scheduler sets)."""
    stepped = {label for holder, _, label, _, _ in found.bindings
               if isinstance(getattr(holder, "obj", holder), LRScheduler | Optimizer)}
    roots = tuple(f"{label}{c}" for label, _ in found.optimizers for c in ".[")
    counters = sorted(bare for label in labels if label not in stepped and  # (a closure's
                      not (bare := _FUNCTION.sub("", label)).startswith(roots))  # "fn: x")
    if not counters:
        return None
    return (f"ember.jit: {name} changes {', '.join(counters)} each time it is traced, as a "
            "counter does; the compiled graph does not repeat Python changes, so from now on "
            f"it changes only when {name} traces again, not at each call (PyTorch's "
            "torch.compile replays it). Hint: count outside the compiled function, or keep the "
            "count in a tensor that the function updates in place (a buffer: "
            "self.calls.add_(1))")
