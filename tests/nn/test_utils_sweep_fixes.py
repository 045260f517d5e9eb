"""Fixes from the differential sweep of ``nn.utils`` against torch: vector_to_parameters'
sharing of the vector's memory and dtype, chaining unsafe parametrizations, and spectral
norm / orthogonal on weights with no rows."""

import numpy as np
import pytest
import torch
import torch.nn.utils.parametrize as tP
from torch.nn.utils import parametrizations as tPS

import ember
import ember.nn as nn
from ember.nn.utils import parametrizations as PS
from ember.nn.utils import parametrize as P
from tests.nn.helpers import copy_state


def test_vector_to_parameters_shares_the_vector_like_torch():
    tm, em = torch.nn.Linear(2, 3), nn.Linear(2, 3)
    t_weight, e_weight = tm.weight, em.weight
    t_vec, e_vec = torch.arange(9.0, dtype=torch.float64), ember.arange(9.0, dtype=ember.float64)
    torch.nn.utils.vector_to_parameters(t_vec, tm.parameters())
    nn.utils.vector_to_parameters(e_vec, em.parameters())
    t_vec[0], e_vec[0] = 100.0, 100.0  # the parameters see writes to the vector
    for (name, t), e in zip(tm.named_parameters(), em.parameters(), strict=True):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name
        np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy(), err_msg=name)
    assert em.weight is e_weight and tm.weight is t_weight  # (optimizers keep their objects)
    assert em.weight.requires_grad and em.weight.is_leaf


class Triu(nn.Module):
    def forward(self, x):
        return x.triu()


class TorchTriu(torch.nn.Module):
    def forward(self, x):
        return x.triu()


class Double(nn.Module):
    def forward(self, x):
        return 2 * x


class TorchDouble(torch.nn.Module):
    def forward(self, x):
        return 2 * x


def test_unsafe_chained_parametrization_does_not_evaluate_the_current_value():
    # torch skips every check under unsafe=True, also the evaluation of the tensor so far
    # (here Triu cannot run on the 1-D bias)
    tm, em = torch.nn.Linear(3, 3), nn.Linear(3, 3)
    for lib, m, first, second in ((tP, tm, TorchTriu(), TorchDouble()),
                                  (P, em, Triu(), Double())):
        lib.register_parametrization(m, "bias", first, unsafe=True)
        lib.register_parametrization(m, "bias", second, unsafe=True)
    assert [type(p).__name__ for p in em.parametrizations.bias] == ["Triu", "Double"]
    assert list(em.state_dict()) == list(tm.state_dict())


class Rows(torch.nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.weight = torch.nn.Parameter(weight)


class EmberRows(nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.weight = nn.Parameter(weight)


def test_spectral_norm_of_a_weight_with_no_rows():
    tm, em = Rows(torch.zeros(0, 3)), EmberRows(ember.zeros(0, 3))
    tPS.spectral_norm(tm)
    PS.spectral_norm(em)
    copy_state(tm, em)
    assert tuple(em.weight.shape) == tuple(tm.weight.shape) == (0, 3)
    assert list(em.state_dict()) == list(tm.state_dict())


def test_householder_orthogonal_of_an_empty_matrix():
    for shape in ((0, 0), (0, 3)):
        tm, em = Rows(torch.zeros(shape)), EmberRows(ember.zeros(shape))
        tPS.orthogonal(tm, orthogonal_map="householder", use_trivialization=False)
        PS.orthogonal(em, orthogonal_map="householder", use_trivialization=False)
        assert tuple(em.weight.shape) == tuple(tm.weight.shape) == shape
        assert list(em.state_dict()) == list(tm.state_dict())


def test_spectral_norm_of_a_0d_weight_raises_a_clear_error():
    with pytest.raises(IndexError):
        tPS.spectral_norm(Rows(torch.tensor(2.0)))
    with pytest.raises(IndexError, match=r"spectral_norm: dim 0 is out of range .* shape \(\)"):
        PS.spectral_norm(EmberRows(ember.tensor(2.0)))


def test_clip_grad_norm_warns_on_an_empty_generator_like_torch():
    with pytest.warns(UserWarning, match="empty generator"):
        torch.nn.utils.clip_grad_norm_((p for p in []), 1.0)
    with pytest.warns(UserWarning, match="empty generator"):
        total = nn.utils.clip_grad_norm_((p for p in []), 1.0)
    assert float(total) == 0.0
    p = nn.Parameter(ember.ones(2))
    p.grad = ember.tensor([3.0, 4.0])
    assert float(nn.utils.clip_grad_norm_((q for q in [p]), 1.0)) == 5.0  # (a full one: no)


def test_legacy_weight_norm_is_deprecated_like_torch():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        torch.nn.utils.weight_norm(torch.nn.Linear(2, 2))
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(nn.Linear(2, 2))
