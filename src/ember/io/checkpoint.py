"""Safe checkpoints: ``ember.save`` / ``ember.load`` on safetensors plus JSON.

A checkpoint is one safetensors file. Its tensors are the file's tensors, named by their path
in the saved object (``model.fc.weight``, ``optimizer.state.0.exp_avg``; a flat state dict
keeps its own keys, so other safetensors readers see the usual names). Everything else (the
structure, numbers, strings, step counts, RNG states, user metadata) is one JSON document
stored under the key ``"ember"`` of the header's ``__metadata__`` map. Loading parses JSON and
copies bytes into arrays: it executes no code, unless the file holds a pickled object and the
caller passes ``weights_only=False``.

The JSON tree keeps Python types exactly: ``null``/``true``/ints/floats/strings as themselves,
lists as arrays, tuples as ``{"$tuple": [...]}``, dicts with string keys (none starting with
``$``) as objects and any other dict as ``{"$dict": [[key, value], ...]}`` (so int keys stay
ints), NaN/inf as ``{"$float": "nan"}``, complex numbers as ``{"$complex": [real, imag]}``,
sets as ``{"$set": [...]}`` (``"frozen": true`` for a frozenset), bytes as ``{"$bytes":
name}`` (``"mutable": true`` for a bytearray; the bytes are the uint8 tensor ``name``),
``ember.dtype``/``ember.device`` values as
``{"$dtype": ...}``/``{"$device": ...}``, ``ember.Size`` values as ``{"$size": [...]}``,
tensors as ``{"$tensor": name}`` and sparse tensors as ``{"$sparse": layout, "size": [...],
"parts": [...], "object": k}`` (COO: indices and values, with ``"coalesced"``; CSR/CSC:
compressed indices, plain indices and values), each part a tensor of the file, nested
(jagged) tensors as ``{"$nested": "jagged", "values": ..., "offsets": ..., "ragged_idx": r,
"min_seqlen": m, "max_seqlen": n, "object": k}`` (values and offsets tensor nodes), meta
tensors (no data) as ``{"$meta": dtype, "size": [...], "stride": [...], "object": k}``
(``"parameter": true`` for a ``Parameter``) — ``k`` numbers the sparse, nested and meta
objects of the save, so one saved twice loads as one —, and anything else (a
module, a dataclass) as ``{"$pickle": name, "type": "module.QualName"}``, its pickle the bytes
of the uint8 tensor ``name``, the tensors it holds left out as the file's (``"tensors"``: their
nodes), so they load as the tensors saved beside it, as ``torch.load`` keeps identity across
the whole saved object (see :mod:`ember.io.pickled`). Several such objects are pickled together,
as one list (``"item": i`` in each node says which), so what two of them hold loads once too.

Differences from ``torch.save``/``torch.load`` (deliberate):
- Data is saved as data: tensors, ``None``, bools, ints, floats, complex numbers, strings,
  bytes, sets, lists, tuples, dicts
  (an ``OrderedDict`` comes back as one, as ``torch.load`` gives it: ``{"$dict": ...,
  "ordered": true}``; other subclasses of dict, list and tuple, a namedtuple, a
  ``defaultdict``, ``ember.return_types.max``, are pickled, as ``torch.save`` does, so
  loading them takes ``weights_only=False`` or an allowed class; a dict with a
  ``_metadata`` dict, as ``state_dict()`` returns with its modules' versions, comes back as an
  ``OrderedDict`` with it, as ``torch.load`` gives it: ``{"$dict": ..., "metadata": ...}``),
  dtypes, devices, sizes, sparse tensors (an optimizer's sparse momentum too) and nested
  tensors (read with ``weights_only=True``, as ``torch.load`` reads an NJT). NumPy
  scalars are saved as the Python number. Anything else (a whole module, a range) is pickled,
  as ``torch.save`` does, and ``ember.load`` unpickles it only with ``weights_only=False``.
- Tensors are saved contiguous and detached (complex128, which safetensors has no code for,
  as its float64 real view with a last dimension of 2, ``"complex": true`` in its node);
  ``requires_grad`` is kept (and a ``Parameter``
  loads as one, ``{"parameter": true}`` in its node), and so are a tensor's own attributes
  (``"attributes"``: a dict tree), the autograd graph is not. A tensor subclass is pickled, as
  ``torch.save`` does, so ``ember.load`` refuses it unless ``weights_only=False``
  (:class:`~ember.errors.WeightsOnlyError`) or the subclass is allowed
  (:func:`ember.serialization.add_safe_globals`); a ``Parameter`` subclass loads as a ``Parameter``,
  as ``torch.load`` makes it. References to
  one tensor, or to tensors with the very same memory layout (tied weights from
  ``state_dict()``), are stored once and load as one tensor object (as tensors sharing memory
  where they differ in ``requires_grad`` or being a ``Parameter``). A tensor whose memory lies
  inside another saved one (a slice or transpose of it) is stored as a view of it and loads
  sharing its memory (:mod:`ember.io.shared_views`; other safetensors readers see only the
  tensor it is a view of), and so do tensors that partly overlap (views of the memory they
  cover, stored as a tensor of its own); views of another dtype's memory are copies.
- ``ember.load`` of a safetensors file Ember did not write returns its flat ``{name: Tensor}``;
  of a ``torch.save`` file, its data with Ember tensors (:mod:`ember.io.torch_file`).
"""

