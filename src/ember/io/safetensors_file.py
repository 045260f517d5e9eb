"""The safetensors container: reading and writing NumPy arrays, validating every header field.

Format (https://github.com/huggingface/safetensors): an 8-byte little-endian header length
``N``, ``N`` bytes of UTF-8 JSON mapping each tensor name to ``{"dtype", "shape",
"data_offsets": [begin, end]}`` (offsets into the byte buffer that follows) plus an optional
``"__metadata__"`` string-to-string map, then the little-endian tensor bytes.

Ember reads and writes the container itself rather than through ``safetensors.numpy``: that
API cannot load ``BF16``, and owning the code lets Ember stream arrays straight into an
atomically replaced file and check a hostile header field by field before allocating anything.
Files stay byte-compatible with the ``safetensors`` package in both directions (tested).
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
from collections.abc import Mapping
from typing import Any, BinaryIO

import ml_dtypes
import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError, CheckpointError, FileModeError
from ember.io.atomic import atomic_write
from ember.io.torch_file import ZIP_MAGIC, is_legacy, read_into

MAX_HEADER = 100_000_000  # the safetensors limit: a larger header is corruption, not data
MAX_DIMS = 64  # NumPy's limits on a shape, which apply even to an empty array
MAX_BYTES = int(np.iinfo(np.intp).max)
METADATA_KEY = "__metadata__"

PathOrFile = str | os.PathLike | BinaryIO

# safetensors dtype code -> little-endian NumPy dtype, each one of Ember's dtypes (safetensors
# has no code for complex128: such tensors cannot be stored; the "FNUZ" codes are the
# safetensors package's for PyTorch's float8 "fnuz" types).
READ = {"BOOL": np.dtype(np.bool_), "U8": np.dtype("u1"), "I8": np.dtype("i1"),
         "I16": np.dtype("<i2"), "I32": np.dtype("<i4"), "I64": np.dtype("<i8"),
         "F16": np.dtype("<f2"), "BF16": np.dtype(ml_dtypes.bfloat16),
         "F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "C64": np.dtype("<c8"),
         "U16": np.dtype("<u2"), "U32": np.dtype("<u4"), "U64": np.dtype("<u8"),
         "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2), "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
         "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
         "F8_E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
         "F8_E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz)}
# (the safetensors package's order of dtypes, which breaks ties in the order of tensors)
_RANK = {code: i for i, code in enumerate(
    ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
     "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"])}
_CODE = {dt.newbyteorder("="): code for code, dt in READ.items()}


def dtype_code(dtype: np.dtype) -> str:
    """The safetensors code of a NumPy dtype Ember stores (``float32`` -> ``"F32"``)."""
    try:
        return _CODE[dtype.newbyteorder("=")]
    except KeyError:
        raise CheckpointError(f"cannot store dtype {dtype} in safetensors; Ember stores "
                              + ", ".join(str(d) for d in _CODE)) from None


def layout(arrays: Mapping[str, np.ndarray],
           metadata: Mapping[str, str] | None = None) -> tuple[bytes, list[str]]:
    """The file's first bytes (length and header) and the order the arrays follow in.

    Built before any file is opened, so a bad name or dtype fails with nothing written.
    """
    header: dict[str, Any] = {}
    if metadata is not None:  # (an empty map written too, as the safetensors package does)
        header[METADATA_KEY] = dict(metadata)
    # Largest items first, so every tensor starts aligned; ties broken as the safetensors
    # package does, which makes the files byte-identical to its own.
    order = sorted(arrays, key=lambda k: (-_RANK[dtype_code(arrays[k].dtype)], k))
    offset = 0
    for name in order:
        a = arrays[name]
        header[name] = {"dtype": dtype_code(a.dtype), "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    try:
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    except UnicodeEncodeError as e:
        raise CheckpointError(f"a tensor name or metadata string is not valid Unicode ({e})"
                              ) from None
    text += b" " * (-len(text) % 8)  # pad so the byte buffer starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text, order


def write(f: BinaryIO, head: bytes, arrays: Mapping[str, np.ndarray], order: list[str]) -> None:
    """Writes a file laid out by :func:`layout`."""
    f.write(head)
    for name in order:
        write_array(f, arrays[name])


def write_array(f: BinaryIO, a: np.ndarray) -> None:
    """Writes one array's bytes, C order, little-endian, without an extra copy when it can."""
    if a.size == 0:
        return
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    a = np.ascontiguousarray(a)
    f.write(memoryview(a.reshape(-1).view(np.uint8)))


