"""``loss.backward(create_graph=True)`` inside a compiled function: a value made from the
``.grad`` it set (a gradient-norm penalty) is refused with a clear ``TraceError`` naming the fix
(a compiled step returns its values without history, so a loss outside adding it would lose
its gradient); ``autograd.grad(..., create_graph=True)`` inside, the fix, differentiates as
eager and torch; a step that clears ``.grad`` before returning, or returns only its loss,
compiles as before."""

from __future__ import annotations

import warnings

import pytest
import torch

import ember
from ember import jit
from ember.jit import TraceError

X, W = [1.0, 2.0], [0.5, -1.0]


def _norm_penalty(x, w):
    ((x * w) ** 3).sum().backward(create_graph=True)
    return (w.grad ** 2).sum()


def _grad_returned(x, w):
    ((x * w) ** 3).sum().backward(create_graph=True)
    return w.grad


@pytest.mark.parametrize("fn", [_norm_penalty, _grad_returned])
def test_a_value_made_from_a_create_graph_grad_is_refused_naming_the_fix(fn):
    f = jit.compile(fn)
    x, w = ember.tensor(X), ember.tensor(W, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (backward(create_graph=True)'s cycle warning)
        with pytest.raises(TraceError, match=r"\.grad of argument 1.*autograd\.grad\(loss, w, "
                                             r"create_graph=True\)"):
            f(x, w)
    assert w.grad is None and w.tolist() == W  # (the trace was undone)


def _eager_total(T, f):
    x, w = T.tensor(X, dtype=T.float64), T.tensor(W, dtype=T.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = f(x, w)
        (out + (w ** 2).sum()).backward()
    return [out.item(), *w.grad.tolist()], out.requires_grad


def _autograd_grad_fix(T):
    """The fix the error names: the gradient by autograd.grad, no .grad set."""
    def g(x, w):
        (gw,) = T.autograd.grad(((x * w) ** 3).sum(), w, create_graph=True)
        return (gw ** 2).sum()
    return g


def _grad_cleared_before_returning(T):
    """backward(create_graph=True), then .grad set to None: no training step."""
    def g(x, w):
        ((x * w) ** 3).sum().backward(create_graph=True)
        pen = (w.grad ** 2).sum()
        w.grad = None
        return pen
    return g


@pytest.mark.parametrize("make", [_autograd_grad_fix, _grad_cleared_before_returning])
def test_a_penalty_that_sets_no_grad_compiles_and_differentiates_as_torch(make):
    want = _eager_total(torch, make(torch))
    f = jit.compile(make(ember))
    for _ in range(3):
        got = _eager_total(ember, f)
        assert got[0] == pytest.approx(want[0], rel=1e-12) and got[1] is want[1] is True


def test_a_leaf_made_inside_is_named_by_its_shape_and_first_use_not_captured0():
    """(mend55b) The refusal names a tensor made inside the function by its shape and the
    line that first used it; the user cannot map an internal ``captured0`` to ``w``."""
    @jit.compile
    def f(x):
        w = ember.ones(2, requires_grad=True)
        ((x * w) ** 3).sum().backward(create_graph=True)
        return (w.grad ** 2).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TraceError) as err:
            f(ember.tensor(X, requires_grad=True))
    assert "captured" not in str(err.value)
    assert "a tensor (shape (2,)) made inside the function and first used at " in str(err.value)
    assert "((x * w) ** 3).sum().backward(create_graph=True)" in str(err.value)
