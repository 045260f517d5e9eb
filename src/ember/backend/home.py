"""Ember's own directory for what it keeps between runs (the hub's downloads, the jit's
compiled loops): ``$EMBER_HOME``, else ``$XDG_CACHE_HOME/ember``, else ``~/.cache/ember``
(PyTorch's layout, with ``EMBER_HOME`` for ``TORCH_HOME``)."""

from __future__ import annotations

import os

__all__ = ["ember_home"]


def ember_home(*parts: str) -> str:
    """The path ``parts`` inside Ember's directory (not made here).

    Example:
        >>> os.path.basename(ember_home("hub"))
        'hub'
    """
    home = os.getenv("EMBER_HOME")
    if home is None:
        home = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "ember")
    return os.path.join(os.path.expanduser(home), *parts)
