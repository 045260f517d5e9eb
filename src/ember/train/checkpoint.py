"""Checkpoints of a run, one file per epoch (``epoch_003.safetensors``), written atomically
with :func:`ember.save`: model and optimizer state, the epoch, the random-number state and
the history so far. ``--resume`` loads the newest; a fresh run refuses to replace another
run's checkpoints unless told to (``--overwrite``); ``--keep-last N`` deletes all but the newest
N after each write."""

from __future__ import annotations

import os
import re
from typing import Any

from ember.errors import EmberError
from ember.train.config import ConfigError

_NAME = re.compile(r"^epoch_(\d+)\.safetensors$")
_KEYS = ("epoch", "model", "optimizer", "rng", "history", "config")


def checkpoint_path(out_dir: str, epoch: int) -> str:
    """Where the checkpoint after ``epoch`` lives."""
    return os.path.join(out_dir, f"epoch_{epoch:03d}.safetensors")


def _checkpoints(out_dir: str) -> list[str]:
    """The checkpoints in ``out_dir``, oldest epoch first."""
    if not os.path.isdir(out_dir):
        return []
    found = sorted((int(m.group(1)), name) for name in os.listdir(out_dir)
                   if (m := _NAME.match(name)))
    return [os.path.join(out_dir, name) for _, name in found]


def latest_checkpoint(out_dir: str) -> str | None:
    """The checkpoint of the highest epoch in ``out_dir``, or None."""
    found = _checkpoints(out_dir)
    return found[-1] if found else None


def make_out_dir(out_dir: str) -> None:
    """Creates ``out_dir``; a ConfigError naming ``--out`` when it cannot be (a file is in
    the way, a read-only file system)."""
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--out {out_dir!r}: cannot create the folder ({e.strerror}); pick "
                          "another --out") from None


def prepare_out_dir(out_dir: str, resume: bool, overwrite: bool) -> None:
    """Creates ``out_dir``. A fresh run (not ``resume``) into a folder with checkpoints is
    refused: it would replace them, and a later ``--resume`` could pick up the earlier run's
    higher epochs. With ``overwrite`` those checkpoints are deleted instead."""
    make_out_dir(out_dir)
    found = _checkpoints(out_dir)
    if not found or resume:
        return
    if not overwrite:
        names = [os.path.basename(p) for p in found]
        raise ConfigError(f"--out {out_dir} holds the checkpoints of an earlier run "
                          f"({names[0]}{' to ' + names[-1] if len(names) > 1 else ''}); "
                          "continue it with --resume, start afresh with --overwrite (deletes "
                          "them), or pick another --out")
    for path in found:
        os.remove(path)


def save_checkpoint(out_dir: str, epoch: int, state: dict[str, Any],
                    keep_last: int | None = None) -> str:
    """Writes ``state`` for ``epoch``; returns the path. Once it is written, all but the
    newest ``keep_last`` checkpoints (if given) are deleted. A failed write (a full disk)
    leaves the earlier checkpoints as they were and says so."""
    import ember
    path = checkpoint_path(out_dir, epoch)
    try:
        ember.save({"epoch": epoch, **state}, path)
    except OSError as e:
        kept = latest_checkpoint(out_dir)
        raise OSError(e.errno, f"the checkpoint of epoch {epoch} could not be written "
                      f"({e.strerror}); "
                      + (f"{kept} is intact: make room and continue with --resume" if kept
                         else "no earlier checkpoint"), path) from None
    for old in _checkpoints(out_dir)[:-keep_last] if keep_last else ():
        os.remove(old)
    return path


def load_checkpoint(path: str) -> dict[str, Any]:
    """Reads a checkpoint written by :func:`save_checkpoint`; a file that cannot be read or
    is not such a checkpoint raises a :class:`ConfigError` naming it, with a hint."""
    import ember
    try:
        state = ember.load(path)
    except (EmberError, OSError) as e:
        raise ConfigError(f"--resume: {path} cannot be read ({e}); {_move_hint(path)}"
                          ) from None
    missing = [key for key in _KEYS if key not in state] if isinstance(state, dict) else _KEYS
    if missing:
        raise ConfigError(f"--resume: {path} is not a checkpoint of ember train (it lacks "
                          f"{', '.join(missing)}); {_move_hint(path)}")
    return state


def _move_hint(path: str) -> str:
    """What to do with an unusable newest checkpoint: move it away and resume from the one
    before, if any."""
    found = _checkpoints(os.path.dirname(path))
    earlier = found[-2] if len(found) > 1 and found[-1] == path else None
    return (f"move it out of the folder to resume from {earlier}" if earlier else
            "move it out of the folder, or pick another --out")
