"""ember.load reads files torch.save wrote (zip and pre-1.6 formats), data only, no code run."""

from __future__ import annotations

import collections
import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember.errors import CheckpointError

FORMATS = {"zip": {}, "legacy": {"_use_new_zipfile_serialization": False}}


def saved(obj, tmp_path, fmt="zip"):
    path = tmp_path / f"{fmt}.pt"
    torch.save(obj, path, **FORMATS[fmt])
    return path


def same(e, t):
    assert isinstance(e, ember.Tensor) and e.dtype.name == str(t.dtype)[6:], (e, t)
    assert tuple(e.shape) == tuple(t.shape) and e.requires_grad == t.requires_grad
    np.testing.assert_array_equal(e.detach().numpy().astype(np.float64)
                                  if e.dtype.name.startswith(("float8", "bfloat")) else
                                  e.detach().numpy(),
                                  t.detach().float().numpy()
                                  if e.dtype.name.startswith(("float8", "bfloat")) else
                                  t.detach().numpy())


def torch_net():
    # (no bias before the BatchNorm: its gradient is rounding noise, which Adam would amplify)
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1, bias=False),
                               torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(64, 3))


def ember_net():
    return ember.nn.Sequential(ember.nn.Conv2d(1, 4, 3, padding=1, bias=False),
                               ember.nn.BatchNorm2d(4), ember.nn.ReLU(), ember.nn.Flatten(),
                               ember.nn.Linear(64, 3))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_torch_state_dict_loads_into_the_same_ember_model(tmp_path, fmt):
    net = torch_net()
    net.train()(torch.randn(8, 1, 4, 4))  # running statistics and num_batches_tracked move
    state = ember.load(saved(net.state_dict(), tmp_path, fmt))
    assert isinstance(state, OrderedDict) and list(state) == list(net.state_dict())
    for name, value in net.state_dict().items():
        same(state[name], value)
    model = ember_net()
    model.load_state_dict(state)
    x = np.random.default_rng(0).standard_normal((5, 1, 4, 4)).astype(np.float32)
    with torch.no_grad():
        want = net.eval()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(model.eval()(ember.tensor(x)).detach().numpy(), want,
                               rtol=1e-5, atol=1e-6)


DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool", "complex64", "complex128", "uint16", "uint32", "uint64",
          "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_dtype(tmp_path, fmt):
    values = torch.tensor([[0.0, 1.5, -2.0], [3.0, 0.25, 7.0]])
    obj = {name: (values.abs() if name.startswith("uint") else values).to(getattr(torch, name))
           for name in DTYPES}
    obj["complex64"] = obj["complex64"] * (1 - 2j)
    got = ember.load(saved(obj, tmp_path, fmt))
    for name, value in obj.items():
        same(got[name], value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_shared_storage_and_odd_shapes(tmp_path, fmt):
    base = torch.arange(24.0).reshape(4, 6)
    obj = {"base": base, "t": base.t(), "cols": base[1:, ::2], "row": base[2],
           "scalar": torch.tensor(3.5), "empty": torch.zeros(0, 3),
           "expanded": torch.ones(3, 1).expand(3, 4), "tied": [base, base]}
    got = ember.load(saved(obj, tmp_path, fmt))
    for name in ("base", "t", "cols", "row", "scalar", "empty", "expanded"):
        same(got[name], obj[name])
    got["base"][2, 0] = -1.0  # one storage in PyTorch, one memory here
    assert got["row"][0].item() == -1.0 and got["t"][0, 2].item() == -1.0
    assert got["tied"][0] is got["tied"][1]
    # an expanded tensor loads as a view, read-only as ember's expand() makes one (PyTorch's
    # refuses in-place ops on it too), not as a copy: its memory is its storage's
    assert got["expanded"].stride() == obj["expanded"].stride() == (1, 0)
    with pytest.raises(ember.errors.GradError, match="read-only"):
        got["expanded"].add_(1.0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_parameters_grad_flags_and_plain_data(tmp_path, fmt):
    obj = {"p": torch.nn.Parameter(torch.ones(2)),
           "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
           "leaf": torch.zeros(3, requires_grad=True), "epoch": 7, "lr": 0.5,
           "name": "run", "none": None, "nested": [(1, 2.0), {"k": [True]}], "data": b"\x00\xff",
           "set": {1, 2}, "z": 1 + 2j, "size": torch.Size([2, 3]), "dtype": torch.bfloat16,
           "device": torch.device("cpu"), "neg": torch.tensor([1.0, -2.0])._neg_view(),
           "conj": torch.tensor([1 + 1j])._conj()}
    got = ember.load(saved(obj, tmp_path, fmt))
    assert type(got["p"]) is ember.nn.Parameter and got["p"].requires_grad
    assert type(got["frozen"]) is ember.nn.Parameter and not got["frozen"].requires_grad
    same(got["leaf"], obj["leaf"])
    for key in ("epoch", "lr", "name", "none", "nested", "data", "set", "z"):
        assert got[key] == obj[key] and type(got[key]) is type(obj[key])
    assert got["size"] == ember.Size([2, 3]) and got["dtype"] is ember.bfloat16
    assert got["device"] == ember.device("cpu")
    same(got["neg"], obj["neg"].resolve_neg())
    same(got["conj"], obj["conj"].resolve_conj())


def test_an_optimizer_state_continues_where_pytorch_left_it(tmp_path):
    net = torch_net()
    opt = torch.optim.AdamW(net.parameters(), lr=0.01)
    x, y = torch.randn(8, 1, 4, 4), torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    for _ in range(3):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    got = ember.load(saved({"model": net.state_dict(), "opt": opt.state_dict()}, tmp_path))
    model = ember_net()
    model.load_state_dict(got["model"])
    eopt = ember.optim.AdamW(model.parameters(), lr=0.01)
    eopt.load_state_dict(got["opt"])
    for _ in range(2):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        eopt.zero_grad()
        ember.nn.functional.cross_entropy(model(ember.tensor(x.numpy())),
                                          ember.tensor(y.numpy())).backward()
        eopt.step()
    for (name, e), t in zip(model.state_dict().items(), net.state_dict().values()):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_map_location_and_reading_from_an_open_file(tmp_path):
    path = saved({"w": torch.ones(2)}, tmp_path)
    assert ember.load(path, map_location="meta")["w"].device.type == "meta"
    assert ember.load(path, map_location={"cpu": "meta"})["w"].device.type == "meta"
    with open(path, "rb") as f:
        assert ember.load(f)["w"].tolist() == [1.0, 1.0]
    buffer = io.BytesIO(b"junk" + path.read_bytes())
    buffer.seek(4)
    assert ember.load(buffer)["w"].tolist() == [1.0, 1.0]
    on_gpu = tensor_file(tmp_path, (2,), (1,), location="cuda:0")
    if not ember.cuda.is_available():
        with pytest.raises(CheckpointError, match="saved on cuda:0.*map_location='cpu'"):
            ember.load(on_gpu)
    assert ember.load(on_gpu, map_location={"cuda:0": "cpu"})["w"].device.type == "cpu"


def big_endian(path, width_of):
    """A copy of the zip-format file ``path`` as a big-endian machine writes it: storage
    ``k``'s elements (parts, for complex numbers) of ``width_of(k)`` bytes swapped."""
    flipped = path.with_name("big.pt")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(flipped, "w") as out:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("byteorder"):
                data = b"big"
            elif "/data/" in name:
                width = width_of(name.rsplit("/", 1)[1])
                data = np.frombuffer(data, f"<u{width}").astype(f">u{width}").tobytes()
            out.writestr(name, data)
    return flipped


def test_a_big_endian_file(tmp_path):
    path = saved({"w": torch.tensor([1.5, -2.0]), "b": torch.ones(2, dtype=torch.bfloat16),
                  "f8": torch.tensor([0.5], dtype=torch.float8_e5m2)}, tmp_path)
    # (storages numbered in order of first use: w, b, f8)
    got = ember.load(big_endian(path, {"0": 4, "1": 2, "2": 1}.get))
    assert got["w"].tolist() == [1.5, -2.0] and got["b"].float().tolist() == [1.0, 1.0]
    assert got["f8"].float().tolist() == [0.5]


class _Evil:
    def __reduce__(self):
        return os.system, ("touch pwned",)


def handmade_zip(path, obj, records=None, persistent_id=None):
    """A zip-format file with ``obj`` pickled as torch.save would (its persistent ids by
    ``persistent_id``) and the storage ``records``."""
    pkl = io.BytesIO()
    pickler = pickle.Pickler(pkl, protocol=2)
    if persistent_id:
        pickler.persistent_id = persistent_id
    pickler.dump(obj)
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("archive/data.pkl", pkl.getvalue())
        out.writestr("archive/byteorder", "little")
        for key, data in (records or {}).items():
            out.writestr(f"archive/data/{key}", data)
    return path


def test_code_named_by_the_file_never_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = handmade_zip(tmp_path / "evil.pt", {"w": _Evil()})
    with pytest.raises(CheckpointError, match="posix.system.*never runs code"):
        ember.load(path, weights_only=False)
    assert not (tmp_path / "pwned").exists()
    legacy = tmp_path / "evil_legacy.pt"
    torch.save({"w": torch.ones(1)}, legacy, _use_new_zipfile_serialization=False)
    header = legacy.read_bytes()[:torch_file_header_length(legacy)]
    legacy.write_bytes(header + pickle.dumps(_Evil(), protocol=2))
    with pytest.raises(CheckpointError, match="posix.system"):
        ember.load(legacy)
    assert not (tmp_path / "pwned").exists()


def torch_file_header_length(path):
    """Bytes of the old format's three header pickles."""
    f = io.BytesIO(path.read_bytes())
    for _ in range(3):
        pickle.load(f)
    return f.tell()


def test_a_whole_module_is_refused_with_a_hint(tmp_path):
    path = saved(torch.nn.Linear(2, 2), tmp_path)
    with pytest.raises(CheckpointError, match=r"torch\.nn\.modules\.linear\.Linear.*state_dict"):
        ember.load(path)


class _Storage:
    def __init__(self, numel):
        self.numel = numel


def tensor_file(tmp_path, size, stride, offset=0, numel=4, nbytes=16, location="cpu"):
    """A file with one float32 tensor of this layout over a storage of ``numel`` elements
    whose record holds ``nbytes`` bytes, saved on ``location``."""
    storage = _Storage(numel)
    obj = {"w": _Rebuild(storage, offset, size, stride)}

    def pid(o):
        return ("storage", torch.FloatStorage, "0", location, o.numel) \
            if isinstance(o, _Storage) else None

    return handmade_zip(tmp_path / "t.pt", obj, {"0": b"\x00" * nbytes}, pid)


class _Rebuild:
    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, (*self.args, False, OrderedDict())


@pytest.mark.parametrize("layout, match", [
    (dict(size=(5,), stride=(1,)), "reads past its storage of 4 elements"),
    (dict(size=(2, 2), stride=(2, 1), offset=1), "reads past"),
    (dict(size=(2,), stride=(-1,)), "not a tuple of non-negative ints"),
    (dict(size=(2,), stride=(1, 1)), "has stride"),
    (dict(size=(2,), stride=(1,), nbytes=6), "holds 6 bytes, 16 expected"),
])
def test_corrupted_layouts_are_refused(tmp_path, layout, match):
    with pytest.raises(CheckpointError, match=match):
        ember.load(tensor_file(tmp_path, **layout))
    assert ember.load(tensor_file(tmp_path, (2, 2), (2, 1)))["w"].shape == (2, 2)


def test_truncated_and_incomplete_files(tmp_path):
    path = saved({"w": torch.ones(100)}, tmp_path)
    data = path.read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[:len(data) // 2])
    with pytest.raises(CheckpointError, match="cut.pt"):
        ember.load(tmp_path / "cut.pt")
    legacy = saved({"w": torch.ones(100)}, tmp_path, "legacy")
    (tmp_path / "cut_legacy.pt").write_bytes(legacy.read_bytes()[:-8])
    with pytest.raises(CheckpointError, match="truncated"):
        ember.load(tmp_path / "cut_legacy.pt")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp_path / "lost.pt", "w") as out:
        for name in src.namelist():
            if "/data/" not in name:
                out.writestr(name, src.read(name))
    with pytest.raises(CheckpointError, match="lacks zip/data/0"):
        ember.load(tmp_path / "lost.pt")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as out:
        out.writestr("readme.txt", "not a checkpoint")
    with pytest.raises(CheckpointError, match="not a torch.save file"):
        ember.load(tmp_path / "other.zip")


@pytest.mark.parametrize("target", [b"ctorch\nfloat32\n", b"ctorch\nTensor\n",
                                    b"ccollections\nCounter\n"])
def test_a_file_cannot_set_attributes_of_shared_objects(tmp_path, target):
    # BUILD with (None, {"itemsize": 7}) slot state on a global object, as a hostile file might
    pkl = b"\x80\x02" + target + b"N}X\x08\x00\x00\x00itemsizeK\x07s\x86b."
    path = tmp_path / "build.pt"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("archive/data.pkl", pkl)
    with pytest.raises(CheckpointError, match="sets attributes on a"):
        ember.load(path)
    assert ember.float32.itemsize == 4 and not hasattr(collections.Counter, "itemsize")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_a_big_endian_file_with_complex_numbers(tmp_path, dtype):
    value = torch.tensor([1 + 2j, 3 - 4j], dtype=getattr(torch, dtype))
    flipped = big_endian(saved({"z": value}, tmp_path), lambda _: value.element_size() // 2)
    assert ember.load(flipped)["z"].tolist() == [1 + 2j, 3 - 4j]


def test_an_old_format_storage_larger_than_the_file_is_refused(tmp_path):
    path = saved({"w": torch.ones(4)}, tmp_path, "legacy")
    data = path.read_bytes()
    # the storage's element count in its persistent id (BININT1 4) made a BININT of 2**30
    at = data.index(b"X\x03\x00\x00\x00cpu")
    start = data.index(b"K\x04", at)
    path.write_bytes(data[:start] + b"J\x00\x00\x00\x40" + data[start + 2:])
    with pytest.raises(CheckpointError, match="claims 1073741824 elements"):
        ember.load(path)
