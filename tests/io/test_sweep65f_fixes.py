"""Divergences from PyTorch found by sweep 65f (saving and loading), each checked against torch."""

from __future__ import annotations

import io

import pytest
import torch

import ember
from ember.errors import WeightsOnlyError


def _round_trip(lib, obj, **load_args):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **load_args)


def test_layouts_load_with_weights_only_as_torch():
    # ember.save pickles a layout, and the default ember.load (weights_only) refused it, where
    # torch.load(weights_only=True) gives torch.strided back
    names = ["strided", "sparse_coo", "sparse_csr", "jagged"]
    for lib in (torch, ember):
        out = _round_trip(lib, {"layouts": [getattr(lib, n) for n in names]}, weights_only=True)
        assert all(got is getattr(lib, n) for got, n in zip(out["layouts"], names)), lib
    # (torch cannot pickle a memory format; Ember's loads as the same object too)
    assert _round_trip(ember, [ember.channels_last])[0] is ember.channels_last


def test_other_ember_globals_stay_refused():
    with pytest.raises(WeightsOnlyError):
        _round_trip(ember, {"f": ember.finfo(ember.float32)})


def test_dtype_and_device_dict_keys_as_torch():
    # ember.save refused a dict keyed by dtypes or devices ("is not None, a bool, number,
    # string or tuple of them"); torch.save/load keeps them, weights_only too
    for lib in (torch, ember):
        scales = {lib.float16: 1.0, lib.bfloat16: 2.0, (lib.int8, "x"): 3,
                  lib.device("cpu"): lib.ones(2)}
        out = _round_trip(lib, {"scales": scales}, weights_only=True)["scales"]
        assert list(out) == list(scales), lib
        assert out[lib.float16] == 1.0 and out[(lib.int8, "x")] == 3, lib
        assert out[lib.device("cpu")].tolist() == [1.0, 1.0], lib


def test_an_unhashable_or_object_key_is_still_refused():
    with pytest.raises(ember.errors.CheckpointError, match="dtype, device or tuple"):
        _round_trip(ember, {ember.ones(1): 1})


@pytest.fixture
def no_crc32():
    torch.serialization.set_crc32_options(False)
    yield
    torch.serialization.set_crc32_options(True)


@pytest.mark.parametrize("mmap", [False, True])
def test_a_torch_file_saved_without_crc32_loads_as_in_torch(no_crc32, tmp_path, mmap):
    # torch.save with set_crc32_options(False) writes CRC 0 for each record; torch.load reads
    # the file, ember.load called it corrupted ('Bad CRC-32 for file .../byteorder')
    path = tmp_path / "nocrc.pt"
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "v": torch.arange(6)[2:]}, path)
    want = torch.load(path)
    got = ember.load(path, mmap=mmap)
    assert got["w"].tolist() == want["w"].tolist() and got["v"].tolist() == want["v"].tolist()
    assert ember.serialization.get_unsafe_globals_in_checkpoint(path) == \
        torch.serialization.get_unsafe_globals_in_checkpoint(path) == []


def test_a_torch_skip_data_file_loads_its_layout_as_torch(tmp_path):
    # torch.serialization.skip_data() writes no data (CRC 0); torch.load gives the tensors
    # back with zeros, ember.load said the record fails its CRC check
    path = tmp_path / "skip.pt"
    with torch.serialization.skip_data():
        torch.save({"w": torch.arange(4.0)}, path)
    got, want = ember.load(path)["w"], torch.load(path)["w"]
    assert got.dtype == ember.float32 and got.tolist() == want.tolist()


def test_a_corrupted_record_with_a_crc_is_still_refused(tmp_path):
    path = tmp_path / "bad.pt"
    torch.save({"w": torch.arange(4.0)}, path)
    data = bytearray(path.read_bytes())
    at = data.index(b"\x00\x00\x80\x3f")  # (1.0 in the storage)
    data[at + 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ember.errors.CheckpointError, match="CRC"):
        ember.load(path)


