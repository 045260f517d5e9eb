"""The smaller names of torch.ao.quantization and torch's top-level quantization functions:
fixed-parameter observers and fake quantizers (and prepare_qat's use of them for sigmoid and
tanh), the debug and no-op observers, more default qconfigs, add_quant_dequant, QuantType,
quantize_per_tensor_dynamic, quantized max pooling and fused_moving_avg_obs_fake_quant."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same


def test_fixed_qparams_observers_and_fake_quantizers_equal_torch():
    x = np.linspace(-1.5, 1.5, 41, dtype=np.float32)
    for name in ("default_fixed_qparams_range_0to1_fake_quant",
                 "default_fixed_qparams_range_neg1to1_fake_quant"):
        t, e = getattr(tq, name)(), getattr(eq, name)()
        same(e(ember.tensor(x)), t(torch.tensor(x)))
        for a, b in zip(e.calculate_qparams(), t.calculate_qparams()):
            same(a, b)
    with pytest.raises(TypeError, match="must be a FixedQParamsObserver"):
        eq.FixedQParamsFakeQuantize(eq.MinMaxObserver)
    assert eq.default_symmetric_fixed_qparams_observer().zero_point.item() == 128


def test_prepare_qat_fixes_sigmoid_and_tanh_ranges_like_torch():
    def net(nn, stubs):
        return nn.Sequential(stubs.QuantStub(), nn.Linear(3, 4), nn.Sigmoid(), nn.Linear(4, 4),
                             nn.Tanh(), nn.Linear(4, 2), nn.Hardsigmoid(), stubs.DeQuantStub())
    torch.manual_seed(0)
    t, e = net(torch.nn, tq), net(ember.nn, eq)
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.get_default_qat_qconfig("x86"), eq.get_default_qat_qconfig("x86")
    tp, ep = tq.prepare_qat(t.train()), eq.prepare_qat(e.train())
    assert type(ep[2].activation_post_process).__name__ == "FixedQParamsFakeQuantize"
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    np.testing.assert_allclose(ep(ember.tensor(x)).detach().numpy(),
                               tp(torch.tensor(x)).detach().numpy(), atol=1e-6)
    copy_weights(tp, ep)
    tc, ec = tq.convert(tp.eval()), eq.convert(ep.eval())
    assert (ec[4].scale, ec[4].zero_point) == (2 / 256, 128)
    same(ec(ember.tensor(x)), tc(torch.tensor(x)))


def test_convert_drops_the_observers_of_modules_it_keeps_float():
    m = ember.nn.Sequential(eq.QuantStub(), ember.nn.Linear(3, 4), eq.DeQuantStub(),
                            ember.nn.Softmax(-1))
    m.qconfig = eq.get_default_qat_qconfig("x86")
    p = eq.prepare_qat(m.train())
    assert type(p[3].activation_post_process).__name__ == "FixedQParamsFakeQuantize"
    x = ember.randn(5, 3)
    p(x)
    c = eq.convert(p.eval())
    assert not hasattr(c[3], "activation_post_process") and not c[3]._forward_hooks
    assert bool(ember.allclose(c(x).sum(-1), ember.ones(5)))


def test_convert_keeps_the_users_forward_hooks_of_a_swapped_module_as_torch():
    def run(nn, q, lib):
        m, log = nn.Sequential(q.QuantStub(), nn.Linear(3, 2), q.DeQuantStub()), []
        m[1].register_forward_pre_hook(lambda mod, args: log.append("pre"))
        m[1].register_forward_hook(lambda mod, args, out: log.append(("post", out.is_quantized)))
        m.qconfig = q.get_default_qconfig("x86")
        p = q.prepare(m)
        p(lib.randn(4, 3))
        c = q.convert(p)
        log.clear()
        c(lib.randn(4, 3))
        return log, len(c[1]._forward_hooks)

    ours = run(ember.nn, eq, ember)
    assert ours == run(torch.nn, tq, torch) == (["pre", ("post", True)], 1)  # (no observer)


def test_quantized_activations_of_every_integer_equal_torch():
    q = np.arange(256, dtype=np.uint8)
    for scale, zp in ((0.05, 128), (0.013, 40), (0.2, 0)):
        tx = torch._make_per_tensor_quantized_tensor(torch.from_numpy(q), scale, zp)
        ex = ember.quant.QuantizedTensor(ember.from_numpy(q), ember.quint8, scale, zp)
        for name, fn in (("Sigmoid", torch.sigmoid), ("Tanh", torch.tanh),
                         ("Hardsigmoid", torch.nn.functional.hardsigmoid)):
            t, e = fn(tx), getattr(ember.ao.nn.quantized, name)()(ex)
            assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
            same(e.int_repr(), t.int_repr())


def test_debug_noop_and_reuse_observers():
    obs = eq.default_debug_qconfig.activation()
    obs(ember.tensor([1.0]))
    obs(ember.tensor([2.0]))
    assert [v.item() for v in obs.get_tensor_value()] == [1.0, 2.0]
    for cls in (eq.RecordingObserver, eq.NoopObserver, eq.ReuseInputObserver):
        with pytest.raises(RuntimeError, match=f"should not be called for {cls.__name__}"):
            cls().calculate_qparams()
    assert eq.NoopObserver().dtype is ember.float16
    x = np.array([-0.7, 0.1, 2.0], np.float32)
    t, e = tq.default_dynamic_qat_qconfig.activation(), eq.default_dynamic_qat_qconfig.activation()
    same(e(ember.tensor(x)), t(torch.tensor(x)))


def test_add_quant_dequant_quant_type_and_mappings():
    m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
    m[0].qconfig = eq.default_qconfig
    assert type(eq.add_quant_dequant(m)[0]).__name__ == "QuantWrapper"
    leaf = ember.nn.Linear(2, 2)
    leaf.qconfig = eq.default_qconfig
    assert type(eq.add_quant_dequant(leaf)).__name__ == "QuantWrapper"
    assert [(q.name, int(q)) for q in eq.QuantType] == [(q.name, int(q)) for q in tq.QuantType]
    assert eq.DEFAULT_STATIC_QUANT_MODULE_MAPPINGS[ember.nn.Conv3d].__name__ == "Conv3d"
    assert ember.nn.Tanh in eq.DEFAULT_MODULE_TO_ACT_POST_PROCESS


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_quantize_per_tensor_dynamic_equals_torch(dtype, reduce_range):
    for x in (np.random.default_rng(0).normal(size=50).astype(np.float32) * 3,
              np.array([0.2, 0.5], np.float32), np.array([-4.0, -1.0], np.float32)):
        t = torch.quantize_per_tensor_dynamic(torch.tensor(x), getattr(torch, dtype),
                                              reduce_range)
        e = ember.quantize_per_tensor_dynamic(ember.tensor(x), getattr(ember, dtype),
                                              reduce_range)
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
        same(e.int_repr(), t.int_repr())


def test_top_level_getters_and_max_pooling_equal_torch():
    x = np.random.default_rng(1).normal(size=(2, 3, 7, 6)).astype(np.float32)
    t = torch.quantize_per_tensor(torch.tensor(x), 0.05, 100, torch.quint8)
    e = ember.quantize_per_tensor(ember.tensor(x), 0.05, 100, ember.quint8)
    assert (ember.q_scale(e), ember.q_zero_point(e)) == (torch.q_scale(t), torch.q_zero_point(t))
    # (torch.qscheme is the type of the qschemes, not a getter)
    assert isinstance(e.qscheme(), ember.qscheme) and isinstance(t.qscheme(), torch.qscheme)
    same(ember.int_repr(e), torch.int_repr(t))
    kw = dict(stride=(2, 1), padding=1, dilation=(1, 2), ceil_mode=True)
    same(ember.quantized_max_pool2d(e, (3, 2), **kw).int_repr(),
         torch.quantized_max_pool2d(t, (3, 2), **kw).int_repr())
    same(ember.quantized_max_pool2d(e, [2, 2]).int_repr(),
         torch.quantized_max_pool2d(t, [2, 2]).int_repr())
    same(ember.quantized_max_pool1d(e[0], [3], [2]).int_repr(),
         torch.quantized_max_pool1d(t[0], [3], [2]).int_repr())
    pc = ember.quantize_per_channel(ember.tensor(x[0, 0]), ember.ones(7, dtype=ember.float64),
                                    ember.zeros(7).long(), 0, ember.qint8)
    assert ember.q_per_channel_axis(pc) == 0
    with pytest.raises(TypeError, match="q_scale: expected a quantized tensor"):
        ember.q_scale(ember.ones(2))


@pytest.mark.parametrize("per_row, symmetric", [(False, False), (True, True), (True, False)])
def test_fused_moving_avg_obs_fake_quant_equals_torch(per_row, symmetric):
    rng = np.random.default_rng(2)
    n = 3 if per_row else 1
    tstate = [torch.full((n,), float("inf")), torch.full((n,), float("-inf")), torch.ones(n),
              torch.zeros(n, dtype=torch.int32)]
    estate = [ember.tensor(v.numpy().copy()) for v in tstate]
    qmin, qmax = (-128, 127) if symmetric else (0, 255)
    for step in range(4):  # (the first range, [-1, 1], puts the zero point on a tie)
        x = np.tile(np.float32([-1, 1, 0.5, 0.25, 0]), (3, 1)) if step == 0 else \
            rng.normal(size=(3, 5)).astype(np.float32) * step
        on = [1, 1, 1, 0][step]
        t = torch.fused_moving_avg_obs_fake_quant(
            torch.tensor(x), torch.tensor([on]), torch.tensor([1]), *tstate, 0.1, qmin, qmax, 0,
            per_row, symmetric)
        e = ember.fused_moving_avg_obs_fake_quant(
            ember.tensor(x), ember.tensor([on]), ember.tensor([1]), *estate, 0.1, qmin, qmax, 0,
            per_row, symmetric)
        same(e, t)
        for a, b in zip(estate, tstate):
            same(a, b)


@pytest.mark.parametrize("observe, fake", [(0, 1), (1, 0)])
def test_fused_kernel_chooses_qparams_only_when_fake_quantizing(observe, fake):
    # (PyTorch's kernel picks the scale and zero point from the running range whenever it
    # fake-quantizes, observing or not, and leaves them when it does not fake-quantize)
    args = [[-1.0], [1.0], [5.0]]
    tstate = [torch.tensor(a) for a in args] + [torch.tensor([7], dtype=torch.int32)]
    estate = [ember.tensor(a) for a in args] + [ember.tensor([7], dtype="int32")]
    x = np.float32([0.3, 3.0])
    t = torch.fused_moving_avg_obs_fake_quant(torch.tensor(x), torch.tensor([observe]),
                                              torch.tensor([fake]), *tstate, 0.5, 0, 255, 0)
    e = ember.fused_moving_avg_obs_fake_quant(ember.tensor(x), ember.tensor([observe]),
                                              ember.tensor([fake]), *estate, 0.5, 0, 255, 0)
    same(e, t)
    for a, b in zip(estate, tstate):
        same(a, b)
    tm = tq.FusedMovingAvgObsFakeQuantize()
    em = eq.FusedMovingAvgObsFakeQuantize()
    for m in (tm, em):
        m.enable_observer(bool(observe)), m.enable_fake_quant(bool(fake))
    x = np.float32([0.3, 3.05])
    same(em(ember.tensor(x)), tm(torch.tensor(x)))
    same(em.scale, tm.scale)
    same(em.zero_point, tm.zero_point)


def test_fused_kernel_fake_quantizes_rows_along_axis_0_only():
    state = [ember.full((2,), float("inf")), ember.full((2,), float("-inf")), ember.ones(2),
             ember.zeros(2, dtype="int32")]
    on = ember.tensor([1])
    with pytest.raises(ValueError, match="ch_axis 0"):
        ember.fused_moving_avg_obs_fake_quant(ember.ones(3, 2), on, on, *state, 0.01, 0, 255,
                                              1, True)


@pytest.mark.parametrize("reduce_range", [False, True])
def test_fused_moving_avg_fake_quantize_repr_as_torch(reduce_range):
    e = eq.FusedMovingAvgObsFakeQuantize(reduce_range=reduce_range)
    t = tq.FusedMovingAvgObsFakeQuantize(reduce_range=reduce_range)
    x = np.linspace(-1, 3, 8, dtype=np.float32)
    e(ember.tensor(x)), t(torch.tensor(x))
    assert repr(e).replace("ember.", "torch.") == repr(t)


@pytest.mark.parametrize("name", ["default_fixed_qparams_range_0to1_fake_quant",
                                  "default_fixed_qparams_range_neg1to1_fake_quant"])
def test_fixed_qparams_fake_quantize_repr_as_torch(name):  # (PyTorch's fields; sweep65c)
    assert repr(getattr(eq, name)()).replace("ember.", "") == \
        repr(getattr(tq, name)()).replace("torch.", "")
