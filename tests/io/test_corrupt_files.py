"""Truncated, corrupted and hostile files fail with a CheckpointError naming file and problem."""

from __future__ import annotations

import io
import json
import pickle
import struct

import pytest

import ember
from ember.errors import CheckpointError


def raw_file(path, header, data=b"", *, length=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text) if length is None else length) + text + data)
    return path


def good(tmp_path):
    path = tmp_path / "good.safetensors"
    ember.save({"model": {"w": ember.arange(6, dtype=ember.float32), "b": ember.ones(2)},
                "epoch": 1}, path)
    return path


def expect(path, match, loader=ember.load):
    with pytest.raises(CheckpointError, match=match) as info:
        loader(path)
    assert str(path) in str(info.value)
    return info.value


W = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("header, data, length, match", [
    (b"", b"", 0, "not valid JSON"),
    (b"{", b"", None, "not valid JSON"),
    (b"\xff\xfe{}", b"", None, "not UTF-8"),
    (b"[1, 2]", b"", None, "JSON list, not an object"),
    (b"3", b"", None, "JSON int, not an object"),
    (b'{"w": 1, "w": 2}', b"", None, "duplicate key 'w'"),
    (b"{}", b"", 2 ** 64 - 1, "header length 18446744073709551615 is over the"),
    (b"{}", b"", 1000, "header length 1000 runs past the end of the file"),
    ({"w": [1]}, b"", None, "tensor 'w': expected an object"),
    ({"w": {**W, "dtype": "F6_E3M2"}}, b"\0" * 8, None, "tensor 'w': unknown dtype 'F6_E3M2'"),
    ({"w": {**W, "dtype": None}}, b"\0" * 8, None, "unknown dtype None"),
    ({"w": {**W, "shape": [-2]}}, b"\0" * 8, None, "shape \\[-2\\] is not a list"),
    ({"w": {**W, "shape": [2.0]}}, b"\0" * 8, None, "is not a list of non-negative"),
    ({"w": {**W, "shape": "2"}}, b"\0" * 8, None, "is not a list of non-negative"),
    ({"w": {**W, "data_offsets": [8, 0]}}, b"\0" * 8, None, "0 <= begin <= end"),
    ({"w": {**W, "data_offsets": [0]}}, b"\0" * 8, None, "is not \\[begin, end\\]"),
    ({"w": {**W, "data_offsets": [0, True]}}, b"\0" * 8, None, "is not \\[begin, end\\]"),
    ({"w": W}, b"\0" * 5, None, "run past the end of the data \\(5 bytes\\)"),
    ({"w": {**W, "shape": [3]}}, b"\0" * 8, None, "needs 12 bytes but data_offsets"),
    ({"w": {**W, "shape": [2 ** 40, 2 ** 40], "data_offsets": [0, 2 ** 82]}}, b"", None,
     "run past the end of the data"),
    ({"w": {**W, "shape": [2 ** 62, 4]}}, b"\0" * 8, None, "needs 73786976294838206464 bytes"),
    ({"a": W, "b": {**W, "data_offsets": [4, 12]}}, b"\0" * 12, None, "overlaps"),
    ({"a": W, "b": {**W, "data_offsets": [12, 20]}}, b"\0" * 20, None, "gap of 4 bytes"),
    ({"w": W}, b"\0" * 12, None, "4 bytes after the last tensor"),
    ({"__metadata__": {"a": 1}, "w": W}, b"\0" * 8, None, "must map strings to strings"),
    ({"__metadata__": ["x"]}, b"", None, "must map strings to strings"),
    ({"__metadata__": []}, b"", None, "must map strings to strings"),
    ({"w": {**W, "shape": [0, 2 ** 64], "data_offsets": [0, 0]}}, b"", None,
     "shape \\(0, 18446744073709551616\\) F32 is too large for an array"),
    ({"w": {**W, "shape": [1] * 65, "data_offsets": [0, 4]}}, b"\0" * 4, None,
     "65 dimensions; arrays have at most 64"),
])
def test_bad_headers(header, data, length, match, tmp_path):
    path = raw_file(tmp_path / "bad.safetensors", header, data, length=length)
    expect(path, match)
    expect(path, match, ember.io.load_file)


def test_deeply_nested_header(tmp_path):
    path = raw_file(tmp_path / "deep.safetensors", b"[" * 100_000 + b"]" * 100_000)
    expect(path, "not valid JSON")


