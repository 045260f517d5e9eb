"""The distributed error classes (``torch.distributed``'s names), below every module that
raises them; :mod:`ember.distributed` and :mod:`ember.distributed.process_group` re-export them.

Example:
    >>> import ember.distributed as dist
    >>> issubclass(dist.DistBackendError, dist.DistError)
    True
"""

from __future__ import annotations

from ember.errors import EmberError


class DistError(EmberError, RuntimeError):
    """A distributed call that cannot work: no process group, a rank outside a group, …
    (``torch.distributed.DistError``; ``DistributedError`` is the same class)."""


DistributedError = DistError


class DistBackendError(DistError):
    """The communication backend failed, e.g. a rank missed :func:`monitored_barrier`."""


class DistNetworkError(DistError):
    """A network failure (raised by MPI itself in Ember; kept for PyTorch's ``except``)."""


class DistStoreError(DistError):
    """A key-value store call failed, e.g. ``Store.wait`` timed out."""
