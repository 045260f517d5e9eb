"""Conv and batch norm fused for quantization-aware training (PyTorch's ``intrinsic.ConvBn*d``
and ``intrinsic.qat.ConvBn*d``), against PyTorch's, and MobileNetV3's ``quantize=True``."""

import copy

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from ember.quant.modules import qat as nnqat
from ember.vision.models import quantization as qmodels

from .helpers import copy_weights, same, with_batch_statistics

DIMS = {1: (6,), 2: (6, 5), 3: (4, 3, 5)}


def _pair(n, relu, bias):
    def build(lib, q):
        layers = [q.QuantStub(), getattr(lib.nn, f"Conv{n}d")(3, 4, 3, padding=1, bias=bias),
                  getattr(lib.nn, f"BatchNorm{n}d")(4)]
        return lib.nn.Sequential(*layers, *([lib.nn.ReLU()] if relu else []), q.DeQuantStub())
    torch.manual_seed(0)
    t, e = build(torch, tq), build(ember, eq)
    with torch.no_grad():
        t[2].weight.uniform_(0.5, 1.5)
        t[2].bias.uniform_(-0.2, 0.2)
    copy_weights(t, e)
    names = ["1", "2", "3"] if relu else ["1", "2"]
    t, e = tq.fuse_modules_qat(t.train(), names), eq.fuse_modules_qat(e.train(), names)
    t.qconfig, e.qconfig = tq.get_default_qat_qconfig("x86"), eq.get_default_qat_qconfig("x86")
    return tq.prepare_qat(t), eq.prepare_qat(e)


def _inputs(n, count=3):
    rng = np.random.default_rng(n)
    return [rng.normal(size=(2, 3, *DIMS[n])).astype(np.float32) for _ in range(count)]


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_qat_conv_bn_trains_and_converts_like_torch(n, relu, bias):
    t, e = _pair(n, relu, bias)
    kind = f"ConvBn{'ReLU' if relu else ''}{n}d"
    assert type(e[1]).__name__ == kind and type(e[1]) is getattr(nnqat, kind)
    assert list(e.state_dict()) == list(t.state_dict())  # (torchvision's QAT weights load)
    for x in _inputs(n):  # (training: batch statistics, moving observers)
        ty, ey = t(torch.tensor(x)), e(ember.tensor(x))
        np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), atol=1e-5)
        ty.square().sum().backward()
        ey.square().sum().backward()
    for name in ("weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"):
        np.testing.assert_allclose(e[1].get_parameter(name).detach().numpy() if "running" not in
                                   name else e[1].get_buffer(name).numpy(),
                                   t[1].get_parameter(name).detach().numpy() if "running" not
                                   in name else t[1].get_buffer(name).numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    for name in ("weight", "bn.weight", "bn.bias"):  # (float32 sums of terms up to ~50: the
        want = t[1].get_parameter(name).grad.numpy()  # small ones lose ~1e-4 to the order)
        np.testing.assert_allclose(e[1].get_parameter(name).grad.numpy(), want, rtol=1e-4,
                                   atol=1e-5 * np.abs(want).max(), err_msg=name)
    copy_weights(t, e)  # (the same observer ranges: float32 sums may flip a rounding tie)
    x = ember.tensor(_inputs(n)[0])
    same(e.eval()(x), t.eval()(torch.tensor(x.numpy())))
    tc, ec = tq.convert(copy.deepcopy(t)), eq.convert(copy.deepcopy(e))
    assert type(ec[1]).__name__ == f"Conv{'ReLU' if relu else ''}{n}d"
    same(ec(x), tc(torch.tensor(x.numpy())))
    # (PyTorch's converts in training mode, as torchvision: the weight observer moves once more)
    tc, ec = tq.convert(t.train()), eq.convert(e.train())
    same(ec.eval()(x), tc.eval()(torch.tensor(x.numpy())))


def test_freeze_bn_stats_keeps_the_running_statistics():
    t, e = _pair(2, True, False)
    e.apply(nnqat.freeze_bn_stats)
    t.apply(torch.ao.nn.intrinsic.qat.freeze_bn_stats)
    before = e[1].bn.running_mean.numpy().copy()
    e.train()
    t.train()
    assert not e[1].bn.training and e[1].freeze_bn
    x = _inputs(2)[0]
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), atol=1e-5)
    np.testing.assert_array_equal(e[1].bn.running_mean.numpy(), before)
    e.apply(nnqat.update_bn_stats)
    assert e[1].bn.training and not e[1].freeze_bn


