"""ember.func.rearrange against torch.func.rearrange: values, shapes and errors for einops
patterns (groups, ellipsis, unit axes, axes_lengths, lists of tensors), and under transforms."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef

X = np.arange(120.0).reshape(2, 3, 4, 5)

CASES = [
    ("b c h w -> b c h w", {}), ("b c h w -> w h c b", {}), ("b c h w -> b (c h w)", {}),
    ("b c h w -> (h c) b w", {}), ("b (c1 c2) h w -> c2 b c1 h w", {"c1": 3}),
    ("b c (h1 h2) w -> b h2 c h1 w", {"h2": 2}), ("b c (h1 h2) w -> b c h1 h2 w", {"h1": 2}),
    ("... w -> w ...", {}), ("b ... -> (b ...)", {}), ("b ... w -> b w ...", {}),
    ("b c h w ... -> (... h) c b w", {}), ("... -> ...", {}), ("b c h w -> b c h w 1", {}),
    ("b c h w -> b () c (h 1) w", {}), ("(b) c h w -> b (c) h w", {}),
    ("b c h w -> b c h w", {"b": 2, "w": 5}), ("b c h w -> (b c h w)", {}),
]


@pytest.mark.parametrize("pattern,lengths", CASES)
def test_rearrange_matches_torch(pattern, lengths):
    got = ef.rearrange(ember.tensor(X), pattern, **lengths)
    want = tf.rearrange(torch.tensor(X), pattern, **lengths)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_rearrange_of_a_list_stacks_first_and_a_unit_axis_is_dropped():
    xs = [ember.tensor(X[0]), ember.tensor(X[1])]
    want = tf.rearrange([torch.tensor(X[0]), torch.tensor(X[1])], "s c h w -> c (s h) w")
    np.testing.assert_array_equal(ef.rearrange(xs, "s c h w -> c (s h) w").numpy(), want.numpy())
    one = ember.tensor(X[:, :1])
    assert ef.rearrange(one, "b 1 h w -> b h w").shape == (2, 4, 5)


@pytest.mark.parametrize("pattern,lengths,match", [
    ("b c h w -> b c h", {}, "'w' on one side"),
    ("b c h w -> b c h w x", {"x": 2}, "'x' on one side"),
    ("b b h w -> b h w", {}, "appears twice"),
    ("b ... ... -> b", {}, "appears twice"),
    ("b c (h w) x -> b c h w x", {}, "cannot infer the sizes of both 'h' and 'w'"),
    ("b c (h w) x -> b c h w x", {"h": 3}, r"does not split evenly into \(h w\)"),
    ("b c h w -> b c h w", {"b": 3}, "does not match b = 3"),
    ("b c h -> b c h", {}, "names 3 dimensions, the input has 4"),
    ("b c h w -> b c _h w", {}, "invalid axis name '_h'"),
    ("b c h w -> b c (h 2) w", {}, "invalid axis name '2'"),
    ("(b ...) -> b ...", {}, "inside parentheses"),
    ("b c h w -> b c h w", {"z": 1}, r"axes_lengths names \['z'\]"),
    ("b c h w", {}, "left -> right"),
    ("b c h w -> b c (h w", {}, "unbalanced"),
    ("b 1 h w -> b h w", {}, "axis of size 1 where the input"),
])
def test_rearrange_refuses_bad_patterns_clearly(pattern, lengths, match):
    with pytest.raises(ValueError, match=match):
        ef.rearrange(ember.tensor(X), pattern, **lengths)
    if "1 h" not in pattern:  # (torch sums over an axis named 1 of any size)
        with pytest.raises(Exception):  # noqa: B017 (torch's DimensionBindError or ValueError)
            tf.rearrange(torch.tensor(X), pattern, **lengths)



@pytest.mark.parametrize("value,error,match", [
    (2.0, TypeError, r"axis lengths must be Python ints, got a=2.0 \(float\)"),
    (True, TypeError, r"got a=True \(bool\)"),
    (np.int64(2), TypeError, r"\(int64\) for '\(a b\) c -> a b c'"),
    (-2, ValueError, "axis lengths must be >= 0, got a=-2"),
])
def test_rearrange_checks_axes_lengths_up_front(value, error, match):
    with pytest.raises(error, match=match):
        ef.rearrange(ember.zeros(6, 3), "(a b) c -> a b c", a=value)
    if error is TypeError:  # (torch: "rearrange axis lengths must be integers")
        with pytest.raises(TypeError):
            tf.rearrange(torch.zeros(6, 3), "(a b) c -> a b c", a=value)
    assert ef.rearrange(ember.zeros(0, 3), "(a b) c -> a b c", a=0, b=5).shape == (0, 5, 3)


def test_rearrange_parses_a_pattern_once_and_keys_it_by_rank_and_length_names():
    from ember.func.rearrange import _parse

    before = _parse.cache_info()
    for shape in [(2, 3), (2, 3, 4, 5), (2, 3), (4,)]:  # (one pattern, ellipses of 1, 3, 0 axes)
        x = np.arange(np.prod(shape), dtype=float).reshape(shape)
        want = tf.rearrange(torch.tensor(x), "... w -> w ...")
        np.testing.assert_array_equal(ef.rearrange(ember.tensor(x), "... w -> w ...").numpy(),
                                      want.numpy())
    x, pattern = np.arange(12.0).reshape(6, 2), "(a b) c -> b a c"
    for lengths in [{"a": 2}, {"a": 3}, {"b": 2}, {"b": 3, "a": 2}, {"a": 2, "b": 3}]:
        want = tf.rearrange(torch.tensor(x), pattern, **lengths)
        np.testing.assert_array_equal(ef.rearrange(ember.tensor(x), pattern, **lengths).numpy(),
                                      want.numpy())
    with pytest.raises(ValueError, match=r"axes_lengths names \['c'\]"):
        ef.rearrange(ember.arange(6.0), "(a b) -> b a", a=2, c=3)
    after = _parse.cache_info()
    assert after.hits - before.hits >= 5  # (each call after the first of its key is a hit)

def test_rearrange_under_vmap_and_grad_matches_torch():
    pattern = "c (h1 h2) w -> (w h2) c h1"
    got = ef.vmap(lambda t: ef.rearrange(t, pattern, h1=2))(ember.tensor(X))
    want = tf.vmap(lambda t: tf.rearrange(t, pattern, h1=2))(torch.tensor(X))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    w = np.linspace(-1, 1, 120).reshape(10, 3, 4)
    g = ef.grad(lambda t: (ef.rearrange(t, "b c h w -> (w b) c h") * ember.tensor(w)).sum())(
        ember.tensor(X))
    gt = tf.grad(lambda t: (tf.rearrange(t, "b c h w -> (w b) c h") * torch.tensor(w)).sum())(
        torch.tensor(X))
    np.testing.assert_allclose(g.numpy(), gt.numpy())
