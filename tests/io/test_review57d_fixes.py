"""review57d: io57's commits (each test fails before its fix)."""
import gc
import io
import pickle
import sys

import numpy as np
import pytest
import torch

import ember
from ember.errors import CheckpointError
from ember.io.mapped_file import map_file
from ember.serialization import safe_globals
from ember.tensor_copy import rebuilt


class _Sub(ember.Tensor):
    pass


class _Crafted:
    """Pickles as ``rebuilt`` of ``data`` with ``layout`` (a crafted file's tensor)."""

    def __init__(self, data, layout):
        self.data, self.layout = data, layout

    def __reduce__(self):
        return rebuilt, (self.data, "cpu", False, self.layout, _Sub, None)


def _load_crafted(data, layout, **kw):
    out = io.BytesIO()
    ember.save({"x": _Crafted(data, layout)}, out)
    out.seek(0)
    with safe_globals([_Sub]):
        return ember.load(out, **kw)["x"]


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("data, layout, problem", [
    (bytearray(), ("float32", (2**26,), (4,), 0), "reaches past its 0 bytes"),  # (segfaulted)
    (bytearray(), ("float32", (4,), (4,), 0), "reaches past its 0 bytes"),
    (bytearray(8), ("float32", (3,), (4,), 0), "reaches past its 8 bytes"),
    (bytearray(8), ("float32", (2,), (4,), 4), "reaches past its 8 bytes"),
    (bytearray(8), ("float32", (2,), (-4,), 0), "reaches before"),
    (bytearray(8), ("float32", (2,), (4,), -4), "offset"),
    (bytearray(8), ("float32", (2, 2), (4,), 0), "strides"),
    (bytearray(8), ("float32", (-2,), (4,), 0), "shape"),
    (bytearray(8), ("float32", (True,), (4,), 0), "shape"),
    (bytearray(8), ("float32", [2], [4], 0), "shape"),
    (bytearray(8), ("float32", (1,) * 65, (4,) * 65, 0), "shape"),
    # review57m1 3: strides or an offset torch's format (counting elements) cannot say
    (bytearray(16), ("float64", (2,), (4,), 0), "not whole elements"),
    (bytearray(32), ("float64", (2,), (12,), 0), "not whole elements"),
    (bytearray(16), ("float32", (2,), (4,), 1), "not whole elements"),
    (bytearray(16), ("float32", (0,), (2,), 0), "not whole elements"),
    # review57m1 4: past int64 (was numpy's ValueError under "must be importable")
    (bytearray(8), ("float32", (0, 2), (2**70, 4), 0), "int64"),
    (bytearray(8), ("float32", (0, 2), (-2**70, 4), 0), "int64"),
    (bytearray(8), ("float32", (0, 2**64), (4, 0), 0), "int64"),
])
def test_a_pickled_layout_reaching_outside_its_bytes_is_refused(data, layout, problem,
                                                                weights_only):
    # review57d 1: NumPy's ndarray(buffer=<empty>) skips its size check: a tensor over memory
    # it does not own (fill_ -> SIGSEGV); the layout is now checked against the bytes
    with pytest.raises(CheckpointError, match=problem):
        _load_crafted(data, layout, weights_only=weights_only)


@pytest.mark.parametrize("layout, values", [
    (("float32", (2,), (4,), 0), [1.0, 2.0]),
    (("float32", (2,), (-4,), 4), [2.0, 1.0]),  # (a flipped view)
    (("float32", (2, 2), (0, 4), 0), [[1.0, 2.0], [1.0, 2.0]]),  # (expanded)
    (("float32", (0, 5), (20, 4), 0), []),
])
def test_a_pickled_layout_inside_its_bytes_still_loads(layout, values):
    t = _load_crafted(bytearray(torch.tensor([1.0, 2.0]).numpy().tobytes()), layout)
    assert type(t) is _Sub and t.reshape(-1).tolist() == torch.tensor(values).reshape(-1).tolist()


def test_a_subclass_over_a_structured_field_round_trips_through_save():
    # (its byte stride is 5: pickling copies it to whole elements, which load)
    field = np.zeros(3, dtype=[("a", "f4"), ("b", "i1")])["a"]
    field[:] = [1.0, 2.0, 3.0]
    t = ember.from_numpy(field).as_subclass(_Sub)
    out = io.BytesIO()
    ember.save({"x": t}, out)
    out.seek(0)
    with safe_globals([_Sub]):
        back = ember.load(out)["x"]
    assert type(back) is _Sub and back.tolist() == [1.0, 2.0, 3.0]


class _Holder:
    """Pickles as a tensor made while pickling (a computed or packed weight)."""

    def __init__(self, k):
        self.k = k

    def __getstate__(self):
        return ember.full((2,), float(self.k))

    def __setstate__(self, t):
        self.t = t


class _THolder(_Holder):
    def __getstate__(self):
        return torch.full((2,), float(self.k))


def test_tensors_made_while_pickling_load_as_themselves_as_torch():
    # review57d 2: the table by id() kept no object: a freed tensor's id, reused by the next,
    # named the first one's node ([[0, 0]] * 4)
    out, tout = io.BytesIO(), io.BytesIO()
    ember.save({"h": [_Holder(k) for k in range(4)]}, out)
    torch.save({"h": [_THolder(k) for k in range(4)]}, tout)
    out.seek(0)
    tout.seek(0)
    got = [h.t.tolist() for h in ember.load(out, weights_only=False)["h"]]
    assert got == [h.t.tolist() for h in torch.load(tout, weights_only=False)["h"]]


def _unraisable(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc (size 0: mmap fails)")
def test_a_file_mmap_refuses_is_a_checkpoint_error_naming_it(monkeypatch):
    # review57d 3: the half-built mapping's __del__ printed "Exception ignored ... munmap"
    seen = _unraisable(monkeypatch)
    with pytest.raises(CheckpointError, match=r"/proc/self/status: cannot map the file"):
        ember.load("/proc/self/status", mmap=True)
    gc.collect()
    assert seen == []


def test_mapping_an_empty_file_is_a_checkpoint_error(tmp_path, monkeypatch):
    seen = _unraisable(monkeypatch)
    (tmp_path / "e").write_bytes(b"")
    with open(tmp_path / "e", "rb") as f, pytest.raises(CheckpointError, match="cannot map"):
        map_file(f, str(tmp_path / "e"))
    gc.collect()
    assert seen == []


class _Trailing:
    """A pickle module whose dumps write a byte after STOP."""

    class Pickler(pickle.Pickler):
        def dump(self, obj):
            super().dump(obj)
            self.write(b"N")  # (the file it writes to: a byte after STOP)

        def __init__(self, file, *args, **kw):
            super().__init__(file, *args, **kw)
            self.write = file.write


class _Thing:
    pass


def test_a_pickler_writing_after_stop_is_refused_not_spliced():
    # review57d 4: the last byte of each dump was dropped as STOP unchecked
    with pytest.raises(CheckpointError, match="after the pickle's STOP"):
        ember.save({"a": _Thing(), "b": _Thing()}, io.BytesIO(), pickle_module=_Trailing)
