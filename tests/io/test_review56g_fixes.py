"""review56g's findings on the io/checkpoint sweep of session 56 (each test fails before its
fix)."""
import dataclasses
import io
import json
import pickle
import struct
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import tensor_copy as tc
from ember.errors import CheckpointError
from ember.io.checkpoint import FORMAT, TREE_KEY
from ember.io.mapped_file import FileMapping
from ember.io.safetensors_file import write_arrays
from ember.tensor import _unpickled


def _ember_file(payload: bytes) -> io.BytesIO:
    """An Ember file whose tree is one pickled object, ``payload``."""
    doc = json.dumps({"format": FORMAT, "version": 3, "tree": {"$pickle": "obj", "type": "x"}})
    out = io.BytesIO()
    write_arrays(out, {"obj": np.frombuffer(payload, np.uint8)}, {TREE_KEY: doc})
    out.seek(0)
    return out


class _Reduced:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


@pytest.mark.parametrize("fn, args", [
    # an object array over the file's bytes: reading an element followed its pointers (SIGSEGV)
    (tc.rebuilt, (b"\x41" * 16, "cpu", False, ("O", (2,), (8,), 0))),
    (tc.rebuilt, (b"\x41" * 16, "cpu", False, ("f4,i4", (2,), (8,), 0))),
    (tc.rebuilt, (b"\x41" * 16, "cpu", False, (">f4", (2,), (4,), 0))),
    (tc.rebuilt, ({"a": 1}, "cpu", False)),
    (tc.rebuilt, (10**30, "cpu", False)),
    (tc.rebuilt, (b"\0" * 8, "cpu", False, ("<f4", (2,), (4,), 0), OrderedDict)),
    (_unpickled, ("abc", "cpu", False)),
])
def test_weights_only_load_refuses_tensor_parts_that_are_not_embers(fn, args):
    # review56g item 1: the restricted unpickler handed these to the rebuild functions
    with pytest.raises(CheckpointError, match="pickled tensor"):
        ember.load(_ember_file(pickle.dumps(_Reduced(fn, args), protocol=4)))


def test_a_tensor_pickled_in_an_object_still_loads_with_weights_only_false():
    t = ember.arange(6.0).reshape(2, 3).t()
    out = ember.load(_ember_file(pickle.dumps(t, protocol=4)), weights_only=False)
    np.testing.assert_array_equal(out.numpy(), t.numpy())


def _torch_zip(obj) -> bytes:
    import torch

    out = io.BytesIO()
    torch.save(obj, out)
    return out.getvalue()


def test_a_record_claiming_more_bytes_than_the_file_holds_is_refused_before_allocating():
    # review56g item 2: the direct read allocated the central directory's claimed size
    # (1 GiB here) and then loaded the file; torch refuses it as corrupted
    import torch

    raw = bytearray(_torch_zip({"w": torch.arange(4.0)}))
    at = raw.find(b"PK\x01\x02")
    while at >= 0:
        name = raw[at + 46:at + 46 + struct.unpack_from("<H", raw, at + 28)[0]]
        if name.endswith(b"data/0"):
            struct.pack_into("<I", raw, at + 24, 1 << 30)  # (its uncompressed size)
        at = raw.find(b"PK\x01\x02", at + 4)
    with pytest.raises(RuntimeError, match="corrupted"):
        torch.load(io.BytesIO(bytes(raw)))
    with pytest.raises(CheckpointError, match="claims 1073741824 bytes"):
        ember.load(io.BytesIO(bytes(raw)))


class _ReadOnly:
    """A file object with read/seek/tell but no readinto."""

    def __init__(self, data: bytes) -> None:
        self.inner = io.BytesIO(data)

    def read(self, n=-1):
        return self.inner.read(n)

    def seek(self, *args):
        return self.inner.seek(*args)

    def tell(self):
        return self.inner.tell()

    def readable(self):
        return True

    def seekable(self):
        return True