from __future__ import annotations

import json
import math
import pickle
from collections import OrderedDict
from functools import partial
from typing import Any

import numpy as np

from ember.backend import Device
from ember.dtypes import DType
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    CheckpointError,
    EmberError,
)
from ember.io import pickled, safe_globals, torch_file
from ember.io import safetensors_file as st
from ember.io.mapped_file import map_file
from ember.io.placement import MapLocation, Placer, make_tensor, placer
from ember.io.safetensors_file import write_arrays
from ember.io.shared_views import link_views, view_key, view_of
from ember.io.tree_decoder import Decoder
from ember.layouts import sparse_coo
from ember.nested.nested_tensor import NestedTensor
from ember.nn.parameter import Buffer, Parameter, UninitializedTensorMixin
from ember.size import Size
from ember.sparse.tensor import BY_ROWS, SparseTensor
from ember.tensor import Tensor

FORMAT = "ember.checkpoint"
VERSION = 5  # (5: objects pickled together; 4: nested tensors; 3: pickles refer to the file's
# tensors; 2: views; others say 1, which the oldest Ember reads)
TREE_KEY = "ember"

PathOrFile = st.PathOrFile


# -- encoding: object -> (JSON tree, {name: array}) -----------------------------------------------
class _Encoder:
    """Walks a saved object once, naming each distinct tensor by its path."""

    def __init__(self, module: Any = pickle, protocol: int = pickle.HIGHEST_PROTOCOL) -> None:
        self.module, self.protocol = module, protocol  # for the objects that are pickled
        self.arrays: dict[str, np.ndarray] = {}
        self.by_layout: dict[tuple, str] = {}
        self.nodes: dict[str, list[dict]] = {}  # each tensor's nodes, to make views of later
        self.active: set[int] = set()  # containers on the current path, to refuse cycles
        self.pickled: dict[int, dict] = {}  # each pickled object's node, by id
        self.pending: list[tuple[Any, str]] = []  # those objects and their paths, in order
        self.has_nested = False
        self.seen: dict[int, tuple[int, Any]] = {}  # sparse, nested and meta tensors' ordinals

    def tensor(self, t: Tensor, path: str) -> dict:
        node: dict[str, Any]
        if t.is_meta:  # (no data: its layout is the whole of it, in the tree; "object" numbers
            # the meta tensors of the save, so one saved twice loads as one, as torch.load)
            node = {"$meta": t.dtype.name, "size": list(t.shape), "stride": list(t.stride()),
                    "object": self.ordinal(t)}
        else:
            node = {"$tensor": self._stored(t, path)}
            if t.dtype.name == "complex128":
                node["complex"] = True
        if t.requires_grad:
            node["requires_grad"] = True
        if isinstance(t, Parameter):
            node["parameter"] = True
        if t.device.type not in ("cpu", "meta"):
            node["device"] = str(t.device)
        if getattr(t, "__dict__", None) and not isinstance(t, Buffer):  # (the user's, kept
            node["attributes"] = self.value(t.__dict__, path)  # as torch.save does)
        if not t.is_meta:
            self.nodes.setdefault(node["$tensor"], []).append(node)
        return node

    def _stored(self, t: Tensor, path: str) -> str:
        """The name of ``t``'s array in the file (one name per memory layout)."""
        a = t._host("ember.save", keep=False)  # (written to the file, not kept)
        layout = (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype,
                  str(t.device))
        name = self.by_layout.get(layout)
        if name is None:
            if a.dtype != np.complex128:  # (stored as its real view: encode)
                st.dtype_code(a.dtype)  # a clear error for a dtype safetensors cannot hold
            name = self._unique(path or "tensor")
            self.arrays[name] = a
            self.by_layout[layout] = name
        return name

    def _unique(self, name: str) -> str:
        if name not in self.arrays and name != st.METADATA_KEY:
            return name
        i = 1
        while f"{name}#{i}" in self.arrays:
            i += 1
        return f"{name}#{i}"

    def value(self, x: Any, path: str) -> Any:
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return int(x)  # an IntEnum or other int subclass saves as its value
        if isinstance(x, float):
            return float(x) if math.isfinite(x) else {"$float": repr(float(x))}
        if isinstance(x, Tensor) and _plain(x):
            return self.tensor(x, path)
        if isinstance(x, SparseTensor):
            return self.sparse(x, path)
        if isinstance(x, NestedTensor):
            return self.nested(x, path)
        if isinstance(x, np.generic) and x.dtype.kind in "biufc":
            return self.value(x.item(), path)
        if isinstance(x, complex):
            return {"$complex": [self.value(x.real, path), self.value(x.imag, path)]}
        if type(x) in (bytes, bytearray):
            name = self._unique(path or "bytes")
            self.arrays[name] = np.frombuffer(bytes(x), np.uint8)
            return {"$bytes": name, "mutable": True} if type(x) is bytearray else {"$bytes": name}
        if type(x) in (set, frozenset):
            items = [self.value(v, path) for v in x]
            return {"$set": items, "frozen": True} if type(x) is frozenset else {"$set": items}
        if isinstance(x, DType):
            return {"$dtype": x.name}
        if isinstance(x, Device):
            return {"$device": str(x)}
        if isinstance(x, Size):
            return {"$size": list(x)}
        if type(x) in (list, tuple, dict, OrderedDict):  # (a namedtuple, a defaultdict is
            return self.container(x, path)  # pickled, as torch.save does: no silent type change)
        return self.pickle(x, path)

    def pickle(self, x: Any, path: str) -> dict:
        """The node of ``x``, pickled by :meth:`pickle_all` (each object once)."""
        if id(x) not in self.pickled:
            self.pickled[id(x)] = {"$pickle": "", "type": pickled.type_name(x)}
            self.pending.append((x, path))
        return self.pickled[id(x)]

    def pickle_all(self) -> bool:
        """Pickles the objects met, their plain tensors as tensors of the file: one alone;
        several in one pickle (one memo: an object two of them hold loads as one, as with
        ``torch.load``), each node an ``"item"`` of it. Returns whether they were joined."""
        def tensor(t: Any, path: str) -> dict | None:  # (named by the first object holding it;
            if isinstance(t, Tensor) and _plain(t):  # nested and sparse ones as torch.save
                return self.tensor(t, _join(path or "object", "tensor"))  # keeps them: data)
            if isinstance(t, (NestedTensor, SparseTensor)):
                return self.value(t, _join(path or "object", "tensor"))
            return None

        nodes = [self.pickled[id(x)] for x, _ in self.pending]
        if len(self.pending) < 2 or not hasattr(self.module, "Pickler"):
            for item, out in zip(self.pending, nodes):
                out.update(pickled.node([item], self.module, self.protocol, tensor, self._store))
            return False
        joint = pickled.node(self.pending, self.module, self.protocol, tensor, self._store)
        for i, out in enumerate(nodes):
            out.update({**joint, "type": out["type"], "item": i})
        return True

    def _store(self, name: str, data: np.ndarray) -> str:
        name = self._unique(name or "object")
        self.arrays[name] = data
        return name

    def sparse(self, s: SparseTensor, path: str) -> dict:
        """A sparse tensor as its layout, size and parts (each a tensor of the file)."""
        if s.layout is sparse_coo:
            names, parts = ("indices", "values"), (s._indices(), s._values())
        elif s.layout in BY_ROWS:
            names, parts = ("crow_indices", "col_indices", "values"), \
                (s.crow_indices(), s.col_indices(), s.values())
        else:
            names, parts = ("ccol_indices", "row_indices", "values"), \
                (s.ccol_indices(), s.row_indices(), s.values())
        node: dict[str, Any] = {
            "$sparse": s.layout.name, "size": list(s.shape),
            "parts": [self.tensor(t.detach(), _join(path, n)) for n, t in zip(names, parts)]}
        if s.layout is sparse_coo:
            node["coalesced"] = s.is_coalesced()
        if s.requires_grad:
            node["requires_grad"] = True
        node["object"] = self.ordinal(s)
        return node  # (the same object gives the same node: load keeps the identity)

    def nested(self, nt: NestedTensor, path: str) -> dict:
        """A jagged nested tensor as its values and offsets (tensors of the file, so nested
        tensors on one offsets tensor load sharing it, and one ragged size), as torch.save
        keeps an NJT's."""
        ragged, self.has_nested = nt._ragged, True  # noqa: SLF001 - its seqlens, as PyTorch's
        return {"$nested": "jagged", "values": self.tensor(nt.values(), _join(path, "values")),
                "offsets": self.tensor(nt.offsets(), _join(path, "offsets")),
                "ragged_idx": nt._ragged_idx,  # noqa: SLF001
                "min_seqlen": ragged.min_seqlen, "max_seqlen": ragged.max_seqlen,
                "object": self.ordinal(nt)}

    def ordinal(self, x: Any) -> int:
        """The number of sparse, nested or meta tensor ``x`` in this save (one object saved
        twice: one number, so it loads as one; ``x`` is kept so its id stays its own)."""
        return self.seen.setdefault(id(x), (len(self.seen), x))[0]

    def container(self, x: list | tuple | dict, path: str) -> Any:
        if id(x) in self.active:
            raise CheckpointError(f"save: the object contains itself at {path}; "
                                  "a checkpoint must be a tree")
        self.active.add(id(x))
        try:
            if isinstance(x, dict):
                return self.mapping(x, path)
            items = [self.value(v, _join(path, str(i))) for i, v in enumerate(x)]
            return items if isinstance(x, list) else {"$tuple": items}
        finally:
            self.active.discard(id(x))

    def mapping(self, x: dict, path: str) -> Any:
        metadata = getattr(x, "_metadata", None)
        ordered = isinstance(x, OrderedDict)
        if not (isinstance(metadata, dict) or ordered) and all(
                isinstance(k, str) and not k.startswith("$") for k in x):
            return {k: self.value(v, _join(path, k)) for k, v in x.items()}
        pairs = []
        for k, v in x.items():
            if not _plain_key(k):
                raise CheckpointError(f"save: dict key {k!r} at {path or 'the top level'} "
                                      "is not None, a bool, number, string, dtype, device or "
                                      "tuple of them")
            pairs.append([self.value(k, path), self.value(v, _join(path, str(k)))])
        node: dict[str, Any] = {"$dict": pairs, "ordered": True} if ordered else {"$dict": pairs}
        if isinstance(metadata, dict):
            node["metadata"] = self.value(metadata, _join(path, "_metadata"))
        return node


