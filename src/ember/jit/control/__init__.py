"""Structured control flow that eager code, ``ember.jit``, autograd and ``vmap`` all keep:
:func:`cond` (``torch.cond``) and :func:`while_loop` (``torch._higher_order_ops.while_loop``)."""

from ember.jit.control.cond import cond

__all__ = ["cond"]
