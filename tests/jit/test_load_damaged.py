"""``ember.jit.load`` and ``ember.export.load`` on files that are damaged, truncated, changed
or of another kind: a ``CheckpointError`` naming the file and what is wrong with it, never a
bare KeyError or JSON error, and the file is left as it was."""

from __future__ import annotations

import json
import struct

import pytest

import ember
from ember import jit
from ember.errors import CheckpointError


def _jit_file(path):
    fast = jit.compile(ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU()).eval())
    with ember.no_grad():
        fast(ember.randn(2, 3))
    jit.save(fast, path)
    return jit.load, "ember.jit"


def _export_file(path):
    ep = ember.export.export(ember.nn.Linear(3, 4).eval(), (ember.randn(2, 3),))
    ember.export.save(ep, path)
    return ember.export.load, "ember.export"


def _header(raw):
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _with_header(header, data):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _doc_changed(change):
    """A damage that changes the graph's JSON document (``change(doc)`` edits it in place)."""
    def damage(raw, key):
        header, data = _header(raw)
        doc = json.loads(header["__metadata__"][key])
        change(doc)
        header["__metadata__"][key] = json.dumps(doc)
        return _with_header(header, data)
    return damage


def _meta_replaced(text):
    def damage(raw, key):
        header, data = _header(raw)
        header["__metadata__"][key] = text
        return _with_header(header, data)
    return damage


def _first_list(doc):
    return next(k for k in ("eqns", "nodes") if k in doc)


def _array_dropped(raw, key):
    header, data = _header(raw)
    name = next(k for k in header if k != "__metadata__")
    del header[name]
    return _with_header(header, data)


def _array_reshaped(raw, key):
    header, data = _header(raw)
    name = next(k for k in header if k.startswith("state") and len(header[k]["shape"]) == 2)
    a, b = header[name]["shape"]
    header[name]["shape"] = [b, a] if a != b else [a * b]
    return _with_header(header, data)


def _param_renamed(doc):
    """The first primitive's first param under another name (``dims`` as ``dimz``)."""
    if "eqns" in doc:
        params = next(e["params"] for e in doc["eqns"] if e["params"])
        name = next(iter(params))
        params[name + "z"] = params.pop(name)
    else:
        items = next(n["kwargs"]["dict"] for n in doc["nodes"] if n["kwargs"]["dict"])
        items[0][0] += "z"


DAMAGES = {
    "truncated": lambda raw, key: raw[:len(raw) // 2],
    "header cut": lambda raw, key: raw[:40],
    "empty": lambda raw, key: b"",
    "not json": _meta_replaced("{not json"),
    "json not an object": _meta_replaced("[1, 2]"),
    "a key missing": _doc_changed(lambda doc: doc.pop(_first_list(doc))),
    "a wrong type": _doc_changed(lambda doc: doc.__setitem__("outputs", 7)),
    "an unknown variable": _doc_changed(
        lambda doc: doc.__setitem__("outputs", [123456]) if "eqns" in doc else
        doc["nodes"][-1].__setitem__("args", [{"node": "nowhere"}])),
    "a param renamed": _doc_changed(_param_renamed),
    "an array dropped": _array_dropped,
    "an array reshaped": _array_reshaped,
    "a zip file": lambda raw, key: b"PK\x03\x04" + b"\x00" * 60,
}


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("make", [_jit_file, _export_file], ids=["jit", "export"])
def test_a_damaged_file_is_a_checkpoint_error_naming_it_and_is_left_alone(tmp_path, make,
                                                                           damage):
    path = tmp_path / "model.bin"
    load, key = make(path)
    damaged = DAMAGES[damage](path.read_bytes(), key)
    path.write_bytes(damaged)
    with pytest.raises(CheckpointError, match="model.bin") as info:
        load(path)
    assert type(info.value.__cause__) not in (KeyError,) and "Traceback" not in str(info.value)
    assert path.read_bytes() == damaged  # (nothing the user saved is written)


def test_a_missing_file_is_a_checkpoint_error_naming_it(tmp_path):
    for load in (jit.load, ember.export.load):
        with pytest.raises(CheckpointError, match="nothing.bin"):
            load(tmp_path / "nothing.bin")