@pytest.mark.parametrize("writer", [torch, ember])
@pytest.mark.parametrize("make", [lambda lib: lib.eye(2).to_sparse(),
                                  lambda lib: lib.eye(2).to_sparse_csr(),
                                  lambda lib: lib.nested.nested_tensor(
                                      [lib.ones(2, 3), lib.ones(1, 3)], layout=lib.jagged)])
def test_sparse_and_nested_on_meta_say_so(writer, make):
    # torch.load(map_location='meta') makes meta sparse and nested tensors; Ember's hold data,
    # and ember.load failed inside the constructor ('numpy(): meta tensors have no data.
    # Hint: materialize first, e.g. module.to_empty(...)'), which misled
    buf = io.BytesIO()
    writer.save({"s": make(writer), "d": writer.ones(2)}, buf)
    buf.seek(0)
    with pytest.raises(ember.errors.CheckpointError, match=r"a (sparse_c..|nested) tensor cannot "
                       "load on the meta device.*load it on 'cpu'"):
        ember.load(buf, map_location="meta")
    buf.seek(0)
    assert ember.load(buf, map_location="cpu")["d"].tolist() == [1.0, 1.0]


def test_meta_parameters_load_as_parameters_and_keep_identity_as_torch():
    # a meta Parameter loaded as a plain Tensor, and one meta tensor saved twice as two
    # objects; torch.load gives a Parameter back, the same object for both references
    for lib in (torch, ember):
        with lib.device("meta"):
            p = lib.nn.Parameter(lib.ones(2, 3))
            frozen = lib.nn.Parameter(lib.ones(2), requires_grad=False)
            t = lib.ones(3, 2).t()
        out = _round_trip(lib, {"p": p, "frozen": frozen, "t": t, "p2": p, "t2": t})
        assert type(out["p"]) is lib.nn.Parameter and out["p"].requires_grad, lib
        assert type(out["frozen"]) is lib.nn.Parameter and not out["frozen"].requires_grad, lib
        assert type(out["t"]) is lib.Tensor and out["t"].stride() == (1, 2), lib
        assert out["p"] is out["p2"] and out["t"] is out["t2"], lib
        assert all(v.is_meta for v in out.values()), lib
    with ember.device("meta"):
        model = ember.nn.Linear(2, 3)
    whole = _round_trip(ember, model, weights_only=False)
    assert type(whole.weight) is ember.nn.Parameter and whole.weight.is_meta


def test_meta_tensors_keep_their_attributes_as_torch():
    # a meta tensor's own attributes (param.tensor_model_parallel = True) were dropped; torch
    # keeps them, as Ember does for CPU tensors
    for lib in (torch, ember):
        with lib.device("meta"):
            p = lib.nn.Parameter(lib.ones(2))
            t = lib.ones(2)
        p.tensor_model_parallel, t.note = True, {"a": 1}
        out = _round_trip(lib, {"p": p, "t": t})
        assert out["p"].tensor_model_parallel is True and out["t"].note == {"a": 1}, lib


def test_a_meta_tensor_attribute_tensor_defines_is_refused():
    with ember.device("meta"):
        t = ember.ones(2)
    t.shadow = 1
    buf = io.BytesIO()
    ember.save(t, buf)
    crafted = buf.getvalue().replace(b'\\"shadow\\"', b'\\"sum\\"   ')  # (same length)
    assert len(crafted) == len(buf.getvalue()) and crafted != buf.getvalue()
    with pytest.raises(ember.errors.CheckpointError, match="a meta tensor has attributes"):
        ember.load(io.BytesIO(crafted))


def test_a_nested_tensor_saved_twice_loads_as_one_object_as_torch():
    # each reference to one nested tensor loaded as its own object (sparse and meta ones
    # loaded as one); torch.load keeps the identity
    for lib in (torch, ember):
        nt = lib.nested.nested_tensor([lib.ones(2, 3), lib.ones(1, 3)], layout=lib.jagged)
        other = lib.nested.nested_tensor([lib.ones(2, 3), lib.ones(1, 3)], layout=lib.jagged)
        # (torch's weights-only NJT load needs allow-list entries other tests clear)
        out = _round_trip(lib, {"a": nt, "b": [nt], "c": other}, weights_only=lib is ember)
        assert out["a"] is out["b"][0] and out["a"] is not out["c"], lib
