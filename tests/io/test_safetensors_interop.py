"""Ember's files are plain safetensors: PyTorch's safetensors reads them, and the reverse."""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest
import safetensors
import safetensors.numpy
import safetensors.torch
import torch

import ember
from ember.errors import CheckpointError

TORCH = {ember.bool_: torch.bool, ember.uint8: torch.uint8, ember.int8: torch.int8,
         ember.int16: torch.int16, ember.int32: torch.int32, ember.int64: torch.int64,
         ember.float16: torch.float16, ember.bfloat16: torch.bfloat16,
         ember.float32: torch.float32, ember.float64: torch.float64}


def as_torch(t: ember.Tensor) -> torch.Tensor:
    a = np.asarray(t)
    if t.dtype is ember.bfloat16:
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(a.copy())


def assert_same(e: ember.Tensor, t: torch.Tensor) -> None:
    assert TORCH[e.dtype] == t.dtype and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(np.asarray(e).astype(np.float64),
                                  t.to(torch.float64).numpy())


def tensors() -> dict[str, ember.Tensor]:
    rng = np.random.default_rng(1)
    out = {}
    for i, dtype in enumerate(TORCH):
        shape = [(2, 3), (), (0, 4), (5,)][i % 4]
        a = np.asarray(rng.standard_normal(shape) * 20)
        a = np.asarray(a > 0) if dtype is ember.bool_ else a.astype(dtype.np)
        out[f"t.{dtype.name}"] = ember.from_numpy(a)
    out["noncontig"] = ember.arange(12.0).reshape(3, 4).t()
    return out


def test_ember_save_loads_in_torch(tmp_path):
    ts = tensors()
    ember.save(ts, tmp_path / "e.safetensors")
    loaded = safetensors.torch.load_file(tmp_path / "e.safetensors")
    assert set(loaded) == set(ts)
    for name, t in ts.items():
        assert_same(t, loaded[name])


def test_nested_checkpoint_loads_in_torch_by_path_names(tmp_path):
    ember.save({"model": {"w": ember.ones(2, 2)},
                "optimizer": {"state": {0: {"m": ember.zeros(2)}}}, "epoch": 2},
               tmp_path / "c.safetensors")
    loaded = safetensors.torch.load_file(tmp_path / "c.safetensors")
    assert set(loaded) == {"model.w", "optimizer.state.0.m"}


def test_torch_files_load_in_ember(tmp_path):
    ts = {name: as_torch(t) for name, t in tensors().items()}
    safetensors.torch.save_file(ts, tmp_path / "t.safetensors", metadata={"format": "pt"})
    for loaded in (ember.load(tmp_path / "t.safetensors", map_location="cpu"),
                   ember.io.load_file(tmp_path / "t.safetensors")):
        assert set(loaded) == set(ts)
        for name, t in ts.items():
            assert_same(loaded[name], t)
    assert ember.io.load_metadata(tmp_path / "t.safetensors") == {"format": "pt"}


def test_save_file_is_byte_identical_to_safetensors(tmp_path):
    ts = tensors()
    as_t = {n: as_torch(t) for n, t in ts.items()}
    ember.io.save_file(ts, tmp_path / "e.safetensors", metadata={"ü": "✓"})
    safetensors.torch.save_file(as_t, tmp_path / "t.safetensors", metadata={"ü": "✓"})
    assert (tmp_path / "e.safetensors").read_bytes() == (tmp_path / "t.safetensors").read_bytes()
    # (with several metadata keys only their order differs: safetensors keeps them in a hash map)
    ember.io.save_file(ts, tmp_path / "m.safetensors", metadata={"k": "v", "a": "b"})
    with safetensors.safe_open(tmp_path / "m.safetensors", framework="pt") as f:
        assert f.metadata() == {"k": "v", "a": "b"}


def test_numpy_reader(tmp_path):
    ts = {k: v for k, v in tensors().items() if v.dtype is not ember.bfloat16}
    ember.io.save_file(ts, tmp_path / "n.safetensors")
    loaded = safetensors.numpy.load_file(tmp_path / "n.safetensors")
    for name, t in ts.items():
        np.testing.assert_array_equal(loaded[name], np.asarray(t))


