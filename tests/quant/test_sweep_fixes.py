"""What a differential sweep against torch.ao.quantization found, checked against PyTorch:
per-channel rounding, saturation and float zero points, 0-d quantized tensors, QAT convert's
last weight observation, fused fake quantization of NaN and infinite ranges, float modules
given quantized tensors and the quantized twins of ReLU6, Hardswish, LeakyReLU, ELU and
BatchNorm2d/3d, PlaceholderObserver's defaults, quantized Dropout and set_weight_bias, the
refused observer and qconfig arguments, and fused modules' double observation."""

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq
import torch.ao.quantization as tq

import ember
import ember.ao.nn.quantized as ennq
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same

F32 = np.float32
NAN, INF = float("nan"), float("inf")


def _both(x: np.ndarray) -> tuple:
    x = np.ascontiguousarray(x, F32)
    return ember.from_numpy(x.copy()), torch.from_numpy(x.copy())


def _per_channel(x, scales, zero_points, axis, dtype):
    """The same per-channel quantization in Ember and PyTorch."""
    (ex, tx), s, z = _both(x), np.asarray(scales), np.asarray(zero_points)
    e = ember.quantize_per_channel(ex, ember.from_numpy(s.copy()), ember.from_numpy(z.copy()),
                                   axis, getattr(ember, dtype))
    t = torch.quantize_per_channel(tx, torch.from_numpy(s.copy()), torch.from_numpy(z.copy()),
                                   axis, getattr(torch, dtype))
    return e, t


# 1, 2: per channel, the zero point is added before rounding; saturation and NaN as PyTorch


@pytest.mark.parametrize("dtype", ["qint8", "quint8", "qint32"])
def test_quantize_per_channel_ties_and_saturation_like_torch(dtype):
    rng = np.random.default_rng(1)
    lo, hi = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-1000, 1000)}[dtype]
    for axis in (0, 1):
        scales = rng.uniform(1e-3, 1, 4)
        zps = rng.integers(lo, hi + 1, 4)
        ties = (rng.integers(-300, 300, (4, 40)) + 0.5) * scales[:, None]
        x = np.concatenate([ties, rng.normal(0, 50, (4, 40)),
                            np.tile([NAN, INF, -INF, 3e9, -3e9, 1e30], (4, 1))], 1)
        e, t = _per_channel(x if axis == 0 else x.T, scales, zps, axis, dtype)
        same(e.int_repr(), t.int_repr())
        same(e.dequantize(), t.dequantize())
    e, t = _per_channel(np.array([[0.5, 1.5, 2.5]]), [1.0], [1], 0, "qint8")  # the sweep's case
    assert e.int_repr().tolist() == t.int_repr().tolist() == [[2, 2, 4]]
    e, t = _per_channel(np.array([[3e9, INF]]), [1.0], [0], 0, "qint32")
    assert e.int_repr().tolist() == t.int_repr().tolist() == [[2**31 - 1] * 2]


def test_fake_quantize_per_channel_adds_the_zero_point_after_rounding_like_torch():
    x = np.array([[0.5, 1.5, 2.5, -0.5]], F32)
    (ex, tx) = _both(x)
    e = ember.fake_quantize_per_channel_affine(ex, ember.tensor([1.0]),
                                               ember.tensor([1], dtype=ember.int32), 0, -128, 127)
    t = torch.fake_quantize_per_channel_affine(tx, torch.tensor([1.0]),
                                               torch.tensor([1], dtype=torch.int32), 0, -128, 127)
    same(e, t)
    assert e.tolist() == [[0.0, 2.0, 2.0, 0.0]]


# 3: float zero points give per_channel_affine_float_qparams


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "quint4x2"])
def test_quantize_per_channel_float_zero_points_like_torch(dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(0.5, 1, (3, 30)), [[0.05, 0.15, 0.25]] * 3], 1)
    scales, zps = rng.uniform(0.05, 0.2, 3), np.array([0.5, 1.25, 7.0], F32)
    e, t = _per_channel(x, scales, zps, 0, dtype)
    assert e.qscheme() is ember.per_channel_affine_float_qparams
    assert t.qscheme() is torch.per_channel_affine_float_qparams
    same(e.dequantize(), t.dequantize())
    if dtype != "quint4x2":  # (PyTorch packs two 4-bit values a byte)
        same(e.int_repr(), t.int_repr())
    same(e.q_per_channel_zero_points(), t.q_per_channel_zero_points())
    same(e.q_per_channel_scales(), t.q_per_channel_scales())  # (float32, as PyTorch's)
    e, t = _per_channel(np.array([[0.05]]), [0.1], np.array([0.5], F32), 1, "quint8")
    assert e.int_repr().tolist() == t.int_repr().tolist() == [[1]]


