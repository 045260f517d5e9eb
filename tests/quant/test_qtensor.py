"""Quantized tensors against PyTorch's: quantize_per_tensor/per_channel (ties, clamping),
dequantize, accessors, shape methods; and the docstring examples of ember.quant."""

import doctest
import importlib

import numpy as np
import pytest
import torch

import ember
from tests.quant.helpers import TORCH_NAMES, same


@pytest.mark.parametrize("dtype", [ember.quint8, ember.qint8, ember.qint32])
@pytest.mark.parametrize("n", [7, 4099])  # below and above a vector's width
def test_quantize_per_tensor_matches_torch(dtype, n):
    rng = np.random.default_rng(n)
    for scale, zp in ((0.0372, 3), (0.25, 0), (1e-3, 100)):
        x = rng.normal(0, 3, n).astype(np.float32)
        x[::3] = (rng.integers(-300, 300, len(x[::3])) + 0.5) * np.float32(scale)  # ties
        t = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, TORCH_NAMES[dtype])
        e = ember.quantize_per_tensor(ember.from_numpy(x), scale, zp, dtype)
        same(e.int_repr(), t.int_repr())
        same(e.dequantize(), t.dequantize())
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
        assert e.qscheme() is ember.per_tensor_affine


def test_quantize_per_channel_matches_torch():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 2, (3, 4, 5)).astype(np.float32)
    scales = rng.uniform(0.01, 0.1, 4)
    zps = rng.integers(-5, 5, 4)
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales),
                                   torch.from_numpy(zps), 1, torch.qint8)
    e = ember.quantize_per_channel(ember.from_numpy(x), ember.from_numpy(scales),
                                   ember.from_numpy(zps), 1, ember.qint8)
    same(e.int_repr(), t.int_repr())
    same(e.dequantize(), t.dequantize())
    same(e.q_per_channel_scales(), t.q_per_channel_scales())
    same(e.q_per_channel_zero_points(), t.q_per_channel_zero_points())
    assert e.q_per_channel_axis() == 1 and e.qscheme() is ember.per_channel_affine
    with pytest.raises(RuntimeError, match="per-tensor"):
        e.q_scale()


def test_lists_of_tensors_like_torch():
    x = np.random.default_rng(3).normal(size=(2, 5)).astype(np.float32) * 4
    scales, zero_points = np.array([0.1, 0.37], np.float32), np.array([3, 250])
    t = torch.quantize_per_tensor([torch.from_numpy(x[0]), torch.from_numpy(x[1])],
                                  torch.from_numpy(scales), torch.from_numpy(zero_points),
                                  torch.quint8)
    e = ember.quantize_per_tensor([ember.from_numpy(x[0]), ember.from_numpy(x[1])],
                                  ember.from_numpy(scales), ember.from_numpy(zero_points),
                                  ember.quint8)
    assert isinstance(e, tuple) and len(e) == len(t) == 2
    for a, b in zip(e, t, strict=True):
        same(a.int_repr(), b.int_repr())
        assert (a.q_scale(), a.q_zero_point()) == (b.q_scale(), b.q_zero_point())
    for a, b in zip(ember.dequantize(list(e)), torch.dequantize(list(t)), strict=True):
        same(a, b)
    with pytest.raises(ember.ShapeError, match="2 tensors need 2 scales"):
        ember.quantize_per_tensor(list(ember.from_numpy(x)), ember.tensor([0.1]),
                                  ember.tensor([0]), ember.quint8)
    with pytest.raises(TypeError, match="as tensors"):
        ember.quantize_per_tensor(list(ember.from_numpy(x)), 0.1, 0, ember.quint8)


