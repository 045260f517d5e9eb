"""Quantized activation modules against PyTorch's (sweep59a)."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq

import ember
import ember.ao.nn.quantized as nnq

_DTYPES = {"quint8": (torch.quint8, ember.quint8, np.uint8, 0, 255),
           "qint8": (torch.qint8, ember.qint8, np.int8, -128, 127),
           "qint32": (torch.qint32, ember.qint32, np.int32, -300, 300)}


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
@pytest.mark.parametrize("scale,zero_point", [(0.05, -5), (0.1, 100), (0.03, 0)])
def test_relu6_every_integer_as_torch(dtype, scale, zero_point):
    tdt, edt, npdt, low, high = _DTYPES[dtype]
    zero_point = int(np.clip(zero_point, low, high))
    ints = np.arange(low, high + 1).astype(npdt)
    t = torch._make_per_tensor_quantized_tensor(torch.tensor(ints), scale, zero_point)
    e = ember._make_per_tensor_quantized_tensor(ember.tensor(ints), scale, zero_point)
    assert t.dtype == tdt and e.dtype is edt
    yt, ye = tnnq.ReLU6()(t), nnq.ReLU6()(e)
    np.testing.assert_array_equal(ye.int_repr().numpy(), yt.int_repr().numpy())
    assert ye.dtype is edt and ye.q_scale() == yt.q_scale()


@pytest.mark.parametrize("name", ["Hardswish", "LeakyReLU", "ELU"])
@pytest.mark.parametrize("scale,zero_point", [(0.1, 3), (0.03, 40)])
@pytest.mark.parametrize("in_scale", [0.05, 2.0 ** -5])
def test_output_scale_as_torch(name, scale, zero_point, in_scale):
    """PyTorch's Hardswish and LeakyReLU hold the output scale in a float32 buffer (q_scale()
    gives 0.10000000149011612 for 0.1) and hand that to the kernel: Hardswish(0.03, 40) on
    every integer of scale 0.05 differs in 4 of them from Hardswish with 0.03 exactly. Its ELU
    keeps a Python float."""
    ints = np.arange(256).astype(np.uint8)
    t = torch._make_per_tensor_quantized_tensor(torch.tensor(ints), in_scale, 128)
    e = ember._make_per_tensor_quantized_tensor(ember.tensor(ints), in_scale, 128)
    yt = getattr(tnnq, name)(scale, zero_point)(t)
    ye = getattr(nnq, name)(scale, zero_point)(e)
    assert ye.q_scale() == yt.q_scale()
    np.testing.assert_array_equal(ye.int_repr().numpy(), yt.int_repr().numpy())


def test_quantize_module_scale_as_torch():
    """PyTorch's quantized ``Quantize`` keeps its scale in a float32 buffer."""
    x = np.linspace(-3, 3, 61).astype(np.float32)
    yt = tnnq.Quantize(0.1, 3, torch.quint8)(torch.tensor(x))
    ye = nnq.Quantize(0.1, 3, ember.quint8)(ember.tensor(x))
    assert ye.q_scale() == yt.q_scale() == float(np.float32(0.1))
    np.testing.assert_array_equal(ye.int_repr().numpy(), yt.int_repr().numpy())


