"""State a traced function leaves for its next call by rebinding attributes: a module's buffer
(``self.running = 0.9 * self.running + 0.1 * m``), a tensor a module or the user's object
carries (an RNN's ``self.h = h.detach()``, an LSTM's ``self.state = (h, c)``), and what the
graph cannot carry (a tensor stored where no tensor was, or in a tuple beside a number),
which is refused rather than kept as this trace's value.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ember.errors import user_stacklevel
from ember.jit.discover import Reach
from ember.jit.kernels import owner
from ember.jit.reached_values import held_tensors, is_plain, nested
from ember.jit.reasons import counted_in_trace
from ember.jit.sources import TraceError
from ember.jit.user_objects import bound_value, is_library
from ember.nn.module import Module
from ember.tensor import Tensor

_MODULE_TABLES = frozenset({"_parameters", "_buffers", "_modules"})  # (held as state already)


class CarriedState:
    """What the holders of a function's carried state (see :meth:`Reach.carried_tensors`)
    hold when tracing starts, and what the trace changed there."""

    def __init__(self, found: Reach) -> None:
        self.found = found
        self._rebinds: list | None = None  # (see rebinds)
        # (members, name, value, its tensors): each module's buffers, and the attributes
        # carrying tensors from one call to the next
        self.held = [(m._buffers, name, t, [("", t)]) for m in found.modules
                     for name, t in m._buffers.items() if isinstance(t, Tensor)] + \
            [(members, name, value, held_tensors(value))
             for members, name, value in found.carried_tensors()]
        # (label, module or object): where the function may leave tensors
        self.holders = list(zip(found.module_labels, found.modules)) + \
            [(found.object_labels[id(o)], o) for o in found.plain_objects()]
        # what each attribute of the user's modules and objects held (and what a tuple, list
        # or dict there held): the function may set one to what no graph carries
        self.attributes = [(label, obj, {name: list(nested(value))
                                         for name, value in vars(obj).items()})
                           for label, obj in self.holders if not is_library(obj)]
        # (holder, name, label, value): the global and closure names the function assigns
        self.names = [(holder, name, label, bound_value(holder, name))
                      for holder, name, label in found.assigned_names]

    def rebinds(self) -> list[tuple[dict, str, Any, list, list[Tensor]]]:
        """``(members, name, old value, its tensors, the new tensors)`` for each attribute
        the function rebound to tensors that can be written into the old ones (of the same
        shapes, dtypes and device); found once, after the function returned (the same
        before and after :meth:`put_back`)."""
        if self._rebinds is None:
            self._rebinds = []
            for members, name, old, items in self.held:
                new = _rebound_to(old, items, members.get(name))
                if new is not None:
                    self._rebinds.append((members, name, old, items, new))
        return self._rebinds

    def rebound(self) -> list[Tensor]:
        """The tensors the function's rebinding replaced: each holds the new value once the
        call ends."""
        return [t for _, _, _, items, new in self.rebinds()
                for (_, t), n in zip(items, new) if n is not t]

    def undo(self) -> list[str]:
        """Gives every carried attribute the function rebound or changed in place its value
        from before (what a branch of ``ember.cond`` may not change); their labels."""
        changed = []
        for members, name, old, items in self.held:
            now = members.get(name)
            if now is not old or not _same([t for _, t in items],
                                           [t for _, t in held_tensors(now)]):
                _restore(members, name, old, items)
                where, t = items[0]
                label = self.found.labels.get(id(t), name)
                changed.append(label[:len(label) - len(where)])
        return changed

    def put_back(self) -> list[tuple[Tensor, Tensor]]:
        """Gives each rebound attribute its value from before the call, holding its tensors
        from then; returns ``(old tensor, new tensor)`` pairs, whose new values the caller
        writes into the old. An old tensor another attribute still holds (``self.prev`` and
        ``self.h`` one tensor, a list it was appended to) would change there too, where in
        eager code it keeps its value: refused."""
        pairs, shared = [], {}
        for members, name, old, items, new in self.rebinds():
            pairs += [(t, n) for (_, t), n in zip(items, new) if n is not t]
            _restore(members, name, old, items)
        written = {id(t) for t, _ in pairs}
        for label, obj in self.holders:
            members = vars(obj)
            for name, value in members.items():
                if name in _MODULE_TABLES and isinstance(obj, Module):
                    continue
                for t in _tensors_in(value):
                    if id(t) in written and not _holds_as_state(self.held, members, name, t):
                        shared[f"{label}.{name}"] = t
        if shared:
            name, t = next(iter(shared.items()))
            owner = self.found.labels.get(id(t), "a state")
            raise TraceError(
                f"ember.jit: {name} holds the tensor (shape {tuple(t.shape)}) that the "
                f"function rebinds {owner} from; compiled calls write {owner}'s new value into "
                f"that tensor, so {name} would change too, where eager code leaves it the old "
                f"value. Hint: give {name} its own tensor (a .clone()) before the first call, "
                "or store a .clone() there")
        return pairs

    def _in_layout(self, m: Module, name: str, old: list | None) -> bool:
        """Whether a change of module ``m``'s attribute ``name`` (which held ``old[0]``)
        makes the next call trace again: one carried for the next call that now holds
        tensors it can carry (named then), or one that held a number, None or a reached
        tensor."""
        return (id(m), name) in self.found.assigned and bool(held_tensors(vars(m)[name])) or \
            old is not None and (is_plain(old[0]) or any(
                id(t) in self.found.labels for t in _tensors_in(old[0])))

    def refuse_untracked(self, computed: Callable[[Tensor], bool], name: str) -> None:
        """Refuses an attribute of the user's module or object that the function set (or
        changed in place) to hold a tensor ``computed`` from the inputs, not one it reached
        by name, where no carried state writes it back (a tensor where there was none, in a
        tuple beside a number, in a dict filled in place): compiled calls would keep this
        trace's tensor. (A module's attribute that held a number, None or a reached tensor
        is in the layout: the next call traces again.) So too a global or closure name the
        function (``name``) assigns; a number it changes there (a counter) gets a warning."""
        memory = {owner(t._data) for t in self.found.tensors}  # (``self.w = lin.weight.detach()``)
        counters = set()
        for holder, key, label, old in self.names:
            now = bound_value(holder, key)
            new = next((t for t in _tensors_in(now) if owner(t._data) not in memory and
                        computed(t)), None)
            if new is not None:
                raise TraceError(
                    f"ember.jit: {name} assigns a tensor computed from its inputs (shape "
                    f"{tuple(new.shape)}) to a global or closure name ({label}); compiled "
                    "calls run the graph, not that Python code, so it would keep this trace's "
                    "tensor (PyTorch's torch.compile replays the assignment). Hint: return the "
                    "tensor, or keep it in a module's buffer written in place "
                    "(self.cache.copy_(x))")
            if _number(old) and _number(now) and now != old:
                counters.add(label)  # (a flag set, an object replaced: no counter)
        if counters and (counter := counted_in_trace(name, counters, self.found)) is not None:
            warnings.warn(counter, stacklevel=user_stacklevel())
        for label, obj, before in self.attributes:
            for name, value in vars(obj).items():
                if name in _MODULE_TABLES and isinstance(obj, Module):
                    continue  # (a buffer rebound to another shape: a new layout)
                old = before.get(name)
                if old is not None and _same(old, list(nested(value))) or \
                        isinstance(obj, Module) and self._in_layout(obj, name, old):
                    continue
                new = next((t for t in _tensors_in(value) if id(t) not in self.found.labels and
                            owner(t._data) not in memory and computed(t)), None)
                if new is not None:
                    raise TraceError(
                        f"ember.jit: the function stores a tensor computed from its inputs "
                        f"(shape {tuple(new.shape)}) in {label}.{name} (a "
                        f"{type(value).__name__}); compiled calls run the graph, not that "
                        "Python code, so it would keep this trace's tensor. Compiled calls "
                        "carry an attribute that holds tensors when the first call starts (a "
                        "tensor, or a tuple, list or dict of tensors) and that is assigned "
                        "anew, as self.h = h.detach() in a method of its module's class or "
                        "model.h = ... in the compiled function (Ember reads those lines; "
                        "setattr, a loop over modules or a helper function that assigns it "
                        "are not seen). Hint: give it its tensors before the first call and "
                        "assign it so, keep numbers and None in attributes of their own, or "
                        "return the tensor")


def _holds_as_state(held: list, members: dict, name: str, t: Tensor) -> bool:
    """Whether ``members[name]`` holding ``t`` is the carried attribute ``t`` belongs to."""
    return any(m is members and n == name and any(x is t for _, x in items)
               for m, n, _, items in held)


def _number(value: Any) -> bool:
    """Whether ``value`` is a real number (a count: a NumPy one too), not a bool (a flag)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _tensors_in(value: Any) -> Iterator[Tensor]:
    return (x for x in nested(value) if isinstance(x, Tensor))


