"""``ember.ao.nn.quantized.functional`` against ``torch.ao.nn.quantized.functional``
(sweep quant57)."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized.functional as tqf

import ember
import ember.ao.nn.quantized.functional as eqf
from ember.errors import ArgumentError, DTypeError

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions")


def _pair(x: np.ndarray, scale: float, zero_point: int, dtype: str = "quint8"):
    return (torch.quantize_per_tensor(torch.tensor(x), scale, zero_point, getattr(torch, dtype)),
            ember.quantize_per_tensor(ember.tensor(x), scale, zero_point, getattr(ember, dtype)))


def _weights(shape, per_channel: bool, seed: int = 0):
    w = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.3
    if not per_channel:
        return _pair(w, 0.01, 0, "qint8")
    s = np.linspace(0.005, 0.02, shape[0])
    z = np.zeros(shape[0], np.int64)
    return (torch.quantize_per_channel(torch.tensor(w), torch.tensor(s), torch.tensor(z), 0,
                                       torch.qint8),
            ember.quantize_per_channel(ember.tensor(w), ember.tensor(s), ember.tensor(z), 0,
                                       ember.qint8))


def _same(tq, eq):
    assert (eq.q_scale(), eq.q_zero_point()) == pytest.approx((tq.q_scale(), tq.q_zero_point()))
    np.testing.assert_array_equal(eq.int_repr().numpy(), tq.int_repr().numpy())


@pytest.fixture(params=["fbgemm", "qnnpack"])
def engine(request):
    old_t, old_e = torch.backends.quantized.engine, ember.backends.quantized.engine
    torch.backends.quantized.engine = ember.backends.quantized.engine = request.param
    yield request.param
    torch.backends.quantized.engine, ember.backends.quantized.engine = old_t, old_e


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("out_qparams", [None, (0.05, 7)])
def test_linear_as_torch(engine, per_channel, out_qparams):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    tx, ex = _pair(x, 0.02, 100)
    tw, ew = _weights((5, 6), per_channel)
    b = np.linspace(-1, 1, 5).astype(np.float32)
    kw = {} if out_qparams is None else dict(scale=out_qparams[0], zero_point=out_qparams[1])
    _same(tqf.linear(tx, tw, torch.tensor(b), **kw), eqf.linear(ex, ew, ember.tensor(b), **kw))


@pytest.mark.parametrize("dims,kw", [(1, dict(stride=2, padding=1)),
                                     (2, dict(padding=1, groups=2, dilation=2)),
                                     (2, dict(stride=(2, 1))), (3, dict(padding=1))])
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_as_torch(engine, dims, kw, per_channel):
    x = np.random.default_rng(2).standard_normal((2, 4) + (7,) * dims).astype(np.float32)
    tx, ex = _pair(x, 0.0311, 120)  # (scales that leave no exact float32 ties: see quant57)
    groups = kw.get("groups", 1)
    tw, ew = _weights((6, 4 // groups) + (3,) * dims, per_channel)
    b = np.random.default_rng(4).standard_normal(6).astype(np.float32) * 0.5
    t = getattr(tqf, f"conv{dims}d")(tx, tw, torch.tensor(b), scale=0.0437, zero_point=60, **kw)
    e = getattr(eqf, f"conv{dims}d")(ex, ew, ember.tensor(b), scale=0.0437, zero_point=60, **kw)
    _same(t, e)


def test_pools_and_activations_as_torch():
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32) * 2
    tx, ex = _pair(x, 0.05, 128)
    _same(tqf.max_pool2d(tx, 3, 2, 1), eqf.max_pool2d(ex, 3, 2, 1))
    _same(tqf.max_pool1d(tx[0], 2), eqf.max_pool1d(ex[0], 2))
    _same(tqf.avg_pool2d(tx, 2), eqf.avg_pool2d(ex, 2))
    _same(tqf.adaptive_avg_pool2d(tx, (3, 2)), eqf.adaptive_avg_pool2d(ex, (3, 2)))
    _same(tqf.hardswish(tx, 0.04, 30), eqf.hardswish(ex, 0.04, 30))
    _same(tqf.elu(tx, 0.04, 60, alpha=0.5), eqf.elu(ex, 0.04, 60, alpha=0.5))
    _same(tqf.leaky_relu(tx, 0.2), eqf.leaky_relu(ex, 0.2))
    _same(tqf.leaky_relu(tx, 0.1, scale=0.03, zero_point=90),
          eqf.leaky_relu(ex, 0.1, scale=0.03, zero_point=90))
    _same(tqf.hardsigmoid(tx), eqf.hardsigmoid(ex))


def test_bad_input_is_refused():
    w = ember.quantize_per_tensor(ember.ones(2, 3), 0.1, 0, ember.qint8)
    x = ember.quantize_per_tensor(ember.ones(1, 3), 0.1, 0, ember.quint8)
    with pytest.raises(DTypeError, match="linear: the input must be a quantized tensor"):
        eqf.linear(ember.ones(1, 3), w)
    with pytest.raises(DTypeError, match="weight must be an ember.qint8"):
        eqf.linear(x, ember.ones(2, 3))
    x4 = ember.quantize_per_tensor(ember.ones(1, 1, 3, 3), 0.1, 0, ember.quint8)
    w4 = ember.quantize_per_tensor(ember.ones(1, 1, 3, 3), 0.1, 0, ember.qint8)
    with pytest.raises(ArgumentError, match="only numeric zero padding"):
        eqf.conv2d(x4, w4, None, padding=1, padding_mode="reflect")
    with pytest.raises(ArgumentError, match="return_indices"):
        eqf.max_pool2d(x4, 2, return_indices=True)
    with pytest.raises(DTypeError, match="hardswish"):
        eqf.hardswish(ember.ones(3), 0.1, 0)


def test_refusals_name_ember_and_the_functional_form():
    """review57f items 5-6: the float-input hint names ember.nn.functional; padding='same'
    gets the functional form's message (no reflect); dtype=qint8 is refused, saying that
    PyTorch ignores it."""
    x4 = ember.quantize_per_tensor(ember.ones(1, 1, 3, 3), 0.1, 0, ember.quint8)
    w4 = ember.quantize_per_tensor(ember.ones(1, 1, 3, 3), 0.1, 0, ember.qint8)
    with pytest.raises(DTypeError, match="ember.nn.functional for float input") as e:
        eqf.conv2d(ember.ones(1, 1, 3, 3), w4, None)
    assert "torch" not in str(e.value)
    with pytest.raises(ArgumentError, match="padding='same'") as e:
        eqf.conv2d(x4, w4, None, padding="same")
    assert "reflect" not in str(e.value)
    with pytest.raises(DTypeError, match="PyTorch ignores dtype"):
        eqf.conv2d(x4, w4, None, dtype=ember.qint8)


@pytest.mark.parametrize("dtype,scale,zero_point", [("quint8", 0.1, 30), ("quint8", 0.0731, 200),
                                                    ("qint8", 0.05, 0), ("qint8", 0.1, -50)])
@pytest.mark.parametrize("size", [256, 300, 7])
def test_clamp_threshold_celu_over_every_integer_as_torch(dtype, scale, zero_point, size):
    info = np.iinfo(np.uint8 if dtype == "quint8" else np.int8)
    ints = np.resize(np.arange(info.min, info.max + 1), size)
    x = ((ints - zero_point) * np.float32(scale)).astype(np.float32)
    tx, ex = _pair(x, scale, zero_point, dtype)
    for low, high in [(-1.0, 1.0), (-0.33, 2.7), (0.0, 6.0), (-100.0, 100.0), (0.123, 0.124)]:
        _same(tqf.clamp(tx, low, high), eqf.clamp(ex, low, high))
        _same(tqf.hardtanh(tx, low, high), eqf.hardtanh(ex, low, high))
    for limit, value in [(0.5, -1.0), (-0.2, 3.0), (0.3, 0.7), (-0.6, 0.0)]:
        _same(tqf.threshold(tx, limit, value), eqf.threshold(ex, limit, value))
    for out_scale, out_zp, alpha in [(0.05, 10, 1.0), (0.03, 0, 0.5), (0.02, -5, 2.0)]:
        out_zp = out_zp + (100 if dtype == "quint8" else 0)
        _same(tqf.celu(tx, out_scale, out_zp, alpha), eqf.celu(ex, out_scale, out_zp, alpha))


def test_threshold_and_celu_of_a_transposed_tensor_as_torch():
    ints = np.resize(np.arange(256), (70, 90))
    x = ((ints - 30) * np.float32(0.1)).astype(np.float32)
    tx, ex = _pair(x, 0.1, 30)
    tx, ex = tx.t(), ex.t()
    _same(tqf.threshold(tx, 0.5, -1.0), eqf.threshold(ex, 0.5, -1.0))
    _same(tqf.celu(tx, 0.05, 100, 1.0), eqf.celu(ex, 0.05, 100, 1.0))


@pytest.mark.parametrize("shape", [(2, 3, 5, 6), (1, 2, 3, 4, 5)])
@pytest.mark.parametrize("dtype,zero_point", [("quint8", 100), ("qint8", -3), ("qint32", 5)])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_as_torch(shape, dtype, zero_point, mode):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tx, ex = _pair(x, 0.05, zero_point, dtype)
    spatial = shape[2:]
    for kw in [dict(scale_factor=2), dict(scale_factor=1.7), dict(scale_factor=0.6),
               dict(size=tuple(s * 3 - 1 for s in spatial)),
               dict(size=tuple(max(1, s // 2) for s in spatial))]:
        _same(tqf.interpolate(tx, mode=mode, **kw), eqf.interpolate(ex, mode=mode, **kw))
    _same(tqf.upsample_nearest(tx, scale_factor=2), eqf.upsample_nearest(ex, scale_factor=2))
    _same(tqf.upsample(tx, scale_factor=3), eqf.upsample(ex, scale_factor=3))


@pytest.mark.parametrize("spatial_dims", [2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_reads_floor_of_i_over_the_scale_as_torch(spatial_dims, mode):
    # (PyTorch's quantized kernels copy only where the whole output keeps the input's size,
    # else read floor(i / scale) on every axis; Ember's float rules copied a kept axis or read
    # i // 2 on a doubled 2-D one: (2, 2) at 2.4 read rows [0, 0, 1, 1], torch [0, 0, 0, 1])
    scales = [0.5, 0.7, 1.0, 1.1, 1.5, 1.99, 2.0, 2.4, 3.0]
    rng = np.random.default_rng(0)
    for size in range(1, 10):
        for k, factor in enumerate(scales):
            rest = tuple(1 + (size + k + j) % 9 for j in range(spatial_dims - 1))
            if size == 1 and set(rest) == {1}:
                continue  # (torch mixes channels there: a 1x1 image is read as channels-last)
            x = rng.integers(0, 200, (1, 3, size) + rest).astype(np.float32)
            tx, ex = _pair(x, 1.0, 0)
            mixed = (factor,) + tuple(scales[(k + 3 + j) % 9] for j in range(spatial_dims - 1))
            for each in [(factor,) * spatial_dims, mixed]:
                if all(int(n * f) > 0 for n, f in zip((size,) + rest, each)):
                    _same(tqf.interpolate(tx, scale_factor=each, mode=mode),
                          eqf.interpolate(ex, scale_factor=each, mode=mode))


def test_interpolate_bicubic_is_refused_clearly():
    x = ember.quantize_per_tensor(ember.ones(1, 1, 2, 2), 0.1, 0, ember.quint8)
    with pytest.raises(ArgumentError, match="mode='bicubic' is not supported"):
        eqf.interpolate(x, scale_factor=2, mode="bicubic")


def test_upsample_bilinear_as_torch():  # (align_corners=True, as PyTorch's; sweep65c)
    x = np.random.default_rng(3).standard_normal((1, 3, 4, 5)).astype(np.float32)
    tx = torch.quantize_per_tensor(torch.tensor(x), 0.03, 120, torch.quint8)
    ex = ember.quantize_per_tensor(ember.tensor(x), 0.03, 120, ember.quint8)
    _same(tqf.upsample_bilinear(tx, size=(7, 9)), eqf.upsample_bilinear(ex, size=(7, 9)))
