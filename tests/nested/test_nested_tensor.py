"""ember.nested against torch.nested (layout torch.jagged): construction, metadata, padding,
and errors."""

import doctest
import importlib
import re

import numpy as np
import pytest
import torch

import ember
from ember.nested import RaggedDim
from tests.nested.helpers import pair, parts


def test_metadata_matches_torch():
    nt, tnt = pair()
    assert nt.dim() == tnt.dim() == 3 and nt.ndim == 3
    assert nt.is_nested and nt.layout is ember.jagged and len(nt) == 3
    assert re.fullmatch(r"\(3, j\d+, 4\)", str(nt.shape))
    assert nt.size(0) == 3 and nt.size(-1) == 4
    assert isinstance(nt.size(1), RaggedDim) and nt.size(1) == nt.shape[1]
    np.testing.assert_array_equal(nt.offsets().numpy(), tnt.offsets().numpy())
    assert nt.lengths() is None and tnt.lengths() is None
    np.testing.assert_allclose(nt.values().numpy(), tnt.values().numpy())
    torch_repr = re.sub(r"j\d+", "j", repr(tnt))
    assert re.sub(r"j\d+", "j", repr(nt)) == torch_repr
    for a, b in zip(nt.unbind(), tnt.unbind()):
        np.testing.assert_allclose(a.numpy(), b.numpy())


def test_ragged_size_is_no_number():
    nt, _ = pair()
    with pytest.raises(TypeError, match="ragged dimension j.* no single size"):
        range(nt.size(1))
    with pytest.raises(IndexError, match="out of range"):
        nt.size(3)


def test_index_out_of_range_names_the_batch():
    nt, _ = pair()
    np.testing.assert_array_equal(nt[-1].numpy(), nt.unbind()[2].numpy())
    with pytest.raises(IndexError, match=r"index 3 is out of range for a nested tensor of 3 "
                                         r"sequences"):
        nt[3]


def test_one_offsets_tensor_one_ragged_size():
    nt, _ = pair()
    other = ember.nested.nested_tensor_from_jagged(nt.values() * 2, nt.offsets())
    assert other.shape == nt.shape
    (nt + other).values()  # combine: one structure
    fresh = ember.nested.nested_tensor(parts())
    assert fresh.shape[1] != nt.shape[1]
    with pytest.raises(RuntimeError, match="different ragged structures"):
        nt + fresh


def test_from_jagged_offsets_and_lengths():
    values = ember.arange(10.0).reshape(5, 2)
    by_lengths = ember.nested.nested_tensor_from_jagged(values, lengths=ember.tensor([2, 3]))
    t = torch.nested.nested_tensor_from_jagged(torch.arange(10.0).reshape(5, 2),
                                               lengths=torch.tensor([2, 3]))
    np.testing.assert_array_equal(by_lengths.offsets().numpy(), t.offsets().numpy())
    assert by_lengths.values() is values
    hinted = ember.nested.nested_tensor_from_jagged(values, ember.tensor([0, 2, 5]),
                                                    max_seqlen=4)
    assert tuple(hinted.to_padded_tensor(0.0).shape) == (2, 4, 2)
    with pytest.raises(NotImplementedError, match="holes"):
        ember.nested.nested_tensor_from_jagged(values, ember.tensor([0, 2, 5]),
                                               lengths=ember.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"end at 5"):
        ember.nested.nested_tensor_from_jagged(values, ember.tensor([0, 2, 4]))
    with pytest.raises(ValueError, match="offsets or lengths"):
        ember.nested.nested_tensor_from_jagged(values)


def test_constructors_check_their_input():
    with pytest.raises(ValueError, match="layout=ember.jagged"):
        ember.nested.nested_tensor(parts(), layout=ember.strided)
    with pytest.raises(ember.ShapeError, match="one ragged dimension only"):
        ember.nested.nested_tensor([ember.zeros(2, 3), ember.zeros(3, 4)])
    with pytest.raises(ValueError, match="at least one tensor"):
        ember.nested.nested_tensor([])
    nt = ember.nested.nested_tensor([[1.0, 2.0], [3.0]], dtype=ember.float64)
    assert nt.dtype is ember.float64 and tuple(nt.values().shape) == (3,)


def test_as_nested_tensor_of_dense_and_nested():
    dense = ember.arange(12.0).reshape(2, 3, 2)
    nt = ember.nested.as_nested_tensor(dense)
    t = torch.nested.as_nested_tensor(torch.arange(12.0).reshape(2, 3, 2), layout=torch.jagged)
    np.testing.assert_array_equal(nt.offsets().numpy(), t.offsets().numpy())
    np.testing.assert_array_equal(nt.to_padded_tensor(0.0).numpy(), dense.numpy())
    assert ember.nested.as_nested_tensor(nt, dtype=ember.float64).dtype is ember.float64


def test_masked_select_matches_torch():
    x = np.arange(12.0).reshape(3, 4)
    mask = x % 3 != 1
    nt = ember.nested.masked_select(ember.tensor(x), ember.tensor(mask))
    t = torch.nested.masked_select(torch.tensor(x), torch.tensor(mask))
    np.testing.assert_array_equal(nt.offsets().numpy(), t.offsets().numpy())
    np.testing.assert_array_equal(nt.values().numpy(), t.values().numpy())


