"""Reading PyTorch's checkpoint files (``torch.save``) without PyTorch and without running
code from the file.

``torch.save`` writes a pickle whose tensors point at raw storages: in its zip format (the
default since PyTorch 1.6) the pickle is ``<name>/data.pkl`` and storage ``k`` is the record
``<name>/data/k``; in its older format (``_use_new_zipfile_serialization=False``) five pickles
follow one another (a magic number, the protocol version, system facts, the object, the
storage keys), then each storage as a little-endian int64 element count and its bytes.

The pickle is read by an unpickler that knows a short list of names, as ``torch.load``'s
``weights_only`` mode does: dicts (``OrderedDict``), sets, bytes, complex numbers, dtypes,
devices, layouts, sizes, tensors and parameters, jagged nested tensors (one with holes packed,
as Ember's ``nested.narrow`` makes it), sparse tensors (COO, CSR, CSC, BSR, BSC;
their invariants always checked, as ``torch.load`` checks them under
``check_sparse_tensor_invariants``) and meta tensors, each rebuilt by Ember's own code here.
Any other name (a whole module, a class from the user's code, a NumPy array) that
:func:`ember.serialization.add_safe_globals` did not allow is refused with a
:class:`~ember.errors.WeightsOnlyError` naming it (a ``pickle.UnpicklingError``, as
``torch.load``'s refusal; a tensor of a dtype Ember lacks: a
:class:`~ember.errors.CheckpointError`). Tensors that shared a storage in PyTorch
(tied weights, views) share memory here too.
"""

from __future__ import annotations

