"""Structured control flow that eager code, ``ember.jit``, autograd and ``vmap`` all keep:
:func:`cond` (``torch.cond``) and :func:`while_loop` (``torch._higher_order_ops.while_loop``)."""

from ember.jit.control import batching  # noqa: F401 - registers vmap's rule for cond
from ember.jit.control.cond import cond
from ember.jit.control.while_loop import while_loop

__all__ = ["cond", "while_loop"]
