"""ember.backends.quantized.engine: quantized Linear and convolutions give fbgemm's integers
with "x86"/"fbgemm" and QNNPACK's with "qnnpack", each compared element for element with
PyTorch's CPU kernels under the same engine."""

import contextlib
import warnings

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same

_RNG = np.random.default_rng(0)


@contextlib.contextmanager
def _engine(name):
    torch.backends.quantized.engine, ember.backends.quantized.engine = name, name
    try:
        yield
    finally:  # (the engine tests.quant.helpers sets for the other tests)
        torch.backends.quantized.engine, ember.backends.quantized.engine = "fbgemm", "x86"


def test_engine_switch_checks_its_value_like_torch():
    assert ember.backends.quantized.engine == "x86"
    assert set(ember.backends.quantized.supported_engines) <= \
        set(torch.backends.quantized.supported_engines)
    with pytest.raises(RuntimeError, match="onednn is not a valid value for quantized engine"):
        ember.backends.quantized.engine = "onednn"
    assert ember.backends.quantized.engine == "x86"


def _quantized_weight(shape, per_channel):
    w = (_RNG.normal(size=shape) * 0.3).astype(np.float32)
    if per_channel:
        scales = _RNG.uniform(0.001, 0.02, size=shape[0])
        zeros = np.zeros(shape[0], np.int64)
        return (torch.quantize_per_channel(torch.tensor(w), torch.tensor(scales),
                                           torch.tensor(zeros), 0, torch.qint8),
                ember.quantize_per_channel(ember.tensor(w), ember.tensor(scales),
                                           ember.tensor(zeros), 0, ember.qint8))
    scale = float(_RNG.uniform(0.001, 0.02))
    return (torch.quantize_per_tensor(torch.tensor(w), scale, 0, torch.qint8),
            ember.quantize_per_tensor(ember.tensor(w), scale, 0, ember.qint8))


_LAYERS = {  # name: (torch class, ember class, constructor arguments, weight shape, input)
    "Linear": ("quantized.Linear", (7, 5), (5, 7), (3, 4, 7)),
    "LinearReLU": ("intrinsic.quantized.LinearReLU", (7, 5), (5, 7), (6, 7)),
    "Conv1d": ("quantized.Conv1d", (3, 4, 3), (4, 3, 3), (2, 3, 9)),
    "Conv2d": ("quantized.Conv2d", (3, 4, 3), (4, 3, 3, 3), (2, 3, 6, 5)),
    "ConvReLU2d": ("intrinsic.quantized.ConvReLU2d", (3, 4, 3), (4, 3, 3, 3), (2, 3, 6, 5)),
    "Conv3d": ("quantized.Conv3d", (2, 3, 2), (3, 2, 2, 2, 2), (1, 2, 4, 3, 4)),
    "ConvTranspose2d": ("quantized.ConvTranspose2d", (3, 2, 3), (3, 2, 3, 3), (2, 3, 4, 4)),
}


def _modules(name):
    path, args, _, _ = _LAYERS[name]
    t = torch.ao.nn
    for part in path.split("."):
        t = getattr(t, part)
    return t(*args), getattr(ember.ao.nn.quantized, name)(*args)


@pytest.mark.parametrize("engine", ["fbgemm", "qnnpack"])
@pytest.mark.parametrize("name", list(_LAYERS))
def test_quantized_layers_give_each_engines_integers(engine, name):
    per_channels = [False] if name.startswith("ConvTranspose") else [False, True]
    with _engine(engine):
        for per_channel, trial in [(p, t) for p in per_channels for t in range(3)]:
            tm, em = _modules(name)
            tw, ew = _quantized_weight(_LAYERS[name][2], per_channel)
            w_scale = float(np.max(ew.q_per_channel_scales().numpy()) if per_channel
                            else ew.q_scale())
            x = (_RNG.normal(size=_LAYERS[name][3]) * 3).astype(np.float32)
            x_scale, x_zero = float(_RNG.uniform(0.01, 0.1)), int(_RNG.integers(0, 256))
            if engine == "fbgemm":  # 7-bit activations, as x86 observers' reduce_range gives:
                # fbgemm on CPUs without AVX-512 adds u8 x s8 pairs in saturating int16, which
                # full 8-bit ranges overflow (Ember computes exactly, as AVX-512 fbgemm does)
                x_zero //= 2
                x = np.clip(x, -x_zero * x_scale, (127 - x_zero) * x_scale)
            bias = _RNG.normal(size=tw.shape[1 if name.startswith("ConvT") else 0])
            bias = bias.astype(np.float32) * 3
            out_scale = float(_RNG.uniform(0.02, 0.3))
            if trial == 2:  # (small accumulators and bias, a multiplier near 1: where the
                x /= 30  # engines' roundings of the bias differ, many outputs do)
                bias *= x_scale * w_scale * 3
                out_scale = x_scale * w_scale * float(_RNG.uniform(1.1, 2))
            tm.set_weight_bias(tw, torch.tensor(bias))
            em._set_weight(ew, ember.tensor(bias))
            tm.scale = em.scale = out_scale
            tm.zero_point = em.zero_point = int(_RNG.integers(0, 256))
            tx = torch.quantize_per_tensor(torch.tensor(x), x_scale, x_zero, torch.quint8)
            ex = ember.quantize_per_tensor(ember.tensor(x), x_scale, x_zero, ember.quint8)
            same(em(ex).int_repr(), tm(tx).int_repr())


def _net(nn, stubs):
    return nn.Sequential(stubs.QuantStub(), nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(16, 5), stubs.DeQuantStub())