@pytest.mark.parametrize("size", [0, 3, 7])
def test_too_short(size, tmp_path):
    path = tmp_path / "short.safetensors"
    path.write_bytes(b"\x10" * size)
    expect(path, f"only {size} bytes")


def test_truncated_anywhere(tmp_path):
    data = good(tmp_path).read_bytes()
    for cut in (1, 8, 9, len(data) // 2, len(data) - 1):
        path = tmp_path / f"cut{cut}.safetensors"
        path.write_bytes(data[:cut])
        expect(path, "truncated|too short|not valid JSON|past the end")


def test_flipped_bytes_never_crash_badly(tmp_path):
    data = bytearray(good(tmp_path).read_bytes())
    (n,) = struct.unpack("<Q", data[:8])
    for i in range(0, 8 + n, 7):  # every 7th header byte: an error or a valid load, no crash
        bad = bytearray(data)
        bad[i] ^= 0x5A
        path = tmp_path / "flip.safetensors"
        path.write_bytes(bytes(bad))
        try:
            ember.load(path)
        except CheckpointError as e:
            assert str(path) in str(e)


def ember_file(tmp_path, tree, tensors=None, version=1, fmt="ember.checkpoint"):
    doc = {"format": fmt, "version": version, "tree": tree}
    tensors = tensors or {"w": ember.ones(2), "i": ember.arange(2)}
    ember.io.save_file(tensors, tmp_path / "t.safetensors",
                       {"ember": json.dumps(doc) if isinstance(tree, (dict, list)) else tree})
    return tmp_path / "t.safetensors"


@pytest.mark.parametrize("tree, match", [
    ({"x": {"$tensor": "missing"}}, "refers to tensor 'missing', which the file does not"),
    ({"x": {"$tensor": 3}}, "malformed or unknown entry"),
    ({"x": {"$pickle": "os.system"}}, "malformed or unknown entry"),
    ({"x": {"$float": "1e400"}}, "malformed or unknown entry"),
    ({"x": {"$dtype": "complex32"}}, "unknown dtype name 'complex32'"),
    ({"x": {"$device": "tpu"}}, "unknown device type 'tpu'"),
    ({"x": {"$dict": [[1, 2, 3]]}}, "is not a \\[key, value\\] pair"),
    ({"x": {"$dict": [[[1], 2]]}}, "key \\[1\\] is not hashable"),
    ({"x": {"$tuple": 5}}, "malformed"),
    ({"x": {"$tensor": "w", "device": 5}}, "tensor 'w' has device 5, not a device string"),
    ({"x": {"$tensor": "i", "requires_grad": True}}, "tensor 'i' of dtype int64 is marked"),
    ({"x": {"$tensor": "w", "device": "tpu:0"}}, "tensor 'w' \\(saved on tpu:0\\): .*"
     "unknown device type 'tpu'.*map_location='cpu'"),
    ({"x": {"$sparse": ["sparse_coo"]}}, "malformed or unknown entry"),
    ({"x": {"$sparse": {}}}, "malformed or unknown entry"),
    ({"x": {"$device": ["cpu"]}}, "malformed or unknown entry"),
    ({"x": {"$dtype": None}}, "malformed or unknown entry"),
    ({"x": {"$view": "w", "offset": 0, "size": [2 ** 40, 2 ** 40], "stride": [0, 0]}},
     "view of 'w' \\(size \\[1099511627776, 1099511627776\\].*too many elements"),
])
def test_bad_trees(tree, match, tmp_path):
    expect(ember_file(tmp_path, tree), match)


def test_bad_descriptions(tmp_path):
    expect(ember_file(tmp_path, "{not json"), "description is not valid JSON")
    expect(ember_file(tmp_path, {}, fmt="other"), "not an Ember checkpoint description")
    expect(ember_file(tmp_path, {}, version=99), "version 99; this Ember reads up to version 5")
    deep = "[" * 50_000 + "]" * 50_000
    expect(ember_file(tmp_path, '{"format": "ember.checkpoint", "version": 1, "tree": '
                      + deep + "}"), "not valid JSON|nested too deeply")


def test_bool_bytes_are_normalised(tmp_path):
    path = raw_file(tmp_path / "b.safetensors",
                    {"b": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}}, b"\x00\x01\x07")
    assert ember.load(path)["b"].tolist() == [False, True, True]