def _same(before: list, now: list) -> bool:
    return len(before) == len(now) and all(a is b for a, b in zip(before, now))


def _rebound_to(old: Any, items: list[tuple[str, Tensor]], new: Any) -> list[Tensor] | None:
    """The tensors an attribute holding ``old`` (whose tensors were ``items`` when tracing
    started) holds now, ``new``, one for each of ``items``, where they can be written into
    those; None where nothing was rebound, or where ``new`` is another kind of value or
    holds a tensor of another shape (a new layout)."""
    now = held_tensors(new)
    if type(new) is not type(old) or [w for w, _ in now] != [w for w, _ in items] or \
            all(n is t for (_, n), (_, t) in zip(now, items)) or \
            not all(n is t or _fits(n, t) for (_, n), (_, t) in zip(now, items)):
        return None
    return [n for _, n in now]


def _restore(members: dict, name: str, old: Any, items: list[tuple[str, Tensor]]) -> None:
    """Gives the attribute ``name`` its value from before the call, ``old``, holding its
    tensors from then, ``items`` (lists or dicts in it the function changed in place too)."""
    members[name] = old
    _refill(old, iter([t for _, t in items]))


def _refill(value: Any, tensors: Iterator[Tensor]) -> None:
    """Puts ``tensors`` back into the lists and dicts of ``value``, in the order
    :func:`held_tensors` lists them."""
    for key in (list(value) if isinstance(value, dict) else
                range(len(value)) if isinstance(value, list | tuple) else ()):
        if isinstance(value[key], Tensor):
            t = next(tensors)
            if not isinstance(value, tuple):
                value[key] = t
        else:
            _refill(value[key], tensors)


def _fits(new: Any, old: Tensor) -> bool:
    """Whether ``new`` can be written into the memory of ``old``: a tensor of its shape,
    dtype and device, ``old`` neither a view nor read-only."""
    return isinstance(new, Tensor) and new.shape == old.shape and new.dtype is old.dtype and \
        new._device == old._device and old._view is None and \
        getattr(old._data.flags, "writeable", True)