def test_a_model_quantized_for_qnnpack_equals_torch():
    torch.manual_seed(0)
    t, e = _net(torch.nn, tq), _net(ember.nn, eq)
    copy_weights(t, e)
    x = _RNG.normal(size=(6, 2, 4, 4)).astype(np.float32)
    with _engine("qnnpack"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.qconfig, e.qconfig = tq.get_default_qconfig("qnnpack"), eq.get_default_qconfig("qnnpack")
        tp, ep = tq.prepare(t.eval()), eq.prepare(e.eval())
        tp(torch.tensor(x))
        eq.load_observer_state_dict(ep, {k: ember.tensor(v.numpy()) for k, v in
                                         tq.get_observer_state_dict(tp).items()})
        tc, ec = tq.convert(tp), eq.convert(ep)
        same(ec(ember.tensor(x)), tc(torch.tensor(x)))


@pytest.mark.parametrize("engine", ["fbgemm", "qnnpack"])
def test_dynamic_linear_and_lstm_follow_the_engine(engine):
    # (QNNPACK ignores reduce_range and scales the accumulator in two float32 steps)
    torch.manual_seed(1)
    t = torch.nn.Sequential(torch.nn.Linear(9, 6), torch.nn.LSTM(6, 3, batch_first=True))
    e = ember.nn.Sequential(ember.nn.Linear(9, 6), ember.nn.LSTM(6, 3, batch_first=True))
    copy_weights(t, e)
    x = (_RNG.normal(size=(2, 4, 9)) * 2 + 0.5).astype(np.float32)
    with _engine(engine), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t_qc, e_qc in ((tq.default_dynamic_qconfig, eq.default_dynamic_qconfig),
                           (tq.per_channel_dynamic_qconfig, eq.per_channel_dynamic_qconfig)):
            qt = tq.quantize_dynamic(t, {torch.nn.Linear: t_qc, torch.nn.LSTM: t_qc})
            qe = eq.quantize_dynamic(e, {ember.nn.Linear: e_qc, ember.nn.LSTM: e_qc})
            h_t, h_e = qt[0](torch.tensor(x)), qe[0](ember.tensor(x))
            same(h_e, h_t)
            np.testing.assert_allclose(qe[1](h_e)[0].numpy(), qt[1](h_t)[0].detach().numpy(),
                                       atol=2e-6)


def _small_accumulator_linear(nn_quantized, quantize, tensor):
    # (a multiplier near 1 and a small bias: where the engines' integers differ)
    w = quantize(tensor((np.arange(48, dtype=np.float32).reshape(6, 8) % 7 - 3) * 0.1), 0.01)
    m = nn_quantized.Linear(8, 6)
    m.scale, m.zero_point = 0.02 * 0.01 * 1.37, 128
    bias = tensor(np.linspace(-1, 1, 6, dtype=np.float32) * 0.02 * 0.01 * 3)
    (m.set_weight_bias if hasattr(m, "set_weight_bias") else m._set_weight)(w, bias)
    return m


def test_converted_modules_keep_the_engine_their_weights_were_set_under():
    # (PyTorch packs weights for the engine current then: switching later changes nothing)
    x = (np.sin(np.arange(400, dtype=np.float32)).reshape(50, 8) * 0.1)
    outs = {}
    for built, run in (("fbgemm", "qnnpack"), ("qnnpack", "fbgemm"), ("qnnpack", "qnnpack")):
        with _engine(built):
            tm = _small_accumulator_linear(
                torch.ao.nn.quantized, lambda t, s: torch.quantize_per_tensor(t, s, 0, torch.qint8),
                torch.tensor)
            em = _small_accumulator_linear(
                ember.ao.nn.quantized,
                lambda t, s: ember.quantize_per_tensor(t, s, 0, ember.qint8), ember.tensor)
        with _engine(run):
            tx = torch.quantize_per_tensor(torch.tensor(x), 0.02, 128, torch.quint8)
            ex = ember.quantize_per_tensor(ember.tensor(x), 0.02, 128, ember.quint8)
            outs[built, run] = tm(tx).int_repr()
            same(em(ex).int_repr(), outs[built, run])
    assert not torch.equal(outs["fbgemm", "qnnpack"], outs["qnnpack", "qnnpack"])


def test_dynamic_modules_keep_the_engine_they_were_converted_under():
    torch.manual_seed(2)
    t = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.GRU(4, 3))
    e = ember.nn.Sequential(ember.nn.Linear(5, 4), ember.nn.GRU(4, 3))
    copy_weights(t, e)
    x = (_RNG.normal(size=(3, 2, 5)) * 2 + 0.5).astype(np.float32)
    with _engine("qnnpack"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qt, qe = tq.quantize_dynamic(t), eq.quantize_dynamic(e)
    with _engine("fbgemm"):
        h_t, h_e = qt[0](torch.tensor(x)), qe[0](ember.tensor(x))
        same(h_e, h_t)
        np.testing.assert_allclose(qe[1](h_e)[0].numpy(), qt[1](h_t)[0].detach().numpy(),
                                   atol=2e-6)


def test_float16_dynamic_weights_raise_under_qnnpack_as_torch():
    with _engine("qnnpack"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="not supported by QNNPACK"):
            torch.ao.nn.quantized.dynamic.Linear(3, 2, dtype=torch.float16)
        for make in (lambda: ember.ao.nn.quantized.dynamic.Linear(3, 2, dtype=ember.float16),
                     lambda: ember.ao.nn.quantized.dynamic.LSTM(3, 2, dtype=ember.float16),
                     lambda: eq.quantize_dynamic(ember.nn.Sequential(ember.nn.GRU(3, 2)),
                                                 dtype=ember.float16)):
            with pytest.raises(RuntimeError, match="float16 .* not supported by QNNPACK"):
                make()
