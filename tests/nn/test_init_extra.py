"""nn.init.dirac_ and sparse_ (against torch where the values are not random), and the
deprecated spellings without the underscore, which warn as torch's do."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import ember
from ember import nn


@pytest.mark.parametrize(("shape", "groups"), [((4, 2, 3), 1), ((6, 3, 3, 4), 2),
                                               ((4, 4, 1, 2, 3), 4), ((2, 5, 3, 3), 1),
                                               ((3, 1, 2), 3)])
def test_dirac_matches_torch(shape, groups):
    e = nn.init.dirac_(ember.empty(*shape, dtype=ember.float64), groups=groups)
    t = torch.nn.init.dirac_(torch.empty(*shape, dtype=torch.float64), groups=groups)
    assert e.dtype is ember.float64
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_dirac_convolution_keeps_its_input():
    conv = nn.Conv2d(4, 4, 3, padding=1, groups=2, bias=False)
    nn.init.dirac_(conv.weight, groups=2)
    assert conv.weight.requires_grad
    x = ember.randn(2, 4, 5, 5)
    np.testing.assert_allclose(conv(x).detach().numpy(), x.numpy(), rtol=1e-6)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: nn.init.dirac_(ember.empty(3, 3)), "Only tensors with 3, 4, or 5 dimensions"),
    (lambda: nn.init.dirac_(ember.empty(5, 2, 3), groups=2), "divisible by groups"),
    (lambda: nn.init.sparse_(ember.empty(3), 0.5), "Only tensors with 2 dimensions"),
])
def test_bad_shapes_raise_like_torch(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(("rows", "sparsity"), [(10, 0.25), (7, 0.0), (4, 1.0), (9, 0.5)])
def test_sparse_zeros_as_many_entries_per_column_as_torch(rows, sparsity):
    e = nn.init.sparse_(ember.empty(rows, 40, dtype=ember.float64), sparsity, std=0.5)
    t = torch.nn.init.sparse_(torch.empty(rows, 40, dtype=torch.float64), sparsity, std=0.5)
    zeros = (e == 0).sum(0).numpy()
    np.testing.assert_array_equal(zeros, (t == 0).sum(0).numpy())
    assert (zeros == math.ceil(sparsity * rows)).all()
    assert e.dtype is ember.float64


def test_sparse_values_and_positions_are_drawn_as_documented():
    w = nn.init.sparse_(ember.empty(8, 5000), 0.25, std=3.0).numpy()
    kept = w[w != 0]
    assert kept.size == 6 * 5000
    assert abs(kept.std() - 3.0) < 0.1 and abs(kept.mean()) < 0.1
    per_row = (w == 0).sum(1)  # 10000 zeros over 8 rows: 1250 each, binomial sd ~31
    assert np.abs(per_row - 1250).max() < 150


def test_sparse_generator_drives_values_and_positions():
    def draw(seed):
        return nn.init.sparse_(ember.empty(6, 4), 0.5,
                               generator=ember.Generator().manual_seed(seed)).numpy()

    np.testing.assert_array_equal(draw(3), draw(3))
    assert not np.array_equal(draw(3) == 0, draw(4) == 0)


def test_deprecated_spellings_warn_like_torch_and_fill_the_same():
    old = sorted(n for n in dir(torch.nn.init)
                 if not n.startswith("_") and hasattr(torch.nn.init, n + "_"))
    assert old == ["constant", "dirac", "eye", "kaiming_normal", "kaiming_uniform", "normal",
                   "orthogonal", "sparse", "uniform", "xavier_normal", "xavier_uniform"]
    args = {"constant": (0.5,), "sparse": (0.5,)}
    for name in old:
        shape = (2, 3, 3) if name == "dirac" else (3, 4)
        with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor "
                                               f"of `nn.init.{name}_`"):
            ember.manual_seed(0)
            a = getattr(nn.init, name)(ember.empty(*shape), *args.get(name, ()))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ember.manual_seed(0)
            b = getattr(nn.init, name + "_")(ember.empty(*shape), *args.get(name, ()))
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
        assert getattr(nn.init, name).__name__ == name


def test_bad_init_arguments_are_refused_as_torch():
    for call in (lambda lib: lib.nn.init.normal_(lib.empty(3), std=-1.0),
                 lambda lib: lib.nn.init.uniform_(lib.empty(3), 1.0, 0.0),
                 lambda lib: lib.empty(3).normal_(0.0, -1.0),
                 lambda lib: lib.empty(3).uniform_(1.0, 0.0),
                 lambda lib: lib.nn.init.trunc_normal_(lib.empty(3, dtype=lib.int64))):
        for lib in (torch, ember):
            with pytest.raises((RuntimeError, ValueError, NotImplementedError,
                                ember.errors.DTypeError)):
                call(lib)
    w = nn.init.kaiming_uniform_(ember.empty(300, 4), mode="FAN_OUT", nonlinearity="relu")
    assert abs(w).max().item() <= math.sqrt(6 / 300) + 1e-6  # (fan_out, as torch reads it)


@pytest.mark.parametrize("std", [float("nan"), -float("inf")])
def test_sparse_refuses_a_nan_std_as_torch(std):
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.nn.init.sparse_(torch.empty(2, 2), 0.5, std=std)
    # before: NaN passed the `std < 0` check and filled NaNs
    with pytest.raises(ember.errors.ArgumentError, match="sparse_: normal expects std >= 0.0"):
        nn.init.sparse_(ember.empty(2, 2), 0.5, std=std)