class Header:
    """A validated header: tensor entries (name -> (code, shape, begin, end)) and metadata
    (empty if the file has none; ``has_metadata`` tells an empty map from none)."""

    __slots__ = ("entries", "metadata", "data_start", "has_metadata")

    def __init__(self, entries: dict, metadata: dict[str, str], data_start: int,
                 has_metadata: bool) -> None:
        self.entries, self.metadata, self.data_start = entries, metadata, data_start
        self.has_metadata = has_metadata


def _fail(where: str, problem: str) -> CheckpointError:
    return CheckpointError(f"{where}: {problem}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ArgumentError(f"duplicate key {dup!r}")
    return out


def _is_int(x: Any) -> bool:
    return type(x) is int  # not bool, not float


def read_header(f: BinaryIO, where: str, torch_hint: bool = True) -> Header:
    """Reads and checks the header of a safetensors file that starts at ``f``'s current
    position (as :func:`write` writes one there); ``where`` names the file in errors, which
    say when it looks like a ``torch.save`` file unless ``torch_hint`` is False (the caller
    is ``ember.load``, which reads those)."""
    start = f.tell()
    size = f.seek(0, os.SEEK_END) - start
    f.seek(start)
    if size < 8:
        at = f" from position {start}" if start else ""
        raise _fail(where, f"only {size} bytes{at}: too short for a safetensors file "
                    "(truncated, or a file object not rewound with seek(0)?)")
    first = f.read(8)
    (n,) = struct.unpack("<Q", first)
    if n > MAX_HEADER or 8 + n > size:
        problem = (f"is over the {MAX_HEADER}-byte limit; the file is corrupted"
                   if n > MAX_HEADER else f"runs past the end of the file ({size} bytes); "
                   "the file is truncated")
        hint = _torch_format(f, start) if torch_hint else ""
        raise _fail(where, f"header length {n} {problem} or not safetensors{hint}")
    raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise _fail(where, "the header is not UTF-8 text; not a safetensors file") from None
    except (ValueError, RecursionError) as e:
        raise _fail(where, f"the header is not valid JSON ({e}); not a safetensors file "
                    "or corrupted") from None
    if not isinstance(header, dict):
        raise _fail(where, f"the header is a JSON {type(header).__name__}, not an object")
    has_metadata = METADATA_KEY in header
    metadata = header.pop(METADATA_KEY, None)
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _fail(where, f"{METADATA_KEY} must map strings to strings")
    data_start, data_len = start + 8 + n, size - 8 - n
    entries = {name: _entry(where, name, info, data_len) for name, info in header.items()}
    _check_coverage(where, entries, data_len)
    return Header(entries, metadata, data_start, has_metadata)


def _torch_format(f: BinaryIO, start: int) -> str:
    """A hint for a file at ``start`` that is not safetensors and looks like one ``torch.save``
    writes: a zip archive, or a pickle (its protocol 2-5 header, or the older format's
    magic number in protocol 1)."""
    f.seek(start)
    head = f.read(32)
    if head.startswith(ZIP_MAGIC):
        return (" (it is a zip archive, as torch.save and torch.jit.save write: a torch.save "
                "file loads with ember.load; TorchScript archives are not read, save the "
                "model's state_dict() instead)")
    if is_legacy(head) or (len(head) > 1 and head[0] == 0x80 and 2 <= head[1] <= 5):
        return " (it may be a pickle: an older torch.save file loads with ember.load)"
    return ""


def _entry(where: str, name: str, info: Any, data_len: int) -> tuple:
    here = f"tensor {name!r}"
    if not isinstance(info, dict):
        raise _fail(where, f"{here}: expected an object with dtype, shape and data_offsets")
    code, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if code not in READ:
        raise _fail(where, f"{here}: unknown dtype {code!r}; Ember reads "
                    + ", ".join(READ))
    if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
        raise _fail(where, f"{here}: shape {shape!r} is not a list of non-negative integers")
    if len(shape) > MAX_DIMS:
        raise _fail(where, f"{here}: {len(shape)} dimensions; arrays have at most {MAX_DIMS}")
    itemsize = READ[code].itemsize
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(_is_int(o) for o in offsets) or not 0 <= offsets[0] <= offsets[1]):
        raise _fail(where, f"{here}: data_offsets {offsets!r} is not [begin, end] with "
                    "0 <= begin <= end")
    begin, end = offsets
    expected = itemsize * math.prod(shape)
    if end - begin != expected:
        raise _fail(where, f"{here}: shape {tuple(shape)} {code} needs {expected} bytes but "
                    f"data_offsets [{begin}, {end}] hold {end - begin}")
    if end > data_len:
        raise _fail(where, f"{here}: data_offsets [{begin}, {end}] run past the end of the "
                    f"data ({data_len} bytes); the file is truncated")
    if itemsize * math.prod(s for s in shape if s) > MAX_BYTES:  # NumPy's check, 0 sizes aside
        raise _fail(where, f"{here}: shape {tuple(shape)} {code} is too large for an array")
    return code, tuple(shape), begin, end


