"""``standardize`` (the affine-free layer and instance norms, group norm) keeps its input and
statistics, not its output, as PyTorch's norms: an in-place op may follow it. Its backward,
``standardize_input_grad``, rebuilds the normalised values in its pass."""

import numpy as np
import pytest
import torch

import ember
from ember.ops.primitive import apply
from ember.ops.standardize import StandardizeGrad, StandardizeInputGrad, _standardize

DIMS = [(-1,), (-2, -1), (0, 2)]  # the row kernels (trailing dims) and NumPy's


@pytest.mark.parametrize("dims", DIMS)
def test_in_place_after_standardize_matches_torch(dims):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 4, 5)) * 2 + 1, rng.standard_normal((3, 4, 5))
    grads = []
    for lib in (torch, ember):
        t = lib.tensor(x, requires_grad=True)
        if lib is torch:
            centred = t - t.mean(dims, keepdim=True)
            y = centred / (centred.square().mean(dims, keepdim=True) + 1e-5).sqrt()
        else:
            y = _standardize(t, dims, 1e-5)[0]
        y.relu_()
        (y.pow(3) * lib.tensor(w)).sum().backward()
        grads.append((y.detach().numpy(), t.grad.numpy()))
    for got, want in zip(*grads[::-1], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_in_place_after_group_norm_without_affine():
    x = ember.randn(2, 4, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda t: ember.nn.functional.group_norm(t, 2).relu_().square(), (x,))


@pytest.mark.parametrize("dims", DIMS)
def test_standardize_input_grad_is_standardize_grad_of_the_rebuilt_output(dims):
    rng = np.random.default_rng(1)
    g, x = (ember.tensor(rng.standard_normal((3, 4, 5)).astype(np.float32)) for _ in "gx")
    y, mean, var = _standardize(x, dims, 1e-5)
    rstd = (var + 1e-5).rsqrt()
    got = apply(StandardizeInputGrad, g, x, mean, rstd, dims=dims)
    want = apply(StandardizeGrad, g, y, rstd, dims=dims)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dims", DIMS)
def test_standardize_input_grad_rules_float64(dims):
    rng = np.random.default_rng(2)
    shape = (3, 4, 5)
    stat = tuple(1 if i in {d % 3 for d in dims} else n for i, n in enumerate(shape))
    args = [ember.tensor(a, requires_grad=True) for a in (
        rng.standard_normal(shape), rng.standard_normal(shape), rng.standard_normal(stat),
        rng.uniform(0.5, 2, stat))]

    def fn(g, x, mean, rstd):
        return apply(StandardizeInputGrad, g, x, mean, rstd, dims=dims)

    assert ember.autograd.gradcheck(fn, args, check_forward_ad=True)
    assert ember.autograd.gradgradcheck(fn, args)
    x = ember.tensor(rng.standard_normal(shape), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: _standardize(t, dims, 1e-5), (x,))
    assert ember.autograd.gradcheck(lambda t: _standardize(t, dims, 1e-5), (x,),
                                    check_forward_ad=True)


def test_bad_shapes_and_dtypes_are_named():
    x = ember.zeros(2, 3)
    with pytest.raises(ember.ShapeError, match=r"standardize_input_grad: .* mean \(3, 1\)"):
        apply(StandardizeInputGrad, x, x, ember.zeros(3, 1), ember.ones(2, 1), dims=(-1,))
    with pytest.raises(ember.DTypeError, match=r"standardize_input_grad: .* rstd \(float64\)"):
        apply(StandardizeInputGrad, x, x, ember.zeros(2, 1),
              ember.ones(2, 1, dtype=ember.float64), dims=(-1,))


@pytest.mark.parametrize("dims", [(2,), (-1,), (0, 2)])
def test_standardize_input_grad_under_vmap_matches_each_sample(dims):
    rng = np.random.default_rng(3)
    g, x = (ember.from_numpy(rng.standard_normal((5, 4, 3, 6))) for _ in "gx")
    stat = (5,) + tuple(1 if d in {k % 3 for k in dims} else s for d, s in enumerate((4, 3, 6)))
    mean, rstd = ember.from_numpy(rng.standard_normal(stat)), \
        ember.from_numpy(rng.uniform(0.5, 2.0, stat))

    def grad(*args):
        return apply(StandardizeInputGrad, *args, dims=dims)

    both = ember.func.vmap(grad)(g, x, mean, rstd)
    shared = ember.func.vmap(lambda a: grad(a, x[0], mean[0], rstd[0]))(g)
    for i in range(5):
        np.testing.assert_allclose(both[i].numpy(), grad(g[i], x[i], mean[i], rstd[i]).numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(shared[i].numpy(),
                                   grad(g[i], x[0], mean[0], rstd[0]).numpy(), rtol=1e-12)
