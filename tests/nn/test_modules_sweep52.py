"""Module behaviour the torch.nn 2.13 re-sweep (nn52) found different, each compared with
torch: feature dropout on other ranks, and constructor signatures."""

import inspect
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


def _varying_dims(y: np.ndarray) -> list[int]:
    return [d for d in range(y.ndim) if not (y == np.take(y, [0], axis=d)).all()]


@pytest.mark.parametrize("name", ["Dropout2d", "Dropout3d"])
@pytest.mark.parametrize("rank", [1, 2, 3, 5, 6])
def test_feature_dropout_other_ranks_as_torch(name, rank):
    """torch's Dropout2d/3d take any rank (with a deprecation warning): dropout2d draws per
    (N, C), dropout3d per leading dim; eval is the identity. Ember raised ShapeError."""
    x = np.ones(((12, 12) + (2,) * 4)[:rank])  # long leading dims: no all-kept/dropped draw
    results = {}
    for lib, mod in (("torch", torch.nn), ("ember", nn)):
        m = getattr(mod, name)(0.5)
        t = torch.tensor(x) if lib == "torch" else ember.tensor(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                y = np.asarray(m(t).numpy())
                results[lib] = ("ok", _varying_dims(y), set(np.unique(y)) <= {0.0, 2.0})
            except Exception:  # noqa: BLE001 (both must fail alike)
                results[lib] = ("error",)
            m.eval()
            np.testing.assert_array_equal(np.asarray(m(t).numpy()), x)
    assert results["ember"] == results["torch"]


def test_feature_dropout_other_ranks_warn_and_short_inputs_raise():
    with pytest.warns(UserWarning, match="dropout3d: received a 2-D input"):
        nn.Dropout3d()(ember.ones(3, 4))
    with pytest.raises(ember.ShapeError, match="dropout2d"):
        nn.Dropout2d()(ember.ones(3))
    with pytest.raises(ember.ShapeError, match="dropout1d"):
        nn.Dropout1d()(ember.ones(2, 3, 4, 5))


def _signature(cls: type) -> list[tuple[str, str, object]]:
    return [(p.name, p.kind.name, p.default) for p in inspect.signature(cls.__init__)
            .parameters.values()]


@pytest.mark.parametrize("name", [
    "CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
    "LeakyReLU", "LogSoftmax", "Mish", "ReLU", "ReLU6", "SELU", "SiLU", "Softmax", "Softmin",
    "Softplus", "Softshrink", "Threshold", "Tanh", "Sigmoid", "LazyConv1d", "LazyConv2d",
    "LazyConv3d", "LazyConvTranspose2d"])
def test_constructor_signatures_as_torch(name):
    """The activations' __init__ read (*args, **kwargs) and LazyConvNd's took **kwargs."""
    assert _signature(getattr(nn, name)) == _signature(getattr(torch.nn, name))


def test_activation_arguments_still_checked_and_hardtanh_old_names():
    assert repr(nn.ELU(0.5, True)) == "ELU(alpha=0.5, inplace=True)"
    assert repr(nn.Threshold(value=2.0, threshold=0.1)) == "Threshold(threshold=0.1, value=2.0)"
    with pytest.raises(TypeError, match="value"):
        nn.Threshold(0.1)
    with pytest.raises(TypeError, match="unexpected"):
        nn.ReLU(inplac=True)
    with pytest.warns(FutureWarning, match="min_value"):
        m = nn.Hardtanh(min_value=-3.0, max_value=2.0)
    assert repr(m) == repr(torch.nn.Hardtanh(-3.0, 2.0))
    x = np.linspace(-4, 4, 9)
    np.testing.assert_array_equal(m(ember.tensor(x)).numpy(), np.clip(x, -3, 2))
    m = nn.LazyConvTranspose1d(4, 3, stride=2, output_padding=1)
    assert tuple(m(ember.randn(2, 3, 5)).shape) == (2, 4, 12)
    with pytest.raises(TypeError):
        nn.LazyConv1d(4, 3, output_padding=1)


@pytest.mark.parametrize("name", ["Dropout", "AlphaDropout", "FeatureAlphaDropout", "Dropout1d",
                                  "Dropout2d", "Dropout3d"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_dropout_modules_pass_integer_inputs_in_eval_as_torch(name, dtype):
    """torch's dropout modules return any input unchanged in eval (and with p=0); Ember
    raised DTypeError for integer and bool inputs. Training still refuses them, as torch."""
    x = np.ones((2, 3, 4, 4, 4)[:3 if name == "Dropout1d" else 5 if name == "Dropout3d" else 4])
    for p, train in ((0.5, False), (0.0, True)):
        t = getattr(torch.nn, name)(p).train(train)(torch.tensor(x).to(getattr(torch, dtype)))
        e = getattr(nn, name)(p).train(train)(ember.tensor(x).to(getattr(ember, dtype)))
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    with pytest.raises(ember.DTypeError, match="floating"):
        getattr(nn, name)(0.5)(ember.tensor(x).to(getattr(ember, dtype)))
    with pytest.raises(RuntimeError):
        getattr(torch.nn, name)(0.5)(torch.tensor(x).to(getattr(torch, dtype)))


def test_rnn_cell_base_takes_num_chunks_as_torch():
    """torch's RNNCellBase(input_size, hidden_size, bias, num_chunks): a custom cell sizes
    its weights by num_chunks. Ember's had no num_chunks (TypeError)."""
    for lib, mod in ((torch, torch.nn), (ember, nn)):
        m = mod.RNNCellBase(3, 4, True, 2)
        assert tuple(m.weight_ih.shape) == (8, 3) and tuple(m.bias_hh.shape) == (8,)
        assert repr(m) == "RNNCellBase(3, 4)"
        m = mod.RNNCellBase(3, 4, False, num_chunks=3, dtype=lib.float64)
        assert tuple(m.weight_hh.shape) == (12, 4) and m.bias_ih is None
        assert m.weight_hh.dtype == lib.float64
        assert mod.LSTMCell(3, 4, False, None, lib.float64).weight_ih.dtype == lib.float64
        assert tuple(mod.GRUCell(3, 4).weight_ih.shape) == (12, 3)
    assert _signature(nn.LSTMCell) == _signature(torch.nn.LSTMCell)
    assert _signature(nn.GRUCell) == _signature(torch.nn.GRUCell)
    assert _signature(nn.RNNCell) == _signature(torch.nn.RNNCell)


def test_transformer_fast_path_attributes_as_torch():
    """torch's TransformerEncoderLayer tags its activation (1 relu, 2 gelu, 0 other) and
    TransformerEncoder keeps enable_nested_tensor and mask_check; Ember had neither."""
    pairs = [("relu", "relu"), ("gelu", "gelu"), (nn.functional.relu, torch.nn.functional.relu),
             (nn.GELU(), torch.nn.GELU()), (nn.functional.silu, torch.nn.functional.silu)]
    for ours, theirs in pairs:
        assert (nn.TransformerEncoderLayer(4, 2, 8, activation=ours).activation_relu_or_gelu
                == torch.nn.TransformerEncoderLayer(4, 2, 8, activation=theirs)
                .activation_relu_or_gelu)
    for kw in ({}, {"enable_nested_tensor": False, "mask_check": False}):
        e = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 2, **kw)
        t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(4, 2, 8), 2, **kw)
        assert (e.enable_nested_tensor, e.mask_check) == (t.enable_nested_tensor, t.mask_check)


_DROPOUTS = {"dropout": 3, "dropout1d": 3, "dropout2d": 4, "dropout3d": 5, "alpha_dropout": 3,
             "feature_alpha_dropout": 3, "feature_dropout": 3}  # name: the input's rank


def _dropout(lib, name, x, p, inplace):
    if name == "feature_dropout":
        return (lib.feature_dropout_ if inplace else lib.feature_dropout)(x, p, True)
    return getattr(lib.nn.functional, name)(x, p=p, training=True, inplace=inplace)


@pytest.mark.parametrize("name", sorted(_DROPOUTS))
@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool", "float32"])
@pytest.mark.parametrize("inplace", [False, True])
def test_dropout_with_p_1_or_no_elements_takes_any_dtype_as_torch(name, dtype, inplace):
    """torch drops everything with p=1 as ``input * 0`` (zeros of an integer or bool input's
    dtype, NaN kept) and returns an empty input itself at any p; Ember refused integer and
    bool inputs. Drawing a mask (0 < p < 1) still needs a floating input, as torch."""
    shape = (2, 3, 2, 2, 2)[:_DROPOUTS[name]]
    a = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    if dtype == "float32":
        a.flat[0], a.flat[-1] = np.nan, np.inf
    for p, x in ((1.0, a), (1, a), (0.5, a[:0]), (1.0, a[:0])):
        got = []
        for lib in (ember, torch):
            t = lib.tensor(x)
            y = _dropout(lib, name, t, p, inplace)
            assert (y is t) == (inplace or not x.size)
            got.append((str(y.dtype).split(".")[-1], repr(y.numpy().tolist()), t.numpy()))
        assert got[0][:2] == got[1][:2]
        np.testing.assert_array_equal(got[0][2], got[1][2])
    if dtype != "float32":
        with pytest.raises(ember.DTypeError, match="floating"):
            _dropout(ember, name, ember.tensor(a), 0.5, inplace)
        with pytest.raises(RuntimeError):
            _dropout(torch, name, torch.tensor(a), 0.5, inplace)


def test_dropout_with_p_1_has_a_zero_gradient_as_torch():
    a = np.array([[1.0, np.nan], [np.inf, -2.0]])
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        lib.nn.functional.dropout(x, 1.0).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(*grads)
