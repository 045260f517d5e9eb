"""``ember.serialization``: the weights-only allow-list, as ``torch.serialization``'s
(:mod:`ember.io.safe_globals`): classes a checkpoint's pickles may name and
``ember.load(..., weights_only=True)`` then rebuilds, and
``get_unsafe_globals_in_checkpoint`` (:mod:`ember.io.unsafe_globals`) lists those a file names;
``save``/``load`` are ``ember.save``/``ember.load``.

Example:
    >>> ember.serialization.add_safe_globals([MyConfig])
    >>> ember.load(path)["config"]  # a MyConfig, with the default weights_only=True
"""

from ember.io.checkpoint import load, save
from ember.io.safe_globals import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)
from ember.io.unsafe_globals import get_unsafe_globals_in_checkpoint

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "get_unsafe_globals_in_checkpoint", "load", "safe_globals", "save"]
