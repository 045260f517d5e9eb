"""A convolution's bias, an input of the ``conv`` primitive (added as each chunk of the output
is written): the same bits as adding it after, one node with the bias's gradient, and every
transform (gradcheck, jvp, vmap, autocast) through it."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.backend import compiled

_PATHS = {  # (N, Cin, Cout, size): the paths of conv's forward
    "im2col chunks": (4, 3, 8, 9),
    "batch 1": (1, 3, 8, 9),
    "winograd": (16, 32, 48, 13),  # 3x3 stride 1, >= 32 channels, >= 512 tiles
    "no input channels": (2, 0, 4, 5),
}


def _tensors(shapes, dtype=np.float32, seed=0, grad=False):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(s).astype(dtype), requires_grad=grad)
            for s in shapes]


@pytest.mark.parametrize("path", _PATHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_gives_the_bits_of_adding_it_after(path, dtype):
    if path == "winograd" and not compiled.numba_enabled():
        pytest.skip("Winograd's kernels need numba")
    n, cin, cout, size = _PATHS[path]
    x, w, b = _tensors([(n, cin, size, size), (cout, cin, 3, 3), (cout,)], dtype, grad=True)
    y = F.conv2d(x, w, b, padding=1)
    with ember.no_grad():
        after = F.conv2d(x, w, padding=1) + b.reshape(cout, 1, 1)
    assert y.detach().numpy().tobytes() == after.numpy().tobytes()
    assert y.stride() == after.stride()  # channels-last, as the convolution's own output
    assert y.grad_fn.name() == "ConvolutionBackward0"  # one node, as PyTorch's
    g = _tensors([tuple(y.shape)], dtype, seed=1)[0]
    y.backward(g)
    ty = TF.conv2d(*(torch.tensor(t.detach().numpy(), dtype=torch.float64) for t in (x, w, b)),
                   padding=1)
    np.testing.assert_allclose(b.grad.numpy(), g.numpy().sum((0, 2, 3)),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
    if cin:  # (PyTorch's convolution of no channels is empty: (N, 0, …), not the bias)
        np.testing.assert_allclose(y.detach().numpy(), ty.numpy(),
                                   rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)


@pytest.mark.parametrize("nd, kwargs", [
    (1, dict(stride=2, padding=1)),
    (2, dict(padding=(1, 0), dilation=(2, 1))),
    (3, dict(stride=(1, 2, 1), padding=1)),
])
def test_bias_gradients_in_float64_to_second_order(nd, kwargs):
    x, w, b = _tensors([(2, 2) + (5,) * nd, (3, 2) + (2,) * nd, (3,)], np.float64, grad=True)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    fn = lambda x, w, b: conv(x, w, b, **kwargs)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_bias_in_forward_mode_matches_torch():
    primals = tuple(_tensors([(2, 3, 6, 6), (4, 3, 3, 3), (4,)], np.float64))
    tangents = tuple(_tensors([(2, 3, 6, 6), (4, 3, 3, 3), (4,)], np.float64, seed=1))
    out, dout = ember.func.jvp(lambda x, w, b: F.conv2d(x, w, b, padding=1), primals, tangents)
    t_out, t_dout = torch.func.jvp(lambda x, w, b: TF.conv2d(x, w, b, padding=1),
                                   tuple(torch.tensor(t.numpy()) for t in primals),
                                   tuple(torch.tensor(t.numpy()) for t in tangents))
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dout.numpy(), t_dout.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("in_dims", [(0, None, None), (0, None, 0), (0, 0, 0), (None, 0, 0),
                                     (None, None, 0)])
def test_bias_under_vmap_matches_a_loop(in_dims):
    xs, ws, bs = _tensors([(3, 2, 3, 6, 6), (3, 4, 3, 3, 3), (3, 4)], np.float64)
    args = [t if d == 0 else t[0] for t, d in zip((xs, ws, bs), in_dims)]
    fn = lambda x, w, b: F.conv2d(x, w, b, padding=1)  # noqa: E731
    got = ember.func.vmap(fn, in_dims=in_dims)(*args)
    for i in range(3):
        one = fn(*(a[i] if d == 0 else a for a, d in zip(args, in_dims)))
        np.testing.assert_allclose(got[i].numpy(), one.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_bias_under_autocast_is_cast_and_added_before_the_one_rounding(dtype):
    # (the cast bias joins the float32 product, then one rounding, as PyTorch's)
    x, w, b = _tensors([(2, 3, 6, 6), (4, 3, 3, 3), (4,)], grad=True)
    with ember.autocast("cpu", dtype=dtype):
        y = F.conv2d(x, w, b, padding=1)
    assert y.dtype is dtype
    with ember.no_grad():
        low = [t.to(dtype).float() for t in (x, w, b)]
        after = (F.conv2d(low[0], low[1], padding=1) + low[2].reshape(4, 1, 1)).to(dtype)
    assert y.float().detach().numpy().tobytes() == after.float().numpy().tobytes()
    y.float().sum().backward()
    assert b.grad.dtype is ember.float32
    np.testing.assert_array_equal(b.grad.numpy(), np.full(4, 72.0, np.float32))  # 2·6·6 ones


@pytest.mark.parametrize("cin, groups", [(3, 1), (4, 4)])  # (and depthwise_conv2d's)
def test_onnx_conv_takes_the_bias_as_its_b_input(cin, groups):
    onnx = pytest.importorskip("onnx")
    import io

    layer = ember.nn.Conv2d(cin, 4, 3, padding=1, groups=groups)
    buffer = io.BytesIO()
    ember.onnx.export(layer, (ember.randn(2, cin, 6, 6),), buffer)
    graph = onnx.load_from_string(buffer.getvalue()).graph
    convs = [node for node in graph.node if node.op_type == "Conv"]
    assert len(convs) == 1 and len(convs[0].input) == 3
    assert not any(node.op_type == "Add" for node in graph.node)


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", [dict(padding=3), dict(stride=2, padding=1, dilation=2)])
def test_depthwise_bias_gives_the_bits_of_adding_it_after(numba, dtype, kwargs):
    was = compiled.numba_enabled()
    if numba and not was:
        pytest.skip("numba is not available")
    compiled.use_numba(numba)
    try:
        x, w, b = _tensors([(2, 8, 16, 16), (8, 1, 7, 7), (8,)], dtype, grad=True)
        y = F.conv2d(x.contiguous(memory_format=ember.channels_last), w, b, groups=8, **kwargs)
        with ember.no_grad():
            after = F.conv2d(x, w, groups=8, **kwargs) + b.reshape(8, 1, 1)
    finally:
        compiled.use_numba(was)
    assert y.detach().numpy().tobytes() == after.numpy().tobytes()
    assert y.stride() == after.stride() and y.grad_fn.name() == "ConvolutionBackward0"
    g = _tensors([tuple(y.shape)], dtype, seed=1)[0]
    y.backward(g)
    t = [torch.tensor(a.detach().numpy(), dtype=torch.float64, requires_grad=True)
         for a in (x, w, b)]
    TF.conv2d(*t, groups=8, **kwargs).backward(torch.tensor(g.numpy(), dtype=torch.float64))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for got, want in zip((x, w, b), t):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), **tol)


@pytest.mark.parametrize("kwargs", [dict(padding=1), dict(stride=2, padding=(2, 1), dilation=2)])
def test_depthwise_bias_gradients_in_float64_to_second_order(kwargs):
    x, w, b = _tensors([(2, 3, 6, 6), (3, 1, 3, 3), (3,)], np.float64, grad=True)
    fn = lambda x, w, b: F.conv2d(x, w, b, groups=3, **kwargs)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_depthwise_bias_in_forward_mode_and_under_vmap_matches_torch():
    shapes = [(3, 2, 4, 6, 6), (3, 4, 1, 3, 3), (3, 4)]
    xs, ws, bs = _tensors(shapes, np.float64)
    dxs, dws, dbs = _tensors(shapes, np.float64, seed=1)
    fn = lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=4)  # noqa: E731
    tfn = lambda x, w, b: TF.conv2d(x, w, b, padding=1, groups=4)  # noqa: E731
    tt = lambda *ts: tuple(torch.tensor(t.numpy()) for t in ts)  # noqa: E731
    out, dout = ember.func.jvp(fn, (xs[0], ws[0], bs[0]), (dxs[0], dws[0], dbs[0]))
    t_out, t_dout = torch.func.jvp(tfn, tt(xs[0], ws[0], bs[0]), tt(dxs[0], dws[0], dbs[0]))
    np.testing.assert_allclose(dout.numpy(), t_dout.numpy(), rtol=1e-12, atol=1e-12)
    for in_dims in [(0, None, 0), (0, 0, 0), (None, None, 0)]:
        args = [t if d == 0 else t[0] for t, d in zip((xs, ws, bs), in_dims)]
        got = ember.func.vmap(fn, in_dims=in_dims)(*args)
        want = torch.func.vmap(tfn, in_dims=in_dims)(*tt(*args))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
