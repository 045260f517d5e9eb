"""The format of a distributed checkpoint: every rank writes its pieces (safetensors), rank 0
a manifest.

A checkpoint is a folder (``step_00000042/``) holding ``rank00000.safetensors``, … and
``manifest.json``. The manifest lists, for each entry, its global shape and dtype and where
each piece of its flattened values lies (file, key, flat offset, length). A plain tensor is
written once, by one of the ranks that hold its name (replicated entries are spread over the
ranks; a pipeline stage's own weights are written by that stage); a :class:`ShardedTensor` is
written by every rank that holds a piece. Loading assembles whatever range each rank asks
for, so a checkpoint saved on 4 ranks loads on 2 (or 1, or 8).

Saving is atomic: the files go to a hidden ``.step_….tmp`` folder beside it that is renamed
to its final name only after every rank has written and the manifest is in place, so a
folder with a manifest is always complete and :func:`latest` never returns a torn one.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ember.distributed.process_group import ProcessGroup
from ember.errors import CheckpointError
from ember.io.atomic import atomic_write
from ember.io.flat_files import load_file, write_tensors
from ember.io.safe_globals import allow_own
from ember.tensor import Tensor

MANIFEST = "manifest.json"


class ShardedTensor(NamedTuple):
    """A piece of a larger tensor: ``local`` holds the flattened global values
    ``[start, start + local.numel())`` of a tensor of ``global_shape``."""

    local: Tensor
    global_shape: tuple
    start: int


allow_own(ShardedTensor)  # (a sharded state dict saved per rank with ember.save loads back)


def _flatten(state: dict) -> dict[str, Any]:
    """``{"model": {"w": t}, "opt": {"lr": 0.1}}`` → ``{"model.w": t, "opt.lr": 0.1}``:
    tensors, sharded tensors and plain values (a list or tuple holding a tensor or an
    int-keyed dict is walked by index, as a dict by key; another is one plain value). Two
    entries whose names flatten alike (``{"a.b": 1, "a": {"b": 2}}``, ``{0: 1, "0": 2}``)
    are refused."""
    flat: dict[str, Any] = {}
    _walk(state, "", "", flat, {})
    return flat


def _walk(container: Any, prefix: str, path: str, flat: dict, paths: dict) -> None:
    """Adds ``container``'s entries to ``flat`` (``paths``: each name's place, for errors)."""
    for key, value in _children(container):
        name, where = f"{prefix}{key}", f"{path}[{key!r}]"
        if not _holds_tensor(value) and (
                isinstance(value, dict) or _walked(value)):
            _walk(value, name + ".", where, flat, paths)
            continue
        if name in flat:
            raise CheckpointError(
                f"distributed checkpoint: state{paths[name]} and state{where} both flatten "
                f"to the name {name!r}, so one would overwrite the other. Hint: rename one "
                "of the keys (a key with a dot, or an int key beside its str twin)")
        paths[name] = where
        if isinstance(value, Tensor | ShardedTensor):
            flat[name] = value
        elif _is_dtensor(value):
            flat[name] = _dtensor_entry(name, value)
        elif _plain(value):
            flat[name] = value
        else:
            raise CheckpointError(
                f"distributed checkpoint: {name!r} is a {type(value).__name__}, which it "
                "cannot store: entries are tensors, ShardedTensors, DTensors and plain values "
                "(None, bool, int, float, str, and lists and str-keyed dicts of them), "
                "nested in dicts, lists and tuples. Hint: convert it to one of those (e.g. "
                "float(x) for a NumPy number)"
            )


def _children(value: Any) -> Any:
    """A dict's items, or a list's or tuple's elements by index."""
    return value.items() if isinstance(value, dict) else enumerate(value)


def _plain(value: Any) -> bool:
    """Whether ``value`` is stored as JSON in the manifest (and read back equal)."""
    if value is None or type(value) in (bool, int, float, str):
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, dict) and all(type(k) is str and _plain(v)
                                           for k, v in value.items())


def _walked(value: Any) -> bool:
    """Whether a list or tuple holds a tensor or a dict JSON cannot hold (an int key, as an
    optimizer's state), at any depth: walked by index, not stored whole."""
    return isinstance(value, list | tuple) and any(
        _holds_tensor(v) or _walked(v) or
        (isinstance(v, dict) and not _plain(v)) for v in value)


def _like(saved: Any, template: Any) -> Any:
    """A plain value read from JSON with the template's tuples (JSON has only lists)."""
    if isinstance(template, tuple | list) and isinstance(saved, list) and \
            len(saved) == len(template):
        items = [_like(s, t) for s, t in zip(saved, template, strict=True)]
        return tuple(items) if isinstance(template, tuple) else items
    if isinstance(template, dict) and isinstance(saved, dict):
        return {k: _like(v, template.get(k)) for k, v in saved.items()}
    return saved


def _is_dtensor(value: Any) -> bool:
    from ember.distributed.tensor.dtensor import DTensor  # (imported where met: it is large)

    return isinstance(value, DTensor)


