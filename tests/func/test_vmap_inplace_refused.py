"""vmap refuses an in-place write of a batched value into an unbatched tensor *before* the
write, so the tensor is left as it was, as ``torch.func.vmap`` leaves it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef

_WRITES = {
    "add_": lambda y, x, i, lib: y.add_(x),
    "copy_": lambda y, x, i, lib: y.copy_(x),
    "mul_": lambda y, x, i, lib: y.mul_(x),
    "iadd": lambda y, x, i, lib: y.__iadd__(x),
    "setitem": lambda y, x, i, lib: y.__setitem__(i, 5.0),
    "index_put_": lambda y, x, i, lib: y.index_put_((i,), lib.tensor(7.0, dtype=y.dtype)),
    "scatter_": lambda y, x, i, lib: y.scatter_(0, i.reshape(1), 3.0),
    "clamp_": lambda y, x, i, lib: y.clamp_(min=x),
    "addcmul_": lambda y, x, i, lib: y.addcmul_(x, x),
    "lerp_": lambda y, x, i, lib: y.lerp_(x, 0.5),
    "index_add_": lambda y, x, i, lib: y.index_add_(0, i.reshape(1), x[:1]),
    "index_fill_": lambda y, x, i, lib: y.index_fill_(0, i.reshape(1), 2.0),
    "masked_fill_": lambda y, x, i, lib: y.masked_fill_(x > 25, 0.0),
}


def _run(lib, fn, kind, grad):
    y = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
    x = lib.tensor([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]], dtype=lib.float64,
                   requires_grad=grad)
    i = lib.tensor([0, 2])

    def per_sample(xi, ii):
        _WRITES[kind](y, xi, ii, lib)
        return y * 1

    with pytest.raises(RuntimeError):
        fn.vmap(per_sample)(x, i)
    return y.detach().numpy()


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("kind", sorted(_WRITES))
def test_refused_write_leaves_the_unbatched_tensor_unchanged_like_torch(kind, grad):
    e, t = _run(ember, ef, kind, grad), _run(torch, tf, kind, grad)
    np.testing.assert_array_equal(e, t)
    np.testing.assert_array_equal(e, [1.0, 2.0, 3.0])


def test_nested_refusal_leaves_the_outer_batched_tensor_unchanged_like_torch():
    """The target batched at the outer level only (written through into ``a``), the value
    at the inner one."""
    def run(lib, fn):
        a = lib.tensor(np.arange(2.0)[:, None] * 10 + np.zeros((2, 3)))
        b = lib.tensor(np.arange(12.0).reshape(4, 3))

        def outer(ai):
            return fn.vmap(lambda bi: ai.add_(bi) * 1)(b)

        with pytest.raises(RuntimeError):
            fn.vmap(outer)(a)
        return a.numpy()

    e, t = run(ember, ef), run(torch, tf)
    np.testing.assert_array_equal(e, t)
    np.testing.assert_array_equal(e, [[0.0] * 3, [10.0] * 3])


def test_the_allowed_writes_still_run():
    """Batched into batched, and unbatched into unbatched, as before."""
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = ef.vmap(lambda xi: xi.clone().add_(xi))(x)
    np.testing.assert_array_equal(out.numpy(), 2 * x.numpy())
    y = ember.zeros(2)
    ef.vmap(lambda xi: y.add_(1.0) + xi)(x)
    t = torch.zeros(2)
    tf.vmap(lambda xi: t.add_(1.0) + xi)(torch.tensor(x.numpy()))
    np.testing.assert_array_equal(y.numpy(), t.numpy())