def test_qat_conv_bn_errors_are_clear():
    qconfig = eq.get_default_qat_qconfig("x86")
    with pytest.raises(TypeError, match="expected a fused ConvBn2d, got Conv2d"):
        nnqat.ConvBn2d.from_float(ember.nn.Conv2d(1, 1, 1))
    fused = ember.ao.nn.intrinsic.ConvBn2d(ember.nn.Conv2d(1, 2, 1), ember.nn.BatchNorm2d(2))
    with pytest.raises(ValueError, match="needs a qconfig"):
        nnqat.ConvBn2d.from_float(fused)
    with pytest.raises(TypeError, match="expected Conv2d and BatchNorm2d and ReLU, got Conv2d "
                                        "and BatchNorm2d"):
        ember.ao.nn.intrinsic.ConvBnReLU2d(ember.nn.Conv2d(1, 2, 1), ember.nn.BatchNorm2d(2))
    with pytest.raises(ValueError, match="qconfig must be provided"):
        nnqat.ConvBn2d(1, 2, 1)
    with pytest.raises(NotImplementedError, match="PyTorch's LinearBn1d"):
        eq.fuse_linear_bn(True, ember.nn.Linear(2, 2), ember.nn.BatchNorm1d(2))
    assert nnqat.ConvBn2d(1, 2, 1, qconfig=qconfig, freeze_bn=True).bn.training is False


def test_intrinsic_qat_path_is_torchs():
    # (torch.ao.nn.intrinsic.qat: the fused QAT modules, the same classes as ember.ao.nn.qat's)
    import ember.ao.nn.intrinsic.qat as nniqat
    import torch.ao.nn.intrinsic.qat as tnniqat
    from ember.ao.nn.intrinsic.qat import ConvBnReLU2d, freeze_bn_stats

    assert ConvBnReLU2d is nnqat.ConvBnReLU2d and freeze_bn_stats is nnqat.freeze_bn_stats
    assert ember.ao.nn.intrinsic.qat is nniqat
    names = set(nniqat.__all__)
    assert names == {n for n in dir(tnniqat) if n[0] != "_" and n not in ("modules", "LinearBn1d")}
    assert all(getattr(nniqat, n) is getattr(nnqat, n) for n in names)


def test_mobilenet_v3_quantize_true_is_torchvisions_qat_flow():
    ember.manual_seed(0)
    ember.backends.quantized.engine = "x86"
    model = qmodels.mobilenet_v3_large(quantize=True, num_classes=10)
    nnq = ember.ao.nn.quantized
    # (qnnpack's qconfig; as torchvision's builder, the engine is left as it was)
    assert ember.backends.quantized.engine == "x86" and not model.training
    assert model.features[0][0].weight().qscheme() == ember.per_tensor_affine  # (not x86's)
    assert isinstance(model.features[0][0], nnq.Conv2d)  # (conv, bn; hardswish after)
    assert isinstance(model.features[0][2], nnq.Hardswish)
    assert isinstance(model.features[1].block[0][0], nnq.ConvReLU2d)
    se = model.features[4].block[2]
    assert isinstance(se.skip_mul, nnq.QFunctional) and isinstance(se.fc1, nnq.ConvReLU2d)
    assert isinstance(model.classifier[3], nnq.Linear)
    assert model(ember.rand(1, 3, 32, 32)).shape == (1, 10)


def test_mobilenet_v3_qat_model_is_its_float_model_within_quantization_error():
    # (the converted QAT model against the float one it was built from: 8-bit errors add up
    # over 17 blocks; torchvision's own, given the same QAT state, is equal bit for bit:
    # /work/fuzz/quant52/compare_tv.py)
    ember.manual_seed(0)
    ember.backends.quantized.engine = "qnnpack"
    model = with_batch_statistics(qmodels.mobilenet_v3_large(num_classes=10))
    float_model = copy.deepcopy(model).eval()
    model.fuse_model(is_qat=True)
    model.qconfig = eq.get_default_qat_qconfig("qnnpack")
    eq.prepare_qat(model, inplace=True)
    x = ember.rand(4, 3, 80, 80)
    model.eval()
    with ember.no_grad():
        qat = model(x).numpy()  # (calibrates the observers; bn on its running statistics)
        expected = float_model(x).numpy()
    eq.convert(model, inplace=True)
    got = model(x).numpy()
    spread = np.abs(expected).max()
    assert model.classifier[3].scale < 0.1 * spread
    for y in (qat, got):
        assert np.abs(y - expected).max() < 0.2 * spread
        assert np.corrcoef(y.ravel(), expected.ravel())[0, 1] > 0.98


