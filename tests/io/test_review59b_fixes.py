"""review59b's findings in the pickle readers: copyreg extension codes (EXT1/2/4) refused,
Python 2 names mapped as pickle maps them in torch files, get_unsafe_globals_in_checkpoint's
errors and file position, and a meta tensor's requires_grad."""

import collections
import copyreg
import io
import json
import pickle
import zipfile

import pytest
import torch

import ember
from ember.errors import CheckpointError
from ember.io import checkpoint
from ember.serialization import get_unsafe_globals_in_checkpoint as unsafe

HIT = []


def boom(*args):  # stands in for a dangerous function some code registered
    HIT.append(args)
    return "PWNED"


class Raw:  # a pickle_module whose dumps writes the given bytes
    def __init__(self, data):
        self.data = data

    def dumps(self, obj, protocol=None):
        return self.data


class Obj:  # pickled (not data), so ember.save stores a $pickle blob
    pass


@pytest.fixture(autouse=True)
def _clean_allow_lists():
    ember.serialization.clear_safe_globals()
    yield
    ember.serialization.clear_safe_globals()


def ember_file(data):
    buf = io.BytesIO()
    ember.save({"o": Obj(), "w": ember.ones(2)}, buf, pickle_module=Raw(data))
    return io.BytesIO(buf.getvalue())


