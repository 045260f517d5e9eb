"""Interpolation sweep 64: half-precision linear modes round once, as PyTorch's."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("channels_last", [False, True])
def test_half_bilinear_is_bitwise_torch_values_and_gradient(dtype, align_corners,
                                                            channels_last):
    # both axes in float32 and one rounding, as PyTorch; the pass between the two axes was
    # rounded to the half type (the last bit differed in ~20% of the outputs)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((2, 3, 9, 11)) * 10).astype(np.float32)
    g = rng.standard_normal((2, 3, 13, 7)).astype(np.float32)
    want_x = torch.from_numpy(x).to(getattr(torch, dtype))
    got_x = ember.from_numpy(x).to(getattr(ember, dtype))
    if channels_last:
        want_x = want_x.contiguous(memory_format=torch.channels_last)
        got_x = got_x.contiguous(memory_format=ember.channels_last)
    want_x.requires_grad_()
    got_x.requires_grad_()
    kw = {"size": (13, 7), "mode": "bilinear", "align_corners": align_corners}
    want, got = TF.interpolate(want_x, **kw), F.interpolate(got_x, **kw)
    assert got.dtype is got_x.dtype and tuple(got.stride()) == want.stride()
    np.testing.assert_array_equal(got.detach().float().numpy(), want.detach().float().numpy())
    want.backward(torch.from_numpy(g).to(want.dtype))
    got.backward(ember.from_numpy(g).to(got.dtype))
    _assert_last_bits(got_x.grad, want_x.grad, dtype, share=0.01)


def _assert_last_bits(got, want, dtype: str, share: float, atol: float = 0.0) -> None:
    """At most ``share`` of the elements of half ``got`` differ from ``want``'s, each by one
    unit in the last place of the half type or ``atol`` (float32 sums in another order round
    apart; near a cancellation their float32 difference is above the half's ulp)."""
    a, b = got.detach().float().numpy(), want.detach().float().numpy()
    top = np.maximum(np.abs(a), np.abs(b))
    ulp = np.spacing(top.astype(np.float16)).astype(np.float32) if dtype == "float16" else \
        np.spacing(top) * 2.0 ** 16
    assert (a != b).mean() <= share, f"{(a != b).sum()} of {a.size} differ"
    assert (np.abs(a - b) <= np.maximum(ulp, atol)).all()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode, shape, size", [("bicubic", (2, 3, 9, 11), (13, 7)),
                                               ("trilinear", (1, 3, 5, 6, 7), (7, 4, 9))])
def test_half_bicubic_and_trilinear_round_once(dtype, align_corners, mode, shape, size):
    # torch computes these in reduced precision (~40% of its half outputs a last bit or more
    # off); Ember's round the float32 result once: torch's float32 result rounded to the half,
    # but where the float32 sums' order differs (<1%; rounding each axis's pass was ~20%)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 10).astype(np.float32)
    g = rng.standard_normal((*shape[:2], *size)).astype(np.float32)
    want_x = torch.from_numpy(x).to(getattr(torch, dtype)).requires_grad_()
    got_x = ember.from_numpy(x).to(getattr(ember, dtype)).requires_grad_()
    kw = {"size": size, "mode": mode, "align_corners": align_corners}
    once = TF.interpolate(want_x.detach().float(), **kw).to(want_x.dtype)
    got = F.interpolate(got_x, **kw)
    _assert_last_bits(got, once, dtype, share=0.01, atol=1e-4)
    want = TF.interpolate(want_x, **kw)
    want.backward(torch.from_numpy(g).to(want.dtype))
    got.backward(ember.from_numpy(g).to(got.dtype))
    _assert_last_bits(got_x.grad, want_x.grad, dtype, share=0.01)


NO_OPS = [
    ("interpolate", {"size": (3, 5)}),
    ("interpolate", {"size": (3, 5), "mode": "bilinear"}),
    ("interpolate", {"scale_factor": 1.0, "mode": "bicubic"}),
    ("interpolate", {"size": (3, 5), "mode": "nearest-exact"}),
    ("interpolate", {"size": (3, 5), "mode": "bilinear", "antialias": True}),
    ("pixel_shuffle", {"upscale_factor": 1}),
    ("pixel_unshuffle", {"downscale_factor": 1}),
    ("channel_shuffle", {"groups": 1}),
    ("channel_shuffle", {"groups": 4}),
    ("unfold", {"kernel_size": 1}),
]


@pytest.mark.parametrize("name, kwargs", NO_OPS)
@pytest.mark.parametrize("channels_last", [False, True])
def test_a_resize_or_shuffle_that_moves_nothing_returns_a_new_writable_tensor(
        name, kwargs, channels_last):
    # as PyTorch's: Ember returned the input itself or a view of it (an in-place op on the
    # result changed the input), and unfold's one-element windows a read-only view
    x = ember.randn(2, 4, 3, 5)
    t = torch.from_numpy(x.numpy())
    if channels_last:
        x = x.contiguous(memory_format=ember.channels_last)
        t = t.contiguous(memory_format=torch.channels_last)
    before = x.clone()
    got, want = getattr(F, name)(x, **kwargs), getattr(TF, name)(t, **kwargs)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert tuple(got.stride()) == want.stride()
    got.add_(1)
    np.testing.assert_array_equal(x.numpy(), before.numpy())


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_uint8_resize_to_the_same_size_returns_a_new_tensor(mode, channels_last):
    x = ember.from_numpy(np.arange(60, dtype=np.uint8).reshape(1, 2, 5, 6))
    if channels_last:
        x = x.contiguous(memory_format=ember.channels_last)
    before = x.clone()
    got = F.interpolate(x, size=(5, 6), mode=mode)
    want = TF.interpolate(torch.from_numpy(x.numpy()), size=(5, 6), mode=mode)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got.add_(1)
    np.testing.assert_array_equal(x.numpy(), before.numpy())


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)])
def test_unfold_of_one_element_windows_is_new_memory_and_differentiable(shape):
    # the copy is the public op's (the primitive's view serves pooling without one): the
    # result is writable, apart from the input, contiguous and carries the gradient, as torch's
    x = ember.randn(*shape, requires_grad=True)
    t = torch.from_numpy(x.detach().numpy()).requires_grad_()
    got, want = F.unfold(x, 1), TF.unfold(t, 1)
    assert tuple(got.stride()) == want.stride()
    got.backward(ember.ones_like(got))
    want.backward(torch.ones_like(want))
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    before = x.detach().clone()
    got.detach().add_(1)
    np.testing.assert_array_equal(x.detach().numpy(), before.numpy())
