"""Reading Tensor attributes on a sparse tensor (review49f F1): probing never crashes."""

import numpy as np
import pytest
import torch

import ember
from ember.sparse.tensor import SparseUnsupported

LAYOUTS = ["to_sparse", "to_sparse_csr"]


def _pair(to: str) -> tuple:
    d = [[0.0, 1.0], [2.0, 0.0]]
    return getattr(ember.tensor(d), to)(), getattr(torch.tensor(d), to)()


@pytest.mark.parametrize("to", LAYOUTS)
def test_hasattr_and_getattr_with_a_default_never_raise(to):
    s, _ = _pair(to)
    for name in dir(ember.Tensor):
        if name == "imag":  # (a real tensor's imag raises, as torch's: RuntimeError)
            continue
        hasattr(s, name)
        getattr(s, name, None)


@pytest.mark.parametrize("to", LAYOUTS)
def test_cheap_properties_are_torchs(to):
    s, t = _pair(to)
    from ember.sparse.tensor import _FROM_VALUES

    for name in _FROM_VALUES:
        assert getattr(s, name) == getattr(t, name), name
    np.testing.assert_array_equal(s.mT.to_dense().numpy(), t.mT.to_dense().numpy())
    c, tc = (getattr(x.tensor([[0, 1 + 2j], [2, 0]]), to)() for x in (ember, torch))
    np.testing.assert_array_equal(c.mH.to_dense().numpy(), tc.mH.to_dense().numpy())
    assert c.mH.layout.name == str(tc.mH.layout).split(".")[1]
    np.testing.assert_array_equal(c.H.to_dense().numpy(), tc.H.to_dense().numpy())
    assert s.mT.layout == s.t().layout
    assert s.data.layout == s.layout and not s.data.requires_grad


def test_t_reverses_a_coo_tensors_dims_and_is_refused_by_another_layout():
    d = np.arange(24.0).reshape(2, 3, 4) % 3
    s, t = ember.tensor(d).to_sparse(), torch.tensor(d).to_sparse()
    np.testing.assert_array_equal(s.T.to_dense().numpy(), t.T.to_dense().numpy())
    assert not hasattr(ember.tensor(d[0]).to_sparse_csr(), "T")  # (torch raises)
    assert not hasattr(s, "H")  # (3-D)
    with pytest.raises(NotImplementedError, match="T: not supported for ember.sparse_csr"):
        _ = ember.tensor(d[0]).to_sparse_csr().T


def test_a_dense_property_read_is_attribute_error_and_a_method_call_is_not():
    s, _ = _pair("to_sparse")
    with pytest.raises(AttributeError, match="nbytes: not supported"):
        _ = s.nbytes
    with pytest.raises(SparseUnsupported, match="stride") as info:
        s.stride()
    assert not isinstance(info.value, AttributeError)
