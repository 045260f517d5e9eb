"""``ember.io.save_model`` / ``load_model``: a module's state dict as a flat safetensors file,
tied weights (one tensor under several names) stored once, as ``safetensors.torch``'s.

Of each group of names whose tensors overlap in memory, one that covers its whole storage is
written (the first in sorted order, or at loading the one the file holds); the others are left
out, each recorded in the file's metadata as ``{dropped name: kept name}`` unless the caller's
metadata has that key. Loading fills the kept name, which fills the others through the tie.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ember.backend import Device
from ember.errors import ArgumentError
from ember.io.flat_files import load_file, save_file, shared_groups
from ember.io.safetensors_file import PathOrFile
from ember.nn.module import Module
from ember.tensor import Tensor


def _whole(t: Tensor) -> bool:
    storage = t.untyped_storage()
    return t.data_ptr() == storage.data_ptr() and t.numel() * t.element_size() == \
        storage.nbytes()


def duplicate_names(tensors: Mapping[str, Tensor],
                    preferred: Iterable[str] = ()) -> dict[str, list[str]]:
    """For each group of names sharing memory, the name kept (a tensor covering its whole
    storage: one of ``preferred`` if any, else the first in sorted order) and the others."""
    preferred = set(preferred)
    out = {}
    for group in shared_groups(tensors):
        whole = sorted(n for n in group if _whole(tensors[n]))
        if not whole:
            raise ArgumentError(f"save_model/load_model: the tensors {sorted(group)} share "
                                "memory and none of them covers it all, so none can be "
                                "stored for the others; save copies instead "
                                "(ember.io.save_file({k: v.clone() ...}))")
        keep = next((n for n in whole if n in preferred), whole[0])
        out[keep] = sorted(group - {keep})
    return out


def save_model(model: Module, filename: PathOrFile, metadata: Mapping[str, str] | None = None,
               force_contiguous: bool = True) -> None:
    """Saves ``model.state_dict()`` as a safetensors file, each tied weight once.

    ``force_contiguous`` is accepted for compatibility with ``safetensors.torch`` (Ember
    always writes tensors contiguous).

    Example:
        >>> lin = ember.nn.Linear(2, 3)
        >>> ember.io.save_model(lin, tmp_path / "lin.safetensors")
        >>> ember.io.load_model(ember.nn.Linear(2, 3), tmp_path / "lin.safetensors")
        ([], [])
    """
    del force_contiguous
    state = model.state_dict()
    metadata = None if metadata is None else dict(metadata)
    for keep, dropped in duplicate_names(state).items():
        for name in dropped:
            metadata = metadata or {}
            metadata.setdefault(name, keep)
            del state[name]
    save_file(state, filename, metadata)


def load_model(model: Module, filename: PathOrFile, strict: bool = True,
               device: str | Device = "cpu") -> tuple[list[str], list[str]]:
    """Loads a file :func:`save_model` (or ``safetensors.torch.save_model``) wrote into
    ``model``; returns ``(missing, unexpected)`` names, a tied name the file left out counted
    in neither. ``strict``: a RuntimeError if either is not empty, as ``load_state_dict``.

    Example:
        >>> ember.io.save_model(ember.nn.Linear(2, 3), tmp_path / "m.safetensors")
        >>> seq = ember.nn.Sequential(ember.nn.Linear(2, 3))
        >>> ember.io.load_model(seq, tmp_path / "m.safetensors", strict=False)
        (['0.bias', '0.weight'], ['bias', 'weight'])
    """
    state = load_file(filename, device)
    dropped = duplicate_names(model.state_dict(), preferred=state)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = set(missing)
    for name in (n for names in dropped.values() for n in names):
        if name in missing:
            missing.discard(name)
        else:
            unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {type(model).__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(
                f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return sorted(missing), unexpected
