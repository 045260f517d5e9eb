"""Distributed checkpoints: every rank writes its pieces of the state, rank 0 a manifest, and
loading reads whatever range each rank holds now, on any number of ranks
(:mod:`~ember.distributed.checkpoint.sharded` has the format).

Two ways to call :func:`save` and :func:`load`. Ember's own keeps numbered steps under a
root (``root/step_00000010``) with :func:`latest` to resume from; PyTorch's
(``torch.distributed.checkpoint``) names the folder itself with ``checkpoint_id`` and calls
``state_dict()`` / ``load_state_dict()`` of the objects it is given (a model, an optimizer).

Example (every rank):
    >>> path = checkpoint.save(root, {"model": ..., "opt": zero.sharded_state()}, step=10)
    >>> extra = checkpoint.load(checkpoint.latest(root), template)
    >>> checkpoint.save({"model": model, "optim": opt}, checkpoint_id="ckpt")  # PyTorch's
    >>> checkpoint.load({"model": model, "optim": opt}, checkpoint_id="ckpt")
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ember.distributed.checkpoint.sharded import (
    MANIFEST,
    Alone,
    ShardedTensor,
    latest,
    read,
    read_manifest,
    write,
)
from ember.distributed.process_group import ProcessGroup, is_initialized, resolve
from ember.errors import ArgumentError, CheckpointError

__all__ = ["save", "load", "latest", "read_manifest", "step_dir", "ShardedTensor", "MANIFEST"]


def step_dir(root: str | os.PathLike, step: int) -> Path:
    """The folder of step ``step`` under ``root`` (``root/step_00000010``)."""
    return Path(root) / f"step_{step:08d}"


def save(root: str | os.PathLike | Mapping, state: dict | None = None, step: int | None = None,
         extra: dict | None = None, group: ProcessGroup | None = None, *,
         checkpoint_id: str | os.PathLike | None = None, process_group: ProcessGroup | None = None,
         no_dist: bool = False, **unsupported: Any) -> Path:
    """Writes this rank's share of ``state`` (nested dicts, lists and tuples of tensors,
    ShardedTensors, ``Replicate`` or ``Shard(0)`` DTensors and plain values) into
    ``root/step_…`` and, from rank 0, the manifest with ``extra`` (JSON-able); every rank of
    ``group`` calls it. Returns the folder. Saving is atomic: a folder that has its name is
    complete.

    PyTorch's form ``save(state_dict, checkpoint_id=folder)`` writes into ``folder``; a
    value with ``state_dict()`` and ``load_state_dict()`` (a module, an optimizer) is saved
    as its ``state_dict()``. Without an initialized process group (or with ``no_dist``) one
    process saves alone, as PyTorch's.

    Example:
        >>> checkpoint.save("runs", {"model": model.state_dict()}, step=10)
        >>> checkpoint.save({"model": model, "optim": opt}, checkpoint_id="runs/ckpt")
    """
    if isinstance(root, Mapping):
        _refuse_others("save", unsupported, state, step, extra, group)
        final = _folder("save", checkpoint_id)
        if final.exists() and any(final.iterdir()) and not (final / MANIFEST).is_file():
            raise CheckpointError(
                f"checkpoint.save: {final} holds files that are not a checkpoint; it would "
                "replace them. Hint: give checkpoint_id a new or empty folder")
        state = {k: v.state_dict() if _stateful(v) else v for k, v in root.items()}
        return write(final, state, None, None, _group(process_group, no_dist, "save"))
    _refuse_others("save", unsupported, checkpoint_id, process_group, no_dist or None)
    if state is None or step is None:
        raise ArgumentError("checkpoint.save(root, state, step): give the state and the step "
                            "(or PyTorch's form save(state_dict, checkpoint_id=folder))")
    return write(step_dir(root, step), state, step, extra, resolve(group, "checkpoint.save"))


def load(path: str | os.PathLike | Mapping, state: dict | None = None, *,
         checkpoint_id: str | os.PathLike | None = None, process_group: ProcessGroup | None = None,
         no_dist: bool = False, **unsupported: Any) -> dict | None:
    """Fills the tensors of ``state`` (nested as saved: ShardedTensors get their range of the
    saved values, DTensors their local pieces) in place from the checkpoint folder ``path``,
    puts the saved plain values (hyperparameters, step counts) in place of the template's,
    and returns the ``extra`` saved with it.

    PyTorch's form ``load(state_dict, checkpoint_id=folder)`` returns None; a value with
    ``state_dict()`` and ``load_state_dict()`` (a module, an optimizer) is filled through
    them.

    Example:
        >>> extra = checkpoint.load(checkpoint.latest("runs"), {"model": model.state_dict()})
        >>> checkpoint.load({"model": model, "optim": opt}, checkpoint_id="runs/ckpt")
    """
    if isinstance(path, Mapping):
        _refuse_others("load", unsupported, state)
        folder = _folder("load", checkpoint_id)
        _group(process_group, no_dist, "load")  # (every rank reads what it holds)
        templates = {k: v.state_dict() if _stateful(v) else v for k, v in path.items()}
        read(folder, templates)
        for key, value in path.items():
            if _stateful(value):
                value.load_state_dict(templates[key])
            elif isinstance(path, dict):
                path[key] = templates[key]  # (a plain value read anew)
        return None
    _refuse_others("load", unsupported, checkpoint_id, process_group, no_dist or None)
    if state is None:
        raise ArgumentError("checkpoint.load(path, state): give the state to fill (or "
                            "PyTorch's form load(state_dict, checkpoint_id=folder))")
    return read(path, state)


def _stateful(value: Any) -> bool:
    """Whether ``value`` is saved through its ``state_dict()`` (PyTorch's ``Stateful``)."""
    return callable(getattr(value, "state_dict", None)) and \
        callable(getattr(value, "load_state_dict", None))


def _folder(who: str, checkpoint_id: Any) -> Path:
    if checkpoint_id is None:
        raise ArgumentError(f"checkpoint.{who}(state_dict, checkpoint_id=folder): give the "
                            "folder as checkpoint_id")
    folder = Path(checkpoint_id).resolve()
    if folder.exists() and not folder.is_dir():
        raise CheckpointError(f"checkpoint.{who}: {folder} is a file; checkpoint_id names the "
                              "folder a checkpoint is in")
    return folder


def _group(group: ProcessGroup | None, no_dist: bool, who: str) -> ProcessGroup | Alone:
    return Alone() if no_dist or (group is None and not is_initialized()) else \
        resolve(group, f"checkpoint.{who}")


def _refuse_others(who: str, unsupported: dict, *others: Any) -> None:
    """Refuses PyTorch's storage readers, writers and planners (Ember's checkpoints are one
    format: the folder is ``checkpoint_id``), and arguments of the other form."""
    unsupported = sorted(k for k, v in unsupported.items() if v is not None)  # (PyTorch's
    if unsupported:  # defaults, None, are fine)
        raise ArgumentError(f"checkpoint.{who}: {', '.join(unsupported)} not "
                            "supported: Ember writes one format (safetensors pieces and a "
                            "JSON manifest). Hint: name the folder with checkpoint_id")
    if any(x is not None for x in others):
        raise ArgumentError(f"checkpoint.{who}: mixes its two forms; call it as {who}(root, "
                            f"state{', step' if who == 'save' else ''}) or as PyTorch's "
                            f"{who}(state_dict, checkpoint_id=folder)")
