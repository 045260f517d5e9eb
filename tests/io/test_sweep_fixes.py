"""Divergences from PyTorch found by the serialization sweep, each checked against torch."""

from __future__ import annotations

import fractions
import io
import os
import pickle
import types

import numpy as np
import pytest
import safetensors.torch
import torch

import ember


def torch_round_trip(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf)


def ember_round_trip(obj, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


def test_a_complex_tensor_that_requires_grad_loads_back():
    want = torch_round_trip(torch.tensor([1 + 2j, 3 - 1j], requires_grad=True))
    got = ember_round_trip(ember.tensor([1 + 2j, 3 - 1j], requires_grad=True))
    assert got.requires_grad == want.requires_grad and got.dtype is ember.complex64
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def test_one_tensor_saved_with_and_without_grad_still_shares_memory():
    t = torch.randn(3, requires_grad=True)
    want = torch_round_trip({"a": t, "b": t.detach(), "p": torch.nn.Parameter(t.detach())})
    x = ember.tensor(t.detach().numpy(), requires_grad=True)
    got = ember_round_trip({"a": x, "b": x.detach(), "p": ember.nn.Parameter(x.detach())})
    for name in ("a", "b", "p"):
        assert got[name].requires_grad == want[name].requires_grad
        assert isinstance(got[name], ember.nn.Parameter) == isinstance(want[name],
                                                                      torch.nn.Parameter)
    with torch.no_grad():
        want["b"][0] = 7.0
    got["b"][0] = 7.0
    assert float(got["a"][0]) == float(want["a"][0]) == 7.0
    assert float(got["p"][0]) == float(want["p"][0]) == 7.0


def test_a_damaged_torch_zip_file_raises_a_checkpoint_error(tmp_path):
    buf = io.BytesIO()
    torch.save({"w": torch.ones(3), "s": "x"}, buf)
    data = buf.getvalue()
    path = tmp_path / "damaged.pt"
    for pos in range(len(data) - 400, len(data)):  # the zip's central directory and its end
        for byte in (0xFF, 0x97):
            path.write_bytes(data[:pos] + bytes([byte]) + data[pos + 1:])
            try:
                got = ember.load(path)
            except ember.errors.CheckpointError:
                continue
            assert got["s"] == "x"  # (Python's zipfile forgives some damage PyTorch's does not)
            np.testing.assert_array_equal(got["w"].numpy(), np.ones(3, np.float32))


@pytest.mark.parametrize("new_zip", [True, False])
def test_map_location_may_be_a_function_of_storage_and_location(tmp_path, new_zip):
    path = tmp_path / "f.pt"
    torch.save({"a": torch.arange(4.0)[1:], "b": torch.ones(2, dtype=torch.int8)}, path,
               _use_new_zipfile_serialization=new_zip)
    seen = []
    for function in (lambda storage, loc: storage, lambda storage, loc: storage.cpu(),
                     lambda storage, loc: seen.append(loc)):
        want = torch.load(path, map_location=function)
        got = ember.load(path, map_location=function)
        for name in want:
            assert got[name].device.type == want[name].device.type == "cpu"
            np.testing.assert_array_equal(got[name].numpy(), want[name].numpy())
    assert set(seen) == {"cpu"}
    with pytest.raises(ember.errors.CheckpointError, match="must return the storage"):
        ember.load(path, map_location=lambda storage, loc: "cpu")


def test_map_location_function_on_an_ember_checkpoint():
    got = ember_round_trip({"w": ember.ones(2), "n": 3}, map_location=lambda s, loc: s)
    assert got["n"] == 3 and got["w"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="map_location function failed.*no attribute 'nope'"):
        ember_round_trip({"w": ember.ones(2)}, map_location=lambda s, loc: s.nope())


@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4)])
def test_complex128_tensors_save_and_load(shape):
    z = torch.randn(shape, dtype=torch.complex128)
    want = torch_round_trip({"z": z.t() if z.dim() == 2 else z, "p": torch.nn.Parameter(z)})
    e = ember.from_numpy(z.numpy().copy())
    got = ember_round_trip({"z": e.t() if e.dim() == 2 else e, "p": ember.nn.Parameter(e)})
    for name in want:
        assert got[name].dtype is ember.complex128
        assert got[name].requires_grad == want[name].requires_grad
        np.testing.assert_array_equal(got[name].detach().numpy(), want[name].detach().numpy())


