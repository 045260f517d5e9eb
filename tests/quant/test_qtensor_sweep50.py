"""Quantized tensors against PyTorch (sweep50quant): per-channel indexing and contiguous,
the checks of quantize_per_channel's scales, dequantize of an ordinary tensor, and the error
classes of the getters."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.quantization as tqz

import ember
import ember.ao.nn.quantized as ennq
import ember.ao.nn.quantized.dynamic as ennqd
import ember.ao.quantization as eqz
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    IndexOutOfRange,
    OpError,
    ShapeError,
)

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions")
X = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
SCALES, ZERO_POINTS = [0.1, 0.2, 0.3], [0, 1, 2]


def _per_channel(axis: int = 1):
    scales, zero_points = SCALES[:X.shape[axis]], ZERO_POINTS[:X.shape[axis]]
    return (ember.quantize_per_channel(ember.tensor(X), ember.tensor(scales, dtype=ember.float64),
                                       ember.tensor(zero_points), axis, ember.qint8),
            torch.quantize_per_channel(torch.tensor(X), torch.tensor(scales, dtype=torch.float64),
                                       torch.tensor(zero_points), axis, torch.qint8))


def _qparams(q):
    if q.qscheme() in (ember.per_tensor_affine, torch.per_tensor_affine):
        return "tensor", q.q_scale(), q.q_zero_point()
    return ("channel", q.q_per_channel_axis(), q.q_per_channel_scales().tolist(),
            q.q_per_channel_zero_points().tolist())


@pytest.mark.parametrize("index", [
    0, 1, (slice(None), 1), (slice(None), slice(1, None)), (slice(None), slice(None, None, 2)),
    (slice(None), slice(1, 2)), (slice(None), slice(-2, None)), None, (0, slice(None), None),
    (slice(None), slice(1, 2), None), (1, 2, 3), slice(0, 1), Ellipsis, slice(None),
    (Ellipsis, slice(1, 3)), (None, 1), (np.int64(1),)])
def test_per_channel_indexing_keeps_the_channels_parameters_as_torch(index):
    eq, tq = _per_channel()
    e, t = eq[index], tq[index]
    assert _qparams(e) == _qparams(t)
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())


@pytest.mark.parametrize("shape, axis, index", [
    ((1, 2), 0, slice(None)), ((1, 2), 0, (slice(None), slice(None))), ((1, 2), 0, Ellipsis),
    ((1, 2), 0, (slice(0, None),)), ((1, 2), 0, (slice(None, 5),)), ((1, 2), 0, (slice(-1, None),)),
    ((1, 2), 0, (None, slice(0, 1))), ((2, 1, 2), 1, (0, slice(1, None))),
    ((2, 1, 2), 1, (slice(1, None), slice(None, 0), 1)), ((3, 2), 1, (slice(None, None, 2),)),
    ((3, 2), 1, (2, slice(1, None)))])
def test_per_channel_one_channel_left_as_torch(shape, axis, index):
    """PyTorch turns a per-channel tensor per tensor when an index that cuts (an integer, a
    slice alone or one other than ``:``/``0:``/``0:n`` past the size) leaves one channel."""
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7
    scales, zero_points = [0.1, 0.2][:shape[axis]], [1, 2][:shape[axis]]
    e = ember.quantize_per_channel(ember.tensor(x), ember.tensor(scales, dtype=ember.float64),
                                   ember.tensor(zero_points), axis, ember.quint8)[index]
    t = torch.quantize_per_channel(torch.tensor(x), torch.tensor(scales, dtype=torch.float64),
                                   torch.tensor(zero_points), axis, torch.quint8)[index]
    assert _qparams(e) == _qparams(t)
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())


def test_per_channel_slice_leaving_no_channel_is_refused_as_torch():
    eq, tq = _per_channel()
    with pytest.raises(RuntimeError, match="0 elements"):
        tq[:, 3:]
    with pytest.raises(ArgumentError, match="no channel"):
        eq[:, 3:]


def test_per_channel_index_after_the_axis_keeps_the_axis():
    """PyTorch 2.13 gives axis 0 for q[:, :, 1] of a (2, 3, 4) tensor quantized along axis 1
    (its dequantize then fails: 2 rows, 3 scales); Ember keeps axis 1 (deliberate)."""
    eq, tq = _per_channel()
    e = eq[:, :, 1]
    assert e.q_per_channel_axis() == 1
    np.testing.assert_array_equal(e.dequantize().numpy(), tq.dequantize()[:, :, 1].numpy())
    assert eq[..., 1].q_per_channel_axis() == 1
    assert eq[None, ..., 0].q_per_channel_axis() == 2


@pytest.mark.parametrize("index", [[0, 1], (slice(None), [0, 2]), True])
def test_per_channel_advanced_indexing_is_refused(index):
    eq, tq = _per_channel()
    with pytest.raises(RuntimeError):
        tq[index]
    with pytest.raises(ArgumentError, match="integers, slices"):
        eq[index]


def test_per_channel_contiguous_as_torch():
    eq, tq = _per_channel(0)
    assert _qparams(eq.contiguous()) == _qparams(tq.contiguous())


def test_per_tensor_indexing_still_takes_any_index():
    e = ember.quantize_per_tensor(ember.tensor(X), 0.1, 3, ember.quint8)
    t = torch.quantize_per_tensor(torch.tensor(X), 0.1, 3, torch.quint8)
    for index in ([0, 1], (slice(None), [0, 2]), 1):
        assert _qparams(e[index]) == _qparams(t[index])
        np.testing.assert_array_equal(e[index].int_repr().numpy(), t[index].int_repr().numpy())


def test_quantize_per_channel_scales_checked_as_torch():
    x = ember.tensor(X)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.quantize_per_channel(torch.tensor(X), torch.tensor([1, 2, 3]),
                                   torch.tensor([0, 0, 0]), 1, torch.qint8)
    with pytest.raises(DTypeError, match="scales must be a floating tensor"):
        ember.quantize_per_channel(x, ember.tensor([1, 2, 3]), ember.tensor([0, 0, 0]), 1,
                                   ember.qint8)
    with pytest.raises(ShapeError, match=r"must have shape \(3,\)"):  # (was NumPy's ValueError)
        ember.quantize_per_channel(x, ember.tensor([[0.1, 0.2, 0.3]]),
                                   ember.tensor([[0, 0, 0]]), 1, ember.qint8)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "bool"])
def test_dequantize_of_an_ordinary_tensor_is_float32_as_torch(dtype):
    # it was returned as it is, whatever its dtype (torch converts: .to(float32))
    x = ember.tensor(X).to(getattr(ember, dtype))
    got = ember.dequantize(x)
    want = torch.dequantize(torch.tensor(X).to(getattr(torch, dtype)))
    assert got.dtype == ember.float32 and want.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert (got is x) == (dtype == "float32")  # (torch returns a float32 tensor itself too)
    method = x.dequantize()  # the method as torch's Tensor.dequantize (it was missing)
    assert method.dtype == ember.float32 and (method is x) == (dtype == "float32")
    np.testing.assert_array_equal(method.numpy(), want.numpy())


def test_dequantize_of_a_list_mixing_ordinary_and_quantized_tensors_as_torch():
    x = ember.tensor(X)
    q = ember.quantize_per_tensor(x, 0.5, 0, ember.qint8)
    e = ember.dequantize([x, q])
    t = torch.dequantize([torch.tensor(X), torch.quantize_per_tensor(torch.tensor(X), 0.5, 0,
                                                                      torch.qint8)])
    for a, b in zip(e, t, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_getters_raise_ember_errors():
    eq, _ = _per_channel()
    with pytest.raises(ArgumentError, match="per-tensor"):
        eq.q_scale()
    with pytest.raises(ArgumentError, match="per-channel"):
        ember.quantize_per_tensor(ember.tensor(X), 0.1, 0, ember.qint8).q_per_channel_axis()
    with pytest.raises(ArgumentError, match="not supported for a per-channel"):
        eq.reshape(-1)
    with pytest.raises(ArgumentTypeError, match="expected a quantized tensor"):
        ember.int_repr(ember.tensor(X))


@pytest.mark.parametrize("dims, kernel, padding, dilation", [
    (1, [3], [2], [2]), (1, [4], [3], [2]), (2, [3, 1], [2, 0], [2, 1]),
    (2, [1, 3], [0, 2], [1, 2])])
def test_quantized_max_pool_padding_checked_as_torch(dims, kernel, padding, dilation):
    """PyTorch's quantized kernel wants padding <= kernel_size / 2 whatever the dilation
    (the float pool allows half the dilated kernel)."""
    x = np.ones((2, 9, 9), np.float32)
    t = torch.quantize_per_tensor(torch.tensor(x), 0.1, 0, torch.quint8)
    e = ember.quantize_per_tensor(ember.tensor(x), 0.1, 0, ember.quint8)
    tf, ef = ((torch.quantized_max_pool1d, ember.quantized_max_pool1d) if dims == 1 else
              (torch.quantized_max_pool2d, ember.quantized_max_pool2d))
    if dims == 1:
        t, e = t[0], e[0]
    with pytest.raises(RuntimeError, match="padding"):
        tf(t, kernel, [1] * dims, padding, dilation)
    with pytest.raises(ArgumentError, match="at most half of kernel_size"):
        ef(e, kernel, [1] * dims, padding, dilation)


@pytest.mark.parametrize("dtype, zero_point", [("qint8", -3), ("quint8", 128)])
def test_quantized_max_pool_of_padding_alone_is_the_lowest_integer_as_torch(dtype, zero_point):
    x = np.array([[[0.5], [-0.3]]], np.float32)
    args = ([2, 3], [3, 3], [1, 1], [1, 2], True)
    t = torch.quantized_max_pool2d(
        torch.quantize_per_tensor(torch.tensor(x), 0.1, zero_point, getattr(torch, dtype)), *args)
    e = ember.quantized_max_pool2d(
        ember.quantize_per_tensor(ember.tensor(x), 0.1, zero_point, getattr(ember, dtype)), *args)
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())


def _bad_inputs():
    x = ember.tensor(X)
    lstm = ennqd.LSTM(4, 2)
    observed = ember.nn.Sequential(eqz.QuantStub(), ember.nn.Linear(4, 2))
    observed.qconfig = eqz.default_qconfig
    return [
        (lambda: ennq.Linear(4, 2)(x), DTypeError, TypeError),
        (lambda: ennq.Linear(4, 2).set_weight_bias(ember.ones(2, 4), None), DTypeError, TypeError),
        (lambda: ennqd.Linear(4, 2)(ember.ones(2, 4, dtype=ember.int64)), DTypeError, TypeError),
        (lambda: lstm(x, ember.zeros(1, 3, 2)), ArgumentTypeError, TypeError),
        (lambda: ennq.Embedding(3, 2)(ember.tensor([0, 5])), IndexOutOfRange, IndexError),
        (lambda: ennq.FloatFunctional()(x), OpError, RuntimeError),
        (lambda: ennq.QFunctional.from_float(ember.nn.ReLU()), ArgumentTypeError, TypeError),
        (lambda: ember.ao.nn.intrinsic.ConvReLU2d(ember.nn.Linear(2, 2), ember.nn.ReLU()),
         ArgumentTypeError, TypeError),
        (lambda: eqz.FixedQParamsFakeQuantize(eqz.MinMaxObserver), ArgumentTypeError, TypeError),
        (lambda: eqz.FusedMovingAvgObsFakeQuantize(eqz.MinMaxObserver), ArgumentTypeError,
         TypeError),
        (lambda: eqz.fuse_conv_bn(False, ember.nn.Linear(2, 2), ember.nn.BatchNorm2d(2)),
         ArgumentTypeError, TypeError),
        (lambda: eqz.prepare(ember.nn.Linear(2, 2), qconfig_mapping=5), ArgumentTypeError,
         TypeError),
        (lambda: eqz.PerChannelMinMaxObserver(ch_axis=5)(x), IndexOutOfRange, IndexError),
        (lambda: ember.quantize_per_channel(x, ember.tensor(SCALES), ember.tensor(ZERO_POINTS),
                                            3, ember.qint8), IndexOutOfRange, IndexError),
        (lambda: eqz.load_observer_state_dict(eqz.prepare(observed), {}), ArgumentError,
         RuntimeError),
    ]


@pytest.mark.parametrize("case", range(15))
def test_bad_inputs_raise_ember_errors_of_the_same_python_kind(case):
    call, ember_class, python_class = _bad_inputs()[case]
    with pytest.raises(ember_class) as info:
        call()
    assert isinstance(info.value, python_class)


@pytest.mark.parametrize("call", [
    lambda q, lib: q.clone(), lambda q, lib: q.detach(), lambda q, lib: q.squeeze(-1),
    lambda q, lib: q.squeeze(), lambda q, lib: q.squeeze(0), lambda q, lib: q[0:1].squeeze(0),
    lambda q, lib: q[0:1].squeeze(), lambda q, lib: q[None].squeeze((0, 3)),
    lambda q, lib: q.clone(memory_format=lib.preserve_format),
    lambda q, lib: q.clone(memory_format=lib.contiguous_format)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_clone_detach_squeeze_as_torch(call, per_channel):
    x = X[:, :, :1]
    if per_channel:
        scales, zero_points = ember.tensor(SCALES, dtype=ember.float64), ember.tensor(ZERO_POINTS)
        e = ember.quantize_per_channel(ember.tensor(x), scales, zero_points, 1, ember.qint8)
        t = torch.quantize_per_channel(torch.tensor(x), torch.tensor(SCALES, dtype=torch.float64),
                                       torch.tensor(ZERO_POINTS), 1, torch.qint8)
    else:
        e = ember.quantize_per_tensor(ember.tensor(x), 0.1, 3, ember.quint8)
        t = torch.quantize_per_tensor(torch.tensor(x), 0.1, 3, torch.quint8)
    source, e, t = e, call(e, ember), call(t, torch)
    assert _qparams(e) == _qparams(t)
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    assert not e.requires_grad and not t.requires_grad
    if "clone" in call.__code__.co_names:  # a clone owns its integers: writing them leaves
        before = source.int_repr().numpy().copy()  # the source as it was
        e.int_repr().add_(1)
        np.testing.assert_array_equal(source.int_repr().numpy(), before)


def test_expand_item_and_squeezing_the_channel_axis_as_torch():
    e = ember.quantize_per_tensor(ember.tensor(X[:, :, :1]), 0.1, 3, ember.quint8)
    t = torch.quantize_per_tensor(torch.tensor(X[:, :, :1]), 0.1, 3, torch.quint8)
    np.testing.assert_array_equal(e.expand(2, 3, 4).int_repr().numpy(),
                                  t.expand(2, 3, 4).int_repr().numpy())
    assert e[1, 2, 0].item() == t[1, 2, 0].item()
    one = ember.quantize_per_channel(ember.tensor(X[:, :, :1]), ember.tensor([0.5]),
                                     ember.tensor([3]), 2, ember.qint8)
    with pytest.raises(ArgumentError, match="cannot be squeezed"):
        one.squeeze()
    with pytest.raises(ArgumentError, match="per-channel"):
        one.expand(2, 3, 4)


@pytest.mark.parametrize("scale", ["a", None])
def test_quantize_per_tensor_scale_of_the_wrong_kind_as_torch(scale):
    with pytest.raises(TypeError):
        torch.quantize_per_tensor(torch.tensor(X), scale, 0, torch.quint8)
    with pytest.raises(ArgumentTypeError, match="scale must be a number"):  # (was float()'s)
        ember.quantize_per_tensor(ember.tensor(X), scale, 0, ember.quint8)
    assert ember.quantize_per_tensor(ember.tensor(X), np.float32(0.5), 0,
                                     ember.quint8).q_scale() == 0.5


@pytest.mark.parametrize("name, kwargs", [
    ("MinMaxObserver", {"averaging_constant": 0.5}), ("MinMaxObserver", {"ch_axis": 1}),
    ("MovingAverageMinMaxObserver", {"foo": 1}), ("PerChannelMinMaxObserver", {"bins": 16}),
    ("MovingAveragePerChannelMinMaxObserver", {"foo": 1}),
    ("HistogramObserver", {"upsample_rate": 4}), ("FixedQParamsObserver", {"factory_kwargs": None}),
    ("FakeQuantize", {"averaging_constant": 0.5, "observer": "MinMaxObserver"})])
def test_observers_refuse_keyword_arguments_they_have_no_use_for_as_torch(name, kwargs):
    """A misspelled or another observer's argument was silently dropped."""
    def build(q):
        args = {"scale": 0.1, "zero_point": 0} if name == "FixedQParamsObserver" else {}
        given = {k: getattr(q, v) if k == "observer" else v for k, v in kwargs.items()}
        return getattr(q, name)(**args, **given)

    with pytest.raises(TypeError, match="unexpected keyword argument"):
        build(tqz)
    with pytest.raises(ArgumentTypeError, match="unexpected keyword argument"):
        build(eqz)
    build_ok = eqz.MinMaxObserver(factory_kwargs=None)  # (PyTorch's factory_kwargs passes)
    assert build_ok.quant_max == 255