def test_shape_methods_keep_quantization():
    q = ember.quantize_per_tensor(ember.randn(2, 3, 4), 0.1, 5, ember.quint8)
    for view in (q.flatten(1), q.reshape(6, 4), q.view(-1), q.permute(2, 0, 1), q[0],
                 q.transpose(0, 1).contiguous()):
        assert (view.q_scale(), view.q_zero_point(), view.dtype) == (0.1, 5, ember.quint8)
    assert q.flatten(1).shape == (2, 12) and q.size(1) == 3 and q.dim() == 3
    assert "quantization_scheme=ember.per_tensor_affine" in repr(q)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_repr_matches_torch():
    # each suffix goes on a new line only where it would pass 80 columns, as torch's (the
    # per-channel scale and zero point were on one line of 130)
    x = np.array([[1.0, -2.5], [3.0, 4.0]], np.float32)
    s, z = np.array([0.1, 0.2]), np.array([0, 1])
    e = ember.quantize_per_channel(ember.tensor(x), ember.tensor(s), ember.tensor(z), 0,
                                   ember.qint8)
    t = torch.quantize_per_channel(torch.tensor(x), torch.tensor(s), torch.tensor(z), 0,
                                   torch.qint8)
    assert repr(e) == repr(t).replace("torch", "ember")
    for shape in ((2,), (4, 20)):
        x = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
        e = ember.quantize_per_tensor(ember.tensor(x), 0.123456789, 3, ember.quint8)
        t = torch.quantize_per_tensor(torch.tensor(x), 0.123456789, 3, torch.quint8)
        assert repr(e) == repr(t).replace("torch", "ember")


def test_bad_arguments():
    with pytest.raises(ember.DTypeError, match="float32"):
        ember.quantize_per_tensor(ember.tensor([1, 2]), 0.1, 0, ember.quint8)
    with pytest.raises(ember.DTypeError, match="qint8"):
        ember.quantize_per_tensor(ember.tensor([1.0]), 0.1, 0, ember.int8)
    with pytest.raises(ember.ShapeError, match="shape"):
        ember.quantize_per_channel(ember.randn(2, 3), ember.ones(2, dtype=ember.float64),
                                   ember.zeros(2).long(), 1, ember.qint8)


@pytest.mark.parametrize("name", [
    "ember.quant.qtensor", "ember.quant.observer", "ember.quant.fake_quantize",
    "ember.quant.qconfig", "ember.quant.histogram_observer", "ember.quant.stubs",
    "ember.quant.quantize", "ember.quant.fuse", "ember.quant.elementwise",
    "ember.quant.modules.functional_modules", "ember.quant.special_observers",
    "ember.quant.functions", "ember.quant.quant_type", "ember.quant.modules.activations",
    "ember.quant.modules.embedding_ops", "ember.quant.modules.qat_embedding",
    "ember.quant.modules.dynamic_rnn", "ember.quant.modules.dynamic_cells",
    "ember.ao.nn.intrinsic_quantized", "ember.ao.quantization.utils",
    "ember.quant.modules.intrinsic", "ember.quant.modules.qat", "ember.quant.modules.quantized",
    "ember.quant.modules.dynamic", "ember.ops.fake_quantize", "ember.quant.qconfig_mapping",
    "ember.quant.fuser_method_mappings", "ember.quant.modules.conv_transpose",
    "ember.quant.observer_state", "ember.quant.mappings", "ember.quant.modules.batchnorm",
    "ember.quant.modules.functional", "ember.quant.qtensor_views"])
def test_docstring_examples_run(name):
    import ember.ao.quantization as eq

    globs = {"ember": ember, "np": np, "nn": ember.nn, **vars(eq)}
    result = doctest.testmod(importlib.import_module(name), extraglobs=globs,
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_nan_and_saturation_like_torch():
    x = np.array([np.nan, 1e30, -1e30, np.inf, 0.5, 2.5], np.float32)
    for dtype in ("quint8", "qint8", "qint32"):  # (NaN: the top of 8 bits, the bottom of 32)
        e = ember.quantize_per_tensor(ember.from_numpy(x), 1e-3, 3, getattr(ember, dtype))
        t = torch.quantize_per_tensor(torch.from_numpy(x), 1e-3, 3, getattr(torch, dtype))
        np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())


