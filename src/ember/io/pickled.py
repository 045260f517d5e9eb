"""Objects a checkpoint can hold only pickled (a whole module, a dataclass …), as
``torch.save`` stores them.

Unpickling runs code named by the file, so :func:`ember.load` does it only when asked with
``weights_only=False`` (PyTorch's default since 2.6 refuses such files too). Tensors inside
the object go where ``map_location`` sends them.

The object's tensors (a module's parameters) are not pickled with it: each is a tensor of
the checkpoint like any other (pickle's persistent ids, numbered into the object's
``"tensors"`` list of tree nodes), so a tensor saved beside the object (``{"model": m, "w":
m.weight}``) or in another pickled object (an optimizer over its parameters) loads as the
very same tensor, as ``torch.load`` keeps identity across everything one ``torch.save`` saved.
"""

from __future__ import annotations

import io
import pickle
import reprlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.backend.meta import MetaArray
from ember.dtypes import to_dtype
from ember.errors import CheckpointError, DTypeError
from ember.io.placement import Placer
from ember.io.safe_globals import own_attribute
from ember.nested.nested_tensor import NestedTensor
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor, _unpickled
from ember.tensor_copy import rebuilt


def type_name(x: Any) -> str:
    """``module.QualName`` of ``x``'s type, as the checkpoint records it."""
    return f"{type(x).__module__}.{type(x).__qualname__}"


def _dump(objects: list[tuple[Any, str]], module: Any, protocol: int,
          persist: Callable[[Any, str], int | None]) -> bytes:
    """One object pickled, or several as one list by one pickler dumping each in turn (one
    memo: an object two of them hold is pickled once, and each ``__reduce__`` runs once),
    each dump's STOP made an APPEND to the list; ``persist(obj, path)`` gives the persistent
    id of each object stored outside the pickle, ``path`` the dumped object's."""
    current = list(objects[0])  # (the object being dumped, its path)
    try:
        if not hasattr(module, "Pickler"):
            return module.dumps(current[0], protocol=protocol)

        class Pickler(module.Pickler):  # type: ignore[name-defined]
            def persistent_id(self, obj: Any) -> int | None:
                return persist(obj, current[1])

        buffer = io.BytesIO()
        pickler = Pickler(buffer, protocol=protocol)
        parts = [pickle.PROTO + bytes([protocol]) if protocol >= 2 else b"", pickle.EMPTY_LIST]
        for current[:] in objects:
            pickler.dump(current[0])
            data = buffer.getvalue()
            if len(objects) == 1:
                return data
            buffer.seek(0)
            buffer.truncate()
            data = data[2:] if data[:1] == pickle.PROTO else data
            if data[-1:] != pickle.STOP:
                raise CheckpointError(
                    f"save: {getattr(module, '__name__', module)}.Pickler wrote "
                    f"{data[-1:]!r} after the pickle's STOP, so ember.save cannot join the "
                    f"pickles of {len(objects)} objects into one; hint: pickle_module=pickle")
            parts.append(data[:-1] + pickle.APPEND)  # (its last byte: STOP)
        return b"".join([*parts, pickle.STOP])
    except CheckpointError:  # (a tensor inside it that the file cannot hold)
        raise
    except Exception as e:  # noqa: BLE001 - any pickling failure is the user's to read
        raise CheckpointError(
            f"save: cannot save the {type_name(current[0])} at {current[1] or 'the top level'}: "
            "it is not data (tensors, numbers, strings, lists, tuples, dicts) and pickling it "
            f"failed ({type(e).__name__}: {e}); hint: save its state_dict() instead") from None


def node(objects: list[tuple[Any, str]], module: Any, protocol: int,
         tensor: Callable[[Any, str], dict | None], store: Callable[[str, np.ndarray], str]
         ) -> dict:
    """The tree node of the objects ``[(x, path)]`` pickled (one: ``x``; several: the list of
    them), their pickle stored by ``store(path, bytes)`` (which names it), each object that
    ``tensor(obj, path)`` gives a tree node for left out of the pickle, in the node's
    ``"tensors"`` list; ``module`` (``pickle``, or a drop-in like ``dill``) pickles with
    ``protocol``, everything in if it has no ``Pickler`` (``dumps`` only)."""
    refs: list[dict] = []
    ids: dict[int, tuple[int, Any]] = {}  # each object's index in refs (one object: one
    # node), and the object, kept: one made while pickling (a __getstate__'s tensor) is freed
    # once pickled, and the next could get its id()

    def persist(obj: Any, path: str) -> int | None:
        if id(obj) not in ids:
            found = tensor(obj, path)
            if found is None:
                return None
            ids[id(obj)] = (len(refs), obj)
            refs.append(found)
        return ids[id(obj)][0]

    data = _dump(objects, module, protocol, persist)
    out: dict[str, Any] = {"$pickle": store(objects[0][1], np.frombuffer(data, np.uint8)),
                           "type": type_name(objects[0][0])}
    if refs:
        out["tensors"] = refs
    return out


