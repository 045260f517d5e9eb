"""``ember.io.safe_open``: lazy reading of one safetensors file, as ``safetensors.safe_open``.

The header is read and checked once; each ``get_tensor`` then reads one tensor's bytes, and a
``get_slice`` reads only the part of a tensor its index selects (the file is memory-mapped, so a
shard of a large checkpoint costs the bytes of that shard).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ember.backend import Device
from ember.backend import device as to_device
from ember.errors import ArgumentError, ArgumentTypeError, CheckpointError, IndexOutOfRange
from ember.io import safetensors_file as st
from ember.io.placement import make_tensor

_TENSORS = ("pt", "torch", "ember")  # (code written for safetensors passes "pt")
_ARRAYS = ("np", "numpy")


class safe_open:  # noqa: N801 - the safetensors package's name
    """A safetensors file open for reading tensors one at a time (a context manager).

    ``framework`` is ``"pt"`` (or ``"ember"``) for Ember tensors, ``"numpy"`` for NumPy
    arrays; ``device`` is where tensors go.

    Example:
        >>> ember.io.save_file({"w": ember.arange(6.0).reshape(2, 3)}, tmp_path / "w.safetensors")
        >>> with ember.io.safe_open(tmp_path / "w.safetensors", framework="pt") as f:
        ...     print(f.keys(), f.get_slice("w")[:, 1:].shape)
        ['w'] ember.Size([2, 2])
    """

    def __init__(self, filename: str | os.PathLike, framework: str = "pt",
                 device: str | Device = "cpu") -> None:
        if not isinstance(filename, (str, os.PathLike)):
            raise ArgumentTypeError(f"safe_open: expected a path, not {type(filename).__name__} "
                                    "(a file object or bytes load with ember.io.load_file)")
        if framework not in _TENSORS + _ARRAYS:
            raise ArgumentError(f"safe_open: framework {framework!r} is not one of "
                                + ", ".join(map(repr, _TENSORS + _ARRAYS)))
        self._where, self._numpy = os.fspath(filename), framework in _ARRAYS
        self._device = to_device(device)
        self._file = open(filename, "rb")  # noqa: SIM115 - closed by __exit__ / close
        try:
            self._header = st.read_header(self._file, self._where)
        except BaseException:
            self._file.close()
            raise

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the file (slices taken before stay readable)."""
        self._file.close()

    def _open(self, name: str | None = None) -> None:
        if self._file.closed:
            raise CheckpointError(f"{self._where}: the file is closed (safe_open's 'with' "
                                  "block has ended)")
        if name is not None and name not in self._header.entries:
            raise CheckpointError(f"{self._where}: the file does not contain tensor {name!r}; "
                                  f"it holds {sorted(self._header.entries)}")

    def keys(self) -> list[str]:
        """The tensors' names, sorted."""
        self._open()
        return sorted(self._header.entries)

    def offset_keys(self) -> list[str]:
        """The tensors' names in the order of their bytes in the file."""
        self._open()
        return sorted(self._header.entries, key=lambda k: self._header.entries[k][2])

    def metadata(self) -> dict[str, str] | None:
        """The file's ``__metadata__`` string map, None if it has none."""
        self._open()
        return dict(self._header.metadata) if self._header.has_metadata else None

    def _out(self, a: np.ndarray) -> Any:
        return a if self._numpy else make_tensor(a, self._device)

    def get_tensor(self, name: str) -> Any:
        """Tensor ``name``, read whole."""
        self._open(name)
        return self._out(st.read_array(self._file, self._header, name, self._where))

    def get_slice(self, name: str) -> _Slice:
        """Tensor ``name`` unread: ``get_shape()``, ``get_dtype()`` and indexing
        (``f.get_slice("w")[:, :128]``), which reads only the selected part."""
        self._open(name)
        code, shape, begin, end = self._header.entries[name]
        if end == begin:
            view = np.empty(shape, st.READ[code])
        else:
            view = np.memmap(self._file, st.READ[code], "r", self._header.data_start + begin,
                             shape)
        return _Slice(name, code, view, self._out, self._where)


class _Slice:
    """One tensor of a :class:`safe_open` file, read when indexed."""

    def __init__(self, name: str, code: str, view: np.ndarray, out: Any, where: str) -> None:
        self._name, self._code, self._view, self._out, self._where = name, code, view, out, where

    def get_shape(self) -> list[int]:
        return list(self._view.shape)

    def get_dtype(self) -> str:
        """The safetensors dtype code (``"F32"``, ``"BF16"`` …)."""
        return self._code

    def __getitem__(self, index: Any) -> Any:
        try:
            part = self._view[index]
        except IndexError as e:
            raise IndexOutOfRange(f"{self._where}: get_slice({self._name!r})[{index!r}] of shape "
                                  f"{tuple(self._view.shape)}: {e}") from None
        except (TypeError, ValueError) as e:
            raise ArgumentTypeError(f"{self._where}: get_slice({self._name!r}) takes ints, "
                                    f"slices, ... and None as indices, not {index!r} ({e})"
                                    ) from None
        a = np.array(part, st.READ[self._code].newbyteorder("="))  # (a copy: off the file)
        return self._out(st.plain_bools(a, self._code))
