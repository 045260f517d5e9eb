"""Fixes from the review of ember.io's sweep commits (review47io): file objects that cannot do
what is asked raise what torch code catches, hints for files of another format are true and
fire only where they help, pickle_protocol's checks, writes into loaded expanded tensors."""

from __future__ import annotations

import io
import os
import pickle
import struct
import threading

import pytest
import torch

import ember
from ember.errors import ArgumentError, ArgumentTypeError, CheckpointError, FileModeError
from tests.io.test_torch_file_edges import LEGACY, torch_file


def test_a_file_open_the_wrong_way_is_an_unsupported_operation_as_in_torch(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    for lib, ones in ((torch, torch.ones), (ember, ember.ones)):
        with open(path, "wb") as f, pytest.raises(io.UnsupportedOperation):
            lib.load(f)
        with open(path, "rb") as f, pytest.raises(io.UnsupportedOperation):
            lib.save({"a": ones(1)}, f)
    assert issubclass(FileModeError, (OSError, ValueError, RuntimeError, ArgumentError))


def test_the_fallback_for_a_stream_torch_suggests_catches_a_pipe():
    saved = io.BytesIO()
    ember.save({"a": ember.ones(2)}, saved)
    r, w = os.pipe()
    with os.fdopen(r, "rb") as reader:
        writer = os.fdopen(w, "wb")
        thread = threading.Thread(target=lambda: (writer.write(saved.getvalue()), writer.close()))
        thread.start()
        try:
            got = ember.load(reader)
        except io.UnsupportedOperation as e:  # (torch: "... use io.BytesIO(f.read())")
            assert "io.BytesIO(f.read())" in str(e)
            got = ember.load(io.BytesIO(reader.read()))
        thread.join()
    assert got["a"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("read", [ember.io.load_file, ember.jit.load], ids=["load_file", "jit"])
def test_the_hint_for_a_zip_archive_is_true(read):
    with pytest.raises(CheckpointError) as info:
        read(torch_file({"a": torch.ones(1)}))
    message = str(info.value)
    assert "a torch.save file loads with ember.load" in message
    assert "TorchScript archives are not read" in message and "ember.jit.load" not in message


@pytest.mark.parametrize("protocol", [1, 2, 5])
@pytest.mark.parametrize("read", [ember.io.load_file, ember.io.load_metadata],
                         ids=["load_file", "load_metadata"])
def test_an_older_torch_file_read_as_safetensors_gets_the_pickle_hint(read, protocol):
    with pytest.raises(CheckpointError, match="older torch.save file loads with ember.load"):
        read(torch_file({"a": torch.ones(1)}, pickle_protocol=protocol, **LEGACY))


def test_ember_load_does_not_send_a_plain_pickle_back_to_itself():
    with pytest.raises(CheckpointError) as info:
        ember.load(io.BytesIO(pickle.dumps({"a": [1, 2]}, protocol=2)))
    assert "ember.load" not in str(info.value)


@pytest.mark.parametrize("length", [128, 384])
def test_a_truncated_safetensors_file_is_not_called_a_pickle(length):
    # (its header length's low byte is 0x80, as a pickle's first byte)
    cut = io.BytesIO(struct.pack("<Q", length) + b'{"a":' + b" " * 35)
    with pytest.raises(CheckpointError, match="truncated") as info:
        ember.io.load_file(cut)
    assert "pickle" not in str(info.value)


def test_pickle_protocol_none_is_the_default_as_in_torch_save():
    torch.save({"r": range(2)}, io.BytesIO(), pickle_protocol=None)
    buf = io.BytesIO()
    ember.save({"r": range(2)}, buf, pickle_protocol=None)
    buf.seek(0)
    assert ember.load(buf, weights_only=False) == {"r": range(2)}


@pytest.mark.parametrize("protocol", [2.0, "2", True])
def test_a_pickle_protocol_that_is_not_an_int_is_refused(protocol):
    with pytest.raises(ArgumentTypeError, match="pickle_protocol must be an int"):
        ember.save({"r": range(2)}, io.BytesIO(), pickle_protocol=protocol)


WRITES = {"add_": lambda t: t.add_(1), "copy_": lambda t: t.copy_(ember.ones(4, 3)),
          "__setitem__": lambda t: t.__setitem__((slice(None), 0), 5.0)}


def test_a_loaded_expanded_tensor_takes_the_writes_torch_allows():  # (sweep66f)
    t = ember.load(torch_file({"w": torch.zeros(1, 3).expand(4, 3)}))["w"]
    t[0, 0] = 5.0  # (one element: its memory is no other's)
    assert t.tolist() == [[5.0, 0.0, 0.0]] * 4
    t.fill_(2.0)
    assert t.tolist() == [[2.0] * 3] * 4


@pytest.mark.parametrize("op", list(WRITES))
def test_a_write_into_a_loaded_expanded_tensor_names_where_it_came_from(op):
    t = ember.load(torch_file({"w": torch.zeros(1, 3).expand(4, 3)}))["w"]
    with pytest.raises(RuntimeError, match=rf"{op}: cannot write.*loaded from a torch file.*clone"):
        WRITES[op](t)
    t.clone().add_(1)  # (the fix the hint gives)
