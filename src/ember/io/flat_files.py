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
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor


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
    loads with any safetensors reader. Unlike it, Ember takes tensors that share memory (each
    name gets its own copy, so they load untied: for a model's tied weights use
    :func:`ember.io.save_model`, which stores them once) and non-contiguous tensors (written
    contiguous); ``safetensors.torch.save_file`` refuses both.

    Example:
        >>> ember.io.save_file({"w": ember.ones(2)}, tmp_path / "w.safetensors", {"by": "me"})
        >>> ember.io.load_file(tmp_path / "w.safetensors")["w"]
        tensor([1., 1.])
    """
    arrays = {}
    for name, t in tensors.items():
        if not isinstance(name, str) or name == st.METADATA_KEY:
            raise CheckpointError(f"save_file: tensor names must be strings other than "
                                  f"{st.METADATA_KEY!r}; got {name!r}")
        if not isinstance(t, Tensor):
            raise CheckpointError(f"save_file: {name!r} is a {type(t).__name__}, not a Tensor "
                                  "(use ember.save for nested checkpoints)" + _sparse_hint(t))
        arrays[name] = t._host("save_file", keep=False)
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