def test_a_file_object_without_readinto_loads_a_torch_zip():
    # review56g item 3: the direct read called handle.readinto (AttributeError →
    # CheckpointError); torch.load reads such objects
    import torch

    raw = _torch_zip({"w": torch.arange(4.0)})
    assert torch.load(_ReadOnly(raw))["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert ember.load(_ReadOnly(raw))["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


@dataclasses.dataclass
class _Cfg:
    a: int = 1
    b: list = dataclasses.field(default_factory=list)


def _saved_under_old_name(save):
    """``save`` of a ``_Cfg(3, [1])`` pickled as ``review56g_old.OldCfg`` (a renamed class)."""
    import sys
    import types

    names = _Cfg.__module__, _Cfg.__qualname__
    sys.modules["review56g_old"] = types.SimpleNamespace(OldCfg=_Cfg)
    _Cfg.__module__, _Cfg.__qualname__ = "review56g_old", "OldCfg"
    try:
        return save(_Cfg(3, [1]))
    finally:
        _Cfg.__module__, _Cfg.__qualname__ = names
        del sys.modules["review56g_old"]


def test_a_class_allowed_under_its_old_name_has_its_state_set():
    # review56g item 4: may_build looked the class up by its own name, not the alias, so
    # BUILD was refused (WeightsOnlyError in Ember files, CheckpointError in torch files)
    import torch

    torch_file = _saved_under_old_name(lambda c: _torch_zip({"c": c}))
    ember_file = _saved_under_old_name(lambda c: pickle.dumps(c, protocol=4))
    with torch.serialization.safe_globals([(_Cfg, "review56g_old.OldCfg")]):
        assert torch.load(io.BytesIO(torch_file)) == {"c": _Cfg(3, [1])}
    with ember.serialization.safe_globals([(_Cfg, "review56g_old.OldCfg")]):
        assert ember.load(io.BytesIO(torch_file)) == {"c": _Cfg(3, [1])}
        assert ember.load(_ember_file(ember_file)) == _Cfg(3, [1])


def test_get_safe_globals_gives_back_a_pair_for_an_object_without_a_qualname():
    # review56g item 9: an entry like (functools.partial(print), "m.f") made get_safe_globals
    # raise AttributeError; torch gives the pair back
    import functools

    import torch

    f = functools.partial(print)
    with torch.serialization.safe_globals([(f, "m.f")]):
        assert (f, "m.f") in torch.serialization.get_safe_globals()
    with ember.serialization.safe_globals([(f, "m.f")]):
        assert ember.serialization.get_safe_globals() == [(f, "m.f")]


@pytest.mark.parametrize("lengths", [[10**7], [-2], [4]])
def test_a_torch_nested_tensor_with_rows_outside_its_values_is_refused_before_gathering(lengths):
    # review56g item 5: one np.arange a row was built before any bounds check (+305 MB for
    # lengths 10**7 over 3 rows, then a CheckpointError)
    import torch

    nt = torch.nested.nested_tensor_from_jagged(torch.zeros(3, 2), torch.tensor([0, 3]),
                                                lengths=torch.tensor(lengths))
    with pytest.raises(CheckpointError, match="lie outside its 3 values"):
        ember.load(io.BytesIO(_torch_zip(nt)))


def _zip_of(pkl: bytes) -> io.BytesIO:
    """A torch zip file whose pickle is ``pkl`` (no storages)."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    out.seek(0)
    return out


@pytest.mark.parametrize("kwargs", [b"]", b"K\x01"])
def test_a_nested_tensor_rebuilt_from_other_than_a_dict_names_what_it_got(kwargs):
    # review56g item 8: kwargs.get ran before the isinstance check (AttributeError in the
    # message)
    pkl = (b"\x80\x02ctorch.nested._internal.nested_tensor\n_rebuild_njt\n" + kwargs
           + b"\x85R.")
    with pytest.raises(CheckpointError, match="a nested tensor is rebuilt from"):
        ember.load(_zip_of(pkl))


def test_a_nested_tensor_whose_seqlens_do_not_bound_its_rows_is_refused_at_load():
    # review56g item 6: a file's max_seqlen 2 for rows of 1/2/3 loaded; to_padded_tensor then
    # raised a bare NumPy IndexError
    import torch

    doc = json.dumps({"format": FORMAT, "version": 4, "tree": {
        "$nested": "jagged", "values": {"$tensor": "v"}, "offsets": {"$tensor": "o"},
        "ragged_idx": 1, "min_seqlen": 1, "max_seqlen": 2}})
    ember_file = io.BytesIO()
    write_arrays(ember_file, {"v": np.zeros((6, 2), np.float32), "o": np.array([0, 1, 3, 6])},
                 {TREE_KEY: doc})
    ember_file.seek(0)
    with pytest.raises(CheckpointError, match="must bound the rows"):
        ember.load(ember_file)
    lying = torch.nested.nested_tensor_from_jagged(torch.zeros(6, 2), torch.tensor([0, 1, 3, 6]),
                                                   max_seqlen=2)
    with pytest.raises(CheckpointError, match="must bound the rows"):
        ember.load(io.BytesIO(_torch_zip(lying)))


def test_a_mapped_tensor_is_a_plain_ndarray_as_torch_gives(tmp_path):
    # review56g item 7: it was a numpy.memmap, whose Python hooks run on every NumPy op
    import torch

    torch.save({"w": torch.ones(3)}, tmp_path / "t.pt")
    ember.save({"w": ember.ones(3)}, tmp_path / "e.st")
    assert type(torch.load(tmp_path / "t.pt", mmap=True)["w"].numpy()) is np.ndarray
    for name in ("t.pt", "e.st"):
        a = ember.load(tmp_path / name, mmap=True)["w"].numpy()
        assert type(a) is np.ndarray and type(a + a) is np.ndarray
        while a is not None and not isinstance(a, (np.memmap, FileMapping)):
            a = getattr(a, "base", None)
        assert isinstance(a, (np.memmap, FileMapping))  # (still a view of the mapping)


class _Box:
    def __init__(self, t):
        self.tensor = t


def test_tensors_of_objects_pickled_together_are_named_by_their_objects_paths():
    # review56g item 10: the joint pickle named every tensor after the first object's path
    # (b's tensor was stored as a.tensor#1, the name other safetensors readers see)
    from ember.io.safetensors_file import read_header

    shared = ember.arange(4.0)
    out = io.BytesIO()
    ember.save({"a": _Box(ember.ones(2)), "b": _Box(ember.zeros(3)), "c": _Box(shared),
                "d": _Box(shared)}, out)
    out.seek(0)
    assert set(read_header(out, "x").entries) >= {"a.tensor", "b.tensor", "c.tensor"}
    assert not any("#" in name or name.startswith("d.") for name in read_header(
        io.BytesIO(out.getvalue()), "x").entries)
    out.seek(0)
    back = ember.load(out, weights_only=False)
    assert back["b"].tensor.tolist() == [0.0, 0.0, 0.0]
    assert back["c"].tensor is back["d"].tensor


def test_a_file_object_without_readinto_loads_an_ember_file():
    # review56g item 3, Ember files: read_array called f.readinto too
    out = io.BytesIO()
    ember.save({"w": ember.arange(4.0)}, out)
    assert ember.load(_ReadOnly(out.getvalue()))["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