def _plain(t: Tensor) -> bool:
    """Whether ``t`` saves as a tensor of the file: a ``Tensor``, a ``Parameter`` (a subclass of
    it loads as a ``Parameter``, as ``torch.load`` makes it) or an ``nn.Buffer`` marker. Other
    subclasses (the user's, an uninitialized parameter) are pickled, so that loading them
    takes ``weights_only=False`` or an allowed class, as in PyTorch."""
    cls = type(t)
    return (cls is Tensor or cls is Buffer
            or (isinstance(t, Parameter) and not isinstance(t, UninitializedTensorMixin)))


def _plain_key(k: Any) -> bool:
    if isinstance(k, tuple):
        return all(_plain_key(i) for i in k)
    return k is None or isinstance(k, (bool, int, float, str, DType, Device))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def encode(obj: Any, module: Any = pickle, protocol: int = pickle.HIGHEST_PROTOCOL
           ) -> tuple[str, dict[str, np.ndarray]]:
    """The JSON document and the named arrays that :func:`save` writes for ``obj`` (objects
    that are not data pickled by ``module`` with ``protocol``)."""
    enc = _Encoder(module, protocol)
    try:
        tree = enc.value(obj, "")
        joint = enc.pickle_all()
        version = 2 if link_views(enc.arrays, enc.nodes) else 1
        for name, a in enc.arrays.items():  # (safetensors has no code for complex128)
            if a.dtype == np.complex128:
                flat = np.ascontiguousarray(a).reshape(-1)
                enc.arrays[name] = flat.view(np.float64).reshape(*a.shape, 2)
        if any("tensors" in node for node in enc.pickled.values()):
            version = 3
        if enc.has_nested:
            version = 4
        if joint:
            version = VERSION
        doc = json.dumps({"format": FORMAT, "version": version, "tree": tree},
                         separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise CheckpointError("save: the object is nested too deeply to save") from None
    return doc, enc.arrays


# -- files ----------------------------------------------------------------------------------------
def save(obj: Any, f: PathOrFile, pickle_module: Any = pickle,
         pickle_protocol: int | None = pickle.HIGHEST_PROTOCOL,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Saves tensors, state dicts and plain data to a safetensors checkpoint.

    Writes to ``f`` atomically: a temporary file in the same directory is written, fsynced
    and renamed over ``f``, so a crash mid-save leaves the previous checkpoint intact (the
    file is a new one: a symlink is written through, but other hard links to the old file
    keep its old contents, where ``torch.save`` writes into it). ``f``
    may also be a binary file object (written in place, not atomically).

    Args:
        obj: a tensor, a state dict, or any nesting of dicts, lists and tuples holding
            tensors, None, bools, ints, floats, strings, ``ember`` dtypes and devices, e.g.
            ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``.
            Dict keys may be strings, ints, floats, bools, None, dtypes, devices or tuples;
            their types are kept, and tuples come back as tuples, lists as lists. Other
            objects (a whole module) are pickled, as ``torch.save`` does; loading them takes
            ``weights_only=False``.
        f: a path or a writable binary file.
        pickle_module: what pickles the objects that are not data (``pickle``, or a drop-in
            such as ``dill``; load them with the same ``pickle_module``).
        pickle_protocol: the pickle protocol of those objects (negative or None: the
            highest, the default).
        _use_new_zipfile_serialization: accepted for PyTorch compatibility and ignored
            (it chooses between ``torch.save``'s formats; Ember writes its one format).

    Raises:
        CheckpointError: ``obj`` holds something that neither is data nor pickles (a lambda).

    Example:
        >>> ember.save({"w": ember.ones(2), "step": 5}, tmp_path / "ckpt.safetensors")
        >>> ember.load(tmp_path / "ckpt.safetensors")["step"]
        5
    """
    del _use_new_zipfile_serialization
    if pickle_protocol is None:  # (the default, as torch.save takes it)
        pickle_protocol = pickle.HIGHEST_PROTOCOL
    if not isinstance(pickle_protocol, int) or isinstance(pickle_protocol, bool):
        raise ArgumentTypeError(f"save: pickle_protocol must be an int, not "
                                f"{type(pickle_protocol).__name__}")
    if pickle_protocol > pickle.HIGHEST_PROTOCOL:  # (a negative one: the highest, as pickle's)
        raise ArgumentError(f"save: pickle_protocol must be at most {pickle.HIGHEST_PROTOCOL} "
                            f"(or negative, for the highest), not {pickle_protocol}")
    pickle_protocol = pickle_protocol if pickle_protocol >= 0 else pickle.HIGHEST_PROTOCOL
    doc, arrays = encode(obj, pickle_module, pickle_protocol)
    write_arrays(f, arrays, {TREE_KEY: doc})


def load(f: PathOrFile, map_location: MapLocation = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args: str) -> Any:
    """Loads what :func:`save` wrote, with Ember tensors (dtype and shape kept).

    Executes no code from the file unless ``weights_only=False``. A truncated, corrupted or
    hostile file raises a :class:`~ember.errors.CheckpointError` naming the file and the
    problem. A safetensors file written by another tool loads as a flat ``{name: Tensor}`` dict.
    A file ``torch.save`` wrote (either of its formats) loads with Ember tensors in place of
    PyTorch's, as ``torch.load(..., weights_only=True)`` reads it: tensors, parameters and
    plain data only, whatever ``weights_only`` says (:mod:`ember.io.torch_file`).

    Args:
        f: a path or a readable, seekable binary file, read from its current position
            (where :func:`save` wrote to it).
        map_location: where tensors go: ``None`` (where they were saved), a device or device
            string for all of them, a dict from saved device strings to new ones, or a
            function ``(storage, location)`` returning the storage (on its device) or None
            (where it was saved), as ``map_location=lambda storage, loc: storage``.
        pickle_module: what unpickles a checkpoint's pickled objects (``pickle`` if None);
            giving one means ``weights_only=False``, as in PyTorch, where it cannot be
            combined with ``weights_only=True``.
        weights_only: ``None`` or ``True`` (the default, as in PyTorch 2.6 and later): load
            data only, and refuse a file holding pickled objects (a whole module saved)
            unless each class or function they name was allowed by
            ``ember.serialization.add_safe_globals`` (as ``torch.serialization``'s);
            ``False``: unpickle them too, which runs code the file names — only for files
            you trust.
        mmap: True: where ``f`` is a path to an Ember (or safetensors) file, its tensors are
            views of the file mapped copy-on-write (read when used; writes stay in memory), as
            ``torch.load(mmap=True)`` maps storages, and so are the storages of a zip-format
            ``torch.save`` file; a file of its older format or a file object is read into
            memory.
        pickle_load_args: ``encoding`` and ``errors`` for the strings of a ``torch.save``
            file, as in ``torch.load`` (``encoding="latin1"`` reads one that Python 2 wrote).

    Example:
        >>> ember.save({"model": {"w": ember.zeros(2, 3)}}, tmp_path / "ckpt.safetensors")
        >>> ember.load(tmp_path / "ckpt.safetensors", map_location="cpu")["model"]["w"].shape
        ember.Size([2, 3])
    """
    text = _text_args(pickle_load_args)
    if pickle_module is not None:
        if weights_only:
            raise ArgumentError("load: weights_only=True cannot be combined with a pickle_module, "
                                "as in torch.load (data only is read without one)")
        weights_only = False
    where, place = st.source_name(f), placer(map_location)
    handle, owned = st.open_source(f)
    try:
        start = handle.tell()
        head = handle.read(32)
        mapped = map_file(handle, where) if mmap and owned and head else None
        handle.seek(start)
        if head.startswith(torch_file.ZIP_MAGIC):
            return torch_file.load_zip(handle, where, place, text, mapped)
        if torch_file.is_legacy(head):
            return torch_file.load_legacy(handle, where, place, text)
        header = st.read_header(handle, where, torch_hint=False)  # (tried above)
        doc = header.metadata.get(TREE_KEY)
        if doc is None:  # a plain safetensors file from another tool
            arrays = {name: st.read_array(handle, header, name, where, mapped)
                      for name in header.entries}
            return {name: make_tensor(a, place("cpu", a)) for name, a in arrays.items()}
        read: dict[str, Tensor] = {}  # each stored tensor, read once
        made: dict[tuple, Tensor] = {}  # its loaded forms, sharing its memory
        unpickled = pickled.Unpickled(where)  # each pickled object, unpickled once

        def tensor(name: str, node: dict) -> Tensor:
            requires_grad = node.get("requires_grad") is True
            attributes = node.get("attributes")
            key = (name, view_key(node), requires_grad, node.get("parameter") is True,
                   json.dumps(attributes))
            if key in made:
                return made[key]
            if name not in read:
                read[name] = _tensor(raw(name, "tensor"), name, node, place, where)
            t = (read[name] if key[1] is None else view_of(read[name], node, where)).detach()
            if requires_grad and not (t.dtype.is_floating_point or t.dtype.is_complex):
                raise CheckpointError(f"{where}: tensor {name!r} of dtype {t.dtype.name} is marked "
                                      "requires_grad; only floating and complex ones can be")
            made[key] = Parameter(t, requires_grad) if key[3] else t.requires_grad_(
                requires_grad)
            decoder.set_attributes(made[key], node, f"tensor {name!r}")
            return made[key]

        def unpickle(name: str, what: str, refs: Any, item: Any = None) -> Any:
            module = pickle_module or pickle  # (weights only: the allowed globals alone)
            if weights_only is not False:
                module = safe_globals.restricted(where, what)
            resolve = partial(pickled.tensor_ref, refs, decoder.value, where, {})
            obj = unpickled.get(name, what if item is None else "objects", refs,
                                lambda: pickled.loads(raw(name, "pickled data"), place, where,
                                                      what, module, resolve))
            if item is None:
                return obj
            if not (type(item) is int and type(obj) is list and 0 <= item < len(obj)):
                raise CheckpointError(f"{where}: a pickled {what} is item {item!r} of pickle "
                                      f"{name!r}, which does not hold it; the file is corrupted")
            return obj[item]

        def raw(name: str, what: str) -> np.ndarray:
            if name not in header.entries:
                raise CheckpointError(f"{where}: the checkpoint tree refers to {what} {name!r}, "
                                      "which the file does not contain")
            return st.read_array(handle, header, name, where, mapped)

        decoder = Decoder(where, tensor, unpickle, raw)
        return decoder.value(_tree(doc, where))
    except RecursionError:
        raise CheckpointError(f"{where}: the checkpoint tree is nested too deeply") from None
    finally:
        if owned:
            handle.close()


def _text_args(args: dict[str, str]) -> dict[str, str]:
    """``torch.load``'s ``pickle_load_args`` that apply: how a pickle's strings decode."""
    unknown = set(args) - {"encoding", "errors"}
    if unknown:
        raise TypeError(f"load() got unexpected keyword arguments {sorted(unknown)}; of "
                        "torch.load's pickle_load_args it takes encoding and errors")
    return {"encoding": "utf-8", "errors": "strict", **args}


def _tree(doc: str, where: str) -> Any:
    try:
        meta = json.loads(doc)
    except ValueError as e:
        raise CheckpointError(f"{where}: the checkpoint description is not valid JSON "
                              f"({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or "tree" not in meta:
        raise CheckpointError(f"{where}: __metadata__[{TREE_KEY!r}] is not an Ember "
                              "checkpoint description")
    version = meta.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CheckpointError(f"{where}: checkpoint format version {version!r}; this Ember "
                              f"reads up to version {VERSION} (upgrade Ember)")
    return meta["tree"]


def _tensor(array: np.ndarray, name: str, node: dict, place: Placer, where: str) -> Tensor:
    """Tensor ``name`` of the file (its data ``array``), as its tree ``node`` describes it,
    placed by ``map_location``."""
    saved_device = node.get("device", "cpu")
    if not isinstance(saved_device, str):
        raise CheckpointError(f"{where}: tensor {name!r} has device {saved_device!r}, not a "
                              "device string")
    if node.get("complex") is True:  # complex128, stored as its real view
        if array.dtype != np.float64 or array.shape[-1:] != (2,):
            raise CheckpointError(f"{where}: complex tensor {name!r} is stored as {array.dtype} "
                                  f"of shape {array.shape}, not float64 pairs")
        array = array.view(np.complex128)[..., 0]
    try:
        dev = place(saved_device, array)
    except EmberError as e:
        raise CheckpointError(f"{where}: tensor {name!r} (saved on {saved_device}): {e}; "
                              "choose where it goes with map_location, e.g. "
                              "map_location='cpu'") from None
    return make_tensor(array, dev)
