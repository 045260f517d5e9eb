"""review56m1's findings on the mends of review56g (io): crafted files (each test fails before
its fix)."""
import pickle

import numpy as np
import pytest

import ember
from ember import tensor_copy as tc
from ember.errors import CheckpointError
from ember.tensor import _unpickled
from tests.io.test_review56g_fixes import _ember_file, _zip_of


class _Sub(ember.Tensor):  # a tensor subclass the user allows, as for torch.load
    __slots__ = ("scale",)


class _Crafted:
    """Pickles as ``fn(*args)``, then BUILD ``state`` when given (what a crafted file holds)."""

    def __init__(self, fn, args, state=None):
        self.fn, self.args, self.state = fn, args, state

    def __reduce__(self):
        return (self.fn, self.args) if self.state is None else (self.fn, self.args, self.state)


_F4 = (bytes(16), "cpu", False, ("<f4", (4,), (4,), 0))


@pytest.mark.parametrize("fn, args, state", [
    (_Sub, (), (None, {"_data": bytearray(b"abc"), "_device": "x"})),
    (_Sub, (), {"_node": 1}),
    (_Sub, (), (None, {"_view": "v", "_hooks": 3})),
    (tc.rebuilt, (*_F4, _Sub), (None, {"_data": "zz"})),
    (_Sub, (), (None, {1: 2})),
    (_Sub, (), "not a dict"),
])
@pytest.mark.parametrize("kind", ["ember", "torch"])
def test_build_state_on_an_allowed_tensor_subclass_cannot_set_tensor_slots(fn, args, state,
                                                                           kind):
    # review56m1 item 1: pickle's BUILD set _data (a bytearray, a str), _device, _view ...
    # of an allowed subclass, past rebuilt's checks
    if kind == "torch" and fn is tc.rebuilt:
        pytest.skip("a torch file may not name ember.tensor_copy.rebuilt")
    data = pickle.dumps(_Crafted(fn, args, state), protocol=4 if kind == "ember" else 2)
    with ember.serialization.safe_globals([_Sub]), pytest.raises(CheckpointError,
                                                                  match="state"):
        ember.load(_ember_file(data) if kind == "ember" else _zip_of(data))


def test_build_state_of_a_subclass_own_attributes_still_loads():
    data = pickle.dumps(_Crafted(_Sub, (), ({"note": "n"}, {"scale": 2.0})), protocol=4)
    with ember.serialization.safe_globals([_Sub]):
        t = ember.load(_ember_file(data))
    assert type(t) is _Sub and t.note == "n" and t.scale == 2.0


def test_an_allowed_tensor_subclass_round_trips(tmp_path):
    t = ember.arange(4.0).as_subclass(_Sub)
    t.scale, t.note = 3.0, {"a": 1}
    ember.save({"t": t, "w": ember.ones(2, requires_grad=True)}, tmp_path / "f.emb")
    out = ember.load(tmp_path / "f.emb", weights_only=False)  # (numpy arrays in the pickle)
    assert type(out["t"]) is _Sub and out["t"].scale == 3.0 and out["t"].note == {"a": 1}
    np.testing.assert_array_equal(out["t"].numpy(), np.arange(4.0, dtype=np.float32))
    assert out["w"].requires_grad


@pytest.mark.parametrize("attributes", [{"real": 5.0}, {"sum": 3}, {"grad": None}, {"T": 1}])
def test_rebuilt_attributes_cannot_name_what_tensor_defines(attributes):
    # review56m1 item 3: 'real''s setter wrote 5.0 into the data at load; 'sum' shadowed the
    # method (t.sum() then raised "'int' object is not callable")
    args = (bytearray(16), "cpu", False, ("<c8", (2,), (8,), 0), _Sub, attributes)
    with ember.serialization.safe_globals([_Sub]), pytest.raises(CheckpointError,
                                                                  match="attributes"):
        ember.load(_ember_file(pickle.dumps(_Crafted(tc.rebuilt, args), protocol=4)))


@pytest.mark.parametrize("state", [{"sum": 3}, (None, {"real": 5.0})])
def test_build_state_cannot_name_what_tensor_defines(state):
    data = pickle.dumps(_Crafted(_Sub, (), state), protocol=4)
    with ember.serialization.safe_globals([_Sub]), pytest.raises(CheckpointError,
                                                                  match="state"):
        ember.load(_ember_file(data))


@pytest.mark.parametrize("fn, args", [
    (tc.rebuilt, (bytes(16), "cpu", True, ("<i4", (4,), (4,), 0))),
    (tc.rebuilt, (bytes(16), "cpu", "yes", ("<f4", (4,), (4,), 0))),
    (tc.rebuilt, (bytes(2), "cpu", 1, ("|b1", (2,), (1,), 0))),
    (_unpickled, (np.zeros(2, np.int64), "cpu", True)),
])
def test_a_pickled_requires_grad_is_a_bool_and_true_only_for_floating_dtypes(fn, args):
    # review56m1 item 2: an int32 tensor loaded with requires_grad=True (torch: "Only Tensors
    # of floating point ... can require gradients"), and 'yes' was stored as the str
    with pytest.raises(CheckpointError, match="requires_grad"):
        ember.load(_ember_file(pickle.dumps(_Crafted(fn, args), protocol=4)),
                   weights_only=False)


@pytest.mark.parametrize("dtype", [ember.float32, ember.complex64, ember.int64])
def test_pickled_tensors_keep_requires_grad(dtype):
    t = ember.ones(3, dtype=dtype, requires_grad=dtype != ember.int64)
    out = ember.load(_ember_file(pickle.dumps(t[1:], protocol=4)), weights_only=False)
    assert out.requires_grad is (dtype != ember.int64) and out.dtype == dtype