def _check_coverage(where: str, entries: dict, data_len: int) -> None:
    """Tensors must tile the byte buffer exactly: no overlaps, no holes (the format's rule)."""
    pos = 0
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda kv: kv[1][2:]):
        if begin != pos:
            problem = "overlaps the previous tensor" if begin < pos else \
                f"leaves a gap of {begin - pos} bytes before it"
            raise _fail(where, f"tensor {name!r} at data_offsets [{begin}, {end}] {problem}")
        pos = end
    if pos != data_len:
        raise _fail(where, f"{data_len - pos} bytes after the last tensor belong to none")


def read_array(f: BinaryIO, header: Header, name: str, where: str,
               mapped: np.ndarray | None = None) -> np.ndarray:
    """Reads one tensor into a fresh, writable, native-order NumPy array; given ``mapped``
    (the file mapped copy-on-write: its pages are read when used, writes stay in memory), a
    view of it instead where one can be (aligned, native order, inside the file), as
    ``torch.load(mmap=True)`` maps storages."""
    code, shape, begin, end = header.entries[name]
    dtype = READ[code]
    start = header.data_start + begin
    if mapped is not None and dtype.byteorder != "<" and not start % dtype.itemsize and \
            start + end - begin <= mapped.size:
        return plain_bools(mapped[start:start + end - begin].view(dtype).reshape(shape), code)
    a = np.empty(shape, dtype.newbyteorder("="))
    if end > begin:
        f.seek(header.data_start + begin)
        if read_into(f, memoryview(a.reshape(-1).view(np.uint8))) != end - begin:
            raise _fail(where, f"tensor {name!r}: the file ended while reading its data")
        if dtype.byteorder == "<":  # only on a big-endian machine (NumPy writes "=" for native)
            a.byteswap(inplace=True)
    return plain_bools(a, code)


def plain_bools(a: np.ndarray, code: str) -> np.ndarray:
    """``a`` read as ``code``, with a BOOL array's bytes other than 0 and 1 (which make odd
    NumPy bools) read as True."""
    if code == "BOOL" and a.size and a.view(np.uint8).max() > 1:
        return np.asarray(a.view(np.uint8) != 0)
    return a