def test_float_zero_points_refuse_qint32():  # (PyTorch's kernel crashes the process)
    with pytest.raises(ember.DTypeError, match="float zero points"):
        ember.quantize_per_channel(ember.ones(2, 2), ember.ones(2, dtype=ember.float64),
                                   ember.tensor([0.5, 0.5]), 0, ember.qint32)


# 4: 0-d quantized tensors


def test_zero_dim_quantized_tensors_like_torch():
    e = ember.quantize_per_tensor(ember.tensor(1.3), 0.1, 2, ember.quint8)
    t = torch.quantize_per_tensor(torch.tensor(1.3), 0.1, 2, torch.quint8)
    assert e.shape == () and e.int_repr().item() == t.int_repr().item() == 15
    same(e.dequantize(), t.dequantize())
    assert "size=()" in repr(e)
    e = ember.quantize_per_tensor_dynamic(ember.tensor(1.3), ember.quint8, False)
    t = torch.quantize_per_tensor_dynamic(torch.tensor(1.3), torch.quint8, False)
    assert (e.int_repr().item(), e.q_scale(), e.q_zero_point()) == \
        (t.int_repr().item(), t.q_scale(), t.q_zero_point())
    e = ember.quantize_per_tensor(ember.tensor([1.3, 2.0]), 0.1, 2, ember.quint8)[0]
    t = torch.quantize_per_tensor(torch.tensor([1.3, 2.0]), 0.1, 2, torch.quint8)[0]
    same(e.dequantize(), t.dequantize())
    same(e.int_repr(), t.int_repr())


# 5: QAT convert shows the weight to its fake quantizer once more


