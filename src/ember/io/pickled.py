"""Objects a checkpoint can hold only pickled (a whole module, a dataclass …), as
``torch.save`` stores them.

Unpickling runs code named by the file, so :func:`ember.load` does it only when asked with
``weights_only=False`` (PyTorch's default since 2.6 refuses such files too). Tensors inside
the object go where ``map_location`` sends them.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

import numpy as np

from ember.errors import CheckpointError
from ember.io.placement import Placer
from ember.tensor import _unpickled
from ember.tensor_copy import rebuilt


def type_name(x: Any) -> str:
    """``module.QualName`` of ``x``'s type, as the checkpoint records it."""
    return f"{type(x).__module__}.{type(x).__qualname__}"


def dumps(x: Any, path: str, module: Any = pickle,
          protocol: int = pickle.HIGHEST_PROTOCOL) -> np.ndarray:
    """``x`` pickled by ``module`` (``pickle``, or a drop-in like ``dill``), as the bytes of a
    uint8 array (a tensor of the file)."""
    try:
        data = module.dumps(x, protocol=protocol)
    except Exception as e:  # noqa: BLE001 - any pickling failure is the user's to read
        raise CheckpointError(
            f"save: cannot save the {type_name(x)} at {path or 'the top level'}: it is not "
            f"data (tensors, numbers, strings, lists, tuples, dicts) and pickling it failed "
            f"({type(e).__name__}: {e}); hint: save its state_dict() instead") from None
    return np.frombuffer(data, np.uint8)


def _unpickler(module: Any, data: bytes, place: Placer) -> Any:
    """``module``'s unpickler of ``data``, placing each unpickled tensor with ``place``
    (``map_location``)."""

    class Unpickler(module.Unpickler):
        def find_class(self, mod: str, name: str) -> Any:
            if (mod, name) == ("ember.tensor", "_unpickled"):
                return lambda array, device, grad: _unpickled(array, str(place(device, array)),
                                                              grad)
            if (mod, name) == ("ember.tensor_copy", "rebuilt"):
                return lambda array, device, grad, *rest: rebuilt(
                    array, str(place(device, array)), grad, *rest)
            return super().find_class(mod, name)

    return Unpickler(io.BytesIO(data))


def loads(array: np.ndarray, place: Placer, where: str, what: str, module: Any = pickle) -> Any:
    """The object that :func:`dumps` stored as ``array``; a failure names the file and type."""
    try:
        return _unpickler(module, array.tobytes(), place).load()
    except Exception as e:  # noqa: BLE001 - a missing class, a damaged payload …
        raise CheckpointError(f"{where}: cannot unpickle the saved {what} ({type(e).__name__}: "
                              f"{e}); hint: the code that defined it must be importable") from None