def test_save_file_checks_its_input(tmp_path):
    with pytest.raises(ember.errors.CheckpointError, match="not a Tensor"):
        ember.io.save_file({"a": {"b": ember.ones(1)}}, tmp_path / "x.safetensors")
    with pytest.raises(ember.errors.CheckpointError, match="names must be strings"):
        ember.io.save_file({0: ember.ones(1)}, tmp_path / "x.safetensors")
    with pytest.raises(ember.errors.CheckpointError, match="metadata must map strings"):
        ember.io.save_file({"a": ember.ones(1)}, tmp_path / "x.safetensors", {"n": 1})
    assert not (tmp_path / "x.safetensors").exists()


def test_complex64_round_trips_with_the_safetensors_package(tmp_path):
    z = np.array([[1 + 2j, -3.5j]], dtype=np.complex64)
    ember.save({"z": ember.from_numpy(z)}, tmp_path / "z.safetensors")
    np.testing.assert_array_equal(safetensors.numpy.load_file(tmp_path / "z.safetensors")["z"], z)
    safetensors.numpy.save_file({"w": z}, tmp_path / "w.safetensors")
    np.testing.assert_array_equal(ember.load(tmp_path / "w.safetensors")["w"].numpy(), z)


def test_save_file_refuses_tensors_sharing_memory_as_safetensors(tmp_path):
    w, tw = ember.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    for ours, theirs in [({"a": w, "b": w}, {"a": tw, "b": tw}),
                         ({"a": w, "b": w[1]}, {"a": tw, "b": tw[1]})]:
        with pytest.raises(RuntimeError, match="share memory"):
            safetensors.torch.save_file(theirs, tmp_path / "t.safetensors")
        with pytest.raises(CheckpointError, match=r"\['a', 'b'\].*share memory.*save_model"):
            ember.io.save_file(ours, tmp_path / "e.safetensors")
    # disjoint parts of one tensor, and a lone non-contiguous one, are fine (written contiguous)
    ember.io.save_file({"a": w[0], "b": w[1], "t": ember.ones(2, 3).t()}, tmp_path / "e.st")
    back = safetensors.torch.load_file(tmp_path / "e.st")
    assert back["b"].tolist() == [3.0, 4.0, 5.0] and back["t"].shape == (3, 2)
    # so are interleaved ones that share no element (their byte ranges overlap)
    x = ember.arange(8.0).reshape(2, 4)
    flat = x.view(-1)
    for pair in ({"c0": x[:, 0], "c1": x[:, 1]}, {"even": flat[::2], "odd": flat[1::2]}):
        ember.io.save_file(pair, tmp_path / "i.st")
        back = safetensors.torch.load_file(tmp_path / "i.st")
        assert all(back[k].tolist() == v.tolist() for k, v in pair.items())
    with pytest.raises(CheckpointError, match=r"\['c0', 'even'\].*share memory"):
        ember.io.save_file({"c0": x[:, 0], "even": flat[::2]}, tmp_path / "e.st")


def test_ember_checkpoints_read_in_pytorch_through_safetensors(tmp_path):
    # as docs/tensors_and_autograd.md says: tensors by their path, tied weights once
    class Tied(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = ember.nn.Linear(2, 2), ember.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

    class TorchTied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

    model, path = Tied(), tmp_path / "ckpt.safetensors"
    ember.save(model.state_dict(), path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(path.read_bytes()))
    theirs = TorchTied()
    assert safetensors.torch.load_model(theirs, str(path)) == (set(), [])
    assert theirs.b.weight is theirs.a.weight
    np.testing.assert_array_equal(theirs.a.weight.detach().numpy(), model.a.weight.detach().numpy())
    ember.save({"model": model.state_dict(), "epoch": 3}, path)
    assert sorted(safetensors.torch.load_file(str(path))) == ["model.a.bias", "model.a.weight"]
    assert sorted(torch.load(path)) == ["model.a.bias", "model.a.weight"]  # (".safetensors")
