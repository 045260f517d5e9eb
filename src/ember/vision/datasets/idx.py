"""Reading IDX files (the format of MNIST and Fashion-MNIST), plain or gzip-compressed, and
downloading files with MD5 verification."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import zlib
from pathlib import Path

import numpy as np

from ember.errors import EmberError

__all__ = ["IDXError", "read_idx", "write_idx", "md5sum", "download_url"]

# IDX type codes -> big-endian NumPy dtypes
_TYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
          0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_CODES = {dt.newbyteorder("="): code for code, dt in _TYPES.items()}


class IDXError(EmberError, ValueError):
    """A file that is not a valid IDX file: bad header, truncated data, broken gzip stream."""


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as f:
        head = f.read(2)
    if head != b"\x1f\x8b":
        return path.read_bytes()
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise IDXError(f"{path}: the gzip stream is corrupted or truncated ({exc}); delete the "
                       f"file and fetch it again") from None


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """The array stored in an IDX file (``.gz`` or raw), in native byte order.

    Example:
        >>> read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")[:5]
        array([9, 2, 1, 1, 6], dtype=uint8)
    """
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES:
        raise IDXError(f"{path}: not an IDX file (the header {raw[:4].hex() or 'is empty'} "
                       f"should be 00 00 <type code> <number of dimensions>)")
    dtype, ndim = _TYPES[raw[2]], raw[3]
    start = 4 + 4 * ndim
    if len(raw) < start:
        raise IDXError(f"{path}: truncated header: {ndim} dimensions need {start} bytes, the "
                       f"file has {len(raw)}")
    shape = tuple(int(s) for s in np.frombuffer(raw, ">u4", ndim, 4))
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - start != expected:
        what = "truncated" if len(raw) - start < expected else "has trailing bytes"
        raise IDXError(f"{path}: {what}: shape {shape} of {dtype.newbyteorder('=').name} needs "
                       f"{expected} bytes of data, the file holds {len(raw) - start}")
    array = np.frombuffer(raw, dtype, offset=start).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def write_idx(path: str | os.PathLike, array: np.ndarray) -> None:
    """Writes ``array`` as an IDX file, gzip-compressed when ``path`` ends in ``.gz``."""
    array = np.asarray(array)
    code = _CODES.get(array.dtype.newbyteorder("="))
    if code is None:
        raise IDXError(f"write_idx: IDX cannot store dtype {array.dtype}")
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    payload = header + array.astype(_TYPES[code]).tobytes()
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(payload)


def md5sum(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """The MD5 hex digest of a file."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def download_url(urls: list[str], dest: Path, md5: str | None, timeout: float = 60) -> None:
    """Fetches ``dest`` from the first of ``urls`` that answers with the right MD5.

    A file already at ``dest`` with the right checksum is kept. Raises ``RuntimeError``
    listing every URL tried and why it failed.
    """
    if dest.is_file() and (md5 is None or md5sum(dest) == md5):
        return
    import urllib.request  # (here: urllib.request and http.client are ~30 ms of import ember)

    dest.parent.mkdir(parents=True, exist_ok=True)
    failures = []
    part = dest.with_name(dest.name + ".part")
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response, \
                    open(part, "wb") as out:
                shutil.copyfileobj(response, out)
        except OSError as exc:
            failures.append(f"{url}: {exc}")
            continue
        got = md5sum(part)
        if md5 is not None and got != md5:
            failures.append(f"{url}: MD5 mismatch (expected {md5}, got {got})")
            part.unlink()
            continue
        part.replace(dest)
        return
    part.unlink(missing_ok=True)
    raise RuntimeError(f"could not download {dest.name}:\n  " + "\n  ".join(failures))