def _prepared_mobilenet_v3():
    ember.manual_seed(0)
    model = qmodels.mobilenet_v3_large(num_classes=10, width_mult=0.5)
    model.fuse_model(is_qat=True)
    model.qconfig = eq.get_default_qat_qconfig("qnnpack")
    return eq.prepare_qat(model)


def test_mobilenet_v3_loads_checkpoints_from_before_the_hardsigmoid_observer():
    # (torchvision's published QAT weights have no entries for the squeeze-and-excitations'
    # hard-sigmoid observer: version 1 of QuantizableSqueezeExcitation, which loads
    # torchvision's defaults, scale 1; converted, the hard sigmoid keeps its fixed range as
    # PyTorch's, /work/fuzz/quant52/old_checkpoint.py: torchvision's int8 outputs, bit for bit)
    ember.backends.quantized.engine = "qnnpack"
    source, model = _prepared_mobilenet_v3(), _prepared_mobilenet_v3()
    x = ember.rand(2, 3, 48, 48)
    source.eval()(x)
    state = source.train().state_dict()
    old = type(state)((k, v) for k, v in state.items() if ".scale_activation." not in k)
    old._metadata = {k: dict(v, version=1) if k.endswith("block.2") else v
                     for k, v in state._metadata.items()}
    model.load_state_dict(old)
    assert model.features[4].block[2].scale_activation.activation_post_process.scale.item() == 1
    old._metadata = state._metadata  # (version 2: the entries are needed)
    with pytest.raises(RuntimeError, match="Missing key"):
        _prepared_mobilenet_v3().load_state_dict(old)
    same_bits = eq.convert(model.eval())(x).numpy(), eq.convert(source.eval())(x).numpy()
    np.testing.assert_array_equal(*same_bits)


def test_post_training_mobilenet_v3_reloads_its_state_dict_without_metadata(tmp_path):
    # (a checkpoint without versions reads as version 1: only a QAT fake quantizer's entries
    # get defaults, not a post-training observer's, which has none; torchvision's loads back)
    def prepared():
        model = qmodels.mobilenet_v3_large(num_classes=10, width_mult=0.5).eval()
        model.fuse_model()
        model.qconfig = eq.get_default_qconfig("fbgemm")
        return eq.prepare(model)
    source = prepared()
    source(ember.rand(1, 3, 48, 48))
    state = source.state_dict()
    ember.save(state, tmp_path / "ptq.safetensors")
    for loaded in (dict(state), ember.load(tmp_path / "ptq.safetensors")):
        result = prepared().load_state_dict(loaded)
        assert result.missing_keys == [] and result.unexpected_keys == []


def test_converted_fixed_range_activations_ignore_the_observer_as_torch():
    x = np.linspace(-4, 4, 33, dtype=np.float32)
    for name in ("Hardsigmoid", "Sigmoid", "Tanh"):
        t = torch.nn.Sequential(tq.QuantStub(), getattr(torch.nn, name)(), tq.DeQuantStub())
        e = ember.nn.Sequential(eq.QuantStub(), getattr(ember.nn, name)(), eq.DeQuantStub())
        t.qconfig, e.qconfig = tq.get_default_qat_qconfig("x86"), eq.get_default_qat_qconfig("x86")
        t, e = tq.prepare_qat(t), eq.prepare_qat(e)
        t(torch.tensor(x))
        e(ember.tensor(x))
        t[1].activation_post_process.scale.fill_(1.0)  # (as an old checkpoint loads)
        e[1].activation_post_process.scale.fill_(1.0)
        same(eq.convert(e.eval())(ember.tensor(x)), tq.convert(t.eval())(torch.tensor(x)))