def tensor_ref(refs: Any, value: Callable[[Any], Any], where: str, made: dict[int, Any],
               pid: Any) -> Tensor | NestedTensor | SparseTensor:
    """The tensor a pickle's persistent id ``pid`` names: ``value`` of its node in ``refs``,
    once per id (``made``: a nested or sparse tensor met twice is one object); pickle
    protocol 0 gives the id back as text, ``'0'``."""
    if isinstance(pid, str) and pid.isascii() and pid.isdigit():
        pid = int(pid)
    if not (isinstance(refs, list) and type(pid) is int and 0 <= pid < len(refs)
            and isinstance(refs[pid], dict)):
        raise CheckpointError(f"{where}: a pickled object refers to tensor {pid!r}, which its "
                              "entry does not list; the file is corrupted")
    if pid not in made:
        made[pid] = value(refs[pid])
    if not isinstance(made[pid], (Tensor, NestedTensor, SparseTensor)):
        raise CheckpointError(f"{where}: a pickled object's tensor {pid} is a "
                              f"{type(made[pid]).__name__} in the checkpoint tree, not a tensor")
    return made[pid]


class Unpickled:
    """Each pickled object of a file, unpickled once by its name; a name met again must list
    the same type and tensors (a crafted file could list others, which would be ignored)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.done: dict[str, tuple[str, Any, Any]] = {}

    def get(self, name: str, what: str, refs: Any, unpickle: Callable[[], Any]) -> Any:
        """The object pickled as ``name`` (``unpickle()`` the first time)."""
        if name not in self.done:
            self.done[name] = (what, refs, unpickle())
            return self.done[name][2]
        first_what, first_refs, obj = self.done[name]
        if first_what != what or (first_refs is not refs and first_refs != refs):
            other = "type" if first_what != what else "tensors"
            raise CheckpointError(f"{self.where}: the checkpoint tree lists the pickled object "
                                  f"{name!r} twice with other {other}; the file is corrupted")
        return obj


def _checked_parts(where: str, array: Any, grad: Any, layout: Any = None, cls: Any = Tensor,
                   attributes: Any = None) -> None:
    """Refuses the parts of a pickled tensor unless they are what :func:`ember.tensor_copy.
    pickled` writes: an Ember dtype (a file naming ``object`` would have NumPy read pointers
    from the file's bytes), a bytes buffer or array of such a dtype, a bool ``requires_grad``
    (True for a floating or complex dtype only, as PyTorch), a Tensor class and its own
    attributes."""
    def refuse(what: str) -> CheckpointError:
        return CheckpointError(f"{where}: a pickled tensor's {what}; the file is corrupted or "
                               "crafted")

    def ember_dtype(d: Any) -> bool:
        try:
            d = np.dtype(d) if isinstance(d, (str, np.dtype)) else None
            return d is not None and not d.hasobject and to_dtype(d) is not None
        except (TypeError, ValueError, DTypeError):
            return False

    if layout is None:
        if not (isinstance(array, (np.ndarray, MetaArray)) and ember_dtype(array.dtype)):
            raise refuse(f"data is a {type(array).__name__}, not an array of an Ember dtype")
    elif not (isinstance(layout, tuple) and len(layout) == 4 and ember_dtype(layout[0])):
        raise refuse(f"layout {reprlib.repr(layout)} names no Ember dtype")
    elif not (isinstance(array, (bytes, bytearray)) or (
            isinstance(array, np.ndarray) and array.dtype == np.uint8)):
        raise refuse(f"data is a {type(array).__name__}, not bytes")
    else:
        problem = _layout_problem(layout[1:], np.dtype(layout[0]).itemsize, _nbytes(array))
        if problem:
            raise refuse(f"layout {reprlib.repr(layout)} {problem}")
    dtype = to_dtype(np.dtype(array.dtype if layout is None else layout[0]))
    if type(grad) is not bool or (grad and not (dtype.is_floating_point or dtype.is_complex)):
        raise refuse(f"requires_grad is {reprlib.repr(grad)} for a {dtype} tensor; only "
                     "floating and complex ones can require grad")
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise refuse(f"class {reprlib.repr(cls)} is not a Tensor class")
    if attributes is not None and not (isinstance(attributes, dict) and all(
            own_attribute(k) for k in attributes)):
        raise refuse(f"attributes {reprlib.repr(attributes)} are not a subclass's own")


def _nbytes(array: bytes | bytearray | np.ndarray) -> int:
    return array.nbytes if isinstance(array, np.ndarray) else len(array)


def _layout_problem(geometry: tuple, itemsize: int, nbytes: int) -> str | None:
    """What is wrong with a pickled tensor's ``(shape, strides, offset)`` (strides and offset
    in bytes, of whole elements, as torch's format counts them; sizes and strides int64s)
    over ``nbytes`` bytes, or None: NumPy's ``ndarray(buffer=...)`` does not check the extent
    over an empty buffer, so a crafted file would read and write memory it does not own."""
    shape, strides, offset = geometry
    if not (type(shape) is tuple and len(shape) <= 64 and all(
            type(n) is int and 0 <= n < 2**63 for n in shape)):
        return "has a shape that is not a tuple of at most 64 non-negative int64s"
    if not (type(strides) is tuple and len(strides) == len(shape) and all(
            type(s) is int and -2**63 <= s < 2**63 for s in strides)):
        return "has strides that are not a tuple of int64s, one per dimension"
    if not (type(offset) is int and 0 <= offset <= nbytes):
        return f"has an offset that is not an int from 0 to its {nbytes} bytes"
    if offset % itemsize or any(s % itemsize for s in strides):
        return f"has strides or an offset that are not whole elements ({itemsize} bytes)"
    if 0 in shape:
        return None
    low = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + itemsize
    if low < 0:
        return f"reaches before its bytes (byte {low})"
    if high > nbytes:
        return f"reaches past its {nbytes} bytes (to byte {high})"
    return None


def _unpickler(module: Any, data: bytes, place: Placer,
               resolve: Callable[[Any], Any] | None, where: str = "load") -> Any:
    """``module``'s unpickler of ``data``, placing each unpickled tensor with ``place``
    (``map_location``) and giving each persistent id's object by ``resolve``; a tensor's
    parts are checked (:func:`_checked_parts`) before it is rebuilt."""
    def unpickled(array: Any, device: Any, grad: Any) -> Tensor:
        _checked_parts(where, array, grad)
        return _unpickled(array, str(place(device, array)), grad)

    def rebuilt_(array: Any, device: Any, grad: Any, *rest: Any) -> Tensor:
        _checked_parts(where, array, grad, *rest[:3])
        return rebuilt(array, str(place(device, array)), grad, *rest)

    class Unpickler(module.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            if resolve is None:
                raise pickle.UnpicklingError(f"persistent id {pid!r} refers to nothing")
            return resolve(pid)

        def find_class(self, mod: str, name: str) -> Any:
            if (mod, name) == ("ember.tensor", "_unpickled"):
                return unpickled
            if (mod, name) == ("ember.tensor_copy", "rebuilt"):
                return rebuilt_
            return super().find_class(mod, name)

    return Unpickler(io.BytesIO(data))


def loads(array: np.ndarray, place: Placer, where: str, what: str, module: Any = pickle,
          resolve: Callable[[Any], Any] | None = None) -> Any:
    """The object that :func:`dumps` stored as ``array`` (``resolve``: the object of each
    persistent id); a failure names the file and type."""
    try:
        return _unpickler(module, array.tobytes(), place, resolve, where).load()
    except CheckpointError:  # (a damaged tensor node it refers to)
        raise
    except Exception as e:  # noqa: BLE001 - a missing class, a damaged payload …
        raise CheckpointError(f"{where}: cannot unpickle the saved {what} ({type(e).__name__}: "
                              f"{e}); hint: the code that defined it must be importable") from None
