"""Checkpoints of a run, one file per epoch (``epoch_003.safetensors``), written atomically
with :func:`ember.save`: model and optimizer state, the epoch, the random-number state and
the history so far. ``--resume`` loads the newest."""

from __future__ import annotations

import os
import re
from typing import Any

_NAME = re.compile(r"^epoch_(\d+)\.safetensors$")


def checkpoint_path(out_dir: str, epoch: int) -> str:
    """Where the checkpoint after ``epoch`` lives."""
    return os.path.join(out_dir, f"epoch_{epoch:03d}.safetensors")


def latest_checkpoint(out_dir: str) -> str | None:
    """The checkpoint of the highest epoch in ``out_dir``, or None."""
    if not os.path.isdir(out_dir):
        return None
    found = [(int(m.group(1)), name) for name in os.listdir(out_dir)
             if (m := _NAME.match(name))]
    return os.path.join(out_dir, max(found)[1]) if found else None


def save_checkpoint(out_dir: str, epoch: int, state: dict[str, Any]) -> str:
    """Writes ``state`` for ``epoch``; returns the path."""
    import ember
    path = checkpoint_path(out_dir, epoch)
    ember.save({"epoch": epoch, **state}, path)
    return path


def load_checkpoint(path: str) -> dict[str, Any]:
    """Reads a checkpoint written by :func:`save_checkpoint`."""
    import ember
    return ember.load(path)