import copy
import io
import math
import pickle
import zipfile
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ember.backend import Device
from ember.backend import device as to_device
from ember.dtypes import ALL_DTYPES, DType, to_dtype
from ember.errors import CheckpointError, EmberError, WeightsOnlyError
from ember.io import safe_globals
from ember.io.pickle_names import python3_name, without_extensions
from ember.io.placement import Placer, refuse_meta
from ember.io.shared_views import strided_view
from ember.io.torch_nested import njt
from ember.layouts import (
    jagged,
    layout,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from ember.nested.nested_tensor import NestedTensor
from ember.nn.parameter import Parameter
from ember.ops.constructors import empty_strided
from ember.ops.creation import share_array
from ember.size import Size
from ember.sparse.construct import sparse_compressed_tensor, sparse_coo_tensor
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

ZIP_MAGIC = b"PK\x03\x04"
# the older format's first pickle is this number: after the protocol (and a protocol-4
# frame) header in a binary pickle, or as text in protocol 1's
LEGACY_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_HEADS = tuple(pickle.dumps(LEGACY_NUMBER, protocol=p)[:-1] for p in range(1, 6))
LEGACY_PROTOCOL = 1001

_STORAGE_DTYPES = {"DoubleStorage": "float64", "FloatStorage": "float32",
                   "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
                   "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
                   "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
                   "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
                   "UntypedStorage": "uint8"}
# what zipfile raises on a damaged archive: bad names (UnicodeDecodeError), odd versions or
# compression (NotImplementedError), offsets out of range (ValueError), encryption flags ...
_ZIP_ERRORS = (zipfile.BadZipFile, NotImplementedError, ValueError, RuntimeError, OSError,
               EOFError, zlib.error)
_LAYOUTS = {f"torch.{lay.name}": lay for lay in (strided, jagged, sparse_coo, sparse_csr,
                                                  sparse_csc, sparse_bsr, sparse_bsc)}
_BUILTINS = {"set": set, "frozenset": frozenset, "bytearray": bytearray, "complex": complex}


class _StorageType:
    """A storage class named by the file (``torch.FloatStorage``): just its dtype."""

    def __init__(self, dtype: DType) -> None:
        self.dtype = dtype


class _Storage:
    """One storage's bytes (a writable uint8 array: tensors are views of it) and its dtype.
    ``big_endian`` is the file's byte order; the bytes are turned to this machine's the
    first time a tensor reads them with a dtype wider than a byte (each part of a complex
    number on its own), and ``swapped`` remembers the width they were turned at."""

    def __init__(self, data: np.ndarray, dtype: DType, big_endian: bool) -> None:
        self.data, self.dtype, self.big_endian = data, dtype, big_endian
        self.location = "cpu"
        self.swapped: int | None = None
        self.device: Device | None = None  # where map_location put it (asked once, as torch)

    def typed(self, dtype: DType, where: str) -> np.ndarray:
        size = dtype.itemsize
        if self.data.size % size:
            raise CheckpointError(f"{where}: a storage of {self.data.size} bytes cannot hold "
                                  f"{dtype} elements of {size} bytes; the file is corrupted")
        width = size // 2 if dtype.is_complex else size
        if self.big_endian and width > 1:
            if self.swapped is None:
                self.data.view(f"u{width}").byteswap(inplace=True)
                self.swapped = width
            elif self.swapped != width:
                raise CheckpointError(f"{where}: a big-endian storage read as elements of "
                                      f"{self.swapped} and of {width} bytes; Ember reads "
                                      "such a file's storages at one width")
        return self.data.view(dtype.np)


def _ints(x: Any, what: str, where: str) -> tuple[int, ...]:
    if not isinstance(x, (tuple, list)) or not all(type(v) is int and v >= 0 for v in x):
        raise CheckpointError(f"{where}: a tensor's {what} is {x!r}, not a tuple of "
                              "non-negative ints; the file is corrupted")
    return tuple(x)


_TENSOR_TYPE, _PARAMETER_TYPE = "torch.Tensor", "torch.nn.parameter.Parameter"  # markers
_NJT = "torch.nested._internal.nested_tensor"


def _flag(requires_grad: Any, where: str) -> bool:
    """A tensor's saved ``requires_grad``, a bool, as ``torch.load`` insists (not 1 or None)."""
    if type(requires_grad) is not bool:
        raise CheckpointError(f"{where}: a tensor's requires_grad is {requires_grad!r:.40}, not "
                              "a bool; the file is corrupted")
    return requires_grad


class _DimRange:
    """``torch._dynamo.decorators._DimRange``, which an NJT's seqlen tensors carry (a
    ``mark_dynamic`` record for the compiler): taken and dropped, as Ember has no use for it."""


def is_legacy(head: bytes) -> bool:
    """Whether a file starting with ``head`` (32 bytes or more) is of ``torch.save``'s format
    before PyTorch 1.6, written with any pickle protocol from 1."""
    return head.startswith(_LEGACY_HEADS)


class _TorchUnpickler(pickle._Unpickler):  # noqa: SLF001 - the Python one: BUILD overridden
    """Rebuilds what ``torch.save`` pickled from the names listed in :meth:`find_class`;
    ``storage(dtype, key, numel)`` gives the storage a persistent id names (the same object
    for the same key). The names it hands out are Ember's functions, markers and plain types,
    and BUILD (setting attributes from the file) works on OrderedDict and Counter only, as in
    PyTorch's ``weights_only`` unpickler: a file can neither run code nor change the
    attributes of objects shared with the rest of the process (a dtype, a class)."""

    dispatch = without_extensions(pickle._Unpickler.dispatch)  # noqa: SLF001

    def load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is _DimRange:
            return
        if safe_globals.may_build(inst):  # (a class the user allowed: pickle's own BUILD)
            safe_globals.check_state(inst, state, self.where)
            self.stack.append(state)
            pickle._Unpickler.load_build(self)  # noqa: SLF001
            return
        if type(inst) not in (OrderedDict, Counter) or not isinstance(state, dict):
            raise CheckpointError(f"{self.where}: the file sets attributes on a "
                                  f"{type(inst).__name__}; only a dict's may be set")
        inst.__dict__.update(state)

    dispatch[pickle.BUILD[0]] = load_build

    def load(self) -> Any:
        obj = super().load()
        if self.refs > self.used:  # (a storage named outside a tensor: it is in the object)
            raise CheckpointError(f"{self.where}: this PyTorch file holds a bare storage "
                                  "(torch.save(t.storage())); Ember reads tensors, not "
                                  "storages. Hint: in PyTorch, torch.save(tensor) instead")
        return obj

    def __init__(self, file: BinaryIO, where: str, storage: Callable[[DType, str, int], _Storage],
                 place: Placer, dry: bool, text: dict[str, str]) -> None:
        super().__init__(file, **text)
        self.where, self.storage, self.place = where, storage, place
        self.dry = dry  # (a pass that only learns the storages: their bytes are not read yet)
        self.refs = self.used = 0  # storages the file names, and those tensors were built on
        self.names = {("collections", "OrderedDict"): OrderedDict,
                      ("collections", "Counter"): Counter,
                      ("_codecs", "encode"): _encode,
                      ("torch", "Size"): lambda dims: Size(_ints(dims, "size", where)),
                      ("torch", "device"): self.device,
                      ("torch", "Tensor"): _TENSOR_TYPE,
                      ("torch.nn.parameter", "Parameter"): _PARAMETER_TYPE,
                      ("torch._utils", "_rebuild_tensor_v2"): self.tensor,
                      ("torch._utils", "_rebuild_tensor_v3"): self.tensor_v3,
                      ("torch._utils", "_rebuild_parameter"): self.parameter,
                      ("torch._utils", "_rebuild_parameter_with_state"): self.parameter,
                      ("torch._tensor", "_rebuild_from_type_v2"): self.from_type,
                      ("torch._utils", "_rebuild_meta_tensor_no_storage"): self.meta,
                      ("torch._utils", "_rebuild_sparse_tensor"): self.sparse,
                      ("torch.serialization", "_get_layout"): self.layout,
                      (_NJT, "_rebuild_njt"): self.njt, (_NJT, "NestedTensor"): _NJT,
                      ("torch._dynamo.decorators", "_DimRange"): _DimRange}
        self.names.update({("builtins", n): f for n, f in _BUILTINS.items()})
        self.names.update({(m, n): _StorageType(to_dtype(d)) for n, d in _STORAGE_DTYPES.items()
                           for m in ("torch", "torch.storage")})
        self.names.update({("torch", d.name): d for d in ALL_DTYPES})

    def find_class(self, module: str, name: str) -> Any:
        module, name = python3_name(module, name)  # (Python 2's names: torch.load maps them)
        found = self.names.get((module, name), safe_globals.allowed(module, name))
        if found is None:
            tensor_kind = module in ("torch", "torch._utils", "torch.storage")  # (a dtype ...)
            hint = ("convert such tensors to a dtype Ember has (t.to(torch.complex64), "
                    "t.dequantize()) before saving" if tensor_kind else
                    "save the model's state_dict() (torch.save(model.state_dict(), path)) and "
                    "load that into the Ember model")
            error = CheckpointError if tensor_kind else WeightsOnlyError  # (as torch.load's
            raise error(  # refusal: a pickle.UnpicklingError, which code may catch to fall back)
                f"{self.where}: this PyTorch file holds a {module}.{name}, which Ember does not "
                "rebuild: it reads tensors, parameters and plain data (dicts, lists, numbers, "
                "strings) from PyTorch files and never runs code they name, unless allowed "
                f"by {safe_globals.HINT}. Hint: in PyTorch, " + hint)
        return found

    def persistent_load(self, pid: Any) -> _Storage:
        # zip: ("storage", type, key, location, numel); older: the same and a view's metadata
        if (not isinstance(pid, tuple) or len(pid) not in (5, 6) or pid[0] != "storage"
                or not isinstance(pid[1], _StorageType) or not isinstance(pid[2], str)
                or not isinstance(pid[3], str) or type(pid[4]) is not int or pid[4] < 0):
            text = (" (text: the file was saved with pickle_protocol=0, which torch.load cannot "
                    "read either; save it again with the default protocol)"
                    if isinstance(pid, str) else "")
            raise CheckpointError(f"{self.where}: unknown storage reference {pid!r:.120}{text}")
        if len(pid) == 6 and pid[5] is not None:
            raise CheckpointError(f"{self.where}: storage views (PyTorch before 1.0) are not "
                                  "read; load and save the file again with a newer PyTorch")
        kind, key, location, numel = pid[1:5]
        found = self.storage(kind.dtype, key, numel)
        found.location = location
        self.refs += 1
        return found

    def device(self, spec: Any, index: Any = None) -> Device:
        try:
            return to_device(spec if index is None else f"{spec}:{index}")
        except (EmberError, TypeError, ValueError) as e:
            raise CheckpointError(f"{self.where}: device {spec!r}: {e}") from None

    def tensor(self, storage: _Storage, offset: int, size: Any, stride: Any, requires_grad: bool,
               hooks: Any = None, metadata: Any = None) -> Tensor:
        return self.tensor_v3(storage, offset, size, stride, requires_grad, hooks,
                              getattr(storage, "dtype", None), metadata)

    def tensor_v3(self, storage: _Storage, offset: int, size: Any, stride: Any,
                  requires_grad: bool, hooks: Any, dtype: DType, metadata: Any = None) -> Tensor:
        where = self.where
        if not isinstance(storage, _Storage) or not isinstance(dtype, DType):
            raise CheckpointError(f"{where}: a tensor is rebuilt from {storage!r} with dtype "
                                  f"{dtype!r}, not from a storage; the file is corrupted")
        self.used += 1
        _flag(requires_grad, where)
        (offset,), size = _ints((offset,), "offset", where), _ints(size, "size", where)
        stride = (tuple(math.prod(size[i + 1:]) for i in range(len(size))) if stride is None
                  else _ints(stride, "stride", where))  # (None: contiguous, as torch's set_)
        if len(stride) != len(size):
            raise CheckpointError(f"{where}: a tensor of size {size} has stride {stride}")
        flat = storage.typed(dtype, where)
        if 0 in size:
            array = np.empty(size, flat.dtype)
        elif offset + sum((n - 1) * s for n, s in zip(size, stride)) >= flat.size:
            raise CheckpointError(f"{where}: a {dtype} tensor of size {list(size)}, stride "
                                  f"{list(stride)} and offset {offset} reads past its storage "
                                  f"of {flat.size} elements; the file is truncated or corrupted")
        else:  # a view of the storage, as in PyTorch (tied weights stay tied)
            array = strided_view(flat[offset:], size, stride)
            if any(s == 0 and n > 1 for n, s in zip(size, stride)):
                array.flags.writeable = False  # expanded: read-only, as ember.expand's views
        t = _with_metadata(share_array(array), metadata, where)
        if self.dry:
            return t
        if storage.device is None:
            try:
                storage.device = self.place(storage.location, storage.data)
            except (EmberError, TypeError, ValueError) as e:
                raise CheckpointError(f"{where}: a tensor saved on {storage.location}: {e}; "
                                      "choose where it goes with map_location, e.g. "
                                      "map_location='cpu'") from None
        dev = storage.device
        if dev.type != "cpu":
            t = t.to(dev)
        if requires_grad is True:
            if not dtype.is_floating_point and not dtype.is_complex:
                raise CheckpointError(f"{where}: a {dtype} tensor is marked requires_grad; "
                                      "only floating ones can be")
            t.requires_grad_(True)
        return t

    def meta(self, dtype: DType, size: Any, stride: Any, requires_grad: bool) -> Tensor:
        """A tensor on the meta device (no data), as saved (``requires_grad`` a bool, or None
        for False, as torch's ``empty_strided`` takes it)."""
        size, stride = _ints(size, "size", self.where), _ints(stride, "stride", self.where)
        flag = requires_grad is not None and _flag(requires_grad, self.where)
        try:
            return empty_strided(size, stride, dtype=dtype, device="meta", requires_grad=flag)
        except (EmberError, TypeError) as e:
            raise CheckpointError(f"{self.where}: a meta tensor: {e}") from None

    def layout(self, name: Any) -> layout:
        """The layout PyTorch names ``"torch.sparse_csr"`` (and the like)."""
        found = _LAYOUTS.get(name)
        if found is None:
            raise CheckpointError(f"{self.where}: unknown tensor layout {name!r}")
        return found

    def sparse(self, kind: layout, data: Any) -> SparseTensor | None:
        """A sparse tensor from its parts (COO: indices, values, size and whether coalesced;
        the compressed layouts: compressed and plain indices, values, size), checked."""
        if not isinstance(kind, layout) or not isinstance(data, tuple) or len(data) not in (3, 4):
            raise CheckpointError(f"{self.where}: a sparse tensor of layout {kind!r} is saved as "
                                  f"{type(data).__name__}; the file is corrupted")
        if self.dry:
            return None
        refuse_meta(data, f"{kind.name} tensor", self.where)
        try:
            if kind is sparse_coo:
                indices, values, size, *coalesced = data
                return sparse_coo_tensor(indices, values, size, check_invariants=True,
                                         is_coalesced=coalesced[0] if coalesced else None)
            return sparse_compressed_tensor(*data, layout=kind, check_invariants=True)
        except (EmberError, TypeError, ValueError) as e:
            raise CheckpointError(f"{self.where}: a {kind} tensor: {e}") from None

    def parameter(self, data: Tensor, requires_grad: bool, hooks: Any = None,
                  state: Any = None) -> Parameter:
        if not isinstance(data, Tensor):
            raise CheckpointError(f"{self.where}: a parameter holds {type(data).__name__}")
        p = Parameter(data.detach(), _flag(requires_grad, self.where))
        _set_state(p, state, self.where)
        return p

    def njt(self, kwargs: Any) -> NestedTensor | None:
        """PyTorch's jagged nested tensor as Ember's (:func:`ember.io.torch_nested.njt`)."""
        return njt(kwargs, self.where, self.dry)

    def from_type(self, rebuild: Callable[..., Any], kind: Any, args: Any, state: Any) -> Any:
        if kind == _NJT and rebuild == self.njt and isinstance(args, tuple) and len(args) == 1:
            return rebuild(*args)  # (its state repeats the arguments)
        if kind not in (_TENSOR_TYPE, _PARAMETER_TYPE):
            raise CheckpointError(f"{self.where}: a tensor of class {kind!r} cannot be rebuilt")
        t = rebuild(*args)
        _set_state(t, state, self.where)
        return t


def _encode(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode``, as protocol-2 pickles store bytes."""
    if not isinstance(text, str) or encoding != "latin1":
        raise CheckpointError(f"bytes stored as {text!r} in {encoding!r}, not latin1 text")
    return text.encode("latin1")


def _with_metadata(t: Tensor, metadata: Any, where: str) -> Tensor:
    """PyTorch's lazy conjugate and negative bits, applied."""
    metadata = metadata or {}
    if not isinstance(metadata, dict) or set(metadata) - {"conj", "neg"}:
        raise CheckpointError(f"{where}: unknown tensor metadata {metadata!r}")
    if metadata.get("neg"):
        t = -t
    return t.conj_physical() if metadata.get("conj") else t


def _set_state(t: Tensor, state: Any, where: str) -> None:
    """Attributes a user set on a saved tensor (``t.note = ...``), set on the loaded one as
    ``torch.load`` sets them (into its ``__dict__``); a name Tensor defines is refused (its
    slots, properties and methods: torch's setattr would run a setter or hide a method)."""
    for part in state if isinstance(state, tuple) else (state,):  # (dict, slots), as copyreg
        if not part:
            continue
        if not isinstance(part, dict) or not all(safe_globals.own_attribute(k) for k in part):
            raise CheckpointError(f"{where}: a saved tensor's attributes are {part!r}, not a "
                                  "dict of names Tensor does not define (such as 'sum', which "
                                  "it would hide); the file is corrupted or crafted")
        t.__dict__.update(part)


def _unpickle(data: BinaryIO, where: str, place: Placer,
              storage: Callable[[DType, str, int], _Storage], text: dict[str, str],
              dry: bool = False) -> Any:
    try:
        return _TorchUnpickler(data, where, storage, place, dry, text).load()
    except CheckpointError:
        raise
    except RecursionError:
        raise CheckpointError(f"{where}: the PyTorch file's object is nested too deeply"
                              ) from None
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{where}: a string of this PyTorch file is not {text['encoding']} "
                              f"({e}). Hint: a file Python 2 wrote loads with "
                              "ember.load(f, encoding='latin1')") from None
    except Exception as e:  # noqa: BLE001 - any failure of a malformed pickle is the file's
        raise CheckpointError(f"{where}: cannot read this PyTorch file's object "
                              f"({type(e).__name__}: {e}); it is corrupted or not a "
                              "torch.save file") from None


def load_zip(handle: BinaryIO, where: str, place: Placer, text: dict[str, str],
             mapped: np.ndarray | None = None) -> Any:
    """The object in a zip-format ``torch.save`` file; ``text``: how its strings decode
    (``encoding``, ``errors``); ``mapped``: the file mapped copy-on-write, whose stored records
    the storages are then views of, as ``torch.load(mmap=True)`` maps them."""
    try:
        archive = zipfile.ZipFile(handle)
    except _ZIP_ERRORS as e:
        raise CheckpointError(f"{where}: not a readable zip archive ({type(e).__name__}: {e}); "
                              "the file is corrupted or truncated") from None
    with archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise CheckpointError(f"{where}: a zip archive without one <name>/data.pkl; it "
                                  "is not a torch.save file (ember.jit.save files load with "
                                  "ember.jit.load)")
        prefix = pickles[0][:-len("data.pkl")]
        order = _record(archive, prefix + "byteorder", where, optional=True) or b"little"
        if order not in (b"little", b"big"):
            raise CheckpointError(f"{where}: unknown byte order {order!r}")

        storages: dict[str, _Storage] = {}

        def storage(dtype: DType, key: str, numel: int) -> _Storage:
            if key not in storages:
                name, nbytes = f"{prefix}data/{key}", numel * dtype.itemsize
                data = None if mapped is None else _mapped_record(archive, name, mapped, nbytes)
                if data is not None:
                    storages[key] = _Storage(data, dtype, order == b"big")
                    return storages[key]
                data = _stored_record(archive, handle, name, where)
                if data is None:
                    data = np.frombuffer(bytearray(_record(archive, name, where)), np.uint8)
                if len(data) < nbytes:
                    raise CheckpointError(f"{where}: storage {key} holds {len(data)} bytes, "
                                          f"{nbytes} expected; the file is truncated")
                storages[key] = _Storage(data[:nbytes], dtype, order == b"big")
            return storages[key]

        pkl = io.BytesIO(_record(archive, pickles[0], where))
        return _unpickle(pkl, where, place, storage, text)


def _data_start(archive: zipfile.ZipFile, name: str, read_at: Callable[[int, int], bytes]
                ) -> tuple[zipfile.ZipInfo, int] | None:
    """Record ``name``'s entry and where its data starts, past its local header (read by
    ``read_at(offset, size)``, its name checked as zipfile checks it), where it is stored
    uncompressed (else None: zipfile reads it)."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    head = read_at(info.header_offset, 30)
    if info.compress_type != zipfile.ZIP_STORED or len(head) < 30 or \
            not head.startswith(ZIP_MAGIC):
        return None
    named = info.header_offset + 30 + int.from_bytes(head[26:28], "little")
    if read_at(info.header_offset + 30, named - info.header_offset - 30) != name.encode():
        return None
    return info, named + int.from_bytes(head[28:30], "little")  # (past its extra field)


def _mapped_record(archive: zipfile.ZipFile, name: str, mapped: np.ndarray,
                   nbytes: int) -> np.ndarray | None:
    """The first ``nbytes`` of record ``name`` as a view of the mapped file, where it is
    stored uncompressed and whole (else None: it is read)."""
    found = _data_start(archive, name, lambda at, n: mapped[at:at + n].tobytes())
    if found is None or found[0].file_size < nbytes or found[1] + nbytes > mapped.size:
        return None
    return mapped[found[1]:found[1] + nbytes]


def _stored_record(archive: zipfile.ZipFile, handle: BinaryIO, name: str, where: str
                   ) -> np.ndarray | None:
    """Record ``name`` read straight into one writable array, its CRC checked, where it is
    stored uncompressed (zipfile's reads copy it in chunks: 5x slower for large storages)."""
    def read_at(at: int, n: int) -> bytes:
        handle.seek(at)
        return handle.read(n)

    found = _data_start(archive, name, read_at)
    if found is None:
        return None
    info, start = found
    handle.seek(0, io.SEEK_END)
    end = handle.tell()
    if info.compress_size != info.file_size or start + info.file_size > end:
        raise CheckpointError(f"{where}: record {name} claims {info.file_size} bytes "
                              f"({info.compress_size} stored), the file holds "
                              f"{max(end - start, 0)} after it; the file is corrupted")
    handle.seek(start)
    data = bytearray(info.file_size)
    if read_into(handle, data) != info.file_size:
        return None  # (zipfile says what is wrong)
    if info.CRC and zlib.crc32(data) != info.CRC:  # (0: none written, read_record)
        raise CheckpointError(f"{where}: record {name} fails its CRC check; the file is "
                              "corrupted")
    return np.frombuffer(data, np.uint8)


def read_into(f: Any, buffer: memoryview | bytearray) -> int:
    """``f.readinto(buffer)``, also for a file object with ``read`` only (as ``torch.load``
    takes): the number of bytes read."""
    if hasattr(f, "readinto"):
        return f.readinto(buffer)
    data = f.read(len(buffer))
    buffer[:len(data)] = data
    return len(data)


def read_record(archive: zipfile.ZipFile, name: str) -> bytes:
    """Record ``name``, its CRC checked unless it is 0: ``torch.save`` writes none with
    ``torch.serialization.set_crc32_options(False)`` (and for ``skip_data``'s records), and
    ``torch.load`` then reads the file."""
    info = archive.getinfo(name)
    if info.CRC == 0:
        info = copy.copy(info)
        del info.CRC  # (zipfile's reader then checks none)
    with archive.open(info) as f:
        return f.read()


def _record(archive: zipfile.ZipFile, name: str, where: str, optional: bool = False) -> bytes:
    try:
        return read_record(archive, name)
    except KeyError:
        if optional:
            return b""
        raise CheckpointError(f"{where}: the archive lacks {name}; the file is truncated or "
                              "corrupted") from None
    except _ZIP_ERRORS as e:
        raise CheckpointError(f"{where}: cannot read {name} ({type(e).__name__}: {e}); the "
                              "file is corrupted") from None


def load_legacy(handle: BinaryIO, where: str, place: Placer, text: dict[str, str]) -> Any:
    """The object in a ``torch.save`` file of the format before PyTorch 1.6. Its storages
    follow the object, so the object is read twice: once to learn the storages, then, with
    their bytes read, to build the tensors."""
    storages: dict[str, _Storage] = {}
    here = handle.tell()
    size = handle.seek(0, io.SEEK_END) - here  # (no storage can claim more than the file)
    handle.seek(here)

    def storage(dtype: DType, key: str, numel: int) -> _Storage:
        if key not in storages:
            if numel * dtype.itemsize > size:
                raise CheckpointError(f"{where}: storage {key} claims {numel} elements, more "
                                      "than the file holds; it is truncated or corrupted")
            storages[key] = _Storage(np.zeros(numel * dtype.itemsize, np.uint8), dtype, False)
        return storages[key]

    _magic, version, facts = (_unpickle(handle, where, place, storage, text) for _ in range(3))
    if version != LEGACY_PROTOCOL or not isinstance(facts, dict):
        raise CheckpointError(f"{where}: PyTorch file protocol {version!r}, not "
                              f"{LEGACY_PROTOCOL}")
    if facts.get("little_endian") is False:
        raise CheckpointError(f"{where}: a big-endian file of PyTorch's old format; load and "
                              "save it again with torch.save's default (zip) format")

    start = handle.tell()
    _unpickle(handle, where, place, storage, text, dry=True)
    keys = _unpickle(handle, where, place, storage, text)
    if not isinstance(keys, list) or set(keys) != set(storages):
        raise CheckpointError(f"{where}: the storage keys {keys!r} do not match the object's")
    for key in keys:
        data = storages[key].data
        count = np.frombuffer(_read(handle, 8, where), "<i8")[0]
        if count * storages[key].dtype.itemsize != data.size:
            raise CheckpointError(f"{where}: storage {key} holds {count} elements, not the "
                                  "number its tensors expect; the file is corrupted")
        data[:] = np.frombuffer(_read(handle, data.size, where), np.uint8)
    end = handle.tell()
    handle.seek(start)
    obj = _unpickle(handle, where, place, storage, text)
    handle.seek(end)
    return obj


def _read(handle: BinaryIO, n: int, where: str) -> bytes:
    data = handle.read(n)
    if len(data) != n:
        raise CheckpointError(f"{where}: the file ends inside its storages; it is truncated")
    return data
