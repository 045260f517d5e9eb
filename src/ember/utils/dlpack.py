"""``ember.utils.dlpack``: PyTorch's ``torch.utils.dlpack`` — :func:`to_dlpack` and
:func:`from_dlpack`, the same functions as ``ember.to_dlpack`` and ``ember.from_dlpack``
(defined in :mod:`ember.ops.dlpack`)."""

from ember.ops.dlpack import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
