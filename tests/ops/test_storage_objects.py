"""untyped_storage / storage, set_, is_set_to and the deprecated resize forms, against torch."""

import warnings

import numpy as np
import pytest
import torch

import ember


def test_untyped_storage_matches_torch():
    x, tx = ember.arange(6.0), torch.arange(6.0)
    s, ts = x[2:].untyped_storage(), tx[2:].untyped_storage()
    assert s.nbytes() == ts.nbytes() and len(s) == len(ts) and s.size() == ts.size()
    assert s.tolist() == ts.tolist() and s[5] == ts[5] and s.element_size() == 1
    assert s.data_ptr() == x.data_ptr() and s.clone().data_ptr() != s.data_ptr()
    assert ember.is_storage(s) and not ember.is_storage(x)


def test_typed_storage_warns_and_reads_elements():
    x, tx = ember.arange(6.0)[1:], torch.arange(6.0)[1:]
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = x.storage()
    with warnings.catch_warnings():  # (torch warns once per process: not checked here)
        warnings.simplefilter("ignore")
        ts = tx.storage()
    assert s.size() == ts.size() and s.tolist() == ts.tolist() and s[2] == ts[2]
    assert s.dtype is ember.float32 and s.untyped().nbytes() == ts.untyped().nbytes()


def test_set_and_is_set_to_match_torch():
    y, ty = ember.arange(4.0), torch.arange(4.0)
    x, tx = ember.zeros(3), torch.zeros(3)
    x.set_(y), tx.set_(ty)
    assert x.shape == tx.shape and x.is_set_to(y) == tx.is_set_to(ty)
    assert y[1:].is_set_to(y) == ty[1:].is_set_to(ty) is False
    x.add_(1)
    assert y.tolist() == [1.0, 2.0, 3.0, 4.0]  # one memory
    x.set_(y.untyped_storage(), 1, (2, 2), (1, 1))
    tx.set_(ty.untyped_storage(), 1, (2, 2), (1, 1))
    np.testing.assert_array_equal(x.numpy(), tx.numpy() + 1)
    x.set_(), tx.set_()
    assert x.shape == tx.shape


def test_set_to_a_storage_window_writes_through_as_torch():
    for m in (ember, torch):
        base = m.arange(6.0)
        y = m.zeros(1)
        y.set_(base.untyped_storage(), 1, (2, 2), (2, 1))
        y[0, 0] = 100.0
        base[2] = -1.0
        y.add_(1)
        assert base.tolist() == [0.0, 101.0, 0.0, 4.0, 5.0, 5.0]
        assert y.tolist() == [[101.0, 0.0], [4.0, 5.0]] and (y._version, base._version) == (3, 1)
    overlapping = ember.zeros(1).set_(ember.arange(6.0).untyped_storage(), 0, (3, 2), (1, 1))
    with pytest.raises(ember.GradError, match="read-only"):
        overlapping.add_(1)  # (a difference: torch writes each shared address in turn)


def test_set_refusals():
    with pytest.raises(ember.DTypeError, match="dtype float32 to a tensor of dtype int64"):
        ember.zeros(2).set_(ember.arange(3))
    with pytest.raises(ember.GradError, match="requires grad"):
        ember.zeros(2, requires_grad=True).set_(ember.zeros(3))
    with pytest.raises(ember.ShapeError, match="needs 5 elements; the storage has 4"):
        ember.zeros(1).set_(ember.zeros(4).untyped_storage(), 1, (4,))


def test_deprecated_resize_forms():
    x = ember.arange(6.0, requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(2, 3)
    assert y.shape == (2, 3)
    y.sum().backward()
    assert x.grad.tolist() == [1.0] * 6
    with pytest.warns(UserWarning, match="resize_as is deprecated"):
        assert x.resize_as(ember.zeros(3, 2)).shape == (3, 2)
    with pytest.raises(ember.ShapeError, match="keeps the number of elements"), \
            pytest.warns(UserWarning):
        x.resize(4)


@pytest.mark.parametrize("make", [lambda: np.arange(10.0)[1:9].reshape(4, 2),
                                  lambda: np.arange(24.0).reshape(4, 6)[1:, 2:4],
                                  lambda: np.arange(12.0).reshape(3, 4).T[1:]],
                         ids=["slice", "window", "transposed"])
def test_from_numpy_storage_starts_at_the_array_as_torch(make):
    a = make()
    x, tx = ember.from_numpy(a), torch.from_numpy(a)
    assert x.storage_offset() == tx.storage_offset() == 0
    assert x[1:].storage_offset() == tx[1:].storage_offset()
    assert x.untyped_storage().nbytes() == tx.untyped_storage().nbytes()
    assert x.untyped_storage().tolist() == tx.untyped_storage().tolist()
    assert x.as_strided((2,), (1,), 1).tolist() == tx.as_strided((2,), (1,), 1).tolist()
    x[0, 0] = 99.0  # (still the array's memory)
    assert a[0, 0] == 99.0 and x.data_ptr() == tx.data_ptr()


def test_view_as_complex_of_an_offset_numpy_slice_as_torch():
    a = np.arange(10.0)[1:9].reshape(4, 2)
    got = ember.view_as_complex(ember.from_numpy(a))
    np.testing.assert_array_equal(got.numpy(), torch.view_as_complex(torch.from_numpy(a)).numpy())
