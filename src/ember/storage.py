"""``ember.storage``: the storage classes, as ``torch.storage`` (also ``ember.UntypedStorage``
and ``ember.TypedStorage``; a tensor's are ``x.untyped_storage()`` and ``x.storage()``).

Example:
    >>> from ember.storage import UntypedStorage
    >>> isinstance(ember.ones(2).untyped_storage(), UntypedStorage)
    True
"""

from ember.ops.storage_objects import TypedStorage, UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
