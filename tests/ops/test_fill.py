"""In-place fills: fill_, zero_, copy_, uniform_, normal_, bernoulli_."""

import numpy as np
import pytest
import torch

import ember


def _both(fn):
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64, requires_grad=True)
    s = ember.tensor([5.0, -1.0], dtype=ember.float64, requires_grad=True)
    tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    ts = torch.tensor([5.0, -1.0], dtype=torch.float64, requires_grad=True)
    out, ref = fn(x, s), fn(tx, ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    for mine, theirs in [(x.grad, tx.grad), (s.grad, ts.grad)]:
        if theirs is None or mine is None:  # None and zeros both mean "no gradient"
            assert _no_gradient(mine) and _no_gradient(theirs)
        else:
            np.testing.assert_allclose(mine.numpy(), theirs.numpy())


def _no_gradient(g):
    return g is None or not g.numpy().any()


@pytest.mark.parametrize("fn", [
    lambda x, s: (x * 2).fill_(3.0),
    lambda x, s: (x * 2).zero_() + x,
    lambda x, s: (x * 2).copy_(s),                    # broadcast source, gradient to s only
    lambda x, s: (x * 2)[0].copy_(s * 3) * 1,         # through a view
    lambda x, s: _through_base(x, s),
], ids=["fill", "zero", "copy_broadcast", "copy_into_view", "copy_into_view_then_base"])
def test_values_and_gradients_match_torch(fn):
    _both(fn)


def _through_base(x, s):
    y = x * 1
    y[1].copy_(s)
    return y


def test_without_grad_they_write_directly_and_bump_versions():
    x = ember.zeros(2, 3)
    x.fill_(2.5)
    x.copy_(ember.tensor([1, 2, 3]))  # cast to float32
    assert x.dtype is ember.float32 and x._version == 2
    np.testing.assert_array_equal(x.numpy(), [[1, 2, 3], [1, 2, 3]])
    w = ember.ones(3, requires_grad=True)
    with pytest.raises(ember.GradError, match="leaf"):
        w.zero_()
    with ember.no_grad():
        w.zero_()
    assert not w.detach().numpy().any()


def test_fill_value_must_have_one_element():
    with pytest.raises(ValueError, match="one element"):
        ember.zeros(3).fill_(ember.ones(2))
    x = ember.zeros(3).fill_(ember.tensor(4.0))
    np.testing.assert_array_equal(x.numpy(), [4, 4, 4])


def test_random_fills_have_the_right_moments_and_repeat():
    g = ember.Generator().manual_seed(3)
    u = ember.empty(50_000).uniform_(-2, 4, generator=g).numpy()
    n = ember.empty(50_000).normal_(1.0, 2.0, generator=g).numpy()
    b = ember.empty(50_000).bernoulli_(0.25, generator=g).numpy()
    assert u.min() >= -2 and u.max() < 4 and abs(u.mean() - 1) < 0.05
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.01
    a = ember.empty(4).normal_(generator=ember.Generator().manual_seed(9))
    c = ember.empty(4).normal_(generator=ember.Generator().manual_seed(9))
    np.testing.assert_array_equal(a.numpy(), c.numpy())
