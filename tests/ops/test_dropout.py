"""dropout: masks, scaling, generators, gradients and edge cases."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd.gradcheck import gradcheck, gradgradcheck


def _gen(seed=0):
    return ember.Generator().manual_seed(seed)


def test_mask_values_scale_and_rate():
    y = F.dropout(ember.ones(200, 200), p=0.3, generator=_gen())
    values = np.unique(y.numpy())
    np.testing.assert_allclose(values, [0.0, 1 / 0.7], rtol=1e-6)
    assert abs((y.numpy() == 0).mean() - 0.3) < 0.01


def test_generator_makes_it_repeatable_and_default_generator_is_used():
    a = F.dropout(ember.ones(50), 0.5, generator=_gen(3))
    b = F.dropout(ember.ones(50), 0.5, generator=_gen(3))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    ember.manual_seed(7)
    c = F.dropout(ember.ones(50), 0.5)
    ember.manual_seed(7)
    d = F.dropout(ember.ones(50), 0.5)
    np.testing.assert_array_equal(c.numpy(), d.numpy())


def test_gradient_is_the_mask():
    x = ember.randn(6, 5, requires_grad=True)
    y = F.dropout(x, 0.4, generator=_gen())
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (y.detach().numpy() != 0) / 0.6, rtol=1e-6)
    x64 = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)

    def fn(t):
        return F.dropout(t, 0.5, generator=_gen(1))

    assert gradcheck(fn, [x64]) and gradgradcheck(fn, [x64])


def test_identity_when_not_training_or_p_zero_and_zero_when_p_one():
    x = ember.randn(3, 4, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    y = F.dropout(x, 1.0)
    assert not y.detach().numpy().any()
    y.sum().backward()
    assert not x.grad.numpy().any()


def test_inplace_writes_into_the_input():
    x = ember.ones(4, 4)
    out = F.dropout(x, 0.5, inplace=True, generator=_gen())
    assert out is x and (x.numpy() == 0).any()


def test_feature_dropout_zeroes_whole_channels():
    y = F.dropout2d(ember.ones(4, 8, 3, 3), 0.5, generator=_gen())
    per_channel = y.numpy().reshape(4, 8, 9)
    assert (per_channel.min(-1) == per_channel.max(-1)).all()
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    y1 = F.dropout1d(ember.ones(5, 6), 0.5, generator=_gen())  # unbatched (C, L)
    assert (y1.numpy().min(-1) == y1.numpy().max(-1)).all()
    with pytest.warns(UserWarning, match="3-D input"):
        F.dropout2d(ember.ones(2, 3, 4), 0.5)


def test_dropout_errors():
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        F.dropout(ember.ones(3), 1.5)
    with pytest.raises(ember.DTypeError):
        F.dropout(ember.ones(3, dtype=ember.int64), 0.5)
    with pytest.raises(ember.ShapeError, match="dropout2d"):
        F.dropout2d(ember.ones(3), 0.5)
