"""ember.export's Dim.AUTO / Dim.DYNAMIC called with a range (torch.export's
``Dim.DYNAMIC(min=3, max=10)``; it was a TypeError: 'DimHint' object is not callable)."""

import io

import numpy as np
import pytest
import torch
import torch.export

import ember
from ember.export import ConstraintViolationError, Dim, GuardError


def _model(lib):
    class Net(lib.nn.Module):
        def forward(self, x, y):
            return x.sum(0) + y.sum(0)

    return Net()


def _shapes(lib):
    hint = lib.export.Dim
    return ({0: hint.DYNAMIC(min=3, max=10)}, {0: hint.AUTO(max=20)})


def test_ranged_hints_repr_and_equality_as_torch():
    for make in (lambda d: d.STATIC(min=2), lambda d: d.AUTO(max=9),
                 lambda d: d.DYNAMIC(min=3, max=10)):
        assert repr(make(Dim)) == repr(make(torch.export.Dim))
    assert Dim.DYNAMIC(min=3) == Dim.DYNAMIC(min=3) and Dim.DYNAMIC(min=3) != Dim.DYNAMIC


def test_ranged_hints_give_their_ranges_and_guards_as_torch(tmp_path):
    rs = np.random.RandomState(0)
    x, y = rs.randn(4, 3).astype(np.float32), rs.randn(6, 3).astype(np.float32)
    tep = torch.export.export(_model(torch), (torch.tensor(x), torch.tensor(y)),
                              dynamic_shapes=_shapes(torch))
    ep = ember.export.export(_model(ember), (ember.tensor(x), ember.tensor(y)),
                             dynamic_shapes=_shapes(ember))
    assert sorted((r.lower, r.upper) for r in ep.range_constraints.values()) == \
        sorted((int(r.lower), int(r.upper)) for r in tep.range_constraints.values())
    f = io.BytesIO()
    ember.export.save(ep, f)
    f.seek(0)
    for program in (ep, ember.export.load(f)):
        for n, m in [(3, 2), (10, 20), (11, 5), (2, 5), (5, 21)]:
            xs, ys = rs.randn(n, 3).astype(np.float32), rs.randn(m, 3).astype(np.float32)
            try:
                want = tep.module()(torch.tensor(xs), torch.tensor(ys)).numpy()
            except AssertionError:  # torch's guard failed: so does Ember's
                with pytest.raises(GuardError, match="outside the range"):
                    program.module()(ember.tensor(xs), ember.tensor(ys))
                continue
            got = program.module()(ember.tensor(xs), ember.tensor(ys)).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_example_outside_a_ranged_hint_is_refused():
    x, y = ember.randn(4, 3), ember.randn(6, 3)
    with pytest.raises(ConstraintViolationError, match=r"size 4 is not in the range of "
                                                       r"DimHint\(DYNAMIC, min=5\)"):
        ember.export.export(_model(ember), (x, y), dynamic_shapes=({0: Dim.DYNAMIC(min=5)}, None))


def test_a_static_hint_with_a_range_stays_static():
    ep = ember.export.export(_model(ember), (ember.randn(4, 3), ember.randn(6, 3)),
                             dynamic_shapes=({0: Dim.STATIC(min=3)}, None))
    assert ep.range_constraints == {}
