"""NumPy's names for ``input`` (``x``, ``a``, ``x1``) and ``other`` (``x2``), taken by the
functions PyTorch's argument parser reads (its native ones) and refused by those it writes in
Python, as in torch 2.13; a parameter given by two of its names is a TypeError in both."""

import numpy as np
import pytest
import torch

import ember

VALUES = np.array([[0.5, 1.5, 2.0], [3.0, 0.25, 1.0]])


def _both(m):
    return m.tensor(VALUES), m.tensor(VALUES[::-1].copy())


@pytest.mark.parametrize("call", [
    lambda m, t, u: m.erf(x=t),
    lambda m, t, u: m.exp(a=t),
    lambda m, t, u: m.neg(x1=t),
    lambda m, t, u: m.add(x=t, x2=u),
    lambda m, t, u: m.add(x1=t, x2=u, alpha=2),
    lambda m, t, u: m.mul(t, x2=u),
    lambda m, t, u: m.maximum(x1=t, x2=u),
    lambda m, t, u: m.xlogy(x=t, x2=u),
    lambda m, t, u: m.where(t > 1, x=t, x2=u),
    lambda m, t, u: m.sum(a=t, axis=0, keepdims=True),
    lambda m, t, u: m.clamp(x=t, min=1.0),
    lambda m, t, u: m.lerp(x=t, end=u, weight=0.5),
    lambda m, t, u: m.special.erfc(x=t),
    lambda m, t, u: m.special.xlogy(x=t, x2=u),
    lambda m, t, u: m.fft.rfft(x=t, axis=0),
    lambda m, t, u: m.zeros_like(input=t),
    lambda m, t, u: m.full_like(x=t, fill_value=2.0),
    lambda m, t, u: m.ones_like(a=t),
])
def test_numpy_names_of_input_and_other_are_taken_like_torch(call):
    want = call(torch, *_both(torch))
    got = call(ember, *_both(ember))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call", [
    lambda m, t, u: m.erf(t, x=t),                 # input twice
    lambda m, t, u: m.add(x=t, a=t, other=u),      # two aliases of input
    lambda m, t, u: m.add(t, other=u, x2=u),       # other twice
    lambda m, t, u: m.erf(y=t),                    # no such name
    lambda m, t, u: m.norm(x=t),                   # written in Python in torch: no aliases
    lambda m, t, u: m.unique(x=t),
])
def test_a_name_torch_refuses_is_a_type_error(call):
    with pytest.raises(TypeError):
        call(torch, *_both(torch))
    with pytest.raises(TypeError):
        call(ember, *_both(ember))


def test_a_parameter_given_twice_names_both_spellings():
    t = ember.ones(2)
    with pytest.raises(TypeError, match=r"add\(\): got x and a, both names of input"):
        ember.add(x=t, a=t, other=t)
