"""The lazy layers (``ember.nn.lazy``) against torch: shapes taken from the first input, the
same parameters kept, state dicts loaded before the first call."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.nn import lazy
from tests.nn.helpers import compare, copy_state

LAZY_CASES = [("LazyLinear", (3,), (2, 5)), ("LazyConv2d", (4, 3), (1, 2, 5, 5)),
              ("LazyConvTranspose1d", (4, 3), (2, 2, 6)), ("LazyBatchNorm2d", (), (2, 3, 4, 4))]


@pytest.mark.parametrize("name,args,shape", LAZY_CASES, ids=[c[0] for c in LAZY_CASES])
def test_lazy_matches_torch(name, args, shape):
    t, e = getattr(torch.nn, name)(*args).double(), getattr(lazy, name)(*args)
    assert list(e.state_dict()) == list(t.state_dict())
    weight = e.weight
    x = np.random.default_rng(0).standard_normal(shape)
    t(torch.tensor(x))
    e(ember.tensor(x, dtype=ember.float32))
    assert type(e).__name__ == type(t).__name__ and e.weight is weight
    assert repr(e) == repr(t)
    copy_state(t, e.to(ember.float64))
    compare(t, e, shape)


def test_load_state_dict_before_first_call():
    t = torch.nn.Linear(4, 2).double()
    e = lazy.LazyLinear(2).to(ember.float64)
    copy_state(t, e)
    compare(t, e, (3, 4))
    bad = lazy.LazyLinear(2)
    copy_state(t.float(), bad)
    with pytest.raises(ValueError, match="needs"):
        bad(ember.randn(3, 5))
    assert isinstance(lazy.LazyConv1d(2, 3).weight, nn.Parameter)