def test_qat_convert_observes_the_weight_once_more_like_torch():
    results = []
    for nn, q, lib in ((ember.nn, eq, ember), (torch.nn, tq, torch)):
        m = nn.Sequential(q.QuantStub(), nn.Linear(2, 3), q.DeQuantStub()).train()
        m.qconfig = q.get_default_qat_qconfig("x86")
        p = q.prepare_qat(m)
        with lib.no_grad():
            p[1].weight[...] = lib.tensor([[1.0, -1.0], [0.5, 0.25], [-2.0, 0.1]])
        p(lib.ones(1, 2))
        with lib.no_grad():
            p[1].weight.mul_(2.0)  # training moved the weight; the running range lags
        p(lib.ones(1, 2))
        w = q.convert(p.eval())[1].weight()
        results.append((w.int_repr().numpy(), w.q_per_channel_scales().numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


# 6: the fused fake quantizer given NaN or infinities


@pytest.mark.parametrize("values", [[1.0, NAN, -3.0], [NAN, NAN], [INF, 1.0, -2.0],
                                    [-INF, 1.0, 0.5], [INF, -INF]])
@pytest.mark.parametrize("preset", ["default_fused_act_fake_quant",
                                    "default_fused_wt_fake_quant"])
def test_fused_fake_quant_of_nan_and_infinities_like_torch(values, preset):
    ex, tx = _both(np.array(values))
    ex.requires_grad_(True)
    tx.requires_grad_(True)
    efq, tfq = getattr(eq, preset)(), getattr(tq, preset)()
    ey, ty = efq(ex), tfq(tx)
    ey.sum().backward()
    ty.sum().backward()
    same(ey, ty)
    same(ex.grad, tx.grad)
    same(efq.scale, tfq.scale)
    same(efq.zero_point, tfq.zero_point)
    same(efq(ember.tensor([0.5, -0.5])), tfq(torch.tensor([0.5, -0.5])))  # (and after)


def test_fused_moving_avg_obs_fake_quant_function_of_nan_like_torch():
    outs = []
    for lib in (ember, torch):
        on = lib.tensor([1])
        lo, hi = lib.tensor([INF]), lib.tensor([-INF])
        s, z = lib.tensor([1.0]), lib.tensor([0], dtype=lib.int32)
        y = lib.fused_moving_avg_obs_fake_quant(lib.tensor([1.0, NAN]), on, on, lo, hi, s, z,
                                                0.01, 0, 255, 0)
        outs.append([t.numpy() for t in (y, s, z, lo, hi)])
    for e, t in zip(*outs):
        np.testing.assert_array_equal(e, t)


# 7: float modules given quantized tensors; the quantized twins


def _q(shape=(1, 2, 4, 4)):
    return ember.quantize_per_tensor(ember.randn(*shape), 0.1, 128, ember.quint8)


class _User(ember.nn.Module):
    def forward(self, x):
        return ember.exp(x)


@pytest.mark.parametrize("module, shape, name", [
    (ember.nn.Hardswish(), None, "Hardswish"),
    (ember.nn.Upsample(scale_factor=2), None, "Upsample"),
    (ember.nn.ZeroPad2d(1), None, "ZeroPad2d"),
    (ember.nn.BatchNorm2d(2).eval(), None, "BatchNorm2d"),
    (ember.nn.LayerNorm(4), None, "LayerNorm"),
    (ember.nn.GroupNorm(1, 2), None, "GroupNorm"),
    (ember.nn.InstanceNorm2d(2), None, "InstanceNorm2d"),
    (ember.nn.AvgPool2d(2), None, "AvgPool2d"),
    (ember.nn.Hardtanh(), None, "Hardtanh"),
    (ember.nn.MaxPool1d(2), (3, 4), "MaxPool1d"),
    (ember.nn.Sequential(ember.nn.Identity(), ember.nn.GELU()), None, "GELU"),
    (_User(), None, "_User"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_float_modules_given_a_quantized_tensor_raise_naming_module_and_fix(module, shape,
                                                                            name):
    with pytest.raises(eq.QuantizedOperandError) as info:
        module(_q(shape or (1, 2, 4, 4)))
    message = str(info.value)
    assert f"called by the float module {name}. Hint: " in message
    assert "DeQuantStub" in message or "dequantize" in message


def test_an_unbatched_quantized_input_to_lstm_says_it_has_no_quantized_form():
    # (the unsqueeze of an unbatched input now keeps the quantization, as PyTorch's: the
    # layer's own dtype check answers, as for a batched input)
    with pytest.raises(ember.errors.DTypeError, match=r"LSTM: the input is a quantized tensor.*"
                                                      r"Hint: dequantize its input first"):
        ember.nn.LSTM(4, 2)(_q((3, 4)))


@pytest.mark.parametrize("call", [lambda q: ember.arange(q), lambda q: ember.cdist(q, q),
                                  lambda q: ember.nn.functional.pad(q, (1, 1))],
                         ids=["arange", "cdist", "pad"])
def test_a_quantized_tensor_given_to_a_float_op_says_dequantize(call):
    # (f33424e0 made arange's and cdist's a "must be Tensor, not QuantizedTensor" TypeError)
    with pytest.raises(eq.QuantizedOperandError, match=r"call \.dequantize\(\) first"):
        call(_q((2, 3)))


def test_the_hint_names_the_quantized_twin():
    with pytest.raises(eq.QuantizedOperandError, match=r"swaps it for ember\.ao\.nn\."
                                                       r"quantized\.Hardswish"):
        ember.nn.Sequential(ember.nn.Hardswish())(_q())
    with pytest.raises(eq.QuantizedOperandError, match=r"swaps it for ember\.ao\.nn\."
                                                       r"quantized\.LayerNorm"):
        ember.nn.LayerNorm(4)(_q())
    with pytest.raises(eq.QuantizedOperandError, match="Ember has no quantized GELU"):
        ember.nn.GELU()(_q())
    with pytest.raises(eq.QuantizedOperandError, match=r"^operator \+: quantized tensors"):
        _q() + 1


def _ops(x, lib):
    """The quantized kernels of the twins, on a quantized tensor ``x``."""
    if lib is torch:
        return [torch.nn.functional.relu6(x),  # (the modules: float32 output scales)
                torch.ao.nn.quantized.Hardswish(0.03, 40)(x),
                torch.ao.nn.quantized.LeakyReLU(0.05, 100, 0.1)(x),
                torch.ops.quantized.elu(x, 0.02, 200, 1.5, 1.0, 1.0)]
    return [ennq.ReLU6()(x), ennq.Hardswish(0.03, 40)(x), ennq.LeakyReLU(0.05, 100, 0.1)(x),
            ennq.ELU(0.02, 200, 1.5)(x)]


@pytest.mark.parametrize("n", [256, 300, 29])  # (vectorized blocks of 64 and a scalar tail)
def test_quantized_activations_match_torch_on_every_integer(n):
    rng = np.random.default_rng(n)
    ints = np.resize(np.arange(256, dtype=np.uint8), n)
    rng.shuffle(ints)
    for scale, zp in ((0.05, 128), (0.25, 3), (2.0 ** -5, 200)):  # (2**-k: ties)
        e = ember.quantize_per_tensor(ember.zeros(n), scale, zp, ember.quint8)
        e._int = ember.from_numpy(ints.copy())
        t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints.copy()), scale, zp)
        for eo, to in zip(_ops(e, ember), _ops(t, torch)):
            same(eo.int_repr(), to.int_repr())
            assert (eo.q_scale(), eo.q_zero_point()) == (to.q_scale(), to.q_zero_point())


def _acts_net(nn, q, dims):
    """Conv, batch norm and the activations with quantized twins, in a quantized region."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = q.QuantStub(), q.DeQuantStub()
            self.conv = (nn.Conv2d if dims == 2 else nn.Conv3d)(2, 3, 1)
            self.bn = (nn.BatchNorm2d if dims == 2 else nn.BatchNorm3d)(3)
            self.acts = nn.Sequential(nn.Hardswish(), nn.LeakyReLU(0.2), nn.ELU(0.7),
                                      nn.ReLU6())

        def forward(self, x):
            return self.dequant(self.acts(self.bn(self.conv(self.quant(x)))))
    return Net()


@pytest.mark.parametrize("dims", [2, 3])
def test_convert_swaps_batch_norms_and_activations_like_torch(dims):
    torch.manual_seed(dims)
    t = _acts_net(torch.nn, tq, dims).eval()
    with torch.no_grad():
        t.bn.running_mean.uniform_(-0.5, 0.5)
        t.bn.running_var.uniform_(0.5, 2)
        t.bn.weight.uniform_(0.5, 1.5)
        t.bn.bias.uniform_(-0.5, 0.5)
    e = _acts_net(ember.nn, eq, dims).eval()
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    tp, ep = tq.prepare(t), eq.prepare(e)
    x = np.random.default_rng(dims).normal(0, 2, (2, 2, 5, 6) + (4,) * (dims - 2))
    ex, tx = _both(x)
    tp(tx)
    ep(ex)  # (then the same ranges: the float models may differ in the last bit)
    eq.load_observer_state_dict(ep, {k: ember.from_numpy(v.numpy().copy())
                                     for k, v in tq.get_observer_state_dict(tp).items()})
    tc, ec = tq.convert(tp), eq.convert(ep)
    assert [type(m).__name__ for m in ec.acts] == ["Hardswish", "LeakyReLU", "ELU", "ReLU6"]
    assert type(ec.bn) is (ennq.BatchNorm2d if dims == 2 else ennq.BatchNorm3d)
    same(ec(ex), tc(tx))
    for name in ("bn", "acts.0", "acts.1", "acts.2"):
        tm, em = tc.get_submodule(name), ec.get_submodule(name)
        assert float(em.scale) == float(tm.scale) and int(em.zero_point) == int(tm.zero_point)
    fresh = type(ec.bn)(3)
    fresh.load_state_dict(ec.bn.state_dict())  # (scale and zero point buffers, as PyTorch's)
    q = ember.quantize_per_tensor(ember.from_numpy(np.asarray(x[:, :1].repeat(3, 1), F32)),
                                  0.1, 64, ember.quint8)
    same(fresh(q).int_repr(), ec.bn(q).int_repr())


# 8: PlaceholderObserver


def test_placeholder_observer_defaults_like_torch():
    e, t = eq.PlaceholderObserver(), tq.PlaceholderObserver()
    assert e.dtype is ember.float32 and t.dtype is torch.float32
    assert e.qscheme is ember.per_tensor_affine and t.qscheme is torch.per_tensor_affine
    assert e.eps == t.eps and (e.quant_min, e.quant_max) == (t.quant_min, t.quant_max)
    assert repr(e) == repr(t).replace("torch", "ember")
    assert eq.float_qparams_weight_only_qconfig.activation().dtype is ember.float32
    assert eq.default_dynamic_quant_observer().dtype is ember.quint8
    for mapping in (eq.get_default_qconfig_mapping(), eq.get_default_qat_qconfig_mapping()):
        assert mapping.object_type_qconfigs[ember.nn.LayerNorm].weight().dtype is ember.float32
    with pytest.warns(UserWarning, match="is_dynamic"):
        assert not eq.PlaceholderObserver(compute_dtype=ember.quint8).is_dynamic


# 9: quantized Dropout, set_weight_bias


def test_quantized_dropout_like_torch():
    e, t = ennq.Dropout(0.5), tnnq.Dropout(0.5)
    assert (e.p, e.inplace) == (t.p, t.inplace)
    q = _q()
    assert e(q) is q and e.train()(q) is q
    assert ennq.Dropout.from_float(ember.nn.Dropout(0.2, True)).p == 0.2


def _quantized_weight(lib, w, per_channel):
    w = lib.from_numpy(np.asarray(w, F32))
    if not per_channel:
        return lib.quantize_per_tensor(w, 0.02, 0, lib.qint8)
    scales = lib.from_numpy(np.linspace(0.01, 0.03, w.shape[0]))
    return lib.quantize_per_channel(w, scales, lib.zeros(w.shape[0], dtype=lib.int64), 0,
                                    lib.qint8)


@pytest.mark.parametrize("per_channel", [False, True])
def test_set_weight_bias_like_torch(per_channel):
    rng = np.random.default_rng(9)
    w_conv, w_linear = rng.normal(0, 1, (3, 2, 3, 3)), rng.normal(0, 1, (4, 6))
    b = rng.normal(0, 1, 3).astype(F32)
    x_conv, x_linear = rng.uniform(0, 2, (1, 2, 5, 5)), rng.uniform(0, 2, (2, 6))
    outs = []
    for lib, nnq in ((ember, ennq), (torch, tnnq)):
        conv, linear = nnq.Conv2d(2, 3, 3), nnq.Linear(6, 4)
        conv.set_weight_bias(_quantized_weight(lib, w_conv, per_channel),
                             lib.from_numpy(b.copy()))
        linear.set_weight_bias(_quantized_weight(lib, w_linear, per_channel), None)
        assert linear.bias() is None
        for m, x in ((conv, x_conv), (linear, x_linear)):
            qx = lib.quantize_per_tensor(lib.from_numpy(np.asarray(x, F32)), 0.01, 0, lib.quint8)
            outs.append(m(qx).int_repr().numpy())
    np.testing.assert_array_equal(outs[0], outs[2])
    np.testing.assert_array_equal(outs[1], outs[3])


def test_set_weight_bias_refuses_what_does_not_fit():
    conv = ennq.Conv2d(2, 3, 3)
    with pytest.raises(TypeError, match="qint8"):
        conv.set_weight_bias(ember.randn(3, 2, 3, 3), None)
    with pytest.raises(ValueError, match=r"shape \(3, 2, 3, 3\)"):
        conv.set_weight_bias(ember.quantize_per_tensor(ember.randn(3, 2, 3, 2), 0.1, 0,
                                                       ember.qint8), None)
    with pytest.raises(ValueError, match="bias"):
        conv.set_weight_bias(ember.quantize_per_tensor(ember.randn(3, 2, 3, 3), 0.1, 0,
                                                       ember.qint8), ember.ones(4))
    per_channel = ember.quantize_per_channel(ember.randn(2, 3, 1, 1), ember.ones(
        2, dtype=ember.float64), ember.zeros(2, dtype=ember.int64), 0, ember.qint8)
    with pytest.raises(ValueError, match="per-channel weights are not supported"):
        ennq.ConvTranspose2d(2, 3, 1).set_weight_bias(per_channel, None)


def test_dynamic_float16_set_weight_bias_like_torch():
    w, b = np.random.default_rng(0).normal(0, 1, (3, 4)).astype(F32), np.ones(3, F32)
    x = np.linspace(-1, 1, 8, dtype=F32).reshape(2, 4)
    outs = []
    for lib, nnqd in ((ember, ennq.dynamic), (torch, tnnq.dynamic)):
        m = nnqd.Linear(4, 3, dtype=lib.float16)
        m.set_weight_bias(lib.from_numpy(w.copy()), lib.from_numpy(b.copy()))
        outs.append(m(lib.from_numpy(x.copy())).numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=2e-6)


# 10: refused observer and qconfig arguments


@pytest.mark.parametrize("name", ["PerChannelMinMaxObserver",
                                  "MovingAveragePerChannelMinMaxObserver", "MinMaxObserver"])
def test_symmetric_quint8_reduce_range_refused_like_torch(name):
    for lib, q in ((ember, eq), (torch, tq)):
        scheme = lib.per_tensor_symmetric if name == "MinMaxObserver" else \
            lib.per_channel_symmetric
        with pytest.raises(NotImplementedError, match="Cannot reduce range"):
            getattr(q, name)(dtype=lib.quint8, qscheme=scheme, reduce_range=True)


def test_qconfig_refuses_observer_instances_like_torch():
    for q in (eq, tq):
        for kwargs in ({"activation": q.MinMaxObserver(), "weight": q.default_weight_observer},
                       {"activation": q.MinMaxObserver, "weight": q.default_weight_observer()}):
            with pytest.raises(ValueError, match="received observer instance"):
                q.QConfig(**kwargs)
    assert eq.QConfig(activation=None, weight=None) == (None, None)


# 11: a fused module's observer runs as its last member and in its hook, as PyTorch's


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_fused_modules_observe_twice_like_torch(kind):
    results = []
    for lib, q in ((ember, eq), (torch, tq)):
        nn = lib.nn
        lib.manual_seed(0)
        layer = nn.Linear(2, 2) if kind == "linear" else nn.Conv2d(2, 2, 1)
        m = nn.Sequential(q.QuantStub(), layer, nn.ReLU(), q.DeQuantStub()).eval()
        results.append(m)
    copy_weights(results[1], results[0])
    outs = []
    for (lib, q), m in zip(((ember, eq), (torch, tq)), results):
        m = q.fuse_modules(m, [["1", "2"]])
        m.qconfig = q.QConfig(activation=q.MovingAverageMinMaxObserver.with_args(
            averaging_constant=0.5), weight=q.default_weight_observer)
        p = q.prepare(m)
        shape = (1, 2) if kind == "linear" else (1, 2, 1, 1)
        for v in (1.0, 3.0):
            p(lib.full(shape, v))
        x = lib.from_numpy(np.linspace(-2, 4, 8, dtype=F32).reshape(4, *shape[1:]))
        outs.append((float(p[1].activation_post_process.max_val), q.convert(p)(x).numpy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])



@pytest.mark.parametrize("zero_point", [2.7, 2.0, np.float64(2.0), True, "2"])
def test_a_non_integer_zero_point_number_is_refused_as_torch(zero_point):
    # PyTorch raises TypeError for these; a truncated 2.7 would quantize silently
    x = ember.tensor([0.1, 0.4])
    with pytest.raises(TypeError, match="quantize_per_tensor: zero_point must be an int"):
        ember.quantize_per_tensor(x, 0.1, zero_point, ember.qint8)
    with pytest.raises(TypeError, match="fake_quantize_per_tensor_affine: zero_point must be"):
        ember.fake_quantize_per_tensor_affine(x, 0.1, zero_point, -128, 127)


def test_integer_zero_points_and_float_tensors_pass_as_torch():
    x = np.array([0.1, 0.4, -0.3], np.float32)
    cases = [((0.1, np.int64(2)), (0.1, np.int64(2)))] + [  # (tensor zero point: tensor scale)
        ((ember.tensor(0.1), ember.tensor(z)), (torch.tensor(0.1), torch.tensor(z)))
        for z in (2, 2.7)]
    for (es, ez), (ts, tz) in cases:
        e = ember.quantize_per_tensor(ember.from_numpy(x), es, ez, ember.qint8)
        t = torch.quantize_per_tensor(torch.from_numpy(x), ts, tz, torch.qint8)
        assert e.q_zero_point() == t.q_zero_point() == 2
        same(e.int_repr(), t.int_repr())
        same(ember.fake_quantize_per_tensor_affine(ember.from_numpy(x), es, ez, -128, 127),
             torch.fake_quantize_per_tensor_affine(torch.from_numpy(x), ts, tz, -128, 127))


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN"])
def test_a_float_recurrent_layer_given_a_batched_quantized_input_names_the_layer(layer):
    q = ember.quantize_per_tensor(ember.randn(2, 3, 4), 0.1, 0, ember.quint8)
    with pytest.raises(ember.errors.DTypeError, match=f"no quantized {layer}.*dequantize"):
        getattr(ember.nn, layer)(4, 5)(q)  # (was: "convert model: model.to(ember.quint8)")