def sparse_and_meta_tensors():
    dense = torch.tensor([[0.0, 1.5, 0.0, 0.0], [2.0, 0.0, 0.0, 3.0], [0.0, 0.0, 0.0, 0.0],
                          [4.0, 0.0, 5.0, 0.0]])
    return {"coo": dense.to_sparse(), "uncoalesced": torch.sparse_coo_tensor(
                [[0, 0], [1, 1]], [1.0, 2.0], (2, 2)),
            "hybrid": dense.to_sparse(1), "csr": dense.to_sparse_csr(),
            "csc": dense.to_sparse_csc(), "bsr": dense.to_sparse_bsr((2, 2)),
            "bsc": dense.to_sparse_bsc((2, 2)),
            "meta": torch.empty(2, 3, device="meta", requires_grad=True).t()}


@pytest.mark.parametrize("new_zip", [True, False])
def test_sparse_and_meta_tensors_of_a_torch_file(tmp_path, new_zip):
    path = tmp_path / "sparse.pt"
    torch.save(sparse_and_meta_tensors(), path, _use_new_zipfile_serialization=new_zip)
    want, got = torch.load(path), ember.load(path)
    for name, w in want.items():
        g = got[name]
        assert g.layout.name == str(w.layout)[6:] and tuple(g.shape) == tuple(w.shape), name
        if w.is_meta:
            assert g.is_meta and g.stride() == w.stride() and g.requires_grad
            continue
        if w.layout == torch.sparse_coo:
            assert g.is_coalesced() == w.is_coalesced(), name
        np.testing.assert_array_equal(g.to_dense().numpy(), w.to_dense().numpy())


def test_a_torch_sparse_tensor_breaking_its_invariants_is_refused(tmp_path):
    path = tmp_path / "bad.pt"
    torch.save(torch.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,), check_invariants=False), path)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"), \
            torch.sparse.check_sparse_tensor_invariants():  # (Ember always checks a file's)
        torch.load(path)
    with pytest.raises(ember.errors.CheckpointError, match="size is inconsistent with indices"):
        ember.load(path)


def python2_style_file():
    """A torch.save file of the old format whose key is a Python 2 (latin-1 byte) string."""
    buf = io.BytesIO()
    torch.save({"café": torch.ones(2)}, buf, _use_new_zipfile_serialization=False)
    utf8 = "café".encode()
    return buf.getvalue().replace(b"X" + len(utf8).to_bytes(4, "little") + utf8,
                                  b"U\x04" + "café".encode("latin1"))


@pytest.mark.parametrize("encoding", ["latin1", "bytes"])
def test_torch_load_string_arguments(encoding):
    want = torch.load(io.BytesIO(python2_style_file()), encoding=encoding)
    got = ember.load(io.BytesIO(python2_style_file()), encoding=encoding)
    assert list(got) == list(want)
    with pytest.raises(UnicodeDecodeError):
        torch.load(io.BytesIO(python2_style_file()))
    with pytest.raises(ember.errors.CheckpointError, match="encoding='latin1'"):
        ember.load(io.BytesIO(python2_style_file()))
    with pytest.raises(TypeError, match="unexpected keyword"):
        ember.load(io.BytesIO(python2_style_file()), fix_imports=True)


def test_torch_save_arguments(tmp_path):
    obj = {"w": torch.ones(2), "s": {1, 2}}
    torch.save(obj, tmp_path / "t.pt", pickle_protocol=4, _use_new_zipfile_serialization=False)
    ember.save({"w": ember.ones(2), "s": {1, 2}}, tmp_path / "e.safetensors", pickle_protocol=4,
               _use_new_zipfile_serialization=False)
    got = ember.load(tmp_path / "e.safetensors", weights_only=False)
    assert got["s"] == torch.load(tmp_path / "t.pt", weights_only=False)["s"]
    assert got["w"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="pickle_protocol"):
        ember.save(obj, tmp_path / "bad.safetensors", pickle_protocol=99)


