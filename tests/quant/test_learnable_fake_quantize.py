"""``_LearnableFakeQuantize`` against PyTorch 2.13's: static estimation, then learning the
scale and zero point (values, gradients, state dict)."""

import numpy as np
import pytest
import torch
import torch.ao.quantization._learnable_fake_quantize as tl

import ember
import ember.ao.quantization._learnable_fake_quantize as el

RNG = np.random.default_rng(0)
X = (RNG.standard_normal((4, 3, 5)) * 2).astype(np.float32)

CONFIGS = [
    dict(observer="MovingAverageMinMaxObserver"),
    dict(observer="MovingAverageMinMaxObserver", qscheme="per_tensor_symmetric",
         dtype="qint8", quant_min=-128, quant_max=127, use_grad_scaling=True),
    dict(observer="MovingAveragePerChannelMinMaxObserver", ch_axis=1, channel_len=3,
         quant_min=0, quant_max=15),
    dict(observer="MovingAveragePerChannelMinMaxObserver", ch_axis=1, channel_len=3,
         qscheme="per_channel_symmetric", dtype="qint8", quant_min=-8, quant_max=7),
]


def make(lib, learnable, ao, config):
    kw = {k: getattr(lib, v) if k in ("qscheme", "dtype") else v for k, v in config.items()}
    kw["observer"] = getattr(ao, config["observer"])
    return learnable._LearnableFakeQuantize(**kw)


def steps(lib, fq):
    out = []
    for step in range(4):
        if step == 2:
            fq.enable_param_learning()
        x = lib.tensor(X * (1 + step / 2), requires_grad=True)
        y = fq(x)
        y.backward(lib.tensor(np.sin(X)))
        out += [y, x.grad]
        if step >= 2:
            out += [fq.scale.grad.clone(), fq.zero_point.grad.clone()]
            with lib.no_grad():
                fq.scale -= 0.01 * fq.scale.grad
                fq.zero_point -= 0.5 * fq.zero_point.grad
            fq.scale.grad = fq.zero_point.grad = None
    out += list(fq.calculate_qparams())
    return [a.detach().numpy() for a in out]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: str(sorted(c.items())))
def test_static_then_learning_as_torch(config):
    e = steps(ember, make(ember, el, ember.ao.quantization, config))
    t = steps(torch, make(torch, tl, torch.ao.quantization, config))
    assert len(e) == len(t)
    for i, (a, b) in enumerate(zip(e, t, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape, i
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=str(i))


def test_switches_and_state_dict_as_torch():
    e = make(ember, el, ember.ao.quantization, CONFIGS[0])
    t = make(torch, tl, torch.ao.quantization, CONFIGS[0])
    assert list(e.state_dict()) == list(t.state_dict())
    for fq, lib in ((e, ember), (t, torch)):
        fq.enable_static_observation()
        y = fq(lib.tensor(X))
        np.testing.assert_array_equal(y.detach().numpy(), X)  # (observed, passed unchanged)
        assert fq.scale.requires_grad is False and int(fq.static_enabled[0]) == 1
    assert e.bitwidth == t.bitwidth == 8


def test_bad_ranges_are_clear_errors():
    with pytest.raises(ember.errors.ArgumentError, match="strictly less"):
        el._LearnableFakeQuantize(ember.ao.quantization.MinMaxObserver, 5, 5)
    with pytest.raises(ember.errors.ArgumentError, match="out of"):
        el._LearnableFakeQuantize(ember.ao.quantization.MinMaxObserver, 0, 300)
    with pytest.raises(ember.errors.ArgumentError, match="channel_len"):
        el._LearnableFakeQuantize(ember.ao.quantization.MinMaxObserver, channel_len=0)
