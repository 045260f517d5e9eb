"""``jacrev`` and ``autograd.functional.jacobian(vectorize=True)`` with several output leaves:
one ``vmap``-ed backward over all of them together (as PyTorch's), ``chunk_size`` bounding
the one-hot cotangents made at once, the row loop where the batched pass cannot run, and the
refusal of random ops in a backward naming a way out these functions have."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef
from tests.func.test_jacobian_vmapped import CountedSin, NumpySin

A = np.random.default_rng(0).standard_normal((4, 3))


def _np(t):
    return np.asarray(t.detach().numpy())


def _leaves(lib, sin):
    a = lib.tensor(A)

    def f(x, y):
        h = sin(a @ x)
        return {"s": (h * y[0]).sum(), "v": h * y.sum(), "m": (h[:, None] * y).reshape(2, 6),
                "e": h[:0], "z": x.sum() * y.new_zeros(2, 0), "c": y.new_ones(2)}
    return f


XS = [np.array([0.3, -0.2, 0.8]), np.array([0.5, 1.5, -1.0])]


def _assert_trees_equal(got, want):
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            _assert_trees_equal(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_trees_equal(g, w)
    else:
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("chunk", [None, 1, 5, 7, 100])
def test_jacrev_of_many_output_leaves_is_one_backward_with_torchs_values(chunk):
    want = tf.jacrev(_leaves(torch, torch.sin), argnums=(0, 1), chunk_size=chunk)(
        *map(torch.tensor, XS))
    CountedSin.calls = 0
    got = ef.jacrev(_leaves(ember, CountedSin.apply), argnums=(0, 1), chunk_size=chunk)(
        *map(ember.tensor, XS))
    rows = 1 + 4 + 12  # the elements of the outputs that depend on x, y
    assert CountedSin.calls == (1 if chunk is None else -(-rows // chunk))  # (was 1 a leaf)
    _assert_trees_equal(got, want)


def test_jacrev_of_a_scalar_is_one_plain_backward():
    CountedSin.calls = 0
    got = ef.jacrev(lambda x: CountedSin.apply(x).sum())(ember.tensor(XS[0]))
    assert CountedSin.calls == 1
    np.testing.assert_allclose(_np(got), np.cos(XS[0]), rtol=1e-14)


def test_autograd_functional_vectorize_of_several_outputs_is_one_backward():
    def f(lib, sin):
        a = lib.tensor(A)

        def g(x, y):
            h = sin(a @ x)
            return h * y.sum(), (h[:3] * y).sum(), y.new_ones(3), x[:0] * 2
        return g
    want = torch.autograd.functional.jacobian(f(torch, torch.sin), tuple(map(torch.tensor, XS)),
                                              vectorize=True)
    CountedSin.calls = 0
    got = ember.autograd.functional.jacobian(f(ember, CountedSin.apply),
                                             tuple(map(ember.tensor, XS)), vectorize=True)
    assert CountedSin.calls == 1  # (was one per output)
    _assert_trees_equal(got, want)


def test_chunk_size_bounds_the_one_hot_cotangents():
    # 3 inputs -> 3000 outputs: the whole float64 basis would be 72 MB
    s = ember.tensor([0.1, 0.2, 0.3], dtype=ember.float64)
    tracemalloc.start()
    try:
        jac = ef.jacrev(lambda s: (s.repeat(1000) * 2).sin(), chunk_size=64)(s)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_allclose(_np(jac), np.tile(np.diag(2 * np.cos(0.2 * np.arange(1, 4))),
                                                 (1000, 1)), rtol=1e-14)
    assert peak < 16 * 2 ** 20


@pytest.mark.parametrize("chunk", [None, 4])
def test_the_row_loop_of_many_leaves_equals_torch(chunk):
    want = tf.jacrev(_leaves(torch, torch.sin), argnums=(0, 1), chunk_size=chunk)(
        *map(torch.tensor, XS))
    got = ef.jacrev(_leaves(ember, NumpySin.apply), argnums=(0, 1), chunk_size=chunk)(
        *map(ember.tensor, XS))
    _assert_trees_equal(got, want)


class NoisyIdentity(ember.autograd.Function):
    """The identity, drawing random numbers in its backward."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g * (1 + 0.0 * ember.rand_like(g))


@pytest.mark.parametrize("who", ["jacrev", "vectorize"])
def test_a_random_backward_is_refused_with_a_hint_the_function_takes(who):
    x = ember.tensor([0.1, 0.2, 0.3])
    with pytest.raises(ember.errors.GradError, match="random") as info:
        if who == "jacrev":
            ef.jacrev(NoisyIdentity.apply)(x)
        else:
            ember.autograd.functional.jacobian(NoisyIdentity.apply, x, vectorize=True)
    hint = str(info.value).split("Hint:")[-1]
    assert "randomness=" not in hint
    assert ("vectorize=False" if who == "vectorize" else "vjp") in hint
