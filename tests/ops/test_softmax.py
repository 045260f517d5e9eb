"""softmax and log_softmax against PyTorch and finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import OpCase, S, arg, op_tests

SAMPLES = [
    S(arg(3, 4), dim=1),
    S(arg(3, 4), dim=0),
    S(arg(2, 3, 4, noncontig=True), dim=-2),
    S(arg(), dim=0),                       # 0-d
    S(arg(0, 3), dim=1),                   # empty
    S(arg(3, 4, low=-50, high=50), dim=-1),  # wide range: needs the max shift
]

def _softmax_grad(v, y, dim):
    from ember.ops.primitive import apply
    from ember.ops.softmax import SoftmaxGrad

    return apply(SoftmaxGrad, v, y, dim=dim)


CASES = [
    OpCase("softmax", F.softmax, TF.softmax, SAMPLES),
    OpCase("softmax_grad", _softmax_grad,
           lambda v, y, dim: torch._softmax_backward_data(v, y, dim, v.dtype), [
               S(arg(3, 40), arg(3, 40), dim=1),  # (rows past the vector width)
               S(arg(2, 3, 4, noncontig=True), arg(2, 3, 4), dim=-2),
               S(arg(0, 3), arg(0, 3), dim=1),
           ]),
    OpCase("log_softmax", F.log_softmax, TF.log_softmax, SAMPLES),
    OpCase("softmax_dtype", lambda x, dim: ember.softmax(x.float(), dim, dtype=ember.float64),
           lambda x, dim: torch.softmax(x.float(), dim, dtype=torch.float64),
           [S(arg(3, 4), dim=1)], grad=False),
    OpCase("log_softmax_method", lambda x, dim: x.log_softmax(dim),
           lambda x, dim: x.log_softmax(dim), [S(arg(2, 5), dim=-1)]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_stable_for_huge_logits():
    x = ember.tensor([[1000.0, 0.0, -1000.0]])
    assert np.isfinite(F.log_softmax(x, 1).numpy()).all()
    np.testing.assert_allclose(F.softmax(x, 1).numpy(), [[1.0, 0.0, 0.0]])


def test_implicit_dim_warns_and_follows_torch():
    x = ember.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        y = F.softmax(x)
    np.testing.assert_allclose(y.numpy(), TF.softmax(torch.from_numpy(x.numpy()), 1).numpy(),
                               rtol=1e-6)


def test_softmax_errors():
    with pytest.raises(IndexError, match="softmax"):
        F.softmax(ember.randn(2, 3), dim=2)
    with pytest.raises(ember.DTypeError, match="dtype=ember.float32"):
        F.softmax(ember.tensor([1, 2]), dim=0)


@pytest.mark.parametrize("shape,dim", [((5, 4, 6), 0), ((5, 4, 6), 1), ((5,), 0)])
def test_softmax_grad_under_vmap_matches_each_sample(shape, dim):
    # (dim: each sample's; the samples of shape (5,) are 0-d)
    rng = np.random.default_rng(3)
    v, y = (ember.from_numpy(rng.standard_normal(shape)) for _ in range(2))
    both = ember.func.vmap(lambda a, b: _softmax_grad(a, b, dim))(v, y)
    shared = ember.func.vmap(lambda a: _softmax_grad(a, y[0], dim))(v)  # y not batched
    for i in range(shape[0]):
        np.testing.assert_allclose(both[i].numpy(), _softmax_grad(v[i], y[i], dim).numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(shared[i].numpy(), _softmax_grad(v[i], y[0], dim).numpy(),
                                   rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape, dim", [((64, 1000), -1), ((4, 8, 32), 1), ((5,), 0), ((), 0)])
def test_log_softmax_backward_is_one_op_with_the_composites_values(shape, dim, dtype):
    # g - exp(y)·Σg as one op (log_softmax_grad) running the composite's NumPy calls
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal(shape) * 4, dtype=getattr(ember, dtype),
                     requires_grad=True)
    y = ember.log_softmax(x, dim)
    for g in (ember.tensor(rng.standard_normal(shape), dtype=x.dtype),
              ember.ones(()).expand(shape).to(x.dtype)):
        (got,) = ember.autograd.grad(y, x, g, retain_graph=True)
        with ember.no_grad():
            want = g - y.exp() * g.sum(dim, keepdim=True)
        assert got.numpy().tobytes() == want.numpy().tobytes()
        assert got.numpy().strides == want.numpy().strides
    # (one op: recorded under create_graph, the gradient is that op's output, not a sub's)
    (made,) = ember.autograd.grad(y, x, g, create_graph=True)
    assert made.grad_fn.name() == "LogSoftmaxGradBackward0"


def test_log_softmax_gradient_rules_vmap_and_higher_orders():
    x = ember.randn(3, 4, 5, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: ember.log_softmax(t, 1), (x,))
    per_sample = ember.func.vmap(ember.func.grad(
        lambda r: (ember.log_softmax(r, -1) * ember.arange(5.0, dtype=r.dtype)).sum()))(x)
    (whole,) = ember.autograd.grad((ember.log_softmax(x, -1) * ember.arange(
        5.0, dtype=x.dtype)).sum(), x)
    np.testing.assert_allclose(per_sample.detach().numpy(), whole.numpy(), rtol=1e-15)
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    v = ember.randn(3, 4, 5, dtype=ember.float64)
    (g,) = ember.autograd.grad(ember.log_softmax(x, 1), x, v, create_graph=True)
    (gg,) = ember.autograd.grad((g * g).sum(), x)
    (tg,) = torch.autograd.grad(torch.log_softmax(t, 1), t, torch.tensor(v.numpy()),
                                create_graph=True)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), t)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-12)
    dv = ember.func.jvp(lambda t: ember.autograd.grad(ember.log_softmax(t, 1), t, v,
                                                      create_graph=True)[0], (x,), (v,))[1]
    fd = (ember.autograd.grad(ember.log_softmax(x + 1e-6 * v, 1), x, v)[0] -
          ember.autograd.grad(ember.log_softmax(x - 1e-6 * v, 1), x, v)[0]) / 2e-6
    np.testing.assert_allclose(dv.detach().numpy(), fd.numpy(), rtol=1e-5, atol=1e-8)
