"""Ragged batches built in Ember and in PyTorch from the same numbers."""

import numpy as np
import torch

import ember

LENGTHS = (2, 1, 3)


def arrays(inner=(4,), lengths=LENGTHS, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, *inner)) for n in lengths]


def parts(inner=(4,), lengths=LENGTHS, seed=0):
    return [ember.tensor(a) for a in arrays(inner, lengths, seed)]


def pair(inner=(4,), lengths=LENGTHS, seed=0, requires_grad=False):
    """The same nested tensor in Ember and PyTorch (float64)."""
    data = arrays(inner, lengths, seed)
    nt = ember.nested.nested_tensor([ember.tensor(a) for a in data],
                                    requires_grad=requires_grad)
    tnt = torch.nested.nested_tensor([torch.tensor(a) for a in data], layout=torch.jagged,
                                     requires_grad=requires_grad)
    return nt, tnt


def assert_close(got, want, **kw):
    """Compares an Ember tensor or nested tensor with a torch one."""
    if getattr(want, "is_nested", False):
        np.testing.assert_array_equal(got.offsets().numpy(), want.offsets().numpy())
        got, want = got.values(), want.values()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                               **({"rtol": 1e-10, "atol": 1e-12} | kw))
