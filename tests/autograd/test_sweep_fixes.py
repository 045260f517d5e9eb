"""Divergences from PyTorch found by the autograd API sweep, each checked against torch."""

import numpy as np
import torch

import ember


def _run_both(fn):
    """``fn(lib)`` for torch and ember, as lists of NumPy arrays (None kept)."""
    def arrays(out):
        return [None if o is None else np.asarray(o.detach().numpy()) for o in out]
    return arrays(fn(torch)), arrays(fn(ember))


def _assert_same(fn):
    expected, got = _run_both(fn)
    assert len(expected) == len(got)
    for t, e in zip(expected, got):
        if t is None:
            assert e is None
        else:
            np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-12)


def test_inplace_on_a_view_of_a_dual_keeps_the_rest_of_its_tangent():
    def fn(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = lib.arange(4.0).reshape(2, 2)
            d = fw.make_dual(x, lib.ones(2, 2))
            d[0].mul_(10)
            d[1].copy_(fw.make_dual(lib.zeros(2), lib.full((2,), 5.0)))
            return [fw.unpack_dual(d).tangent, fw.unpack_dual(d * 2).tangent]
    _assert_same(fn)


def test_writing_the_primal_of_a_dual_keeps_its_tangent():
    def fn(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = lib.arange(4.0).reshape(2, 2)
            d = fw.make_dual(x, lib.ones(2, 2))
            x[1].mul_(3)
            return list(fw.unpack_dual(d))
    _assert_same(fn)
