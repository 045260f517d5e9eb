"""``map_location``: where ``ember.load`` puts the tensors it reads, in all the forms
``torch.load`` takes (None, a device or device string, a dict from saved to new device
strings, or a function ``(storage, location) -> storage or None``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ember.backend import Device
from ember.backend import device as to_device
from ember.backend.device import no_backend_error
from ember.errors import CheckpointError
from ember.ops.creation import share_array
from ember.ops.storage_objects import UntypedStorage
from ember.tensor import Tensor

MapLocation = str | Device | Mapping[str, Any] | Callable[[UntypedStorage, str], Any] | None
Placer = Callable[[str, np.ndarray], Device]  # (saved location, tensor data) -> device


def placer(map_location: MapLocation) -> Placer:
    """Reads ``map_location`` as torch.load does: None, a device, a string, a dict, or a
    function ``(storage, location) -> storage or None``. A device this build cannot allocate
    on (``cuda`` without a CUDA backend) is an error when a tensor would go there.

    Example:
        >>> placer({"cuda:0": "cpu"})("cuda:0", np.zeros(2))
        device(type='cpu')
    """
    pick = _picker(map_location)

    def place(saved: str, data: np.ndarray) -> Device:
        dev = pick(saved, data)
        if not dev.has_backend:
            raise no_backend_error(str(dev), "load")
        return dev
    return place


def make_tensor(array: np.ndarray, dev: Device) -> Tensor:
    """A tensor of ``array`` (its memory, on the CPU) on ``dev``, where a placer put it."""
    t = share_array(array)
    return t.to(dev) if dev.type != "cpu" else t


def refuse_meta(parts: Any, what: str, where: str) -> None:
    """Refuses the parts of a sparse or nested tensor placed on the meta device (Ember's
    hold data: PyTorch's ``torch.load(map_location='meta')`` makes meta ones)."""
    if any(isinstance(t, Tensor) and t.is_meta for t in parts):
        raise CheckpointError(f"{where}: a {what} cannot load on the meta device: Ember's "
                              "sparse and nested tensors hold their data (PyTorch's "
                              "map_location='meta' makes meta ones). Hint: load it on 'cpu'")


def _picker(map_location: MapLocation) -> Placer:
    if map_location is None:
        return lambda saved, data: to_device(saved)
    if isinstance(map_location, (str, Device)):
        target = to_device(map_location)
        return lambda saved, data: target
    if isinstance(map_location, Mapping):
        return lambda saved, data: to_device(map_location.get(saved, saved))
    if callable(map_location):
        return lambda saved, data: _call(map_location, saved, data)
    raise TypeError("load: map_location must be None, a device, a string like 'cpu', a dict "
                    "from saved to new device strings or a function (storage, location), not "
                    f"{type(map_location).__name__}")


def _call(fn: Callable[[UntypedStorage, str], Any], saved: str, data: np.ndarray
                 ) -> Device:
    """The device ``map_location=fn`` picks: it gets the tensor's bytes (on the CPU) and the
    saved location, and returns a storage (``storage``, ``storage.cpu()``) or None (stay)."""
    storage = UntypedStorage(np.ascontiguousarray(data).reshape(-1).view(np.uint8),
                             to_device("cpu"))
    try:
        moved = fn(storage, saved)
    except Exception as e:  # noqa: BLE001 - the user's function failed: say so, not "corrupt"
        raise TypeError(f"load: the map_location function failed on a storage saved on "
                        f"{saved} ({type(e).__name__}: {e})") from e
    if moved is None:
        return to_device(saved)
    if not isinstance(moved, UntypedStorage):
        raise TypeError(f"load: map_location returned a {type(moved).__name__}; it must return "
                        "the storage it was given (or a copy, e.g. storage.cpu()) or None")
    return moved.device
