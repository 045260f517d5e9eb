"""func.functionalize: torch's observable semantics (outputs, input mutations copied back,
no aliasing of inputs, gradients), and its argument check."""

import numpy as np
import pytest
import torch

import ember


def _f(lib):
    def f(x, y, scale=2.0):
        v = x.view(-1)
        v.mul_(scale)       # a mutation of an input through a view
        z = y + 1
        z.add_(x.sum())     # a mutation of an intermediate
        return v, z, x.t()
    return f


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_matches_torch(remove):
    a, b = np.arange(6.0).reshape(2, 3), np.ones(3)
    got_in = [ember.tensor(a), ember.tensor(b)]
    want_in = [torch.tensor(a), torch.tensor(b)]
    got = ember.func.functionalize(_f(ember), remove=remove)(*got_in, scale=3.0)
    want = torch.func.functionalize(_f(torch), remove=remove)(*want_in, scale=3.0)
    for g, w in zip([*got, *got_in], [*want, *want_in]):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    for out in got:  # no output aliases an input
        assert all(not np.shares_memory(out.numpy(), x.numpy()) for x in got_in)
    if remove == "mutations_and_views":
        assert not np.shares_memory(got[0].numpy(), got[2].numpy())


def test_unmutated_inputs_are_not_written_and_gradients_flow():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([3.0, 4.0])
    before = y._version

    def g(a, b):
        c = a * b
        c.exp_()
        return c.sum()

    out = ember.func.functionalize(g)(x, y)
    assert y._version == before
    out.backward()
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.func.functionalize(g)(tx, torch.tensor([3.0, 4.0])).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_invalid_remove():
    with pytest.raises(RuntimeError):
        torch.func.functionalize(lambda x: x, remove="views")
    with pytest.raises(ValueError, match="remove=views. Valid options are"):
        ember.func.functionalize(lambda x: x, remove="views")