@pytest.mark.parametrize("name", ["Hardswish", "LeakyReLU", "ELU"])
@pytest.mark.parametrize("scale", [1e-50, 1e-46, 0.0])
@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
def test_scale_zero_in_float32_as_torch(name, scale, dtype):
    """A scale that is 0.0 in float32: PyTorch's kernels multiply by an infinite inverse (no
    error, no warning) and its q_scale() is 0.0 (Hardswish: its reciprocal in float64)."""
    tdt, edt, npdt, low, high = _DTYPES[dtype]
    ints = np.arange(low, high + 1, 5).astype(npdt)
    t = torch._make_per_tensor_quantized_tensor(torch.tensor(ints), 0.05, 10)
    e = ember._make_per_tensor_quantized_tensor(ember.tensor(ints), 0.05, 10)
    yt = getattr(tnnq, name)(scale, 3)(t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ye = getattr(nnq, name)(scale, 3)(e)
    assert ye.q_scale() == yt.q_scale()
    np.testing.assert_array_equal(ye.int_repr().numpy(), yt.int_repr().numpy())


@pytest.mark.parametrize("name", ["Hardswish", "LeakyReLU", "Quantize", "ELU"])
def test_scale_float32_after_loading_and_assigning(name):
    """PyTorch's float32 ``scale`` buffer stays float32 when a float64 state dict is loaded
    into it, and its state dict holds it in float32; Ember rounds a Python float assigned to
    ``scale`` alike (PyTorch refuses a float there). Its ELU keeps a Python float."""
    def build(lib, q):
        return getattr(q, name)(0.2, 1, lib.quint8) if name == "Quantize" \
            else getattr(q, name)(0.2, 1)
    t, e = build(torch, tnnq), build(ember, nnq)
    shape = (1,) if name == "Quantize" else ()
    if name != "ELU":
        t.load_state_dict({"scale": torch.full(shape, 0.1, dtype=torch.float64),
                           "zero_point": torch.full(shape, 3)})
        assert str(t.state_dict()["scale"].dtype) == "torch.float32"
    e.load_state_dict({"scale": ember.full(shape, 0.1, dtype=ember.float64),
                       "zero_point": ember.full(shape, 3)})
    want = float(np.float32(0.1)) if name != "ELU" else 0.1
    assert e.scale == want
    assert e.state_dict()["scale"].dtype is (ember.float32 if name != "ELU" else ember.float64)
    e.scale = 0.1
    assert e.scale == want
    x = np.linspace(-2, 2, 41).astype(np.float32)
    qe = ember.tensor(x) if name == "Quantize" else \
        ember.quantize_per_tensor(ember.tensor(x), 0.1, 0, ember.quint8)
    qt = torch.tensor(x) if name == "Quantize" else \
        torch.quantize_per_tensor(torch.tensor(x), 0.1, 0, torch.quint8)
    if name == "ELU":
        t.scale, t.zero_point = 0.1, 3
    assert e(qe).q_scale() == t(qt).q_scale() == want
    np.testing.assert_array_equal(e(qe).int_repr().numpy(), t(qt).int_repr().numpy())


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
def test_relu_module_signed_input_as_torch(dtype):
    """``convert`` swaps ``nn.ReLU`` for the quantized ``ReLU``: it takes what PyTorch's
    ``nn.ReLU`` takes on a quantized tensor (quint8, qint8, qint32)."""
    tdt, edt, npdt, low, high = _DTYPES[dtype]
    ints = np.arange(low, high + 1).astype(npdt)
    t = torch._make_per_tensor_quantized_tensor(torch.tensor(ints), 0.05, 7)
    e = ember._make_per_tensor_quantized_tensor(ember.tensor(ints), 0.05, 7)
    yt, ye = torch.nn.ReLU()(t), nnq.ReLU()(e)
    assert ye.dtype is edt and (ye.q_scale(), ye.q_zero_point()) == (yt.q_scale(), 7)
    np.testing.assert_array_equal(ye.int_repr().numpy(), yt.int_repr().numpy())


def test_observed_activations_and_qfunctional_print_as_torch():  # (sweep65c)
    for name, args in [("ELU", (0.1, 2, 0.5)), ("LeakyReLU", (0.1, 2, 0.2, True)),
                       ("LeakyReLU", (0.1, 2)), ("Hardswish", (0.1, 2))]:
        assert repr(getattr(nnq, name)(*args)) == repr(getattr(tnnq, name)(*args))
    assert repr(nnq.QFunctional()) == repr(tnnq.QFunctional())
    assert list(nnq.QFunctional().state_dict()) == list(tnnq.QFunctional().state_dict())
