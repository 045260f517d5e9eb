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
    for op in (lambda: ember.softmax(e, 0), lambda: ember.relu(e)):
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


# -- review65h of 01181dd2 (mend65g) ------------------------------------------------------------
def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def both_zeros(shape, scale=0.1, zero_point=0):
    return (ember.quantize_per_tensor(ember.zeros(*shape), scale, zero_point, ember.qint8),
            quiet(torch.quantize_per_tensor, torch.zeros(*shape), scale, zero_point, torch.qint8))


@pytest.mark.parametrize("join,view", [("cat", (slice(1, 3),)), ("stack", (1,))])
def test_join_into_a_view_writes_its_base_as_torch(join, view):
    # Ember rebound the view's integers: the base stayed all zeros
    e, t = both(0.1, 0, ember.qint8)
    (big, tbig) = both_zeros((4, 3) if join == "cat" else (3, 2, 3))
    pieces, tpieces = ([e[:1], e[1:]], [t[:1], t[1:]]) if join == "cat" else ([e[0], e[1]],
                                                                                [t[0], t[1]])
    out = big[view]
    assert getattr(ember, join)(pieces, 0, out=out) is out
    getattr(torch, join)(tpieces, 0, out=tbig[view])
    assert_same(big, tbig)


def test_cat_into_an_out_of_another_shape_as_torch():
    # torch writes as copy_: broadcast to out's shape, else an error (Ember replaced the out)
    e, t = both(0.1, 0, ember.qint8)
    for shape in ((1,), (0,), (2, 3), (4, 1), (6,)):
        out, tout = both_zeros(shape)
        with pytest.raises(RuntimeError):
            torch.cat([t, t], 0, out=tout)
        with pytest.raises(ShapeError, match="cat"):
            ember.cat([e, e], 0, out=out)
    out, tout = both_zeros((2, 4, 3))
    ember.cat([e, e], 0, out=out)
    assert_same(out, torch.cat([t, t], 0, out=tout))
    out, tout = both_zeros((3, 4))
    ember.cat([e, e], 0, out=out.t())
    torch.cat([t, t], 0, out=tout.t())
    assert_same(out, tout)


def test_stack_into_an_out_of_another_shape_resizes_as_torch():
    e, t = both(0.1, 0, ember.qint8)
    for shape, warns in (((1,), True), ((4, 3), True), ((0,), False)):
        (out, tout) = both_zeros(shape, 0.2, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert ember.stack([e, e], 1, out=out) is out
        assert any("resized" in str(w.message) for w in caught) is warns
        assert_same(out, quiet(torch.stack, [t, t], 1, out=tout))
    big, tbig = both_zeros((4, 3))  # (a view resized in its base's memory)
    quiet(ember.stack, [e[0], e[1]], 0, out=big[1:2])
    quiet(torch.stack, [t[0], t[1]], 0, out=tbig[1:2])
    assert_same(big, tbig)


@pytest.mark.parametrize("join", ["cat", "stack"])
def test_join_into_out_of_other_params_gives_no_warning_as_torch(join):
    (e, t), (e2, t2) = both(0.1, 0, ember.qint8), both(0.2, 3, ember.qint8, 2.0)
    out, tout = both_zeros((4, 3) if join == "cat" else (2, 2, 3), 0.5, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(ember, join)([e, e2], out=out)
        getattr(torch, join)([t, t2], out=tout)
    assert_same(out, tout)


@pytest.mark.parametrize("join", ["cat", "stack"])
def test_join_of_quint4x2_refused_as_torch(join):
    u = ember.quantize_per_tensor(ember.ones(4), 0.1, 0, ember.quint4x2)
    tu = quiet(torch.quantize_per_tensor, torch.ones(4), 0.1, 0, torch.quint4x2)
    with pytest.raises(NotImplementedError, match="QUInt4x2"):
        getattr(torch, join)([tu, tu])
    with pytest.raises(NotImplementedError, match="quint4x2"):
        getattr(ember, join)([u, u])


def ranks():
    x = np.array([[0.4, -0.3, 1.0], [0.2, 0.5, -1.2]], np.float32)
    for piece in (x[0, 0], x[0], x):
        yield (ember.quantize_per_tensor(ember.tensor(piece), 0.1, 2, ember.quint8),
               quiet(torch.quantize_per_tensor, torch.tensor(piece), 0.1, 2, torch.quint8))


@pytest.mark.parametrize("name", ["vstack", "row_stack", "dstack", "hstack", "column_stack"])
def test_composite_joins_of_low_rank_quantized_tensors_as_torch(name):
    # vstack/row_stack of 1-d and dstack of 1-d/2-d quantized tensors were refused
    for e, t in ranks():
        assert_same(getattr(ember, name)([e, e]), quiet(getattr(torch, name), [t, t]))


@pytest.mark.parametrize("name", ["vstack", "dstack", "hstack", "column_stack"])
def test_composite_joins_into_a_quantized_out_as_torch(name):
    (e, t), (e2, t2) = both(0.1, 0, ember.qint8), both(0.2, 3, ember.qint8, 2.0)
    shape = tuple(quiet(getattr(torch, name), [t, t2]).shape)
    out, tout = both_zeros(shape, 0.05, -2)
    assert getattr(ember, name)([e, e2], out=out) is out
    quiet(getattr(torch, name), [t, t2], out=tout)
    assert_same(out, tout)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_nd_of_quantized_tensors_as_torch(name):
    for e, t in ranks():
        assert_same(getattr(ember, name)(e), getattr(torch, name)(t))
