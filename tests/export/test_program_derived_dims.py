"""Derived dims in ``ember.export.export``'s dynamic shapes, as torch.export's: a size given
as an expression of another dim (``2 * n``, ``n + 1``), checked at export and guarded at run
time; and the guards of the non-tensor arguments the export bakes in."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.export import ConstraintViolationError, Dim, GuardError, ValueRange


class Pairs(ember.nn.Module):
    """y holds two rows per row of x; z one more row than x."""

    def forward(self, x, y, z):
        doubled = ember.cat([x, x], 0) + y
        return doubled.sum(0) + z[1:].sum(0)


def _inputs(n):
    return ember.randn(n, 3), ember.randn(2 * n, 3), ember.randn(n + 1, 3)


def test_derived_dims_export_run_at_other_sizes_and_save():
    n = Dim("n", min=2, max=64)
    assert (2 * n).__name__ == "2*n" and (n + 1).__name__ == "n + 1"
    assert ((2 * n).min, (2 * n).max, (n + 1).min) == (4, 128, 3)
    ep = ember.export.export(Pairs(), _inputs(4),
                             dynamic_shapes={"x": {0: n}, "y": {0: 2 * n}, "z": {0: n + 1}})
    assert ep.range_constraints == {"n": ValueRange(2, 64)}
    assert "f32[2*n, 3]" in str(ep) and "f32[n + 1, 3]" in str(ep)
    m = ep.module()
    for size in (3, 10):
        args = _inputs(size)
        np.testing.assert_allclose(m(*args).numpy(), Pairs()(*args).numpy(), rtol=1e-5)
    with pytest.raises(GuardError, match=r"y\.size\(\)\[0\] == 2\*n .*got 7"):
        m(ember.randn(3, 3), ember.randn(7, 3), ember.randn(4, 3))
    with pytest.raises(GuardError, match=r"z\.size\(\)\[0\] == n \+ 1"):
        m(ember.randn(3, 3), ember.randn(6, 3), ember.randn(3, 3))


def test_derived_dims_survive_save_and_load(tmp_path):
    n = Dim("n")
    ep = ember.export.export(Pairs(), _inputs(4),
                             dynamic_shapes=({0: n}, {0: 2 * n}, {0: n + 1}))
    ember.export.save(ep, tmp_path / "p.ep")
    loaded = ember.export.load(tmp_path / "p.ep").module()
    args = _inputs(6)
    np.testing.assert_allclose(loaded(*args).numpy(), Pairs()(*args).numpy(), rtol=1e-5)
    with pytest.raises(GuardError, match="2\\*n"):
        loaded(ember.randn(3, 3), ember.randn(5, 3), ember.randn(4, 3))


def test_a_derived_dim_the_example_breaks_is_a_constraint_violation():
    n = Dim("n")
    with pytest.raises(ConstraintViolationError, match=r"2\*n.*7.*n = 4|2\*n"):
        ember.export.export(Pairs(), (ember.randn(4, 3), ember.randn(7, 3), ember.randn(5, 3)),
                            dynamic_shapes=({0: n}, {0: 2 * n}, {0: n + 1}))


def test_derived_dims_refuse_what_torch_refuses():
    n = Dim("n")
    with pytest.raises(TypeError, match="integer"):
        n * 1.5
    with pytest.raises(TypeError, match="integer"):
        n + 0.5
    assert (2 * (n + 1)).__name__ == "2*n + 2"


def test_non_tensor_arguments_are_guarded_by_value_nan_too():
    class Scale(ember.nn.Module):
        def forward(self, x, s, flag, mode):
            y = x * s if not math.isnan(s) else x
            return y + 1 if flag and mode == "add" else y

    ep = ember.export.export(Scale(), (ember.ones(2), float("nan"), True, "add"))
    m = ep.module()
    np.testing.assert_allclose(m(ember.ones(2), float("nan"), True, "add").numpy(), 2.0)
    for bad in [(2.0, True, "add"), (float("nan"), False, "add"),
                (float("nan"), True, "mul"), (float("nan"), 1, "add")]:
        with pytest.raises(GuardError, match="baked this value"):
            m(ember.ones(2), *bad)


def test_a_branch_inside_a_range_is_refused_beside_a_derived_dim_that_is_small_at_its_low_end():
    class Shifted(ember.nn.Module):  # (n - 1 is 1 at n's low end: the ends move up for it)
        def forward(self, x, y, z):
            scale = 2.0 if x.shape[0] > 10 else 3.0
            return x.sum() * scale + (y[1:] + z).sum()

    b, n = Dim("b"), Dim("n", min=2)
    with pytest.raises(ConstraintViolationError, match=r"Constraints violated \(b, n\)!"):
        ember.export.export(Shifted(), (ember.randn(3), ember.randn(4), ember.randn(3)),
                            dynamic_shapes=({0: b}, {0: n}, {0: n - 1}))