# -- files by path or file object ----------------------------------------------------------------
def source_name(f: PathOrFile) -> str:
    """How errors name ``f``: its path, or a file object's ``name``."""
    return os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", repr(f))


def open_source(f: PathOrFile) -> tuple[BinaryIO, bool]:
    """``f`` open for reading, and whether the caller opened it (and must close it)."""
    if isinstance(f, (str, os.PathLike)):
        return open(f, "rb"), True  # noqa: SIM115 - closed by the caller
    return _binary_file(f, ("read", "seek", "tell"), ("readable", "seekable")), False


# what a file object that cannot do what is asked says (its readable(), seekable(), writable())
_CANNOT = {"readable": "it is open for writing only; open it with 'rb'",
           "seekable": "it is a stream (a pipe, a download); read it into memory first, "
                       "io.BytesIO(f.read())",
           "writable": "it is open for reading only; open it with 'wb'"}


def _binary_file(f: Any, methods: tuple[str, ...], abilities: tuple[str, ...]) -> BinaryIO:
    """``f`` itself, if it is a binary file with ``methods`` whose ``abilities`` (of
    ``readable``, ``seekable``, ``writable``) it has or does not report: not a binary file,
    an ArgumentTypeError (a TypeError); one that lacks an ability, a FileModeError (an
    ``io.UnsupportedOperation``, as PyTorch raises); each with a hint."""
    kind = ", ".join(abilities)
    if isinstance(f, io.TextIOBase) or not all(hasattr(f, m) for m in methods):
        hint = ("; wrap bytes in io.BytesIO(data)" if isinstance(f, (bytes, bytearray))
                and "read" in methods else
                "; open it in binary mode ('rb' or 'wb')" if isinstance(f, io.TextIOBase) else "")
        raise ArgumentTypeError(f"expected a path or a {kind} binary file, not "
                                f"{type(f).__name__}{hint}")
    for ability in abilities:
        able = getattr(f, ability, None)
        if callable(able) and not able():
            raise FileModeError(f"expected a path or a {kind} binary file; this "
                                f"{type(f).__name__} is not {ability}. Hint: "
                                + _CANNOT[ability])
    return f


def write_arrays(f: PathOrFile, arrays: Mapping[str, np.ndarray],
                 metadata: Mapping[str, str] | None) -> None:
    """NumPy arrays and string metadata as one safetensors file (a path is replaced
    atomically: :func:`ember.io.atomic.atomic_write`).

    Example:
        >>> write_arrays(tmp_path / "a.safetensors", {"w": np.ones(2, np.float32)}, {"k": "v"})
    """
    head, order = layout(arrays, metadata)
    if isinstance(f, (str, os.PathLike)):
        with atomic_write(f) as out:
            write(out, head, arrays, order)
    else:
        write(_binary_file(f, ("write",), ("writable",)), head, arrays, order)


def read_arrays(f: PathOrFile) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every array of a safetensors file, by name, and its string metadata (a damaged file:
    a :class:`CheckpointError` saying what is wrong).

    Example:
        >>> write_arrays(tmp_path / "c.safetensors", {"w": np.ones(2, np.float32)}, {"k": "v"})
        >>> read_arrays(tmp_path / "c.safetensors")[1]
        {'k': 'v'}
    """
    where = source_name(f)
    handle, owned = open_source(f)
    try:
        header = read_header(handle, where)
        return ({name: read_array(handle, header, name, where) for name in header.entries},
                header.metadata)
    finally:
        if owned:
            handle.close()


def load_metadata(filename: PathOrFile) -> dict[str, str]:
    """The ``__metadata__`` string map of a safetensors file (no tensor data is read)."""
    handle, owned = open_source(filename)
    try:
        return read_header(handle, source_name(filename)).metadata
    finally:
        if owned:
            handle.close()
