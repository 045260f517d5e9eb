"""``ember.nn.parallel``: where PyTorch users look for ``DataParallel`` (here, as PyTorch runs
it without accelerators) and ``DistributedDataParallel``.

The latter lives in :mod:`ember.distributed` (a layer above ``nn``), which registers it here
when imported (``import ember`` does), so ``nn`` never imports the distributed package.

Example:
    >>> model = ember.nn.parallel.DistributedDataParallel(model)
"""

from __future__ import annotations

from typing import Any

from ember.nn.data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel", "register"]

_REGISTERED: dict[str, Any] = {}


def register(name: str, obj: Any) -> None:
    """Makes ``obj`` available as ``ember.nn.parallel.<name>`` (called by upper layers)."""
    _REGISTERED[name] = obj


def __getattr__(name: str) -> Any:
    try:
        return _REGISTERED[name]
    except KeyError:
        raise AttributeError(
            f"module 'ember.nn.parallel' has no attribute {name!r}. Hint: "
            "DistributedDataParallel is registered by ember.distributed; "
            "import ember (or ember.distributed) first"
        ) from None
