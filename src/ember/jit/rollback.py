"""Putting back what a failed trace changed.

A trace runs the function for real, so the lines before a :class:`~ember.jit.tracer.TraceError`
(or any error) have done their work: an optimizer step taken, gradients accumulated, running
statistics and random generators advanced. A caller that then runs the step eagerly would take
it twice. :class:`Rollback` saves, before the trace, what the function reaches (see
:mod:`ember.jit.discover`): every tensor's values, ``.grad`` and ``requires_grad``, each
optimizer's state and parameter groups, the attributes of modules and of the user's objects
(and the contents of the dicts and lists they hold, nested ones too), and the default random
generator; :meth:`restore` writes it all back in place, so that everything holding those
objects sees them as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.jit.guards import host_copy
from ember.jit.reached_values import nested
from ember.ops.random import default_generator
from ember.tensor import Tensor


class Rollback:
    """A copy of the state a trace may change, taken before it runs.

    Example:
        >>> saved = Rollback(found, inputs)
        >>> try:
        ...     trace()
        ... except BaseException:
        ...     saved.restore()
        ...     raise
    """

    def __init__(self, found: Any, inputs: list[Tensor]) -> None:
        tensors = {id(t): t for t in [*found.tensors, *inputs]}
        for _, opt in found.optimizers:
            for state in opt.state.values():
                if isinstance(state, dict):  # (a number an optimizer keeps beside them)
                    tensors.update((id(v), v) for v in state.values() if isinstance(v, Tensor))
        self.tensors = [(t, t._data, _host_copy(t), t.requires_grad, t._grad,
                         None if t._grad is None else _host_copy(t._grad))
                        for t in tensors.values()]
        self.optimizers = [(opt, {p: (s, _contents(s) if isinstance(s, dict) else s)
                                  for p, s in opt.state.items()},
                            [(g, dict(g)) for g in opt.param_groups])
                           for _, opt in found.optimizers]
        self.objects = [(obj, dict(vars(obj))) for obj in [*found.modules, *found.objects]]
        self.contents = [(c, _contents(c)) for _, attrs in self.objects
                         for v in attrs.values() for c in nested(v)
                         if isinstance(c, dict | list)]
        self.generator = default_generator._state()  # (not an effect of a trace)

    def restore(self) -> None:
        """Writes the saved state back into the same objects."""
        for t, data, values, requires_grad, grad, grad_values in self.tensors:
            t._data, t._requires_grad, t._grad = data, requires_grad, grad
            if values is not None:
                data[...] = t._device.xp.asarray(values)
            if grad_values is not None:
                grad._data[...] = grad._device.xp.asarray(grad_values)
        for opt, states, groups in self.optimizers:
            for p in [p for p in opt.state if p not in states]:  # made by the traced step
                del opt.state[p]
            for p, (state, items) in states.items():
                if isinstance(state, dict):
                    state.clear()
                    state.update(items)
                opt.state[p] = state
            for group, items in groups:
                group.clear()
                group.update(items)
        for obj, attrs in self.objects:
            vars(obj).clear()
            vars(obj).update(attrs)
        for container, items in self.contents:
            if isinstance(container, dict):
                container.clear()
                container.update(items)
            else:
                container[:] = items
        default_generator._restore(self.generator._data)


def _host_copy(t: Tensor) -> np.ndarray | None:
    """A copy of a tensor's values in host memory (a GPU's memory holds the model, not a second
    copy of it), or None for a read-only array (nothing can have changed it)."""
    return host_copy(t) if t._device.type != "cpu" or t._data.flags.writeable else None


def _contents(container: dict | list) -> dict | list:
    return dict(container) if isinstance(container, dict) else list(container)