@pytest.mark.parametrize("name", ["FakeQuantize", "FusedMovingAvgObsFakeQuantize"])
def test_fake_quantize_module_keeps_a_0_d_input_0_d_as_torch(name):
    e, t = getattr(eqz, name)()(ember.tensor(0.37)), getattr(tqz, name)()(torch.tensor(0.37))
    assert tuple(e.shape) == tuple(t.shape) == ()
    assert e.item() == t.item()


def test_fused_fake_quantize_of_an_empty_input_changes_nothing_as_torch():
    e, t = eqz.FusedMovingAvgObsFakeQuantize(), tqz.FusedMovingAvgObsFakeQuantize()
    assert tuple(e(ember.zeros(0, 3)).shape) == tuple(t(torch.zeros(0, 3)).shape) == (0, 3)
    assert e.scale.tolist() == t.scale.tolist() == [1.0]
    for lib in (ember, torch):
        low, high = lib.tensor([-1.0]), lib.tensor([2.0])
        scale, zero_point, on = lib.tensor([1.0]), lib.tensor([0], dtype=lib.int32), lib.tensor([1])
        out = lib.fused_moving_avg_obs_fake_quant(lib.zeros(0, 3), on, on, low, high, scale,
                                                  zero_point, 0.01, 0, 255, 0)
        assert tuple(out.shape) == (0, 3)  # (Ember: NumPy's zero-size reduction ValueError)
        assert scale.tolist() == [1.0] and low.tolist() == [-1.0]