@pytest.mark.parametrize("target", [b"data", 3, None, io.StringIO("text")])
def test_a_target_that_is_not_a_binary_file_is_a_type_error(target):
    for torch_call, ember_call in [(lambda: torch.load(target), lambda: ember.load(target)),
                                   (lambda: torch.save({"a": torch.ones(1)}, target),
                                    lambda: ember.save({"a": ember.ones(1)}, target))]:
        with pytest.raises((AttributeError, TypeError, AssertionError)):
            torch_call()
        with pytest.raises(TypeError, match="expected a path or a .*binary file"):
            ember_call()


def test_save_file_metadata_must_be_a_string_map(tmp_path):
    with pytest.raises(TypeError):
        safetensors.torch.save_file({"a": torch.ones(1)}, tmp_path / "t.st", metadata="x")
    with pytest.raises(ember.errors.CheckpointError, match="metadata must map strings"):
        ember.io.save_file({"a": ember.ones(1)}, tmp_path / "e.st", metadata="x")


def test_complex_numbers_bytes_and_sets_are_data_not_pickles():
    obj = {"c": 1.5 - 2j, "nan": complex(float("nan"), 1), "b": b"\x00\xff",
           "ba": bytearray(b"ab"), "s": {1, "x", (2, 3)}, "e": set()}
    want = torch_round_trip(obj)  # torch.load's default (weights_only) accepts all of them
    got = ember_round_trip(obj)  # and so does ember.load's
    for name, value in want.items():
        assert type(got[name]) is type(value), name
        assert repr(got[name]) == repr(value), name
    got = ember_round_trip({"f": frozenset({1, 2}), "np": np.complex64(1j)})
    assert type(got["f"]) is frozenset and got["f"] == {1, 2}
    assert type(got["np"]) is complex and got["np"] == 1j  # (as NumPy's other scalars)


@pytest.mark.parametrize("tensor", [torch.zeros(2, dtype=torch.complex32),
                                    torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)])
def test_a_torch_tensor_ember_has_no_dtype_for_gets_a_dtype_hint(tensor):
    buf = io.BytesIO()
    torch.save(tensor, buf)
    assert torch.load(io.BytesIO(buf.getvalue())).dtype == tensor.dtype
    with pytest.raises(ember.errors.CheckpointError, match=r"convert such tensors .*complex64"):
        ember.load(io.BytesIO(buf.getvalue()))


def test_layout_values_of_a_torch_file():
    buf = io.BytesIO()
    torch.save({"layouts": [torch.strided, torch.jagged, torch.sparse_csr]}, buf)
    want = torch.load(io.BytesIO(buf.getvalue()))["layouts"]
    got = ember.load(io.BytesIO(buf.getvalue()))["layouts"]
    assert [str(g) for g in got] == [str(w).replace("torch.", "ember.") for w in want]


def test_a_read_only_checkpoint_is_not_replaced(tmp_path, monkeypatch):
    path = tmp_path / "keep.pt"
    torch.save({"w": torch.ones(1)}, path)
    before = path.read_bytes()
    # open(path, "wb") refuses a file the user may not write (torch.save's PermissionError);
    # os.access is asked, so that tests running as root see the refusal too
    monkeypatch.setattr(os, "access", lambda p, mode: p != os.path.realpath(path))
    with pytest.raises(PermissionError, match="read-only"):
        ember.save({"w": ember.zeros(1)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.pt"]


def test_pickle_module_as_in_torch(tmp_path):
    used = []

    class Unpickler(pickle.Unpickler):
        def load(self):
            used.append("load")
            return super().load()

    def dumps(x, protocol):
        used.append("dump")
        return pickle.dumps(x, protocol=protocol)

    module = types.SimpleNamespace(dumps=dumps, Unpickler=Unpickler)
    torch.save({"f": fractions.Fraction(1, 3)}, tmp_path / "t.pt", pickle_module=pickle)
    ember.save({"f": fractions.Fraction(1, 3)}, tmp_path / "e.st", pickle_module=module)
    want = torch.load(tmp_path / "t.pt", pickle_module=pickle)  # (so weights_only=False)
    assert ember.load(tmp_path / "e.st", pickle_module=module) == want
    assert used == ["dump", "load"]
    with pytest.raises(RuntimeError, match="pickle_module"):
        torch.load(tmp_path / "t.pt", pickle_module=pickle, weights_only=True)
    with pytest.raises(ValueError, match="pickle_module"):
        ember.load(tmp_path / "e.st", pickle_module=pickle, weights_only=True)
