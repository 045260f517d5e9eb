"""Flat safetensors files (``{name: Tensor}`` and string metadata), for interop with other
safetensors users: ``ember.io.save_file`` / ``ember.io.load_file``, as
``safetensors.torch``'s. Nested checkpoints are :mod:`ember.io.checkpoint`'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ember.backend import Device
from ember.backend import device as to_device
from ember.errors import CheckpointError
from ember.io import safetensors_file as st
from ember.io.placement import make_tensor
from ember.io.safetensors_file import PathOrFile, read_arrays, write_arrays
from ember.io.shared_views import layout, sharing_groups
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor


def shared_groups(tensors: Mapping[str, Tensor]) -> list[set[str]]:
    """The names whose tensors share memory (an element), grouped (groups of one left out);
    meta tensors and empty storages share nothing. Tensors that only interleave (two columns
    of a matrix) share nothing either."""
    by_storage: dict[tuple, list[str]] = {}
    for name, t in tensors.items():
        if t.is_meta:
            continue
        storage = t.untyped_storage()
        if storage.nbytes():
            key = (str(t.device), storage.data_ptr(), storage.nbytes())
            by_storage.setdefault(key, []).append(name)
    groups = []
    for names in by_storage.values():
        if len(names) > 1:  # (layouts only where a storage holds more than one tensor)
            arrays = {}
            for name in names:
                t = tensors[name]
                size = t.element_size()
                arrays[name] = layout(t.data_ptr(), tuple(t.shape),
                                      tuple(s * size for s in t.stride()), size)
            groups += [set(g) for g in sharing_groups(arrays) if len(g) > 1]
    return groups


def _sparse_hint(x: Any) -> str:
    """For a sparse tensor, how to save it (flat files hold dense tensors only)."""
    if not isinstance(x, SparseTensor):
        return ""
    return (f". A sparse tensor ({x.layout!r}) is not saved densified behind your back. Hint: "
            "save it with ember.save, or save x.to_dense()")


def save_file(tensors: Mapping[str, Tensor], filename: PathOrFile,
              metadata: Mapping[str, str] | None = None) -> None:
    """Saves a flat ``{name: Tensor}`` dict as a plain safetensors file, atomically.

    The file is what ``safetensors.torch.save_file`` would write for the same tensors, and
    loads with any safetensors reader. Tensors that share memory (tied weights, a view of
    another one saved: an element in common) are refused, as ``safetensors.torch.save_file``
    refuses them: a flat file stores each name's own bytes, so they would load untied. Use
    :func:`ember.io.save_model` for a model's tied weights (stored once), :func:`ember.save`
    (keeps the sharing), or save clones. Unlike ``safetensors.torch``, a non-contiguous
    tensor that shares with no other is taken (written contiguous: nothing is lost), and
    so are tensors that interleave without sharing an element (``x[:, 0]`` and ``x[:, 1]``).

    Example:
        >>> ember.io.save_file({"w": ember.ones(2)}, tmp_path / "w.safetensors", {"by": "me"})
        >>> ember.io.load_file(tmp_path / "w.safetensors")["w"]
        tensor([1., 1.])
    """
    for name, t in tensors.items():
        if not isinstance(name, str) or name == st.METADATA_KEY:
            raise CheckpointError(f"save_file: tensor names must be strings other than "
                                  f"{st.METADATA_KEY!r}; got {name!r}")
        if not isinstance(t, Tensor):
            raise CheckpointError(f"save_file: {name!r} is a {type(t).__name__}, not a Tensor "
                                  "(use ember.save for nested checkpoints)" + _sparse_hint(t))
    shared = shared_groups(tensors)
    if shared:
        raise CheckpointError(
            f"save_file: the tensors {sorted(sorted(g) for g in shared)} share memory; a "
            "flat safetensors file stores each name's own copy, so they would load untied "
            "(safetensors.torch refuses them too). Hint: ember.io.save_model(model, ...) "
            "stores tied weights once, ember.save keeps the sharing, or "
            "save_file({k: v.clone() ...}) for copies")
    write_tensors(tensors, filename, metadata)


def write_tensors(tensors: Mapping[str, Tensor], filename: PathOrFile,
                  metadata: Mapping[str, str] | None = None) -> None:
    """:func:`save_file` without its check for tensors sharing memory (each name written as
    its own copy)."""
    arrays = {name: t._host("save_file", keep=False) for name, t in tensors.items()}
    if metadata is not None and not (isinstance(metadata, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise CheckpointError("save_file: metadata must map strings to strings")
    write_arrays(filename, arrays, metadata)


def load_file(filename: PathOrFile, device: str | Device | None = None) -> dict[str, Tensor]:
    """Loads every tensor of a safetensors file as a flat ``{name: Tensor}`` dict.

    Example:
        >>> ember.io.save_file({"b": ember.zeros(3)}, tmp_path / "b.safetensors")
        >>> list(ember.io.load_file(tmp_path / "b.safetensors"))
        ['b']
    """
    dev = to_device(device)
    return {name: make_tensor(a, dev) for name, a in read_arrays(filename)[0].items()}
