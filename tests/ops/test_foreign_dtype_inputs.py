"""A PyTorch tensor or NumPy array where an op reads its input's dtype (a floating or
complex check, a dtype named in a message, a pooling or convolution rank check): a TypeError
naming the op and the foreign type (errors.dtype_name, is_floating_input, is_complex_input,
im2col.floating_input), not an AttributeError about 'torch.dtype' having no 'name' or a
NumPy dtype no 'is_floating_point', nor a ShapeError about a PyTorch tensor's shape."""

import numpy as np
import pytest
import torch

import ember

F = ember.nn.functional
E = ember.ones(2, 2)
CALLS = {
    "one_hot": lambda x: F.one_hot(x),
    "bincount": lambda x: ember.bincount(x),
    "binomial": lambda x: ember.binomial(x, E),
    "prelu": lambda x: F.prelu(x, E),
    "embedding": lambda x: F.embedding(x, E),
    "binary_cross_entropy": lambda x: F.binary_cross_entropy(x, E),
    "scaled_dot_product_attention": lambda x: F.scaled_dot_product_attention(x, E, E),
    "istft": lambda x: ember.istft(x, 4),
    "linear_cross_entropy": lambda x: F.linear_cross_entropy(x, E, E),
    "avg_pool1d": lambda x: F.avg_pool1d(x, 2),
    "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, 2),
    "lp_pool2d": lambda x: F.lp_pool2d(x, 2, 2),
    "conv2d": lambda x: F.conv2d(x, ember.ones(1, 1, 1, 1)),
    "det": lambda x: ember.det(x),
    "silu": lambda x: F.silu(x),
    "l1_loss": lambda x: F.l1_loss(x, E),
    "fft_c2c": lambda x: ember.fft.fft_c2c(x, [0], 0, True),
    "threshold": lambda x: F.threshold(x, 0.0, 0.0),
    "normalize": lambda x: F.normalize(x),
    "softmax": lambda x: F.softmax(x, 0),
    "stft": lambda x: ember.stft(x, 2, return_complex=True),
    "is_floating_point": lambda x: ember.is_floating_point(x),
    "is_complex": lambda x: ember.is_complex(x)}


@pytest.mark.parametrize("op", list(CALLS))
@pytest.mark.parametrize("kind", ["torch.Tensor", "torch.Tensor int64", "torch.Tensor bool",
                                  "torch.Tensor complex64", "numpy.ndarray"])
def test_a_foreign_input_is_named_with_its_op(op, kind):
    # (a PyTorch dtype has is_floating_point and is_complex: an int64, bool or complex torch
    # tensor passed those checks and failed later reading dtype.name)
    x = np.ones((2, 2)) if kind == "numpy.ndarray" else \
        torch.ones(2, 2, dtype=getattr(torch, kind.partition(" ")[2] or "float32"))
    kind = kind.partition(" ")[0]
    with pytest.raises(TypeError, match=rf"{op}.*{kind}") as caught:
        CALLS[op](x)
    assert not isinstance(caught.value, (AttributeError, ember.errors.ShapeError))


def test_prelu_names_a_pytorch_weight():
    with pytest.raises(TypeError, match=r"prelu\(\): argument 'weight' must be Tensor, not "
                                        r"torch\.Tensor"):
        F.prelu(E.double(), torch.ones(1))


def test_ember_inputs_keep_their_errors_and_results():
    with pytest.raises(ember.errors.DTypeError, match="one_hot: only applicable to index "
                                                      "tensors of dtype int64, got float32"):
        F.one_hot(E)
    with pytest.raises(ember.errors.ShapeError, match=r"expected a 3-D \(C, H, W\)"):
        F.adaptive_avg_pool2d(ember.ones(2), 1)
    with pytest.raises(ember.errors.DTypeError, match="avg_pool1d: expected a floating input, "
                                                      "got int32"):
        F.avg_pool1d(ember.ones(1, 4, dtype=ember.int32), 2)
    x = ember.tensor([[[1.0, -2.0, 0.5, 3.0]]])
    t = torch.tensor(x.numpy())
    assert np.allclose(F.avg_pool1d(x, 2).numpy(), torch.nn.functional.avg_pool1d(t, 2).numpy())
    assert np.allclose(F.lp_pool1d(x, 2, 2).numpy(),
                       torch.nn.functional.lp_pool1d(t, 2, 2).numpy())
    assert np.allclose(F.silu(x).numpy(), torch.nn.functional.silu(t).numpy())


# ops whose floating/complex check read a NumPy dtype's missing attribute (a PyTorch tensor's
# dtype has it: those pass the check and are refused, or computed as PyTorch's, later)
NUMPY_CALLS = {
    "ctc_loss": lambda x: F.ctc_loss(x, E, E, E),
    "fake_quantize_per_tensor_affine":
        lambda x: ember.fake_quantize_per_tensor_affine(x, 0.1, 0, 0, 255),
    "fake_quantize_per_channel_affine":
        lambda x: ember.fake_quantize_per_channel_affine(x, E, E, 0, 0, 255),
    "lobpcg": lambda x: ember.lobpcg(x),
    "svd_lowrank": lambda x: ember.svd_lowrank(x),
    "pca_lowrank": lambda x: ember.pca_lowrank(x),
    "pdist": lambda x: F.pdist(x),
    "gumbel_softmax": lambda x: F.gumbel_softmax(x),
    "local_response_norm": lambda x: F.local_response_norm(x, 2),
    "view_as_real": lambda x: ember.view_as_real(x),
    "rfft": lambda x: ember.fft.fft_r2c(x, (0,), "backward"),
    "stft": lambda x: ember.stft(x, 4),
    "is_complex": lambda x: ember.is_complex(x),
    "is_floating_point": lambda x: ember.is_floating_point(x),
    "is_signed": lambda x: ember.is_signed(x)}


@pytest.mark.parametrize("op", list(NUMPY_CALLS))
def test_a_numpy_input_is_named_with_its_op(op):
    with pytest.raises(TypeError, match=rf"{op}\(\).*numpy\.ndarray") as caught:
        NUMPY_CALLS[op](np.ones((2, 2)))
    assert not isinstance(caught.value, AttributeError)


def test_dtype_queries_keep_their_answers():
    assert ember.is_floating_point(E) and not ember.is_complex(E) and ember.is_signed(E)
    z = ember.ones(2, dtype=ember.complex64)
    assert z.is_complex() and not z.is_floating_point()
    assert not ember.ones(2, dtype=ember.uint8).is_signed()
    assert ember.view_as_real(z).shape == (2, 2)
    with pytest.raises(ember.errors.DTypeError, match="pdist: expected a floating input"):
        F.pdist(ember.ones(2, 2, dtype=ember.int64))


def test_pdist_names_a_pytorch_input():
    with pytest.raises(TypeError, match=r"pdist\(\).*torch\.Tensor"):
        F.pdist(torch.ones(2, 2))