def torch_file(data):
    buf = io.BytesIO()
    torch.save({"w": torch.ones(1)}, buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for n in src.namelist():
            dst.writestr(n, data if n.endswith("/data.pkl") else src.read(n))
    return io.BytesIO(out.getvalue())


@pytest.fixture
def extension():
    """Code 240 names boom in copyreg's registry, and an unpickle elsewhere cached it."""
    copyreg.add_extension(__name__, "boom", 240)
    try:
        assert pickle.loads(b"\x80\x02\x82\xf0)R.") == "PWNED"
        HIT.clear()
        yield
    finally:
        copyreg.remove_extension(__name__, "boom", 240)
        HIT.clear()


EXTS = [b"\x80\x02\x82\xf0)R.", b"\x80\x02\x83\xf0\x00)R.", b"\x80\x02\x84\xf0\x00\x00\x00)R."]


@pytest.mark.parametrize("data", EXTS)
@pytest.mark.parametrize("make", [ember_file, torch_file])
def test_extension_codes_are_refused(extension, make, data):
    with pytest.raises(CheckpointError, match="extension code"):
        ember.load(make(data))
    with pytest.raises(CheckpointError, match="^[^(]*: the pickle names a global by a copyreg "
                       "extension code"):  # (said as it is, not as "a damaged pickle (...)")
        unsafe(make(data))
    assert HIT == []
    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand"):  # torch refuses
        torch.load(torch_file(data))


def saved_by_torch(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


@pytest.mark.parametrize("obj", [range(3), collections.UserDict(a=1)])
def test_python2_names_in_torch_files(obj):
    # torch.save writes protocol 2: range is __builtin__.xrange, UserDict UserDict.IterableUserDict
    data = saved_by_torch({"x": obj})
    name = f"{type(obj).__module__}.{type(obj).__qualname__}"
    assert unsafe(io.BytesIO(data)) == [name]
    assert torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == [name]
    with ember.serialization.safe_globals([type(obj)]):
        assert unsafe(io.BytesIO(data)) == []
        assert ember.load(io.BytesIO(data))["x"] == obj
    with torch.serialization.safe_globals([type(obj)]):
        assert torch.load(io.BytesIO(data))["x"] == obj


@pytest.mark.parametrize(("data", "name"), [
    (b"\x80\x02c__builtin__\neval\nX\x03\x00\x00\x001+1\x85R.", "builtins.eval"),
    (b"\x80\x02ccopy_reg\n_reconstructor\n.", "copyreg._reconstructor"),
    (b"\x80\x02cwhichdb\nwhichdb\n.", "dbm.whichdb")])  # (pickle's rule: one mapping, not two)
def test_python2_names_listed_as_torch(data, name):
    assert torch.serialization.get_unsafe_globals_in_checkpoint(torch_file(data)) == [name]
    assert unsafe(torch_file(data)) == [name]
    assert unsafe(ember_file(data)) == [name]
    with pytest.raises(pickle.UnpicklingError, match=name):
        ember.load(torch_file(data))
    with pytest.raises(pickle.UnpicklingError, match=name):
        ember.load(ember_file(data))


def test_deep_tree_listing_is_a_checkpoint_error():
    depth = 3000
    doc = json.dumps({"format": checkpoint.FORMAT, "version": 1, "tree": "X"})
    doc = doc.replace('"X"', '{"x": ' * depth + "1" + "}" * depth)
    buf = io.BytesIO()
    ember.io.save_file({"a": ember.zeros(1)}, buf, metadata={checkpoint.TREE_KEY: doc})
    for read in (ember.load, unsafe):
        with pytest.raises(CheckpointError, match="nested too deeply"):
            read(io.BytesIO(buf.getvalue()))


P4 = b"\x80\x04"
OS, SYSTEM, X = b"\x8c\x02os", b"\x8c\x06system", b"\x8c\x01x"


@pytest.mark.parametrize(("data", "name"), [
    (P4 + OS + SYSTEM + X + b"0\x93.", "os.system"),  # POP
    (P4 + OS + SYSTEM + b"2" + X + b"0\x93.", "system.system"),  # DUP
    (P4 + OS + b"(" + X + b"1" + SYSTEM + b"\x93.", "os.system"),  # MARK ... POP_MARK
    (P4 + OS + b"(" + X + b"X\x01\x00\x00\x00yt0" + SYSTEM + b"\x93.", "os.system"),  # TUPLE
    (P4 + OS + b"\x94" + X + b"0h\x00" + SYSTEM + b"\x93.", "os.system"),  # MEMOIZE, GET
    (b"(S'1+1'\ni__builtin__\neval\n.", "builtins.eval"),  # INST, protocol 0
    (b"(c__builtin__\neval\nS'1+1'\no.", "builtins.eval"),  # OBJ
    (b"\x80\x02ca b\nc\n.", "a b.c"), (b"(ia\nb c\n.", "a.b c")])  # (a space in a name)
def test_listing_models_the_stack(data, name):
    assert unsafe(ember_file(data)) == [name]
    with pytest.raises(pickle.UnpicklingError, match=name):  # what the load refuses
        ember.load(ember_file(data))


@pytest.mark.parametrize("data", [
    P4 + b"\x8c\x08builtins\x8c\x03str\x93" + OS + b"\x85R" + SYSTEM + b"\x93.",  # a computed name
    P4 + b"\x8c\x02os0" + SYSTEM + b"\x93."])  # a stack underflow
def test_unlistable_pickle_is_an_error(data):
    with pytest.raises(CheckpointError, match="statically"):
        unsafe(ember_file(data))


@pytest.mark.parametrize("save", [ember.save, torch.save])
def test_listing_puts_the_file_position_back(save):
    buf = io.BytesIO()
    save({"w": (ember if save is ember.save else torch).ones(2)}, buf)
    buf.seek(0)
    assert unsafe(buf) == []
    assert buf.tell() == 0
    assert ember.load(buf)["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("flag", [b"\x88", b"\x89", b"N", b"K\x01", b"K\x00", b"U\x01y"])
def test_meta_tensor_requires_grad_is_a_bool(flag):
    data = (b"\x80\x02ctorch._utils\n_rebuild_meta_tensor_no_storage\n(ctorch\nfloat32\n"
            b"K\x02\x85K\x01\x85" + flag + b"tR.")
    try:
        expected = torch.load(torch_file(data)).requires_grad
    except TypeError:  # (torch: "argument 'requires_grad' must be bool, not int")
        with pytest.raises(CheckpointError, match="requires_grad"):
            ember.load(torch_file(data))
        return
    t = ember.load(torch_file(data))
    assert (t.device.type, t.shape, t.requires_grad) == ("meta", (2,), expected)


@pytest.mark.parametrize("data", [
    P4 + OS + b"(" + SYSTEM + b"\x93.",  # STACK_GLOBAL's names across a MARK
    P4 + OS + b"(2" + SYSTEM + b"\x93.",  # DUP of an empty MARK frame
    P4 + OS + b"(\x94" + SYSTEM + b"\x93.",  # MEMOIZE of an empty MARK frame
    P4 + OS + b"(\x85" + SYSTEM + b"\x93.",  # TUPLE1 across a MARK
    P4 + OS + b"((X\x01\x00\x00\x00yll" + SYSTEM + b"\x93."])  # one LIST too many
def test_listing_stops_at_marks(data):
    with pytest.raises(CheckpointError, match="statically"):
        unsafe(ember_file(data))


@pytest.mark.parametrize("make", [ember_file, torch_file])
def test_listing_is_linear_in_mark_ops(make):
    # 200k values, then 40k times EMPTY_LIST MARK APPENDS POP: 360 KB that pickle reads in
    # ms; a listing that scanned the stack for each MARK took minutes (review rm59b item 1)
    data = b"\x80\x02" + b"N" * 200_000 + b"](e0" * 40_000 + b"cos\nsystem\n."
    assert unsafe(make(data)) == ["os.system"]
