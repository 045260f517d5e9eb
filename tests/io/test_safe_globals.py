"""ember.serialization.add_safe_globals / safe_globals: pickled objects of allowed classes load
with weights_only=True, as torch.serialization's allow-list lets torch.load read them."""

import dataclasses
import enum
import io
import os

import pytest
import torch

import ember
from ember.errors import WeightsOnlyError


@dataclasses.dataclass
class Config:
    lr: float
    name: str


class Mode(enum.Enum):
    TRAIN = 1


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


@pytest.fixture(autouse=True)
def _clean_allow_list():
    ember.serialization.clear_safe_globals()
    yield
    ember.serialization.clear_safe_globals()


def ember_file(obj):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return buf


def torch_file(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def test_allowed_classes_load_with_weights_only_as_torch():
    obj = {"config": Config(0.1, "run"), "mode": Mode.TRAIN, "w": 1}
    for load, file in ((torch.load, torch_file), (ember.load, ember_file)):
        with pytest.raises(Exception, match="Config|Mode"):  # (not allowed: refused)
            load(file(obj))
    torch.serialization.add_safe_globals([Config, Mode])
    try:
        expected = torch.load(torch_file(obj))
    finally:
        torch.serialization.clear_safe_globals()
    ember.serialization.add_safe_globals([Config, Mode])
    assert ember.serialization.get_safe_globals() == [Config, Mode]
    assert ember.load(ember_file(obj)) == expected == obj
    assert ember.load(torch_file(obj)) == expected  # (a torch.save file too)


def test_safe_globals_context_and_what_stays_refused():
    with ember.serialization.safe_globals([Config]):
        assert ember.load(ember_file([Config(1.0, "a")])) == [Config(1.0, "a")]
        with pytest.raises(WeightsOnlyError, match=r"naming posix\.system|naming nt\.system"):
            ember.load(ember_file({"x": Evil()}))  # (refused before anything runs)
        with pytest.raises(WeightsOnlyError, match="Mode"):
            ember.load(ember_file(Mode.TRAIN))
    assert ember.serialization.get_safe_globals() == []
    with pytest.raises(WeightsOnlyError, match="add_safe_globals"):
        ember.load(ember_file(Config(1.0, "a")))
    module = ember.nn.Linear(2, 3)  # a module needs each of its classes allowed
    ember.serialization.add_safe_globals([Config])
    with pytest.raises(WeightsOnlyError, match="Linear"):
        ember.load(ember_file(module))
    with pytest.raises(ember.errors.ArgumentTypeError, match="add_safe_globals"):
        ember.serialization.add_safe_globals(Config)


@dataclasses.dataclass
class Tagged:
    tags: set


def test_protocol_2_pickles_name_builtins_as_python_2_did_and_still_load_as_torch():
    obj = {"cfg": Tagged({1, 2}), "c": [Tagged({3})]}
    torch.serialization.add_safe_globals([Tagged])
    try:
        expected = torch.load(torch_file(obj))  # (protocol 2: "__builtin__ set")
    finally:
        torch.serialization.clear_safe_globals()
    buf = io.BytesIO()
    ember.save(obj, buf, pickle_protocol=2)
    ember.serialization.add_safe_globals([Tagged])
    buf.seek(0)
    assert ember.load(buf) == expected == obj
    evil = io.BytesIO()
    ember.save({"x": Evil(), "t": Tagged(set())}, evil, pickle_protocol=2)
    evil.seek(0)
    with pytest.raises(WeightsOnlyError, match=r"naming posix\.system|naming nt\.system"):
        ember.load(evil)