@pytest.mark.parametrize("call, match", [
    (lambda x: ember.quantize_per_tensor(x, 0.1, 300, ember.quint8), "zero_point 300"),
    (lambda x: ember.quantize_per_tensor(x, 0.1, -3, ember.quint8), "zero_point -3"),
    (lambda x: ember.quantize_per_tensor(x.double(), 0.1, 3, ember.quint8), "float32"),
    (lambda x: ember.quantize_per_channel(x, ember.tensor([0.1, 0.2]), ember.tensor([0, 300]),
                                          0, ember.quint8), "zero_point 300"),
    (lambda x: ember.quantize_per_channel(x.half(), ember.tensor([0.1, 0.2]),
                                          ember.tensor([0, 3]), 0, ember.quint8), "float32"),
])
def test_what_torch_refuses_to_quantize(call, match):
    with pytest.raises((ValueError, ember.errors.DTypeError), match=match):
        call(ember.ones(2, 3))


@pytest.mark.parametrize("call, op", [
    (lambda q: ember.exp(q), "exp"),
    (lambda q: ember.nn.functional.softmax(q, 0), "softmax"),
    (lambda q: ember.nn.functional.layer_norm(q, (4,)), "layer_norm"),
    (lambda q: ember.nn.functional.gelu(q), "gelu"),
    (lambda q: ember.nn.Linear(4, 2)(q), "linear"),
], ids=["exp", "softmax", "layer_norm", "gelu", "linear"])
def test_float_ops_refuse_a_quantized_tensor_naming_the_op(call, op):
    q = ember.quantize_per_tensor(ember.randn(4), 0.1, 0, ember.quint8)
    with pytest.raises(ember.DTypeError, match=rf"^{op}: quantized tensors .*dequantize"):
        call(q)
    assert not hasattr(ember.quint8, "is_floating_point")  # (hasattr asks, and gets False)


def _written(lib, write):
    q = lib.quantize_per_tensor(lib.zeros(2, 3), 0.1, 3, lib.quint8)
    pc = lib.quantize_per_channel(lib.zeros(2, 3), lib.tensor([0.1, 0.2]), lib.tensor([0, 1]),
                                  0, lib.quint8)
    write(lib, q, pc)
    return q.int_repr().numpy(), pc.int_repr().numpy()


@pytest.mark.parametrize("write", [
    lambda L, q, pc: (q.__setitem__((0, 0), 1.26), pc.__setitem__((1, 1), 1.26)),
    lambda L, q, pc: (q.__setitem__(0, L.tensor([1.0, 2.0, 30.0])),
                      pc.__setitem__(1, L.tensor([1.0, 2.0, 30.0]))),
    lambda L, q, pc: (q.__setitem__(0, 2), pc.__setitem__(0, 2)),
    lambda L, q, pc: (q.fill_(-5.0), pc.fill_(1.0)),
    lambda L, q, pc: (q.fill_(L.tensor(0.25)), pc.fill_(L.tensor(0.7))),
    lambda L, q, pc: q.__setitem__((L.tensor([1, 0]), L.tensor([2, 2])), L.tensor([0.4, 0.6])),
])
def test_item_assignment_and_fill_quantize_with_the_tensor_qparams_as_torch(write):
    for e, t in zip(_written(ember, write), _written(torch, write), strict=True):
        np.testing.assert_array_equal(e, t)


def test_item_assignment_writes_through_views_and_refuses_a_quantized_value():
    q = ember.quantize_per_tensor(ember.zeros(2, 3), 0.1, 3, ember.quint8)
    row = q[0]
    q[0, 1] = 1.0
    assert row.int_repr().tolist() == [3, 13, 3]
    other = ember.quantize_per_tensor(ember.zeros(2, 3), 0.2, 3, ember.quint8)
    with pytest.raises(ember.errors.ArgumentTypeError, match="same scale.*dequantize"):
        q[0] = other[1]  # (torch copies its integers: 0.2's steps read as 0.1's)


