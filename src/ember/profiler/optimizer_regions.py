"""PyTorch's region around each optimizer step while a profile records:
``Optimizer.step#<class>.step``, so that tables and traces show where the update's time goes
(its ops are the region's children), as ``torch.profiler`` shows it.

The region opens in a global step pre-hook and closes in a global post-hook
(:func:`ember.optim.optimizer.register_optimizer_step_pre_hook`), installed while any
profile records. A step that raises runs no post-hook: its region ends when the next step
of that optimizer starts, or with the recording span.

Example:
    >>> opt = ember.optim.SGD([ember.ones(2, requires_grad=True)], lr=0.1)
    >>> with ember.profiler.profile() as prof:
    ...     opt.step()
    >>> [e.name for e in prof.events()]
    ['Optimizer.step#SGD.step']
"""

from __future__ import annotations

from typing import Any

from ember.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

_open: dict[int, Any] = {}  # id(optimizer) -> its step's region (a record_function)
_handles: list[Any] = []


def install(region: type) -> None:
    """Adds the hooks; ``region`` is :class:`~ember.profiler.record_function`."""
    def before(opt: Any, args: tuple, kwargs: dict) -> None:
        after(opt, args, kwargs)  # (a step that raised left its region open)
        _open[id(opt)] = region(f"Optimizer.step#{type(opt).__name__}.step").__enter__()

    def after(opt: Any, args: tuple, kwargs: dict) -> None:
        opened = _open.pop(id(opt), None)
        if opened is not None:
            opened.__exit__(None, None, None)

    _handles[:] = [register_optimizer_step_pre_hook(before),
                   register_optimizer_step_post_hook(after)]


def uninstall() -> None:
    """Removes the hooks (the last profile stopped; its span closed any region left open)."""
    for handle in _handles:
        handle.remove()
    _handles.clear()
    _open.clear()
