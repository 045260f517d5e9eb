"""``ember.cat``/``ember.stack`` of quantized tensors against PyTorch's quantized kernels
(mend65b: cat raised a promote_types DTypeError, stack a QuantizedOperandError)."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.quant import QuantizedOperandError
from tests.quant.helpers import TORCH_NAMES

X = np.array([[-1.0, 0.5, 2.0], [0.3, 0.26, -0.7]], np.float32)


def both(scale, zero_point, dtype, factor=1.0):
    x = X * np.float32(factor)
    return (ember.quantize_per_tensor(ember.tensor(x), scale, zero_point, dtype),
            torch.quantize_per_tensor(torch.tensor(x), scale, zero_point, TORCH_NAMES[dtype]))


def assert_same(e, t):
    assert e.dtype is getattr(ember, str(t.dtype).removeprefix("torch."))
    assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())


@pytest.mark.parametrize("join", ["cat", "stack"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype,zero_point", [(ember.qint8, 0), (ember.quint8, 10),
                                              (ember.qint32, -3)])
def test_join_same_params_as_torch(join, dim, dtype, zero_point):
    (e, t), (e2, t2) = both(0.1, zero_point, dtype), both(0.1, zero_point, dtype, 1.5)
    assert_same(getattr(ember, join)([e, e2], dim), getattr(torch, join)([t, t2], dim))
    assert_same(getattr(ember, join)((e.t(), e2.t()), dim),
                getattr(torch, join)((t.t(), t2.t()), dim))


@pytest.mark.parametrize("join", ["cat", "stack"])
def test_join_other_params_requantized_with_the_first_as_torch(join):
    (e, t), (e2, t2), (e3, t3) = both(0.1, 0, ember.qint8), both(0.2, 3, ember.qint8, 2.0), \
        both(0.1, 5, ember.qint8)
    for es, ts in (([e, e2, e3], [t, t2, t3]), ([e2, e], [t2, t])):
        with pytest.warns(UserWarning, match="scales and zero points differ"):
            out = getattr(ember, join)(es, 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_same(out, getattr(torch, join)(ts, 1))


def test_cat_names_and_legacy_empty_as_torch():
    (e, t), (z, tz) = both(0.1, 0, ember.qint8), both(0.1, 0, ember.qint8, 0.0)
    empty = ember.quantize_per_tensor(ember.zeros(0), 0.1, 0, ember.qint8)
    assert_same(ember.cat([e, empty]), torch.cat([t, torch.quantize_per_tensor(
        torch.zeros(0), 0.1, 0, torch.qint8)]))
    assert_same(ember.concat([e, z]), torch.concat([t, tz]))
    assert_same(ember.concatenate([e, z], axis=1), torch.concatenate([t, tz], axis=1))
    assert_same(ember.hstack([e, z]), torch.hstack([t, tz]))
    assert_same(ember.vstack([e, z]), torch.vstack([t, tz]))


@pytest.mark.parametrize("join", [ember.cat, ember.stack])
def test_join_refusals_as_torch(join):
    e = ember.quantize_per_tensor(ember.tensor(X), 0.1, 0, ember.qint8)
    u = ember.quantize_per_tensor(ember.tensor(X), 0.1, 0, ember.quint8)
    c = ember.quantize_per_channel(ember.tensor(X), ember.tensor([0.1, 0.2]),
                                   ember.tensor([0, 1]), 0, ember.qint8)
    with pytest.raises(DTypeError, match="one dtype"):  # torch: All dtypes must be the same
        join([e, u])
    for pieces in ([c, c], [e, c], [c, e]):  # torch: Only per-tensor quantization
        with pytest.raises(ArgumentError, match="only per-tensor"):
            join(pieces)
    for pieces, at in (([e, ember.tensor(X)], 1), ([ember.tensor(X), e], 0)):
        with pytest.raises(DTypeError, match=f"tensor {at} is a float32 tensor"):
            join(pieces)
    with pytest.raises(ShapeError):
        join([e, e[:, :2]])


def test_cat_of_zero_dim_quantized_refused_as_torch():
    e = ember.quantize_per_tensor(ember.tensor(1.0), 0.1, 0, ember.qint8)
    with pytest.raises(ShapeError, match="zero-dimensional"):
        ember.cat([e, e])
    assert ember.stack([e, e]).int_repr().tolist() == [10, 10]


def test_other_ops_still_refuse_quantized_tensors():
    e = ember.quantize_per_tensor(ember.tensor(X), 0.1, 0, ember.qint8)
    for op in (lambda: ember.softmax(e, 0), lambda: ember.relu(e), lambda: ember.dstack([e])):
        with pytest.raises(QuantizedOperandError, match="not supported"):
            op()


@pytest.mark.parametrize("join", ["cat", "stack"])
@pytest.mark.parametrize("factor", [1.0, 2.0])
def test_join_into_a_quantized_out_takes_its_params_as_torch(join, factor):
    (e, t), (e2, t2) = both(0.1, 0, ember.qint8), both(0.1, 0, ember.qint8, factor)
    shape = (4, 3) if join == "cat" else (2, 2, 3)
    out = ember.quantize_per_tensor(ember.zeros(*shape), 0.5, 2, ember.qint8)
    tout = torch.quantize_per_tensor(torch.zeros(*shape), 0.5, 2, torch.qint8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (torch warns only when the inputs' parameters differ)
        got = getattr(ember, join)([e, e2], out=out)
    assert got is out
    assert_same(out, getattr(torch, join)([t, t2], out=tout))


def test_quantized_out_refusals():
    e = ember.quantize_per_tensor(ember.tensor(X), 0.1, 0, ember.qint8)
    out = ember.quantize_per_tensor(ember.zeros(4, 3), 0.5, 2, ember.qint8)
    with pytest.raises(DTypeError, match="out is quantized but no input is"):
        ember.cat([ember.tensor(X), ember.tensor(X)], out=out)
    with pytest.raises(QuantizedOperandError, match="add: quantized tensors are not supported"):
        ember.add(ember.ones(4, 3), 1, out=out)
    with pytest.raises(TypeError, match="returns a QuantizedTensor"):
        ember.cat([e, e], out=ember.zeros(4, 3))
