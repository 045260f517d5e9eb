"""Where ``ember.hub`` keeps what it downloads: ``get_dir()``/``set_dir()``.

The directory is, first match wins: the one given to :func:`set_dir`;
``$EMBER_HOME/hub``; ``$XDG_CACHE_HOME/ember/hub``; ``~/.cache/ember/hub`` (PyTorch's
layout, with ``EMBER_HOME`` for ``TORCH_HOME``).
"""

from __future__ import annotations

import os

__all__ = ["get_dir", "set_dir"]

_chosen_dir: str | None = None


def get_dir() -> str:
    """The hub's cache directory (downloaded checkpoints go to its ``checkpoints``
    subdirectory); see the module docstring for how it is chosen.

    Example:
        >>> os.path.basename(ember.hub.get_dir())
        'hub'
    """
    if _chosen_dir is not None:
        return _chosen_dir
    home = os.getenv("EMBER_HOME")
    if home is None:
        home = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "ember")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Makes ``d`` (``~`` expanded) the hub's cache directory from now on.

    Example:
        >>> ember.hub.set_dir("~/models/hub")  # doctest: +SKIP
    """
    global _chosen_dir
    _chosen_dir = os.path.expanduser(os.fspath(d))
