"""vmap follows in-place shape changes of batched tensors (``unsqueeze_``, ``squeeze_``,
``t_``, ``transpose_``, ``as_strided_``) as ``torch.func.vmap`` does, and ``resize_``
of unbatched tensors; ``resize_`` of a batched tensor, ``resize_as_`` of an unbatched one
to a batched template and ``set_`` stay refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef

_FNS = {
    "unsqueeze_": lambda x: x.clone().unsqueeze_(1) * 2,
    "t_": lambda x: (x * 1).t_() + x.sum(),
    "squeeze_": lambda x: (x[None] * 1).squeeze_(0),
    "transpose_": lambda x: (x * 1).transpose_(0, 1).cumsum(0),
    "t_ then mul_": lambda x: (x * 1).t_().mul_(2),
    "the input's t_": lambda x: x.t_() * 1,
}


def _aliased(x):
    y = x * 1
    v = y[0]  # a view taken before the shape change sees the later write
    y.unsqueeze_(0).mul_(3)
    return v + y.sum()


_FNS["view before unsqueeze_"] = _aliased
_X = np.random.default_rng(0).standard_normal((3, 2, 4))


@pytest.mark.parametrize("name", list(_FNS))
@pytest.mark.parametrize("in_dims", [0, 1])
def test_in_place_shape_change_of_a_batched_tensor_matches_torch(name, in_dims):
    fn = _FNS[name]
    got = ef.vmap(fn, in_dims=in_dims)(ember.tensor(_X))
    want = tf.vmap(fn, in_dims=in_dims)(torch.tensor(_X))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["unsqueeze_", "transpose_", "view before unsqueeze_"])
def test_nested_vmap_and_per_sample_grad_follow_it(name):
    fn = _FNS[name]
    xs = np.stack([_X, _X + 1])
    np.testing.assert_allclose(ef.vmap(ef.vmap(fn))(ember.tensor(xs)).numpy(),
                               tf.vmap(tf.vmap(fn))(torch.tensor(xs)).numpy(), rtol=1e-12)
    got = ef.vmap(ef.grad(lambda x: fn(x).pow(2).sum()))(ember.tensor(_X))
    want = tf.vmap(tf.grad(lambda x: fn(x).pow(2).sum()))(torch.tensor(_X))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_as_strided_in_place_is_the_out_of_place_view():
    fn = lambda x: (x * 1).as_strided((4,), (2,), 1)  # noqa: E731
    want = tf.vmap(fn)(torch.tensor(_X))
    got = ef.vmap(lambda x: (x * 1).as_strided_((4,), (2,), 1))(ember.tensor(_X))
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_the_callers_tensor_keeps_its_shape_and_resize_is_refused():
    x = ember.tensor(_X)
    assert ef.vmap(lambda r: r.t_() * 1)(x).shape == (3, 4, 2) and x.shape == (3, 2, 4)
    with pytest.raises(ember.errors.GradError, match="resize_: cannot resize a batched"):
        ef.vmap(lambda r: (r * 1).resize_(8))(x)


def test_resize_of_an_unbatched_tensor_follows_and_of_a_batched_one_is_refused():
    # torch.func resizes an unbatched tensor as eager does; a batched one it resizes as one
    # block of memory, which mixes samples when the element count changes (sample 0 of
    # resize_(6) of rows of 4 is [0..5]): refused, with a hint
    def unbatched(lib):
        return lambda x: lib.zeros(4, dtype=lib.float64).resize_(2, 2) + x[:2].sum()
    got = ef.vmap(unbatched(ember))(ember.tensor(_X[:, 0]))
    want = tf.vmap(unbatched(torch))(torch.tensor(_X[:, 0]))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    with pytest.raises(ember.GradError, match=r"resize_: cannot resize a batched tensor "
                                              r"\(per-sample shape \(4,\)\) inside vmap"):
        ef.vmap(lambda x: x.clone().resize_(6))(ember.tensor(_X[:, 0]))
    with pytest.raises(ember.GradError, match="set_: not supported inside vmap"):
        ef.vmap(lambda x: ember.zeros(4).set_(x))(ember.tensor(_X[:, 0]))


def test_resize_as_of_an_unbatched_tensor_to_a_batched_template_is_refused():
    # torch.func: 'aten::resize_as_ ... is not possible' (was: resized to the per-sample shape)
    x = np.ones((3, 2, 2))
    with pytest.raises(RuntimeError, match="resize_as_"):
        tf.vmap(lambda v: torch.zeros(4).resize_as_(v) * 1)(torch.tensor(x))
    with pytest.raises(ember.errors.OpError,
                       match=r"vmap: resize_as_ of an unbatched tensor \(shape \(4,\)\)"):
        ef.vmap(lambda v: ember.zeros(4).resize_as_(v) * 1)(ember.tensor(x))
    # an unbatched template resizes as eager does, as in torch
    f = lambda lib: lambda v: lib.zeros(4).resize_as_(lib.ones(2, 2)) * v  # noqa: E731
    np.testing.assert_array_equal(ef.vmap(f(ember))(ember.tensor(x)).numpy(),
                                  tf.vmap(f(torch))(torch.tensor(x)).numpy())
