"""ember.serialization.get_unsafe_globals_in_checkpoint lists what a checkpoint's pickles name
that a weights-only load refuses, as torch.serialization's does; nothing is unpickled."""

import dataclasses
import io
import os
import pickle
import sys

import pytest
import torch

import ember
from ember.errors import CheckpointError
from tests.io.test_safe_globals import Evil


@dataclasses.dataclass
class Config:
    lr: float


@pytest.fixture(autouse=True)
def _clean_allow_lists():
    ember.serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()
    yield
    ember.serialization.clear_safe_globals()
    torch.serialization.clear_safe_globals()


NAME = f"{__name__}.Config"


def test_a_torch_file_lists_what_torch_lists(tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"cfg": Config(0.1), "w": torch.ones(2), "sd": torch.nn.Linear(2, 2).state_dict(),
                "p": torch.nn.Parameter(torch.ones(1)), "s": {1, 2}}, path)
    assert sorted(torch.serialization.get_unsafe_globals_in_checkpoint(path)) == [NAME]
    assert ember.serialization.get_unsafe_globals_in_checkpoint(path) == [NAME]
    ember.serialization.add_safe_globals([Config])
    assert ember.serialization.get_unsafe_globals_in_checkpoint(str(path)) == []
    assert ember.load(path)["cfg"] == Config(0.1)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_an_ember_file_lists_its_pickles_globals_without_running_them(protocol):
    buf = io.BytesIO()
    model = ember.nn.Linear(2, 2)
    ember.save({"cfg": Config(0.1), "evil": Evil(), "model": model, "w": model.weight,
                "s": {1, 2}, "c": 1j}, buf, pickle_protocol=protocol)
    buf.seek(0)
    found = ember.serialization.get_unsafe_globals_in_checkpoint(buf)
    system = f"{os.system.__module__}.system"
    assert found == sorted(found) and {NAME, system, "ember.nn.linear.Linear"} <= set(found)
    assert not any(name.startswith("ember.tensor") for name in found)  # (its tensors: data)
    with ember.serialization.safe_globals([Config]):
        buf.seek(0)
        assert NAME not in ember.serialization.get_unsafe_globals_in_checkpoint(buf)


def _object(name):
    module, _, qualname = name.rpartition(".")
    while module and module not in sys.modules:  # (a nested class: module.Outer.Inner)
        module, _, outer = module.rpartition(".")
        qualname = f"{outer}.{qualname}"
    obj = sys.modules[module]
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("protocol", [2, 5])
def test_allowing_what_it_lists_lets_a_weights_only_load_read_the_file(protocol):
    buf = io.BytesIO()
    ember.save({"cfg": Config(0.1), "model": ember.nn.Sequential(ember.nn.Linear(2, 2))}, buf,
               pickle_protocol=protocol)
    buf.seek(0)
    with pytest.raises(ember.errors.WeightsOnlyError):
        ember.load(buf)
    buf.seek(0)
    names = ember.serialization.get_unsafe_globals_in_checkpoint(buf)
    ember.serialization.add_safe_globals([_object(n) for n in names])
    buf.seek(0)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(buf) == []
    buf.seek(0)
    out = ember.load(buf)
    assert out["cfg"] == Config(0.1) and isinstance(out["model"][0], ember.nn.Linear)


def test_files_without_pickles_and_bad_files(tmp_path):
    ember.save({"w": ember.ones(2), "n": [1, (2, 3)]}, tmp_path / "e.safetensors")
    assert ember.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "e.safetensors") == []
    ember.io.save_file({"w": ember.ones(2)}, tmp_path / "f.safetensors")
    assert ember.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "f.safetensors") == []
    torch.save({"w": torch.ones(2)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError, match="zip-format ones only"):  # (torch: ValueError)
        ember.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "old.pt")
    data = (tmp_path / "e.safetensors").read_bytes()
    with pytest.raises(CheckpointError, match="not valid JSON|runs past|header length"):
        ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data[:20]))


def test_a_damaged_pickle_is_a_checkpoint_error():
    buf = io.BytesIO()
    ember.save({"cfg": Config(0.1)}, buf)
    data = bytearray(buf.getvalue())
    at = data.rindex(pickle.STOP)  # (the pickle is the last tensor's bytes)
    data[at] = 0xFF
    with pytest.raises(CheckpointError, match="damaged pickle"):
        ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(bytes(data)))


def test_serialization_save_and_load_are_ember_save_and_load():
    assert ember.serialization.save is ember.save
    assert ember.serialization.load is ember.load