def test_unsigned_types_load_as_themselves(tmp_path):
    path = raw_file(tmp_path / "u.safetensors",
                    {"u": {"dtype": "U32", "shape": [2], "data_offsets": [0, 8]}},
                    struct.pack("<II", 1, 2 ** 32 - 1))
    u = ember.load(path)["u"]
    assert u.dtype is ember.uint32 and u.tolist() == [1, 2 ** 32 - 1]


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        ember.load("/nonexistent/ckpt.safetensors")


def test_a_stream_that_cannot_seek_gets_a_hint():
    class Stream(io.RawIOBase):  # (a pipe or a socket's file, as a download)
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, m):
            return self.data.readinto(m)

    saved = io.BytesIO()
    ember.save({"a": ember.ones(2)}, saved)
    with pytest.raises(io.UnsupportedOperation, match=r"not seekable.*io\.BytesIO"):
        ember.load(io.BufferedReader(Stream(saved.getvalue())))


@pytest.mark.parametrize("zip_format", [True, False])
def test_load_file_of_a_torch_file_names_the_reader(tmp_path, zip_format):
    torch = pytest.importorskip("torch")
    torch.save({"a": torch.ones(1)}, tmp_path / "t.pt", _use_new_zipfile_serialization=zip_format)
    with pytest.raises(CheckpointError, match="torch.save file loads with ember.load"):
        ember.io.load_file(tmp_path / "t.pt")


def test_a_file_object_open_the_wrong_way_gets_a_hint(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    wrong = io.UnsupportedOperation  # (an OSError and a ValueError, as torch raises)
    with open(tmp_path / "f", "rb") as f, pytest.raises(wrong, match="not writable.*'wb'"):
        ember.save({"a": ember.ones(1)}, f)
    with open(tmp_path / "f", "wb") as f, pytest.raises(wrong, match="not readable.*'rb'"):
        ember.load(f)


def _pickle_of_tensor_0():
    """A pickled list whose one element is the pickle's tensor 0, as a uint8 tensor."""
    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return 0 if obj == "the tensor" else None

    buffer = io.BytesIO()
    Pickler(buffer).dump(["the tensor"])
    return ember.tensor(list(buffer.getvalue()), dtype=ember.uint8)


@pytest.mark.parametrize("refs, match", [
    ([], "refers to tensor 0, which its entry does not list"),
    ([{"$tensor": "missing"}], "refers to tensor 'missing', which the file does not"),
    ([{"$tuple": []}], "tensor 0 is a tuple in the checkpoint tree, not a tensor"),
])
def test_bad_tensor_references_of_a_pickle(refs, match, tmp_path):
    data = _pickle_of_tensor_0()
    tree = {"x": {"$pickle": "p", "type": "builtins.list", "tensors": refs}}
    path = ember_file(tmp_path, tree, {"p": data}, version=3)
    with pytest.raises(CheckpointError, match=match):
        ember.load(path, weights_only=False)


def test_a_pickle_listed_twice_with_other_tensors_is_refused(tmp_path):
    # the same object saved twice lists the same tensors; a crafted file that lists others
    # under the same pickle would have them ignored
    data = _pickle_of_tensor_0()
    node = {"$pickle": "p", "type": "builtins.list", "tensors": [{"$tensor": "a"}]}
    arrays = {"p": data, "a": ember.ones(1), "b": ember.zeros(1)}
    same = ember.load(ember_file(tmp_path, {"x": node, "y": dict(node)}, arrays, version=3),
                      weights_only=False)
    assert same["x"] is same["y"] and same["x"][0].tolist() == [1.0]
    other = dict(node, tensors=[{"$tensor": "b"}])
    path = ember_file(tmp_path, {"x": node, "y": other}, arrays, version=3)
    with pytest.raises(CheckpointError, match="pickled object 'p' twice with other tensors"):
        ember.load(path, weights_only=False)


@pytest.mark.parametrize("item", [1, -1, "0", None])
def test_bad_items_of_a_joint_pickle(item, tmp_path):
    data = _pickle_of_tensor_0()  # (a list of one item)
    tree = {"x": {"$pickle": "p", "type": "builtins.str", "item": item,
                  "tensors": [{"$tensor": "a"}]}}
    path = ember_file(tmp_path, tree, {"p": data, "a": ember.ones(1)}, version=5)
    if item is None:  # (no item: the whole pickle, as a file of version 4 or less)
        assert ember.load(path, weights_only=False)["x"][0].tolist() == [1.0]
        return
    with pytest.raises(CheckpointError, match=f"is item {item!r} of pickle 'p', which does not"):
        ember.load(path, weights_only=False)