def test_expand_as_and_a_zero_dim_integer_tensor_index_as_torch():
    # expand_as was refused while expand worked; q[tensor(1)] of a per-channel tensor was
    # refused ("takes integers, slices, None and ..."), torch selects as with 1
    e = ember.quantize_per_tensor(ember.tensor(X[:, :, :1]), 0.1, 3, ember.quint8)
    t = torch.quantize_per_tensor(torch.tensor(X[:, :, :1]), 0.1, 3, torch.quint8)
    np.testing.assert_array_equal(e.expand_as(ember.zeros(4, 2, 3, 5)).int_repr().numpy(),
                                  t.expand_as(torch.zeros(4, 2, 3, 5)).int_repr().numpy())
    scales, zero_points = ember.tensor(SCALES, dtype=ember.float64), ember.tensor(ZERO_POINTS)
    e = ember.quantize_per_channel(ember.tensor(X), scales, zero_points, 1, ember.qint8)
    t = torch.quantize_per_channel(torch.tensor(X), torch.tensor(SCALES, dtype=torch.float64),
                                   torch.tensor(ZERO_POINTS), 1, torch.qint8)
    for key in [(1,), (1, 2), (slice(None), 0)]:
        ek = tuple(ember.tensor(k) if isinstance(k, int) else k for k in key)
        tk = tuple(torch.tensor(k) if isinstance(k, int) else k for k in key)
        got, want = e[ek], t[tk]
        assert _qparams(got) == _qparams(want), key
        np.testing.assert_array_equal(got.int_repr().numpy(), want.int_repr().numpy())
    with pytest.raises(ArgumentError, match="per-channel"):  # (torch: a mask, not a channel)
        e[ember.tensor(True)]


def test_int_repr_is_a_copy_as_torch():
    q = ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.5, 0, ember.qint8)
    q.int_repr().fill_(0)  # (wrote q's own integers before)
    t = torch.quantize_per_tensor(torch.tensor([1.0, 2.0]), 0.5, 0, torch.qint8)
    t.int_repr().fill_(0)
    assert q.int_repr().tolist() == t.int_repr().tolist() == [2, 4]


@pytest.mark.parametrize("dims", [(2, 0, 1), (1, 0, 2)])
def test_int_repr_of_a_permuted_tensor_is_c_contiguous_as_torch(dims):
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    q = ember.quantize_per_tensor(ember.tensor(x), 0.1, 0, ember.qint8).permute(*dims)
    t = torch.quantize_per_tensor(torch.tensor(x), 0.1, 0, torch.qint8).permute(*dims)
    assert q.int_repr().stride() == t.int_repr().stride()  # (3cbe24ec kept the permutation's)
    assert q.int_repr().tolist() == t.int_repr().tolist()
