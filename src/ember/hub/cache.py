"""Where ``ember.hub`` keeps what it downloads: ``get_dir()``/``set_dir()``.

The directory is, first match wins: the one given to :func:`set_dir`;
``$EMBER_HOME/hub``; ``$XDG_CACHE_HOME/ember/hub``; ``~/.cache/ember/hub`` (PyTorch's
layout, with ``EMBER_HOME`` for ``TORCH_HOME``).
"""

from __future__ import annotations

import os

from ember.backend.home import ember_home

__all__ = ["get_dir", "set_dir"]

_chosen_dir: str | None = None


def get_dir() -> str:
    """The hub's cache directory (downloaded checkpoints go to its ``checkpoints``
    subdirectory); see the module docstring for how it is chosen.

    Example:
        >>> os.path.basename(ember.hub.get_dir())
        'hub'
    """
    return ember_home("hub") if _chosen_dir is None else _chosen_dir


def set_dir(d: str | os.PathLike) -> None:
    """Makes ``d`` (``~`` expanded) the hub's cache directory from now on.

    Example:
        >>> ember.hub.set_dir("~/models/hub")  # doctest: +SKIP
    """
    global _chosen_dir
    _chosen_dir = os.path.expanduser(os.fspath(d))