@pytest.mark.parametrize("name", ["Sigmoid", "Tanh", "Hardsigmoid"])
def test_fixed_range_activations_keep_qint8_as_torch(name):
    # (PyTorch's quantized kernels: a qint8 input gives qint8 with the fixed range, zero point
    # 128 lower; output parameters given to the module are used as given)
    x = np.linspace(-5, 5, 41, dtype=np.float32)
    t = torch.nn.Sequential(tq.QuantStub(), getattr(torch.nn, name)(), tq.DeQuantStub())
    e = ember.nn.Sequential(eq.QuantStub(), getattr(ember.nn, name)(), eq.DeQuantStub())
    t.qconfig = tq.QConfig(activation=tq.MinMaxObserver.with_args(dtype=torch.qint8),
                           weight=tq.default_weight_observer)
    e.qconfig = eq.QConfig(activation=eq.MinMaxObserver.with_args(dtype=ember.qint8),
                           weight=eq.default_weight_observer)
    t, e = tq.prepare(t.eval()), eq.prepare(e.eval())
    t(torch.tensor(x))
    e(ember.tensor(x))
    t, e = tq.convert(t), eq.convert(e)
    tq_out, eq_out = t[:2](torch.tensor(x)), e[:2](ember.tensor(x))
    assert eq_out.dtype == ember.qint8
    assert (eq_out.q_scale(), eq_out.q_zero_point()) == (tq_out.q_scale(), tq_out.q_zero_point())
    same(eq_out.int_repr(), tq_out.int_repr())
    same(e(ember.tensor(x)), t(torch.tensor(x)))
    if name == "Sigmoid":  # (given output parameters: as given, in the input's dtype)
        q = torch.quantize_per_tensor(torch.tensor(x), 0.05, 0, torch.qint8)
        expected = torch.ao.nn.quantized.Sigmoid(1 / 256, 0)(q)
        got = ember.ao.nn.quantized.Sigmoid(1 / 256, 0)(
            ember.quantize_per_tensor(ember.tensor(x), 0.05, 0, ember.qint8))
        assert got.q_zero_point() == expected.q_zero_point() == 0
        same(got.int_repr(), expected.int_repr())
    q32 = ember.quantize_per_tensor(ember.tensor(x), 0.05, 0, ember.qint32)
    with pytest.raises(ember.errors.DTypeError, match="give the input observer a"):
        e[1](q32)


@pytest.mark.parametrize("name, kwargs", [
    ("resnet18", {}), ("mobilenet_v2", dict(width_mult=0.5)), ("shufflenet_v2_x0_5", {}),
    ("googlenet", dict(aux_logits=False, init_weights=False)),
    ("mobilenet_v3_large", dict(width_mult=0.5))])
def test_every_quantizable_classifier_trains_quantization_aware(name, kwargs):
    # (torchvision's fuse_model(is_qat=True) flow for each; given torchvision's QAT state the
    # converted models equal its bit for bit: /work/fuzz/quant52/sweep_qat.py)
    ember.manual_seed(0)
    model = with_batch_statistics(getattr(qmodels, name)(num_classes=10, **kwargs))
    model.fuse_model()  # (training mode: is_qat)
    assert any(type(m).__name__ == "ConvBnReLU2d" for m in model.modules())
    model.qconfig = eq.get_default_qat_qconfig("fbgemm")
    eq.prepare_qat(model, inplace=True)
    x = ember.rand(2, 3, 64, 64)
    model(x).sum().backward()
    with ember.no_grad():
        qat = model.eval()(x).numpy()
    model = eq.convert(model)
    assert not any(type(m).__name__.startswith("ConvBn") for m in model.modules())
    got = model(x).numpy()
    # (fake quantization is the int8 model's rounding in float32: ties flip a step here and
    # there, a few output steps after the depth of these random networks)
    spread = np.abs(qat).max()
    assert np.abs(got - qat).max() < 0.5 * spread  # (0.3 in resnet18: 6 of 20 steps)
    assert np.corrcoef(got.ravel(), qat.ravel())[0, 1] > 0.9


@pytest.mark.parametrize("kind", ["Conv2d", "ConvBn2d"])
def test_a_qat_conv_subclass_overriding_conv_forward_changes_forward_as_torch(kind):
    # (mend54c; review54c #6: the QAT convolutions had their own copy of _conv_forward)
    def build(lib, qat, q):
        class Scaled(getattr(qat, kind)):
            def _conv_forward(self, input, weight, bias):
                self.seen = tuple(weight.shape)
                return 3 * super()._conv_forward(input, weight, bias)
        torch.manual_seed(0)
        return Scaled(3, 4, 3, padding=1, padding_mode="reflect",
                      qconfig=q.get_default_qat_qconfig("x86"))
    t = build(torch, torch.ao.nn.intrinsic.qat if kind == "ConvBn2d" else torch.ao.nn.qat, tq)
    e = build(ember, nnqat, eq)
    with torch.no_grad():  # (the parameters only: numpy() of an observer's buffer would pin it)
        for name, p in t.named_parameters():
            e.get_parameter(name).data = ember.tensor(p.detach().clone().numpy())
    x = np.random.default_rng(3).normal(size=(2, 3, 5, 6)).astype(np.float32)
    ty, ey = t(torch.tensor(x)), e(ember.tensor(x))
    assert e.seen == t.seen == (4, 3, 3, 3)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), atol=1e-4)