class _ReplicaPiece(ShardedTensor):
    """A :class:`ShardedTensor` that another replica of the same piece writes (HSDP's
    ``(Replicate(), Shard(0))``: the ranks of one column hold the same rows); it is loaded
    into, not written."""


def _dtensor_entry(name: str, d: Any) -> Tensor | ShardedTensor:
    """What a rank holds of a DTensor: the whole tensor when it is replicated, its range of
    the flattened values when one mesh dimension places it ``Shard(0)`` and the others
    ``Replicate`` (``fully_shard``'s parameters, HSDP's too: written by the ranks at
    coordinate 0 of the replicating dimensions); the local tensor shares memory, so loading
    fills it in place."""
    from ember.distributed.tensor.placement import Shard
    from ember.distributed.tensor.redistribute import local_bounds

    if all(p.is_replicate() for p in d.placements):
        return d.to_local()
    sharding = [m for m, p in enumerate(d.placements) if not p.is_replicate()]
    if len(sharding) == 1 and d.placements[sharding[0]] == Shard(0):
        lo, _ = local_bounds(d.shape[0], 0, d.device_mesh, d.placements)
        replica = any(c for m, c in enumerate(d.device_mesh.get_coordinate()) if m != sharding[0])
        piece = _ReplicaPiece if replica else ShardedTensor
        return piece(d.to_local(), tuple(d.shape), lo * math.prod(d.shape[1:]))
    raise CheckpointError(f"distributed checkpoint: {name!r} is a DTensor with placements "
                          f"{d.placements}; only Replicate, and Shard(0) over one mesh "
                          "dimension (Replicate over the others), are written. Hint: "
                          "redistribute it to Shard(0) first")


class Alone:
    """The group of a process that checkpoints on its own (no process group initialized, or
    ``no_dist=True``, as PyTorch's): rank 0 of 1, with the communicator calls a checkpoint
    makes."""

    def __init__(self) -> None:
        self.comm = self

    def rank(self) -> int:
        return 0

    def size(self) -> int:
        return 1

    def Barrier(self) -> None:  # noqa: N802 (MPI's names)
        pass

    def gather(self, value: Any, root: int = 0) -> list:
        return [value]

    def allgather(self, value: Any) -> list:
        return [value]


def write(final: Path, state: dict, step: int | None, extra: dict | None,
          g: ProcessGroup | Alone) -> Path:
    """Writes this rank's share of ``state`` (nested dicts of tensors, ShardedTensors and
    ``Replicate`` or ``Shard(0)`` DTensors, as ``fully_shard``'s state dict holds, HSDP's
    ``(Replicate(), Shard(0))`` too) into the folder ``final`` and, from rank 0, the manifest
    with ``step`` and ``extra`` (JSON-able); every rank of ``g`` calls it. Returns ``final``.
    """
    flat = _flatten(state)  # (bad entries raise before anything is written)
    rank, size = g.rank(), g.size()
    tmp = final.parent / f".{final.name}.tmp"
    if rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)  # (a parent folder too: the root of the first step)
    g.comm.Barrier()
    writer = _writers(g, flat)
    mine, pieces = {}, []
    filename = f"rank{rank:05d}.safetensors"
    for name, value in sorted(flat.items()):
        if isinstance(value, _ReplicaPiece) or not _is_tensor_entry(value):
            continue
        if isinstance(value, ShardedTensor):
            t, shape, start = value.local, tuple(value.global_shape), int(value.start)
        elif writer[name] == rank:
            t, shape, start = value, tuple(value.shape), 0
        else:
            continue
        key = f"{name}@{start}"
        mine[key] = t.detach().reshape(-1)
        pieces.append(
            (
                name,
                {
                    "shape": list(shape),
                    "dtype": t.dtype.name,
                    "file": filename,
                    "key": key,
                    "start": start,
                    "numel": t.numel(),
                },
            )
        )
    write_tensors(mine, tmp / filename)  # (tied weights: a copy under each name)
    everyone = g.comm.gather(pieces, root=0)
    if rank == 0:
        entries: dict[str, dict] = {}
        for name, piece in (p for ps in everyone for p in ps):
            entry = entries.setdefault(
                name, {"shape": piece["shape"], "dtype": piece["dtype"], "pieces": []}
            )
            entry["pieces"].append({k: piece[k] for k in ("file", "key", "start", "numel")})
        values = {name: v for name, v in flat.items() if not _is_tensor_entry(v)}
        manifest = {"step": step, "world_size": size, "entries": entries, "values": values,
                    "extra": extra or {}}
        with atomic_write(tmp / MANIFEST) as f:
            f.write(json.dumps(manifest, indent=1).encode())
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    g.comm.Barrier()
    return final


