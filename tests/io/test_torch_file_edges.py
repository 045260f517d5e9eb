"""ember.load of torch.save files that are unusual but valid: other pickle protocols in the
older format, tensors carrying attributes, bare storages."""

from __future__ import annotations

import io
import pickle
import warnings
import zipfile

import pytest
import torch

import ember
from ember.errors import CheckpointError

LEGACY = {"_use_new_zipfile_serialization": False}


def torch_file(obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("protocol", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("fmt", [{}, LEGACY])
def test_every_binary_pickle_protocol_loads(protocol, fmt):
    obj = {"w": torch.arange(6.0).reshape(2, 3), "n": 3}
    got = ember.load(torch_file(obj, pickle_protocol=protocol, **fmt))
    assert got["w"].tolist() == obj["w"].tolist() and got["n"] == 3


@pytest.mark.parametrize("fmt", [{}, LEGACY])
def test_pickle_protocol_0_is_named_in_the_error(fmt):
    data = torch_file({"w": torch.ones(2)}, pickle_protocol=0, **fmt).getvalue()
    with pytest.raises(AssertionError, match="saved_id must be a tuple"):  # (torch: unreadable)
        torch.load(io.BytesIO(data), weights_only=False)
    with pytest.raises(CheckpointError, match="pickle_protocol=0, which torch.load cannot"):
        ember.load(io.BytesIO(data))


@pytest.mark.parametrize("fmt", [{}, LEGACY])
def test_attributes_of_a_saved_tensor_load_as_torch_loads_them(fmt):
    t = torch.ones(2)
    t.note = "hello"
    p = torch.nn.Parameter(torch.zeros(1))
    p.tag = [1, 2]
    theirs = torch.load(torch_file({"t": t, "p": p}, **fmt), weights_only=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = ember.load(torch_file({"t": t, "p": p}, **fmt))
    assert ours["t"].note == theirs["t"].note == "hello"
    assert ours["p"].tag == theirs["p"].tag == [1, 2]
    assert isinstance(ours["p"], ember.nn.Parameter) and ours["t"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("fmt", [{}, LEGACY])
@pytest.mark.parametrize("bare", ["storage", "untyped_storage"])
def test_a_bare_storage_is_refused_by_name(fmt, bare):
    storage = getattr(torch.arange(4.0), bare)()
    with pytest.raises(CheckpointError, match=r"storage.*torch\.save\(tensor"):
        ember.load(torch_file({"s": storage, "t": torch.ones(2)}, **fmt))


class Config:  # a user's class, which a weights-only load refuses
    pass


@pytest.mark.parametrize("fmt", [{}, LEGACY])
@pytest.mark.parametrize("obj", [torch.nn.Linear(2, 2), {"cfg": Config()}],
                         ids=["module", "user class"])
def test_a_refused_name_is_an_unpickling_error_as_in_torch(fmt, obj):
    # code written for PyTorch falls back with `except pickle.UnpicklingError`
    with pytest.raises(pickle.UnpicklingError):
        torch.load(torch_file(obj, **fmt))
    with pytest.raises(pickle.UnpicklingError, match="never runs code"):
        ember.load(torch_file(obj, **fmt))


@pytest.mark.parametrize("fmt", [{}, LEGACY])
def test_a_map_location_function_is_asked_once_a_storage(fmt):
    base = torch.arange(6.0)
    obj = {"a": base, "b": base, "view": base[2:4], "other": torch.ones(2)}
    asked = {"torch": [], "ember": []}
    for lib, key in ((torch, "torch"), (ember, "ember")):
        lib.load(torch_file(obj, **fmt), map_location=lambda s, loc, k=key: asked[k].append(loc))
    assert asked["ember"] == asked["torch"] == ["cpu", "cpu"]


@pytest.mark.parametrize("fmt", [{}, LEGACY])
def test_a_huge_expanded_tensor_of_a_small_file_is_not_copied(fmt):
    # a few bytes on disk: 10**12 elements that all read one float (a copy would take 4 TB)
    got = ember.load(torch_file({"e": torch.full((1, 1), 2.0).expand(10**6, 10**6)}, **fmt))
    assert got["e"].shape == (10**6, 10**6) and got["e"].stride() == (0, 0)
    assert got["e"][123456, 654321].item() == 2.0


def test_a_negative_pickle_protocol_is_the_highest_as_in_torch_save():
    torch.save({"r": range(2)}, io.BytesIO(), pickle_protocol=-1)  # (pickle's convention)
    buf = io.BytesIO()
    ember.save({"r": range(2)}, buf, pickle_protocol=-1)
    buf.seek(0)
    assert ember.load(buf, weights_only=False) == {"r": range(2)}


def test_a_flipped_storage_byte_fails_the_crc_check_torch_skips():
    data = bytearray(torch_file({"w": torch.zeros(1000)}).getvalue())
    info = next(i for i in zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()
                if i.filename.endswith("data/0"))
    data[info.header_offset + 30 + len(info.filename) + len(info.extra) + 100] ^= 0xFF
    assert torch.load(io.BytesIO(bytes(data)))["w"].sum().item() != 0  # (torch: silently)
    with pytest.raises(CheckpointError, match="data/0 fails its CRC check"):
        ember.load(io.BytesIO(bytes(data)))


class _Rebuild:
    """Pickles as a call of ``fn(*args)``, as a crafted or damaged torch.save file holds."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


@pytest.mark.parametrize("flag", [1, 0, None, "yes"])
@pytest.mark.parametrize("kind", ["tensor", "parameter"])
def test_a_requires_grad_that_is_not_a_bool_is_refused_as_torch_refuses_it(flag, kind):
    with warnings.catch_warnings():  # (not left behind: a later test's warning would hide)
        warnings.simplefilter("ignore")  # (TypedStorage is deprecated)
        if kind == "tensor":
            obj = _Rebuild(torch._utils._rebuild_tensor_v2,
                           (torch.arange(3.).storage(), 0, (3,), (1,), flag, {}))
        else:
            obj = _Rebuild(torch._utils._rebuild_parameter, (torch.ones(2), flag, {}))
        data = torch_file(obj).getvalue()
        with pytest.raises((RuntimeError, TypeError), match="must be (a )?bool"):
            torch.load(io.BytesIO(data))
    with pytest.raises(CheckpointError, match=f"requires_grad is {flag!r}, not a bool"):
        ember.load(io.BytesIO(data))  # (was: loaded, requires_grad as bool(flag) or False)


@pytest.mark.parametrize("size, offset", [((3,), 0), ((2, 3), 1), ((2, 1, 2), 2), ((), 4)])
def test_a_stride_of_none_is_contiguous_as_torch_reads_it(size, offset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (TypedStorage is deprecated)
        obj = _Rebuild(torch._utils._rebuild_tensor_v2,
                       (torch.arange(8.).storage(), offset, size, None, False, {}))
        data = torch_file(obj).getvalue()
        expected, got = torch.load(io.BytesIO(data)), ember.load(io.BytesIO(data))
    assert got.stride() == expected.stride() and got.tolist() == expected.tolist()
