"""The top-level ATen-signature NN ops of native_functions.py against PyTorch and finite
differences (see optable.py)."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import S, arg, assert_same, op_tests, raises_like_torch
from tests.ops.test_linalg_decomp import row

GRID = dict(low=-1.1, high=1.1)


def _first(f):
    return lambda lib, *a: f(lib, *a)[0]


CASES = [
    row("native_layer_norm", lambda lib, x, w, b: lib.native_layer_norm(x, [3], w, b, 1e-5),
        [S(arg(2, 4, 3), arg(3), arg(3))], jvp=False),
    row("native_layer_norm_2d", lambda lib, x: lib.native_layer_norm(x, [2, 3], None, None, 0.1),
        [S(arg(2, 2, 3))], jvp=False),
    # (the saved statistics have no tangent, as they have no gradient: jvp of the output only)
    row("native_layer_norm_out", _first(lambda lib, x: lib.native_layer_norm(x, [2], None, None,
                                                                              0.1)),
        [S(arg(2, 2))]),
    row("native_batch_norm", lambda lib, x, w, b: lib.native_batch_norm(x, w, b, None, None, True,
                                                                        0.1, 1e-5),
        [S(arg(3, 2, 4), arg(2), arg(2))], jvp=False),
    row("native_batch_norm_out", _first(lambda lib, x: lib.native_batch_norm(
        x, None, None, None, None, True, 0.1, 1e-5)), [S(arg(3, 2))]),
    row("native_batch_norm_eval",
        lambda lib, x, m, v: lib.native_batch_norm(x, None, None, m, v.abs() + 0.5, False, 0.1,
                                                   1e-5),
        [S(arg(3, 2), arg(2, grad=False), arg(2, grad=False))]),
    row("native_group_norm", lambda lib, x, w, b: lib.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5),
        [S(arg(2, 4, 3), arg(4), arg(4))]),
    row("native_group_norm_nc", lambda lib, x: lib.native_group_norm(x, None, None, 2, 6, 1, 3,
                                                                     1e-5),
        [S(arg(2, 6))]),
    row("native_dropout_eval", lambda lib, x: lib.native_dropout(x, 0.5, False), [S(arg(2, 3))]),
    row("max_pool1d_with_indices", lambda lib, x: lib.max_pool1d_with_indices(x, 2, [], 1),
        [S(arg(1, 2, 5))], gradgrad=False),
    row("bilinear_top", lambda lib, a, b, w, c: lib.bilinear(a, b, w, c),
        [S(arg(3, 2), arg(3, 4), arg(5, 2, 4), arg(5))]),
    *[row(f"grid_sampler_{i}_{p}_{ac}",
          lambda lib, x, g, i=i, p=p, ac=ac: lib.grid_sampler(x, g, i, p, ac),
          [S(arg(1, 2, 3, 4), arg(1, 2, 3, 2, **GRID))], gradgrad=False, jvp=False,
          grad=i != 1)
      for i, p, ac in [(0, 0, False), (1, 1, True), (2, 2, False), (0, 2, True)]],
    row("grid_sampler_2d", lambda lib, x, g: lib.grid_sampler_2d(x, g, 0, 1, False),
        [S(arg(1, 1, 3, 3), arg(1, 2, 2, 2, **GRID))], gradgrad=False, jvp=False),
    row("grid_sampler_3d", lambda lib, x, g: lib.grid_sampler_3d(x, g, 0, 0, True),
        [S(arg(1, 1, 2, 3, 2), arg(1, 2, 1, 2, 3, **GRID))], gradgrad=False, jvp=False),
    row("affine_grid_generator", lambda lib, t: lib.affine_grid_generator(t, [2, 1, 3, 4], False),
        [S(arg(2, 2, 3))]),
    row("affine_grid_generator_3d",
        lambda lib, t: lib.affine_grid_generator(t, [1, 1, 2, 2, 3], True), [S(arg(1, 3, 4))]),
    row("conv_tbc", lambda lib, x, w, b: lib.conv_tbc(x, w, b, 1),
        [S(arg(5, 2, 3), arg(3, 3, 4), arg(4))]),
    row("conv_tbc_functional", lambda lib, x, w, b: lib.nn.functional.conv_tbc(x, w, b),
        [S(arg(4, 1, 2), arg(2, 2, 3), arg(3))]),
]
(test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp) = op_tests(CASES)


def test_saved_statistics_have_no_gradient_where_torch_has_none():
    for lib in (ember, torch):
        x = lib.ones(2, 3, 4, requires_grad=True)
        assert [t.requires_grad for t in lib.native_layer_norm(x, [4], None, None, 1e-5)] == \
            [True, False, False]
        assert [t.requires_grad for t in lib.native_batch_norm(x, None, None, None, None, True,
                                                                0.1, 1e-5)] == [True, False, False]
        assert [t.requires_grad for t in lib.native_group_norm(x, None, None, 2, 3, 4, 1,
                                                                1e-5)] == [True, True, True]
        assert [t.requires_grad for t in lib.native_dropout(x, 0.5, True)] == [True, False]


def test_native_batch_norm_updates_running_stats():
    x = np.random.default_rng(0).standard_normal((4, 3, 2))
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        out.extend(lib.native_batch_norm(lib.tensor(x), None, None, rm, rv, True, 0.2, 1e-5))
        out.extend([rm, rv])
    assert_same(tuple(got), tuple(want), atol=1e-12)


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_native_dropout_mask(p):
    x = ember.ones(200, 50, dtype=ember.float64, requires_grad=True)
    out, mask = ember.native_dropout(x, p, None)
    assert mask.dtype is ember.bool
    scale = 0.0 if p == 1.0 else 1 / (1 - p)
    np.testing.assert_allclose(out.detach().numpy(), mask.numpy() * scale)
    assert abs(mask.numpy().mean() - (1 - p)) < 0.02
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy() * scale)


def test_embedding_renorm_():
    w = np.random.default_rng(1).standard_normal((5, 3)) * 2
    idx = np.array([0, 1, 1, 4])
    mine = ember.tensor(w)
    ref = torch.tensor(w)
    assert ember.embedding_renorm_(mine, ember.tensor(idx), 1.0, 2.0) is mine
    torch.embedding_renorm_(ref, torch.tensor(idx), 1.0, 2.0)
    assert_same(mine, ref, atol=1e-12)


def test_errors():
    raises_like_torch(lambda lib: lib.native_group_norm(lib.ones(2, 3, 4), None, None, 2, 3, 5, 1,
                                                        1e-5), ember.ShapeError, "HxW=5")
    raises_like_torch(lambda lib: lib.native_layer_norm(lib.ones(2, 3), [2], None, None, 1e-5),
                      ember.ShapeError, "normalized_shape")
    raises_like_torch(lambda lib: lib.native_dropout(lib.ones(2), 1.5, True), ValueError,
                      "between 0 and 1")
    # (PyTorch reads out-of-range modes as garbage; Ember refuses them)
    with pytest.raises(ValueError, match="interpolation_mode must be one of 0 .bilinear."):
        ember.grid_sampler(ember.ones(1, 1, 2, 2), ember.zeros(1, 1, 1, 2), 3, 0, False)
    raises_like_torch(lambda lib: lib.grid_sampler_2d(lib.ones(1, 1, 2, 2, 2),
                                                      lib.zeros(1, 1, 1, 1, 3), 0, 0, False),
                      ember.ShapeError, "4-D input")
    raises_like_torch(lambda lib: lib.grid_sampler_3d(lib.ones(1, 1, 2, 2, 2),
                                                      lib.zeros(1, 1, 1, 1, 3), 2, 0, False),
                      ValueError, "bicubic")
    raises_like_torch(lambda lib: lib.conv_tbc(lib.ones(4, 2, 3), lib.ones(2, 2, 5), lib.ones(5)),
                      ember.ShapeError, "conv_tbc")


@pytest.mark.parametrize("time, pad", [(5, -1), (2, 0), (4, -1)])
def test_conv_tbc_negative_pad_crops_and_empty_output(time, pad):
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s) for s in ((time, 2, 3), (3, 3, 4), (4,)))
    expected = torch.conv_tbc(*map(torch.from_numpy, (x, w, b)), pad)
    got = ember.conv_tbc(*map(ember.from_numpy, (x, w, b)), pad)
    assert got.shape == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-12)
    with pytest.raises(ember.ShapeError, match="conv_tbc: .*negative output length"):
        ember.conv_tbc(ember.zeros(1, 2, 3), ember.zeros(3, 3, 4), ember.zeros(4), 0)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_aliases_take_eps_0_as_torch_as_f_batch_norm_does_not(training):
    # (review54c #4: since d627f970 ember.batch_norm and native_batch_norm refused eps=0 in
    # training; torch checks eps only in F.batch_norm)
    x = np.random.default_rng(1).standard_normal((4, 3, 2))
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        xt = lib.tensor(x, requires_grad=True)
        y = lib.batch_norm(xt, None, None, rm, rv, training, 0.1, 0.0, False)
        out.extend([y, *lib.native_batch_norm(xt, None, None, rm, rv, training, 0.1, 0.0)])
        (y * lib.tensor(x[::-1].copy())).sum().backward()
        out.extend([rm, rv, xt.grad])
    assert_same(tuple(got), tuple(want), atol=1e-10)
    with pytest.raises(ValueError, match="eps must be positive during training"):
        ember.nn.functional.batch_norm(ember.tensor(x), None, None, training=True, eps=0.0)
