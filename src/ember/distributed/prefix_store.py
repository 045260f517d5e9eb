"""``PrefixStore``: a view of another store whose keys all start with ``prefix/``, so several
users (e.g. process groups) share one store without clashing.

Example:
    >>> base = dist.HashStore()
    >>> dist.PrefixStore("job1", base).set("ready", "1")
    >>> base.get("job1/ready")
    b'1'
"""

from __future__ import annotations

from typing import Any

from ember.distributed.store import Store


class PrefixStore(Store):
    """``store`` with every key written as ``prefix + "/" + key`` (PyTorch's); ``num_keys``
    counts all of the underlying store's keys, as in PyTorch.

    Example:
        >>> scoped = dist.PrefixStore("trainer", dist.HashStore())
        >>> scoped.add("step", 1), scoped.underlying_store.get("trainer/step")
        (1, b'1')
    """

    def __init__(self, prefix: str, store: Store) -> None:
        if not isinstance(store, Store):
            raise TypeError(f"PrefixStore: expected an ember.distributed.Store, got "
                            f"{type(store).__name__}")
        super().__init__(store.timeout)
        self._prefix = f"{prefix}/"
        self._store = store

    @property
    def underlying_store(self) -> Store:
        """The store this one writes into."""
        return self._store

    def _request(self, op: str, *args: Any) -> Any:
        if not args:  # num_keys
            return self._store._request(op)
        keys, rest = args[0], args[1:]
        keys = ([self._prefix + k for k in keys] if isinstance(keys, list)
                else self._prefix + keys)
        out = self._store._request(op, keys, *rest)
        if op == "missing_after":
            out = [k[len(self._prefix):] for k in out]
        return out
