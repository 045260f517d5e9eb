"""im2col (unfold/fold) and convolutions against PyTorch and finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import OpCase, S, arg, op_tests

CASES = [
    OpCase("unfold", F.unfold, TF.unfold, [
        S(arg(2, 3, 5, 5), kernel_size=3),
        S(arg(2, 2, 5, 6, noncontig=True), kernel_size=(2, 3), dilation=(2, 1), padding=1,
          stride=(2, 1)),
        S(arg(2, 4, 4), kernel_size=2, stride=2),                  # unbatched
        S(arg(0, 2, 4, 4), kernel_size=2),                         # empty batch
    ]),
    OpCase("fold", F.fold, TF.fold, [
        S(arg(2, 27, 9), output_size=(5, 5), kernel_size=3),
        S(arg(2, 12, 18), output_size=(5, 6), kernel_size=(2, 3), dilation=(2, 1), padding=1,
          stride=(2, 1)),
        S(arg(8, 4, noncontig=True), output_size=4, kernel_size=2, stride=2),  # unbatched
    ]),
    OpCase("conv2d", F.conv2d, TF.conv2d, [
        S(arg(2, 3, 5, 5), arg(2, 3, 3, 3), arg(2)),
        S(arg(2, 3, 5, 5, noncontig=True), arg(2, 3, 3, 3), arg(2), stride=2, padding=1),
        S(arg(2, 3, 5, 5), arg(2, 3, 3, 2), padding=(1, 0), dilation=(2, 1), stride=(1, 2)),
        S(arg(2, 4, 5, 5), arg(2, 2, 3, 3), arg(2), groups=2, padding="same"),
        S(arg(1, 3, 5, 5), arg(2, 3, 2, 2), padding="same", dilation=2),  # asymmetric 'same'
        S(arg(1, 2, 4, 4), arg(2, 2, 3, 3), padding=(3, 1)),  # padding past the kernel's reach
        S(arg(2, 3, 4, 4), arg(2, 3, 1, 1), arg(2)),                       # 1×1 fast path
        S(arg(2, 1, 5, 5), arg(12, 1, 3, 3), arg(12), padding=1),  # fewer columns than channels
        S(arg(3, 5, 5), arg(2, 3, 3, 3), padding="valid"),                 # unbatched
        S(arg(0, 3, 5, 5), arg(2, 3, 3, 3), arg(2)),                       # empty batch
        S(arg(2, 3, 6, 5), arg(3, 1, 3, 3), arg(3), groups=3, padding=1),  # depthwise
        S(arg(2, 3, 7, 6, noncontig=True), arg(3, 1, 3, 2), groups=3, stride=(2, 1),
          dilation=(1, 2), padding=(1, 0)),
        S(arg(3, 5, 5), arg(3, 1, 2, 2), groups=3, padding="same"),  # unbatched, asymmetric
    ]),
    OpCase("conv1d", F.conv1d, TF.conv1d, [
        S(arg(2, 3, 7), arg(2, 3, 3), arg(2), stride=2, padding=1),
        S(arg(2, 3, 7), arg(2, 3, 3), padding=2, dilation=2),
        S(arg(2, 4, 6), arg(4, 1, 2), groups=4, dilation=2),               # depthwise
    ]),
    OpCase("conv3d", F.conv3d, TF.conv3d, [
        S(arg(1, 2, 3, 4, 4), arg(2, 2, 2, 2, 2), arg(2), padding=(1, 0, 1)),
    ], gradgrad=False),
    OpCase("conv_transpose2d", F.conv_transpose2d, TF.conv_transpose2d, [
        S(arg(2, 3, 3, 3), arg(3, 2, 3, 3), arg(2)),
        S(arg(2, 3, 3, 3, noncontig=True), arg(3, 2, 3, 3), arg(2), stride=2, padding=1,
          output_padding=1),
        S(arg(2, 4, 3, 3), arg(4, 1, 2, 3), groups=2, stride=(2, 1), dilation=(1, 2)),
        S(arg(1, 2, 3, 3), arg(2, 2, 3, 3), stride=1, output_padding=1, dilation=2),
        S(arg(3, 3, 3), arg(3, 2, 2, 2), stride=2),                        # unbatched
    ]),
    OpCase("conv_transpose1d", F.conv_transpose1d, TF.conv_transpose1d, [
        S(arg(2, 3, 4), arg(3, 2, 3), arg(2), stride=3, padding=1, output_padding=2),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_conv2d_channel_mismatch_names_shapes():
    x, w = ember.randn(1, 3, 5, 5), ember.randn(8, 4, 3, 3)
    with pytest.raises(ember.ShapeError, match=r"conv2d: input has 3 channels but weight "
                       r"expects 4 \(weight shape \(8, 4, 3, 3\)\)"):
        F.conv2d(x, w)


def test_conv_errors():
    x = ember.randn(1, 4, 5, 5)
    with pytest.raises(ember.ShapeError, match="2 groups of 3"):
        F.conv2d(x, ember.randn(4, 3, 3, 3), groups=2)
    with pytest.raises(ember.ShapeError, match="too small for kernel"):
        F.conv2d(x, ember.randn(2, 4, 7, 7))
    with pytest.raises(ember.ShapeError, match="bias of shape"):
        F.conv2d(x, ember.randn(2, 4, 3, 3), ember.randn(3))
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(x, ember.randn(2, 4, 3, 3), padding="same", stride=2)
    with pytest.raises(ember.DTypeError, match="float64"):
        F.conv2d(x, ember.randn(2, 4, 3, 3, dtype=ember.float64))
    with pytest.raises(ember.ShapeError, match="4-D"):
        F.conv2d(ember.randn(5, 5), ember.randn(2, 4, 3, 3))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(x, ember.randn(4, 2, 3, 3), stride=2, output_padding=2)
    with pytest.raises(ember.ShapeError, match="fold: input has 10 blocks"):
        F.fold(ember.randn(1, 8, 10), output_size=4, kernel_size=2)


@pytest.mark.parametrize("shape, match", [
    ((0, 8, 5), "fold: input has 5 blocks along dimension 2 .* has 9 "),
    ((0, 7, 9), "fold: input size 7 along dimension 1 is not divisible"),
])
def test_fold_of_an_empty_batch_checks_its_shape_like_torch(shape, match):
    # an empty input reshapes to any shape, so the forward itself checks it
    with pytest.raises(RuntimeError):
        torch.nn.Fold(output_size=(4, 4), kernel_size=2)(torch.zeros(shape))
    with pytest.raises(ember.ShapeError, match=match):
        ember.nn.Fold(output_size=(4, 4), kernel_size=2)(ember.zeros(shape))
    with pytest.raises(ember.ShapeError, match=match):
        F.fold(ember.zeros(shape), output_size=(4, 4), kernel_size=2)
    assert F.fold(ember.zeros(0, 8, 9), output_size=4, kernel_size=2).shape == \
        TF.fold(torch.zeros(0, 8, 9), output_size=4, kernel_size=2).shape


@pytest.mark.parametrize("op, kwargs, match", [
    ("conv2d", {"stride": 0}, "conv2d: stride must be positive, got 0"),
    ("conv2d", {"stride": (1, -1)}, r"conv2d: stride must be positive, got \(1, -1\)"),
    ("conv2d", {"dilation": 0}, "conv2d: dilation must be positive"),
    ("conv2d", {"padding": -1}, "conv2d: padding must be non-negative"),
    ("conv_transpose2d", {"stride": 0}, "conv_transpose2d: stride must be positive"),
    ("conv_transpose2d", {"dilation": 0}, "conv_transpose2d: dilation must be positive"),
    ("conv_transpose2d", {"padding": -1}, "conv_transpose2d: padding must be non-negative"),
    ("conv_transpose2d", {"stride": 2, "output_padding": -1},
     "conv_transpose2d: output_padding must be non-negative"),
])
def test_non_positive_geometry_is_an_error_like_torch(op, kwargs, match):
    with pytest.raises(RuntimeError):
        getattr(TF, op)(torch.ones(1, 1, 5, 5), torch.ones(1, 1, 3, 3), **kwargs)
    with pytest.raises(ember.ShapeError, match=match):
        getattr(F, op)(ember.ones(1, 1, 5, 5), ember.ones(1, 1, 3, 3), **kwargs)


@pytest.mark.parametrize("nd", [1, 3])
def test_zero_stride_is_an_error_in_every_rank(nd):
    x, w = ember.ones((1, 1) + (5,) * nd), ember.ones((1, 1) + (3,) * nd)
    with pytest.raises(ember.ShapeError, match=f"conv{nd}d: stride must be positive"):
        getattr(F, f"conv{nd}d")(x, w, stride=0)


def test_unfold_fold_adjoint():
    # <unfold(x), c> == <x, fold(c)>: each is the other's transpose
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 6, 5))
    kw = dict(kernel_size=(3, 2), dilation=(1, 2), padding=(1, 2), stride=(2, 1))
    cols = F.unfold(ember.from_numpy(x), **kw)
    c = rng.standard_normal(cols.shape)
    back = F.fold(ember.from_numpy(c), output_size=(6, 5), **kw)
    assert np.isclose((cols.numpy() * c).sum(), (x * back.numpy()).sum())


def test_conv2d_float32_matches_torch_at_larger_size():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8, 16, 16)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    mine = F.conv2d(ember.from_numpy(x), ember.from_numpy(w), stride=2, padding=1)
    ref = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=1)
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)
    assert mine.dtype is ember.float32


def test_conv2d_under_vmap_with_per_sample_weights_matches_torch():
    # conv's batching rule with a batched weight: one grouped convolution, a group per sample
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((3, 2, 2, 6, 5)), rng.standard_normal((3, 4, 2, 3, 3))

    def loss(t, wt, conv):
        return (conv(t, wt, padding=(1, 0), dilation=(1, 2)) ** 2).sum()

    for dims in ((0, 0), (None, 0)):
        xs = x if dims[0] == 0 else x[0]
        got = ember.func.vmap(ember.func.grad(lambda t, wt: loss(t, wt, F.conv2d),
                                              argnums=(0, 1)), in_dims=dims)(
            ember.from_numpy(xs), ember.from_numpy(w))
        want = torch.func.vmap(torch.func.grad(lambda t, wt: loss(t, wt, TF.conv2d),
                                               argnums=(0, 1)), in_dims=dims)(
            torch.from_numpy(xs), torch.from_numpy(w))
        for g, t in zip(got, want):
            np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_conv2d_under_vmap_with_per_sample_gradients_matches_torch():
    # the vmapped batch joins the images' batch in conv's rule; per-sample gradients
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((3, 2, 2, 5, 5)), rng.standard_normal((4, 2, 3, 3))

    def loss(t, wt, conv):
        return (conv(t, wt, padding=1, stride=2) ** 2).sum()

    got = ember.func.vmap(ember.func.grad(lambda t, wt: loss(t, wt, F.conv2d), argnums=(0, 1)),
                          in_dims=(0, None))(ember.from_numpy(x), ember.from_numpy(w))
    want = torch.func.vmap(torch.func.grad(lambda t, wt: loss(t, wt, TF.conv2d),
                                           argnums=(0, 1)),
                           in_dims=(0, None))(torch.from_numpy(x), torch.from_numpy(w))
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_conv2d_backward_recomputes_its_columns_instead_of_keeping_them():
    rng = np.random.default_rng(5)
    x = ember.from_numpy(rng.standard_normal((4, 8, 16, 16)).astype(np.float32))
    w = ember.from_numpy(rng.standard_normal((8, 8, 3, 3)).astype(np.float32)).requires_grad_()
    with ember.memory.tracking():
        base = ember.memory.allocated()
        y = F.conv2d(x, w, padding=1)
        kept = ember.memory.allocated() - base
    assert kept < 2 * y.numel() * 4  # the output (and a bias-free view), not 9× the input
    y.square().sum().backward()
    xt, wt = torch.from_numpy(x.numpy()), torch.from_numpy(w.detach().numpy()).requires_grad_()
    TF.conv2d(xt, wt, padding=1).square().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-3)


def test_conv2d_input_changed_in_place_before_backward_is_an_error():
    x = ember.randn(1, 2, 5, 5)
    w = ember.randn(3, 2, 3, 3).requires_grad_()
    y = F.conv2d(x, w)
    x.add_(1.0)
    with pytest.raises(ember.GradError, match=r"input 0 of conv .*\(1, 2, 5, 5\).* modified in "
                       r"place"):
        y.sum().backward()


def test_conv2d_under_user_saved_tensor_hooks():
    # the convolution saves its input (not the columns) and its weight (a leaf, as torch)
    # through the user's hooks; gradients unchanged
    x = ember.randn(2, 3, 6, 6, dtype=ember.float64).requires_grad_()
    w = ember.randn(4, 3, 3, 3, dtype=ember.float64).requires_grad_()
    seen = []
    with ember.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
        y = F.conv2d(x.clone(), w, padding=1)
    y.sum().backward()
    assert [tuple(t.shape) for t in seen] == [(2, 3, 6, 6), (4, 3, 3, 3)]
    xt, wt = (torch.from_numpy(t.detach().numpy()).requires_grad_() for t in (x, w))
    TF.conv2d(xt, wt, padding=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-10)


def test_fold_in_several_batch_chunks_matches_torch(monkeypatch):
    import ember.ops.im2col as im2col

    monkeypatch.setattr(im2col, "_FOLD_CHUNK_BYTES", 1)  # one sample per pass
    cols = np.random.default_rng(10).standard_normal((5, 2 * 9, 25))
    got = F.fold(ember.from_numpy(cols), output_size=(5, 5), kernel_size=3, padding=1,
                 stride=(1, 1), dilation=1)
    want = TF.fold(torch.from_numpy(cols), output_size=(5, 5), kernel_size=3, padding=1,
                   stride=1, dilation=1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    x = np.random.default_rng(11).standard_normal((3, 2, 6, 6))
    w = np.random.default_rng(12).standard_normal((4, 2, 3, 3))
    xe, xt = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    F.conv2d(xe, ember.from_numpy(w), padding=1).square().sum().backward()
    TF.conv2d(xt, torch.from_numpy(w), padding=1).square().sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-10)


def test_conv2d_weight_gradient_is_laid_out_like_the_weight():
    # the GEMM gives it as (*kernel, Cin, Cout); .grad follows the weight's C order, as in
    # PyTorch, so that optimizer updates run over contiguous memory
    w = ember.randn(4, 3, 3, 3).requires_grad_()
    F.conv2d(ember.randn(2, 3, 6, 6), w, padding=1).sum().backward()
    assert w.grad.is_contiguous()


@pytest.mark.parametrize("nd, kwargs", [(2, {"padding": 1}), (2, {"padding": 2, "dilation": 2}),
                                        (2, {"padding": (2, 0)}), (2, {"padding": "same"}),
                                        (3, {"padding": 1})])
def test_few_input_channels_stride_1_input_gradient_matches_torch_to_second_order(
        nd, kwargs, monkeypatch):
    # with 4x fewer input than output channels the stride-1 input gradient is a GEMM and a
    # fold instead of a convolution of the output gradient (a first layer's 3 channels)
    import ember.ops.conv as conv

    monkeypatch.setattr(conv, "_FOLD_GRAD_ELEMENTS", 0)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3) + (7, 6, 5)[:nd])
    w = rng.standard_normal((12, 3) + (3,) * nd)
    v = rng.standard_normal(x.shape)
    conv, tconv = (F.conv2d, TF.conv2d) if nd == 2 else (F.conv3d, TF.conv3d)
    results = []
    for lib, f in ((ember, conv), (torch, tconv)):
        xa, wa = (lib.from_numpy(a.copy()).requires_grad_() for a in (x, w))
        out = f(xa, wa, **kwargs)
        gx, gw = lib.autograd.grad((out * out).sum(), (xa, wa), create_graph=True)
        hx, hw = lib.autograd.grad((gx * lib.from_numpy(v)).sum(), (xa, wa))
        results.append([t.detach().numpy() for t in (out, gx, gw, hx, hw)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_conv2d_in_several_column_chunks_matches_torch_to_second_order(monkeypatch):
    # the forward GEMM and the weight gradient one sample's columns at a time; the weight
    # gradient's own gradients (a Hessian-vector product through it) as PyTorch's
    import ember.ops.conv as conv

    monkeypatch.setattr(conv, "_COLUMN_CHUNK_BYTES", 1)
    rng = np.random.default_rng(15)
    x, w = rng.standard_normal((3, 2, 6, 5)), rng.standard_normal((4, 2, 3, 3))
    v = rng.standard_normal(w.shape)
    mine = [ember.from_numpy(a).requires_grad_() for a in (x, w)]
    ref = [torch.from_numpy(a).requires_grad_() for a in (x, w)]
    results = []
    for (xa, wa), lib, f in ((mine, ember, F.conv2d), (ref, torch, TF.conv2d)):
        out = f(xa, wa, padding=(1, 0), stride=(1, 2))
        gx, gw = lib.autograd.grad(out.square().sum(), (xa, wa), create_graph=True)
        vector = lib.from_numpy(v)
        hx, hw = lib.autograd.grad((gw * vector).sum(), (xa, wa))
        results.append([t.detach().numpy() for t in (out, gx, gw, hx, hw)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_conv2d_with_column_chunks_side_by_side_matches_torch(monkeypatch):
    # the cores each take a share of the batch in small chunks (one GEMM thread each); the
    # weight gradient adds the shares in order, so it is the same bits on every run
    import ember.ops.conv as conv

    monkeypatch.setattr(conv, "_PIECE_BYTES", 20000)  # two samples' columns a chunk
    rng = np.random.default_rng(16)
    x, w = rng.standard_normal((9, 3, 7, 6)), rng.standard_normal((5, 3, 3, 3))
    saved = ember.get_num_threads()
    ember.set_num_threads(4)
    try:
        runs = []
        for _ in range(6):
            xe, we = ember.from_numpy(x).requires_grad_(), ember.from_numpy(w).requires_grad_()
            F.conv2d(xe, we, padding=1).square().sum().backward()
            runs.append((xe.grad.numpy(), we.grad.numpy()))
    finally:
        ember.set_num_threads(saved)
    xt, wt = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    TF.conv2d(xt, wt, padding=1).square().sum().backward()
    np.testing.assert_allclose(runs[0][0], xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(runs[0][1], wt.grad.numpy(), rtol=1e-10)
    for gx, gw in runs[1:]:
        np.testing.assert_array_equal(gw, runs[0][1])
        np.testing.assert_array_equal(gx, runs[0][0])


def test_weight_gradient_copies_an_nchw_gradient_a_chunk_at_a_time(monkeypatch):
    # a conv → reshape → linear hands the weight gradient a C-contiguous (N, C, H, W) g
    import tracemalloc

    import ember.ops.conv as conv
    from ember.ops.conv import ConvWeightGrad

    for name in ("_COLUMN_CHUNK_BYTES", "_PIECE_BYTES"):
        monkeypatch.setattr(conv, name, 1 << 18)  # two samples' columns a chunk

    rng = np.random.default_rng(19)
    x = rng.standard_normal((16, 3, 32, 32), dtype=np.float32)
    g = rng.standard_normal((16, 64, 32, 32), dtype=np.float32)  # 4 MiB
    geometry = dict(kernel_size=(3, 3), dilation=(1, 1), padding=((1, 1), (1, 1)),
                    stride=(1, 1), compute=None)
    ConvWeightGrad.forward(np, x[:1], g[:1], **geometry)  # (numba's first call compiles)
    tracemalloc.start()
    try:
        got = ConvWeightGrad.forward(np, x, g, **geometry)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < g.nbytes // 2  # (a whole copy of g: 4 MiB)
    want = torch.ops.aten.convolution_backward(
        torch.from_numpy(g), torch.from_numpy(x), torch.zeros(64, 3, 3, 3), None, (1, 1),
        (1, 1), (1, 1), False, (0, 0), 1, (False, True, False))[1]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("geometry", [dict(padding=1), dict(stride=(2, 1), padding=(0, 2)),
                                      dict(dilation=(2, 1), padding=(3, 0)),
                                      dict(stride=(3, 1), padding=(4, 1))])
def test_conv2d_with_samples_in_bands_of_rows_matches_torch(monkeypatch, geometry):
    # each sample's columns a band of output rows at a time (here one row a band, and a band
    # that reads only padding): the forward's rows and the weight gradient's sums as PyTorch's
    import ember.ops.conv as conv

    monkeypatch.setattr(conv, "_BAND_BYTES", 1)
    rng = np.random.default_rng(18)
    x, w = rng.standard_normal((4, 3, 7, 6)), rng.standard_normal((5, 3, 3, 3))
    saved = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        xe, we = ember.from_numpy(x).requires_grad_(), ember.from_numpy(w).requires_grad_()
        out = F.conv2d(xe, we, **geometry)
        out.square().sum().backward()
    finally:
        ember.set_num_threads(saved)
    xt, wt = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    want = TF.conv2d(xt, wt, **geometry)
    want.square().sum().backward()
    for got, ref in ((out, want), (xe.grad, xt.grad), (we.grad, wt.grad)):
        np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("geometry", [dict(padding=1), dict(stride=2, padding=(0, 2)),
                                      dict(dilation=(2, 1), padding=(2, 0))])
def test_one_sample_takes_its_columns_at_once_with_the_batch_path_bits(monkeypatch, layout,
                                                                       geometry):
    # a single sample (inference) skips the chunking: the same columns and GEMM, same bits
    import ember.ops.conv as conv

    rng = np.random.default_rng(17)
    x = rng.standard_normal((1, 6, 9, 8), dtype=np.float32)
    if layout == "channels_last":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    w, b = rng.standard_normal((5, 6, 3, 3), dtype=np.float32), np.ones(5, np.float32)
    args = [ember.from_numpy(a) for a in (x, w, b)]
    at_once = F.conv2d(*args, **geometry).numpy()
    monkeypatch.setattr(conv, "numba_columns", lambda *args: None)  # (the batch path's)
    np.testing.assert_array_equal(at_once, F.conv2d(*args, **geometry).numpy())
    want = TF.conv2d(*(torch.from_numpy(a) for a in (x, w, b)), **geometry).numpy()
    np.testing.assert_allclose(at_once, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", [
    # op, input shape, weight shape, geometry, output shape
    (F.conv2d, (2, 0, 8, 8), (4, 0, 3, 3), dict(padding=1), (2, 4, 8, 8)),  # no input channels
    (F.conv2d, (32, 0, 16, 16), (64, 0, 3, 3), dict(padding=1), (32, 64, 16, 16)),  # Winograd's
    (F.conv2d, (2, 0, 8, 8), (4, 0, 3, 3), dict(stride=2), (2, 4, 3, 3)),
    (F.conv2d, (2, 0, 8, 8), (4, 0, 1, 1), dict(groups=2), (2, 4, 8, 8)),
    (F.conv1d, (2, 0, 8), (4, 0, 3), {}, (2, 4, 6)),
    (F.conv2d, (2, 3, 8, 8), (0, 3, 3, 3), dict(padding=1), (2, 0, 8, 8)),  # no output channels
    (F.conv2d, (2, 3, 8, 8), (0, 3, 3, 3), dict(stride=2), (2, 0, 3, 3)),
    (F.conv2d, (2, 3, 8, 8), (0, 3, 1, 1), {}, (2, 0, 8, 8)),
    (F.conv2d, (2, 4, 8, 8), (0, 2, 3, 3), dict(groups=2), (2, 0, 6, 6)),
    (F.conv_transpose2d, (2, 0, 4, 4), (0, 3, 3, 3), {}, (2, 3, 6, 6)),
    (F.conv_transpose2d, (2, 0, 4, 4), (0, 2, 3, 3), dict(groups=2, stride=2), (2, 4, 9, 9)),
    (F.conv_transpose2d, (2, 3, 4, 4), (3, 0, 3, 3), {}, (2, 0, 6, 6)),
])
def test_a_convolution_over_no_channels_is_empty_sums(case):
    # PyTorch refuses these or returns the wrong shape; the sums are well defined: the output
    # is the bias alone, and every gradient is zero (or empty)
    conv, x_shape, w_shape, geometry, out_shape = case
    x, w = ember.randn(*x_shape, requires_grad=True), ember.randn(*w_shape, requires_grad=True)
    b = ember.randn(out_shape[1], requires_grad=True)
    out = conv(x, w, b, **geometry)
    spread = b.detach().numpy().reshape((-1,) + (1,) * (len(out_shape) - 2))
    np.testing.assert_array_equal(out.detach().numpy(), np.broadcast_to(spread, out_shape))
    out.square().sum().backward()
    for t in (x, w):
        assert t.grad.shape == t.shape and not t.grad.numpy().any()


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("geometry", [dict(padding=1), dict(stride=2, padding=(2, 0)),
                                      dict(dilation=(2, 1), padding="same")])
def test_depthwise_convolution_matches_torch_to_second_order(numba, layout, geometry):
    # depthwise_conv2d's three primitives, by numba's channels-last loops and by the NumPy
    # twin (taps over a padded copy): values, gradients and gradients of the input and weight
    # gradients, float64 to 1e-10
    from ember.backend import compiled

    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s) for s in ((3, 5, 8, 7), (5, 1, 3, 2), (5,)))
    if layout == "channels_last":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    v = [rng.standard_normal(s) for s in ((3, 5, 8, 7), (5, 1, 3, 2))]

    def run(lib, tensor):
        args = [tensor(a).requires_grad_() for a in (x, w, b)]
        out = lib.nn.functional.conv2d(*args, groups=5, **geometry)
        u = tensor(rng.standard_normal(tuple(out.shape)))
        grads = lib.autograd.grad((out * u).sum(), args, create_graph=True)
        second = lib.autograd.grad(sum((g * tensor(a)).sum() for g, a in zip(grads, v)),
                                   args[:2])
        return [t.detach().numpy() for t in (out, *grads, *second)]

    was = compiled.numba_enabled()
    compiled.use_numba(numba)
    try:
        rng = np.random.default_rng(4)
        got = run(ember, ember.from_numpy)
    finally:
        compiled.use_numba(was)
    rng = np.random.default_rng(4)
    want = run(torch, torch.from_numpy)
    for g, t in zip(got, want, strict=True):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-10)


def test_depthwise_convolution_is_one_primitive():
    x, w = ember.randn(2, 4, 6, 6, requires_grad=True), ember.randn(4, 1, 3, 3)
    assert F.conv2d(x, w, groups=4).grad_fn.name() == "ConvolutionBackward0"
    # float16 keeps the unfold and GEMM path (its GEMMs compute in float32), and so does
    # autocast, which computes it in bfloat16 as PyTorch's
    assert F.conv2d(x.half(), w.half(), groups=4).dtype is ember.float16
    with ember.autocast("cpu"):
        assert F.conv2d(x, w, groups=4).dtype is ember.bfloat16


def test_depthwise_convolution_takes_a_read_only_one_by_one_weight():
    # (numba's loops are compiled for a writable weight; a 1x1 kernel's taps needed a copy)
    frozen = np.arange(1.0, 5.0, dtype=np.float32).reshape(4, 1, 1, 1)
    frozen.flags.writeable = False
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 5)).astype(np.float32)
    got = F.conv2d(ember.from_numpy(x), ember.from_numpy(frozen), groups=4)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(frozen.copy()),
                                      groups=4)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("geometry", [dict(stride=2, padding=1), dict(stride=(2, 1),
                                      output_padding=(1, 0), dilation=(1, 2)),
                                      dict(padding=(0, 2))])
def test_transposed_convolution_of_an_nchw_input_folds_channels_last_rows(monkeypatch, numba,
                                                                          geometry):
    # a 2-D float NCHW input's product is made as channels-last rows, summed by numba's
    # channels-last fold (without numba, NumPy's adds) and copied back to NCHW, as torch's
    # layout, the bias added after: values and gradients to second order as torch's, float64
    # gradients as finite differences
    from ember.backend import compiled
    from ember.ops import im2col

    folds = []  # what numba's fold gave, None where it did not apply
    numba_fold = im2col._numba_fold

    def spied(*args):
        folds.append(numba_fold(*args))
        return folds[-1]

    monkeypatch.setattr(im2col, "_numba_fold", spied)
    monkeypatch.setattr(im2col, "_FOLD_SMALL", 0)  # numba's fold at this size too
    monkeypatch.setattr(compiled, "_OFF_BECAUSE", [compiled._OFF_BECAUSE[0]])
    compiled.use_numba(numba)
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s) for s in ((2, 4, 5, 4), (4, 16, 3, 3), (16,)))
    v = [rng.standard_normal(s) for s in ((2, 4, 5, 4), (4, 16, 3, 3))]

    def run(lib, tensor):
        args = [tensor(a).requires_grad_() for a in (x, w, b)]
        out = lib.nn.functional.conv_transpose2d(*args, **geometry)
        u = tensor(np.random.default_rng(6).standard_normal(tuple(out.shape)))
        grads = lib.autograd.grad((out * u).sum(), args, create_graph=True)
        second = lib.autograd.grad(sum((g * tensor(a)).sum() for g, a in zip(grads, v)),
                                   args[:2])
        return out, [t.detach().numpy() for t in (out, *grads, *second)]

    out, got = run(ember, ember.from_numpy)
    assert out.is_contiguous() and folds  # the forward's fold, and its double backward's
    assert all((f is not None) == numba for f in folds)
    for g, t in zip(got, run(torch, torch.from_numpy)[1], strict=True):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-10)
    inputs = [ember.from_numpy(a).requires_grad_() for a in (x, w, b)]
    assert ember.autograd.gradcheck(lambda *a: F.conv_transpose2d(*a, **geometry), inputs)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("nd,groups", [(1, 1), (2, 1), (2, 3), (3, 1)])
def test_half_transposed_convolution_rounds_once_as_torch(dtype, nd, groups):
    # the GEMM's columns and the fold's overlapping sums were each rounded to the half dtype:
    # up to 4.8x torch's error against float64 on op_db's samples (opdb51b)
    rng = np.random.default_rng(0)
    shapes = ((2, 3) + (5,) * nd, (3, 2) + (3,) * nd, (2 * groups,))
    x, w, b = (rng.standard_normal(s) for s in shapes)
    kw = dict(stride=2, padding=1, output_padding=1, groups=groups)
    t, e = getattr(torch, dtype), getattr(ember, dtype)
    fn = f"conv_transpose{nd}d"
    want = getattr(TF, fn)(*(torch.tensor(a).to(t) for a in (x, w, b)), **kw)
    single = getattr(F, fn)(*(ember.tensor(a).to(e).float() for a in (x, w, b)), **kw)
    got = getattr(F, fn)(*(ember.tensor(a).to(e) for a in (x, w, b)), **kw)
    assert got.dtype is e and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.float().numpy(), single.to(e).float().numpy())