@pytest.mark.parametrize("output_size", [None, (3, 6, 4)])
def test_to_padded_tensor_matches_torch(output_size):
    nt, tnt = pair()
    got = ember.nested.to_padded_tensor(nt, -1.0, output_size)
    want = torch.nested.to_padded_tensor(tnt, -1.0, output_size)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(ember.ShapeError, match="output_size"):
        nt.to_padded_tensor(0.0, (3, 2, 4))
    with pytest.raises(ember.ShapeError, match="output_size"):
        nt.to_padded_tensor(0.0, (3, 5, 7))


def test_unsupported_ops_name_the_op_and_layout():
    nt, _ = pair()
    with pytest.raises(NotImplementedError, match=r"cumsum: .*ember.jagged.*to_padded_tensor"):
        nt.cumsum(1)
    with pytest.raises(NotImplementedError, match=r"cumsum: .*ember.jagged"):
        ember.cumsum(nt, 1)
    with pytest.raises(NotImplementedError, match=r"dist: .*ember.jagged.*to_padded_tensor"):
        ember.dist(ember.ones(4), nt)  # (fmax(dense, nt) broadcasts, as in PyTorch)
    with pytest.raises(NotImplementedError, match=r"matmul: .*ember.jagged"):
        ember.ones(2, 3) @ nt
    for op in (ember.squeeze, ember.unsqueeze):  # at the batch dimension, as PyTorch
        with pytest.raises(RuntimeError, match=rf"^{op.__name__}: .*batch dimension"):
            op(nt, 0)
    with pytest.raises(NotImplementedError, match=r"conversion to an array: .*ember.jagged"):
        np.asarray(nt)
    with pytest.raises(RuntimeError, match="batch dimension"):
        nt.sum(0)
    with pytest.raises(RuntimeError, match="ragged dimension"):
        nt.chunk(2, 1)
    with pytest.raises(AttributeError):
        getattr(nt, "no_such_attribute")  # noqa: B009


def test_indexing_and_comparisons():
    nt, tnt = pair()
    np.testing.assert_array_equal(nt[2].numpy(), tnt[2].numpy())
    np.testing.assert_array_equal((nt > 0).values().numpy(), (tnt > 0).values().numpy())
    assert (0.5 >= nt).dtype is ember.bool
    with pytest.raises(NotImplementedError, match="indexing"):
        nt[:, 0]
    with pytest.raises(RuntimeError, match=r"^stack: .*batch dimension"):
        ember.stack([nt, nt])
    assert not hasattr(nt, "_data")


@pytest.mark.parametrize("name", ["ember.nested", "ember.nested.creation",
                                  "ember.nested.nested_tensor", "ember.nested.ragged",
                                  "ember.nested.attention", "ember.nested.elementwise",
                                  "ember.nested.dims", "ember.layouts"])
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name),
                             extraglobs={"ember": ember, "F": ember.nn.functional},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_transposed_layout_pads_unbinds_and_sums_like_torch():
    nt, tnt = pair()
    x, t = (n.unflatten(-1, (2, 2)).transpose(1, 2) for n in (nt, tnt))  # (B, 2, j, 2)
    np.testing.assert_array_equal(x.to_padded_tensor(0.0).numpy(),
                                  t.to_padded_tensor(0.0).numpy())
    for a, b in zip(x.unbind(), t.unbind()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(x.sum(2).numpy(), t.sum(2).numpy(), rtol=1e-12)
    np.testing.assert_array_equal((x + ember.ones(2)).values().numpy(),
                                  (t + torch.ones(2)).values().numpy())


def test_nested_tensor_takes_pin_memory():
    # torch.nested.nested_tensor's keyword (ember: TypeError unexpected keyword)
    seqs = [ember.ones(2, 3), ember.ones(1, 3)]
    nt = ember.nested.nested_tensor(seqs, pin_memory=False)
    want = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)], layout=torch.jagged,
                                      pin_memory=False)
    np.testing.assert_array_equal(nt.values().numpy(), want.values().numpy())
    with pytest.raises(ember.errors.DeviceError, match="pin_memory"):
        ember.nested.nested_tensor(seqs, pin_memory=True)  # (no accelerator, as torch's)


@pytest.mark.parametrize("name", ["itemsize", "nbytes", "is_meta", "is_quantized", "is_sparse",
                                  "is_mps"])
def test_attributes_answered_by_the_values_match_torch(name):
    # they raised UnsupportedOpError; torch's jagged nested tensor answers them
    nt, tnt = pair()
    assert getattr(nt, name) == getattr(tnt, name)


def test_data_retains_grad_real_and_imag_as_torch():
    nt, tnt = pair(requires_grad=True)
    y, ty = nt * 2, tnt * 2
    y.retain_grad()
    ty.retain_grad()
    assert (nt.retains_grad, y.retains_grad) == (tnt.retains_grad, ty.retains_grad)
    assert not nt.data.requires_grad and nt.data.shape == nt.shape
    np.testing.assert_array_equal(nt.real.values().detach().numpy(),
                                  tnt.real.values().detach().numpy())
    parts_ = [np.array([[1 + 2j, 3 - 1j]]), np.array([[0.5j, 2], [1, -1j]])]
    c = ember.nested.nested_tensor([ember.tensor(a) for a in parts_])
    tc = torch.nested.nested_tensor([torch.tensor(a) for a in parts_], layout=torch.jagged)
    np.testing.assert_array_equal(c.imag.values().numpy(), tc.values().imag.numpy())
    with pytest.raises(ember.errors.DTypeError, match="imag"):
        nt.imag  # noqa: B018 - (a real tensor's, as torch refuses)