def _writers(g: ProcessGroup, flat: dict) -> dict[str, int]:
    """Which rank writes each plain tensor: ranks holding the same name hold the same
    (replicated) value and share the writing; a name only some ranks hold (a pipeline stage's
    weights) is written by one of those."""
    plain = sorted(name for name, v in flat.items() if isinstance(v, Tensor))
    holders: dict[str, list[int]] = {}
    for r, names in enumerate(g.comm.allgather(plain)):
        for name in names:
            holders.setdefault(name, []).append(r)
    return {name: ranks[i % len(ranks)] for i, (name, ranks) in
            enumerate(sorted(holders.items()))}


def latest(root: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint folder under ``root``, or None."""
    root = Path(root)
    if not root.is_dir():
        return None
    done = sorted(p for p in root.glob("step_*") if (p / MANIFEST).is_file())
    return done[-1] if done else None


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of a checkpoint folder, with a clear error if it is missing or damaged."""
    where = Path(path) / MANIFEST
    try:
        return json.loads(where.read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{where}: cannot read the checkpoint manifest ({exc})") from exc


def read(path: str | os.PathLike, state: dict) -> dict:
    """Fills the tensors of ``state`` (same nesting as saved; ShardedTensors receive their
    ``[start, start + numel)`` range of the saved values, DTensors their local pieces) in
    place, and puts the saved plain values (hyperparameters, step counts) in place of the
    template's, as PyTorch's does; returns ``extra``."""
    path = Path(path)
    manifest = read_manifest(path)
    files: dict[str, dict] = {}
    plain = manifest.get("values", {})
    for name, target in _flatten(state).items():
        if not _is_tensor_entry(target):
            if name in manifest["entries"]:
                raise CheckpointError(
                    f"{path}: {name!r} is saved as a tensor, the template holds a plain "
                    f"{type(target).__name__} there. Hint: put a tensor of shape "
                    f"{tuple(manifest['entries'][name]['shape'])} in the template")
            if name not in plain:
                raise CheckpointError(
                    f"{path}: no plain value {name!r} in the checkpoint (it has "
                    f"{sorted(plain)[:6]} …)"
                )
            continue
        entry = manifest["entries"].get(name)
        if entry is None and name in plain:
            raise CheckpointError(
                f"{path}: {name!r} is saved as a plain value, the template holds a tensor "
                "there. Hint: put the plain value's type in the template")
        if entry is None:
            raise CheckpointError(
                f"{path}: no entry {name!r} in the checkpoint (it has "
                f"{sorted(manifest['entries'])[:6]} …)"
            )
        t = target.local if isinstance(target, ShardedTensor) else target
        start = int(target.start) if isinstance(target, ShardedTensor) else 0
        if not isinstance(target, ShardedTensor) and list(t.shape) != entry["shape"]:
            raise CheckpointError(
                f"{path}: {name!r} is saved with shape {tuple(entry['shape'])}"
                f", the tensor to load into has {tuple(t.shape)}"
            )
        values = _read_range(path, entry, start, t.numel(), files, name)
        t._data[...] = values.reshape(t.shape).astype(t._data.dtype, copy=False)
        t._vc.value += 1
    _put_plain(state, plain, "")
    return manifest.get("extra", {})


def _is_tensor_entry(value: Any) -> bool:
    return isinstance(value, Tensor | ShardedTensor)


def _holds_tensor(value: Any) -> bool:
    """Whether ``value`` is saved as a tensor entry (a tensor, ShardedTensor or DTensor)."""
    return _is_tensor_entry(value) or _is_dtensor(value)


def _put_plain(container: Any, values: dict, prefix: str) -> Any:
    """``container`` with its plain values replaced by the saved ones: in place in dicts and
    lists, a new tuple for a tuple (set into its parent)."""
    items = []
    for key, value in _children(container):
        name = f"{prefix}{key}"
        if _holds_tensor(value):
            new = value
        elif isinstance(value, dict) or _walked(value):
            new = _put_plain(value, values, name + ".")
        else:
            new = _like(values[name], value)
        items.append((key, new))
    if isinstance(container, tuple):
        return tuple(v for _, v in items)
    for key, new in items:
        if new is not container[key]:
            container[key] = new
    return container


def _read_range(
    path: Path, entry: dict, start: int, count: int, files: dict, name: str
) -> np.ndarray:
    """Values ``[start, start + count)`` of a flattened entry, from the pieces that overlap."""
    parts = []
    for piece in sorted(entry["pieces"], key=lambda p: p["start"]):
        lo, hi = max(start, piece["start"]), min(start + count, piece["start"] + piece["numel"])
        if lo < hi:
            if piece["file"] not in files:  # each rank file is read once per load
                files[piece["file"]] = load_file(path / piece["file"])
            data = files[piece["file"]][piece["key"]]._data
            parts.append((lo, data[lo - piece["start"] : hi - piece["start"]]))
    filled = sum(len(part) for _, part in parts)
    if filled != count:
        raise CheckpointError(
            f"{path}: the pieces of {name!r} cover {filled} of the "
            f"{count} values asked for (from {start}); the checkpoint is "
            "incomplete"
        )
    out = np.empty(count, parts[0][1].dtype if parts else np.float32)
    for lo, part in parts:
        out[lo - start : lo - start + len(part)] = part
    return out
