"""PyTorch's import paths into torch.distributions (``torch.distributions.normal`` and the
other one-distribution submodules) and ``distributions.utils``' lower-triangle conversions,
against PyTorch."""

import importlib
import types

import numpy as np
import pytest
import torch
import torch.distributions as tdist
import torch.distributions.utils as tutils

import ember
import ember.distributions.utils as eutils

_SUBMODULES = sorted(n for n in dir(tdist) if isinstance(getattr(tdist, n), types.ModuleType))


@pytest.mark.parametrize("name", _SUBMODULES)
def test_every_torch_submodule_imports_with_its_names(name):
    theirs = importlib.import_module(f"torch.distributions.{name}")
    ours = importlib.import_module(f"ember.distributions.{name}")
    assert getattr(ember.distributions, name) is ours
    for exported in getattr(theirs, "__all__", []):
        assert hasattr(ours, exported), f"ember.distributions.{name} lacks {exported}"


def test_from_submodule_import_gives_the_same_class():
    from ember.distributions.normal import Normal
    from ember.distributions.studentT import StudentT
    assert Normal is ember.distributions.Normal and StudentT is ember.distributions.StudentT


@pytest.mark.parametrize("n", range(5))
def test_tril_conversions_like_torch(n):
    x = np.random.default_rng(n).normal(size=(2, 3, n, n))
    for diag in range(-n, n):
        t = tutils.tril_matrix_to_vec(torch.tensor(x), diag)
        e = eutils.tril_matrix_to_vec(ember.tensor(x), diag)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
        np.testing.assert_array_equal(eutils.vec_to_tril_matrix(e, diag).numpy(),
                                      tutils.vec_to_tril_matrix(t, diag).numpy())


def test_tril_conversions_differentiate_and_refuse_bad_sizes():
    v = ember.randn(6, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda v: eutils.vec_to_tril_matrix(v, 0) * 2, (v,))
    m = ember.randn(3, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda m: eutils.tril_matrix_to_vec(m, -1), (m,))
    with pytest.raises(ValueError, match="size of last dimension is 4"):
        eutils.vec_to_tril_matrix(ember.ones(4))
    with pytest.raises(ValueError, match=r"diag \(3\) provided is outside \[-3, 2\]"):
        eutils.tril_matrix_to_vec(ember.ones(3, 3), 3)


def test_the_package_leaves_no_helpers_of_its_own_behind():
    # (the submodule aliases are made by a loop: its helpers were left in the namespace)
    left = {n for n in vars(ember.distributions) if n.startswith("_") and not n.startswith("__")}
    assert not left & {"_sys", "_SUBMODULE_CLASSES", "_name", "_class"}
