"""deform_conv2d (torchvision.ops) against a torch 2.13 reference built from grid_sample (each
kernel tap sampled bilinearly with zero padding at its shifted place, then contracted with
the weight): values and gradients for input, offset, mask, weight and bias, with groups,
offset groups, stride, padding and dilation."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from ember.errors import ArgumentError, ArgumentTypeError
from ember.vision import ops

RNG = np.random.default_rng(3)


def torch_reference(x, offset, weight, bias, stride, padding, dilation, mask):
    n, c_in, h, w = x.shape
    c_out, c_group, kh, kw = weight.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    out_h, out_w = offset.shape[-2:]
    og = offset.shape[1] // (2 * kh * kw)
    shifts = offset.reshape(n, og, kh * kw, 2, out_h, out_w)
    taps = []
    for k in range(kh * kw):
        i, j = divmod(k, kw)
        rows = (torch.arange(out_h) * sh - ph + i * dh)[:, None].to(x.dtype)
        cols = (torch.arange(out_w) * sw - pw + j * dw)[None, :].to(x.dtype)
        per_group = []
        for g in range(og):
            y = rows + shifts[:, g, k, 0]
            xx = cols + shifts[:, g, k, 1]
            grid = torch.stack((2 * xx / (w - 1) - 1, 2 * y / (h - 1) - 1), -1)
            part = x[:, g * c_in // og:(g + 1) * c_in // og]
            sampled = TF.grid_sample(part, grid, align_corners=True, padding_mode="zeros")
            if mask is not None:
                sampled = sampled * mask[:, g * kh * kw + k][:, None]
            per_group.append(sampled)
        taps.append(torch.cat(per_group, 1))
    cols = torch.stack(taps, 2)  # (n, c_in, taps, out_h, out_w)
    groups = c_in // c_group
    cols = cols.reshape(n, groups, c_group * kh * kw, out_h * out_w)
    out = torch.einsum("gok,ngkp->ngop", weight.reshape(groups, c_out // groups, -1), cols)
    out = out.reshape(n, c_out, out_h, out_w)
    return out if bias is None else out + bias[None, :, None, None]


CASES = [  # (n, c_in, c_out, h, w, kernel, stride, padding, dilation, groups, offset groups)
    (1, 2, 3, 5, 6, (3, 3), (1, 1), (0, 0), (1, 1), 1, 1),
    (2, 4, 4, 7, 5, (3, 2), (2, 2), (1, 1), (1, 1), 2, 2),
    (1, 6, 3, 6, 6, (2, 3), (1, 2), (2, 1), (2, 1), 3, 3),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("use_mask", [False, True])
def test_values_and_gradients_match_the_grid_sample_reference(case, use_mask):
    n, c_in, c_out, h, w, (kh, kw), stride, padding, dilation, groups, og = case
    out_h = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    out_w = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    arrays = [RNG.standard_normal((n, c_in, h, w)),
              RNG.standard_normal((n, 2 * og * kh * kw, out_h, out_w)) * 1.5,
              RNG.standard_normal((c_out, c_in // groups, kh, kw)), RNG.standard_normal(c_out)]
    if use_mask:
        arrays.append(RNG.uniform(size=(n, og * kh * kw, out_h, out_w)))
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours = [ember.tensor(a, requires_grad=True) for a in arrays]
    t_mask, e_mask = (theirs[4], ours[4]) if use_mask else (None, None)
    expected = torch_reference(*theirs[:4], stride, padding, dilation, t_mask)
    got = ops.deform_conv2d(*ours[:4], stride=stride, padding=padding, dilation=dilation,
                            mask=e_mask)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    cotangent = RNG.standard_normal(expected.shape)
    expected.backward(torch.tensor(cotangent))
    got.backward(ember.tensor(cotangent))
    for t, e in zip(theirs, ours):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_zero_offsets_are_a_convolution_and_the_layer():
    x = ember.randn(2, 4, 6, 7)
    layer = ops.DeformConv2d(4, 6, 3, stride=2, padding=1, groups=2)
    offsets = ember.zeros(2, 18, 3, 4)
    expected = ember.nn.functional.conv2d(x, layer.weight, layer.bias, 2, 1, groups=2)
    np.testing.assert_allclose(layer(x, offsets).detach().numpy(),
                               expected.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert repr(layer) == ("DeformConv2d(4, 6, kernel_size=(3, 3), stride=(2, 2), "
                           "padding=(1, 1), groups=2)")


def test_errors_name_the_shapes():
    x, w = ember.zeros(1, 2, 5, 5), ember.zeros(3, 2, 3, 3)
    with pytest.raises(ember.ShapeError, match=r"deform_conv2d: offset must be .* = "
                                               r"\(1, 2 \* G \* 9, 3, 3\), got \(1, 18, 4, 4\)"):
        ops.deform_conv2d(x, ember.zeros(1, 18, 4, 4), w)
    with pytest.raises(ember.ShapeError, match=r"mask must be .* = \(1, 9, 3, 3\), got"):
        ops.deform_conv2d(x, ember.zeros(1, 18, 3, 3), w, mask=ember.zeros(1, 8, 3, 3))
    with pytest.raises(ember.ShapeError, match="not a multiple of the weight's 3 input"):
        ops.deform_conv2d(x, ember.zeros(1, 18, 3, 3), ember.zeros(3, 3, 3, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        ops.DeformConv2d(3, 4, 3, groups=2)


def test_stride_padding_dilation_are_checked_pairs():
    # the unchecked _pair raised "'float' object is not subscriptable" for 1.5, a
    # ZeroDivisionError for stride 0, an offset ShapeError for negative padding, and an
    # IndexError ('invalid index to scalar variable') for a numpy int
    x, w = ember.ones(1, 2, 5, 5), ember.ones(3, 2, 3, 3)
    got = ops.deform_conv2d(x, ember.zeros(1, 18, 5, 5), w, padding=np.int64(1), stride=[1, 1])
    assert tuple(got.shape) == (1, 3, 5, 5)
    with pytest.raises(ArgumentTypeError, match="deform_conv2d: stride must be an int or "
                       "a pair of ints, got 1.5"):
        ops.deform_conv2d(x, ember.zeros(1, 18, 3, 3), w, stride=1.5)
    with pytest.raises(ArgumentError, match="deform_conv2d: stride must be a positive int"):
        ops.deform_conv2d(x, ember.zeros(1, 18, 3, 3), w, stride=0)
    with pytest.raises(ArgumentError, match="padding must be a non-negative int or a pair"):
        ops.deform_conv2d(x, ember.zeros(1, 18, 3, 3), w, padding=(1, -1))
    with pytest.raises(ArgumentError, match="DeformConv2d: kernel_size must be a positive"):
        ops.DeformConv2d(2, 3, (3, 3, 3))
