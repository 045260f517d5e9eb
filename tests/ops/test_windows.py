"""Window functions and logspace against PyTorch."""

import pytest
import torch

import ember
from tests.ops.optable import assert_same, raises_like_torch

WINDOWS = [("hann_window", {}), ("hamming_window", {}), ("hamming_window", {"alpha": 0.5}),
           ("blackman_window", {}), ("bartlett_window", {}), ("kaiser_window", {}),
           ("kaiser_window", {"beta": 3.5})]


@pytest.mark.parametrize("name,kw", WINDOWS)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, kw, n, periodic):
    for dt in ("float32", "float64"):
        mine = getattr(ember, name)(n, periodic, dtype=getattr(ember, dt), **kw)
        ref = getattr(torch, name)(n, periodic, dtype=getattr(torch, dt), **kw)
        assert_same(mine, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,kw", WINDOWS)
def test_windows_take_a_strided_layout_as_torch(name, kw):
    # (a TypeError before: the signal.windows functions took layout=, these did not)
    assert_same(getattr(ember, name)(5, True, layout=ember.strided, **kw),
                getattr(torch, name)(5, True, layout=torch.strided, **kw), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match=f"{name}: makes dense tensors only"):
        getattr(ember, name)(5, layout=ember.sparse_coo, **kw)


def test_window_arguments():
    assert ember.hann_window(3, requires_grad=True).requires_grad
    assert ember.hann_window(4).dtype is ember.float32
    raises_like_torch(lambda lib: lib.hann_window(3, dtype=lib.int64), ember.DTypeError,
                      "floating point dtype")
    raises_like_torch(lambda lib: lib.blackman_window(-1), ember.ShapeError, "non-negative")
    raises_like_torch(lambda lib: lib.hann_window(4.0), TypeError, "must be an int")


def test_blackman_ends_are_exactly_zero():
    mine = ember.blackman_window(6, False, dtype=ember.float64)
    assert mine[0].item() == mine[-1].item() == 0.0
    assert_same(mine, torch.blackman_window(6, False, dtype=torch.float64), atol=1e-15)


@pytest.mark.parametrize("args,kw", [((0, 2, 3), {}), ((-1, 2, 5), {"base": 2}),
                                     ((0, 3, 4), {"dtype": "int32"}), ((0, 1, 0), {}),
                                     ((0, 1, 1), {}), ((1, -2, 6), {"dtype": "float64"})])
def test_logspace(args, kw):
    kt = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
    ke = {k: getattr(ember, v) if k == "dtype" else v for k, v in kw.items()}
    assert_same(ember.logspace(*args, **ke), torch.logspace(*args, **kt), rtol=1e-6)


def test_logspace_errors():
    raises_like_torch(lambda lib: lib.logspace(0, 1, -1), ember.ShapeError, "non-negative")


NAMES = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("periodic", [None, 0, 1, "yes", 2.0])
def test_periodic_must_be_a_bool_as_torch(name, periodic):
    # (None and 0 gave the symmetric window, 1/"yes"/2.0 the periodic one, silently)
    raises_like_torch(lambda lib: getattr(lib, name)(4, periodic), TypeError,
                      "periodic must be a bool")


@pytest.mark.parametrize("name", NAMES)
def test_a_bool_length_is_refused_as_torch(name):
    # (True was read as a length of 1)
    raises_like_torch(lambda lib: getattr(lib, name)(True), TypeError, "must be an int")
    # (torch.signal.windows.hann takes it, as before)
    assert_same(ember.signal.windows.hann(True), torch.signal.windows.hann(True))


@pytest.mark.parametrize("name", NAMES)
def test_windows_take_pin_memory_as_torch(name):
    assert_same(getattr(ember, name)(5, pin_memory=False),
                getattr(torch, name)(5, pin_memory=False), rtol=1e-6, atol=1e-6)