def _copied(lib, write):
    q = lib.quantize_per_tensor(lib.tensor([[0.1, 0.2, 0.3], [0.5, 0.7, 0.9]]), 0.1, 3,
                                lib.quint8)
    write(lib, q)
    return q.int_repr().numpy()


@pytest.mark.parametrize("write", [
    lambda L, q: q.__setitem__(0, q[1]),
    lambda L, q: q.__setitem__((0, 0), q[1, 2]),
    lambda L, q: q.__setitem__((slice(None), 1), q[:, 0]),
    lambda L, q: q.__setitem__(0, q[1, 1]),  # (broadcast)
    lambda L, q: q.fill_(q[1, 1]),
    lambda L, q: q.fill_(L.quantize_per_tensor(L.tensor(0.66), 0.2, 0, L.qint8)),  # (its real)
], ids=["row", "element", "column", "broadcast", "fill_", "fill_ other qparams"])
def test_a_quantized_value_with_the_tensors_qparams_is_copied_as_torch(write):
    np.testing.assert_array_equal(_copied(ember, write), _copied(torch, write))


def test_a_quantized_value_of_another_dtype_or_scheme_is_refused():
    q = ember.quantize_per_tensor(ember.zeros(2, 2), 0.1, 3, ember.quint8)
    pc = ember.quantize_per_channel(ember.zeros(2, 2), ember.tensor([0.1, 0.1]),
                                    ember.tensor([3, 3]), 0, ember.quint8)
    for value in (ember.quantize_per_tensor(ember.zeros(2), 0.1, 3, ember.qint8), pc[0]):
        with pytest.raises(ember.errors.ArgumentTypeError, match="dequantize"):
            q[0] = value


@pytest.mark.parametrize("per_channel", [False, True])
def test_fill_refuses_a_value_of_several_elements_as_the_float_fill(per_channel):
    q = (ember.quantize_per_channel(ember.zeros(2, 4), ember.tensor([0.1, 0.2]),
                                    ember.tensor([0, 1]), 0, ember.quint8) if per_channel else
         ember.quantize_per_tensor(ember.zeros(2, 4), 0.1, 3, ember.quint8))
    before = q.int_repr().tolist()
    with pytest.raises(ember.errors.ArgumentError, match=r"^fill_: the value must have one"):
        q.fill_(ember.tensor([0.1, 0.2, 0.3, 0.4]))  # (torch: only a 0-dimension value)
    assert q.int_repr().tolist() == before
    t = torch.quantize_per_tensor(torch.zeros(2, 4), 0.1, 3, torch.quint8)
    with pytest.raises(RuntimeError, match="only supports 0-dimension value"):
        t.fill_(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    q.fill_(ember.tensor([0.26], requires_grad=True))  # (one element: as ember.zeros(4).fill_)
    assert q.dequantize()[0, 0].item() == pytest.approx(0.3)


@pytest.mark.parametrize("per_channel", [False, True])
def test_a_write_quantizes_only_the_written_positions(per_channel, monkeypatch):
    def make(lib):
        x = lib.zeros(100, 4)
        return (lib.quantize_per_channel(x, lib.tensor([0.1, 0.2, 0.3, 0.4], dtype=lib.float64),
                                         lib.tensor([0, 1, 2, 3]), 1, lib.quint8)
                if per_channel else lib.quantize_per_tensor(x, 0.1, 3, lib.quint8))
    q, t = make(ember), make(torch)
    sizes, quantize = [], ember.quant.kernels.quantize
    monkeypatch.setattr(ember.quant.kernels, "quantize",
                        lambda x, *args, **kw: sizes.append(np.size(x)) or quantize(x, *args, **kw))
    for lib, target in ((ember, q), (torch, t)):
        target[3, 1:3] = lib.tensor([0.55, 0.75])
        target[7] = 1.26
    assert sizes == [2, 4 if per_channel else 1]  # (not the 400 elements each time)
    np.testing.assert_array_equal(q.int_repr().numpy(), t.int_repr().numpy())
