"""Layouts the strides/storage sweep found different from PyTorch's, compared with torch."""

import numpy as np
import pytest
import torch

import ember


def _x(m, *shape):
    return m.arange(int(torch.tensor(shape).prod()), dtype=m.float32).reshape(*shape)


def _cl(m, *shape):
    return _x(m, *shape).contiguous(memory_format=m.channels_last)


SOURCES = {
    "contiguous": lambda m: _x(m, 2, 3, 4, 5),
    "channels_last": lambda m: _cl(m, 2, 3, 4, 5),
    "channels_last_c1": lambda m: _cl(m, 2, 1, 4, 5),
    "channels_last_hw1": lambda m: _cl(m, 2, 3, 1, 1),
    "sliced_channels_last": lambda m: _cl(m, 2, 3, 4, 6)[..., ::2],
    "permuted": lambda m: _x(m, 5, 2, 3, 4).permute(1, 2, 3, 0),
    "transposed": lambda m: _x(m, 4, 5).t(),
    "sliced": lambda m: _x(m, 5, 6)[1:, 2:],
    "expanded": lambda m: _x(m, 2, 1, 1, 3).permute(0, 3, 1, 2).expand(2, 3, 4, 5),
}
FORMATS = ["contiguous_format", "channels_last", "preserve_format"]


def _layout(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("src", sorted(SOURCES))
def test_to_memory_format_copies_and_aliases_as_torch(src, fmt):
    """``to(memory_format=)`` returns ``self`` when the format is the one ``self`` suggests
    (even when not dense in it), else a copy with the format's own strides."""
    results = []
    for m in (torch, ember):
        x = SOURCES[src](m)
        if fmt == "channels_last" and x.dim() != 4:
            return
        y = x.to(memory_format=getattr(m, fmt))
        results.append((_layout(y), y is x))
    assert results[0] == results[1]


@pytest.mark.parametrize("src", sorted(SOURCES))
def test_contiguous_preserve_format_raises_where_torch_does(src):
    x, t = SOURCES[src](ember), SOURCES[src](torch)
    if t.is_contiguous():
        assert x.contiguous(memory_format=ember.preserve_format) is x
        return
    with pytest.raises(RuntimeError):
        t.contiguous(memory_format=torch.preserve_format)
    with pytest.raises(ember.errors.OpError, match="clone"):
        x.contiguous(memory_format=ember.preserve_format)


def _f(m):
    return m.nn.functional


SPATIAL_OPS = {
    "avg_pool2d": lambda m, x: _f(m).avg_pool2d(x, 2),
    "avg_pool2d_pad_ceil": lambda m, x: _f(m).avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                         count_include_pad=False),
    "avg_pool2d_divisor": lambda m, x: _f(m).avg_pool2d(x, 2, divisor_override=3),
    "adaptive_avg_pool2d_even": lambda m, x: _f(m).adaptive_avg_pool2d(x, (3, 2)),
    "adaptive_avg_pool2d_uneven": lambda m, x: _f(m).adaptive_avg_pool2d(x, (4, 5)),
    "nearest": lambda m, x: _f(m).interpolate(x, scale_factor=2),
    "nearest_exact": lambda m, x: _f(m).interpolate(x, size=(5, 9), mode="nearest-exact"),
    "bilinear": lambda m, x: _f(m).interpolate(x, size=(4, 9), mode="bilinear"),
    "bilinear_aligned": lambda m, x: _f(m).interpolate(x, size=(4, 9), mode="bilinear",
                                                       align_corners=True),
    "bicubic": lambda m, x: _f(m).interpolate(x, size=(7, 5), mode="bicubic"),
    "area": lambda m, x: _f(m).interpolate(x, size=(3, 3), mode="area"),
    "trilinear_3d": lambda m, x: _f(m).interpolate(x[:, :, None].expand(2, 3, 2, 6, 6)
                                                   .contiguous(memory_format=m.channels_last_3d),
                                                   scale_factor=2, mode="trilinear"),
    "avg_pool3d_3d": lambda m, x: _f(m).avg_pool3d(x[:, :, None].expand(2, 3, 2, 6, 6)
                                                   .contiguous(memory_format=m.channels_last_3d),
                                                   (1, 2, 2)),
}


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
@pytest.mark.parametrize("antialias", [False, True])
def test_uint8_interpolation_keeps_torchs_layout(mode, antialias):
    if antialias and mode == "nearest":
        return
    results = []
    for m in (torch, ember):
        x = (_x(m, 2, 3, 6, 7) * 37 % 256).to(m.uint8).contiguous(memory_format=m.channels_last)
        y = _f(m).interpolate(x, size=(4, 9), mode=mode, antialias=antialias)
        results.append((y.numpy().tolist(), y.stride()))
    assert results[0] == results[1]


@pytest.mark.parametrize("layout", ["channels_last", "contiguous", "unbatched"])
@pytest.mark.parametrize("name", sorted(SPATIAL_OPS))
def test_pooling_and_interpolation_keep_torchs_layout(name, layout):
    """PyTorch keeps a channels-last input's layout through average pooling and
    interpolation (3-D pooling excepted); values and gradients are unchanged."""
    results = []
    for m in (torch, ember):
        x = (_x(m, 2, 3, 6, 6) / 7).sin()
        if layout == "channels_last":
            x = x.contiguous(memory_format=m.channels_last)
        elif layout == "unbatched":
            if name.endswith("_3d") or "pool" not in name:  # (interpolate needs a batch)
                return
            x = x[0]
        x.requires_grad_()
        y = SPATIAL_OPS[name](m, x)
        y.backward(_x(m, *y.shape).cos())
        fmt = m.channels_last_3d if y.dim() == 5 else m.channels_last
        results.append((y.detach().numpy(), x.grad.numpy(), tuple(y.stride()),
                        y.dim() < 4 or y.is_contiguous(memory_format=fmt)))
    (want, want_grad, *want_layout), (got, got_grad, *got_layout) = results
    assert got_layout == want_layout
    assert got == pytest.approx(want, rel=1e-5, abs=1e-6)
    assert got_grad == pytest.approx(want_grad, rel=1e-5, abs=1e-5)


def _w(m, *shape):
    return (_x(m, *shape) / 5).cos()


CHANNEL_OPS = {
    "conv_transpose2d": lambda m, x: _f(m).conv_transpose2d(x, _w(m, 4, 3, 3, 2)),
    "conv_transpose2d_strided": lambda m, x: _f(m).conv_transpose2d(
        x, _w(m, 4, 2, 3, 3), _w(m, 2), stride=2, padding=1, output_padding=1, dilation=1),
    "conv_transpose2d_dilated": lambda m, x: _f(m).conv_transpose2d(x, _w(m, 4, 2, 2, 2),
                                                                    dilation=2),
    "conv_transpose2d_groups": lambda m, x: _f(m).conv_transpose2d(x, _w(m, 4, 1, 3, 3),
                                                                   groups=2),
    "conv_transpose2d_weight_channels_last": lambda m, x: _f(m).conv_transpose2d(
        x, _w(m, 4, 3, 3, 2).contiguous(memory_format=m.channels_last)),
    "conv_transpose3d": lambda m, x: _f(m).conv_transpose3d(
        x[:, :, None].expand(2, 4, 3, 5, 6).contiguous(memory_format=m.channels_last_3d),
        _w(m, 4, 2, 2, 2, 3), stride=(1, 2, 1)),
}


@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
@pytest.mark.parametrize("name", sorted(CHANNEL_OPS))
def test_transposed_convolution_keeps_torchs_layout(name, layout):
    results = []
    for m in (torch, ember):
        x = (_x(m, 2, 4, 5, 6) / 7).sin()
        if layout == "channels_last":
            x = x.contiguous(memory_format=m.channels_last)
        x.requires_grad_()
        y = CHANNEL_OPS[name](m, x)
        y.backward(_x(m, *y.shape).cos())
        fmt = m.channels_last_3d if y.dim() == 5 else m.channels_last
        results.append((y.detach().numpy(), x.grad.numpy(),
                        y.is_contiguous(memory_format=fmt), y.is_contiguous()))
    (want, want_grad, *want_layout), (got, got_grad, *got_layout) = results
    assert got == pytest.approx(want, rel=1e-4, abs=1e-4)
    assert got_grad == pytest.approx(want_grad, rel=1e-4, abs=1e-4)
    if "groups" not in name or layout == "contiguous":  # (grouped: left C-ordered)
        assert got_layout == want_layout


@pytest.mark.parametrize("pool", ["max_pool2d", "adaptive_max_pool2d"])
@pytest.mark.parametrize("src", ["channels_last", "contiguous", "permuted", "unbatched"])
def test_pooling_indices_are_laid_out_as_torchs(pool, src):
    """The indices of a max pooling (and the values gathered at them) are channels-last for
    a channels-last input and C-ordered otherwise; they came out in a permuted order."""
    results = []
    for m in (torch, ember):
        x = (_x(m, 2, 6, 3, 7) * 7919 % 257).transpose(1, 2)  # (distinct values)
        x = {"channels_last": x.contiguous(memory_format=m.channels_last),
             "contiguous": x.contiguous(), "permuted": x, "unbatched": x[0]}[src]
        arg = 2 if pool == "max_pool2d" else (3, 2)
        values, indices = getattr(_f(m), pool)(x, arg, return_indices=True)
        results.append((values.numpy(), indices.numpy(), values.stride(), indices.stride()))
    (want, want_idx, *want_layout), (got, got_idx, *got_layout) = results
    assert got_layout == want_layout
    assert (got == want).all() and (got_idx == want_idx).all()


@pytest.mark.parametrize("case", [((2, 3, 2, 2), 24), ((1, 3, 2, 2), 24), ((2, 3, 2, 2), 4),
                                  ((2, 3, 2, 2), 30)])
def test_resize_takes_a_memory_format(case):
    """``resize_(..., memory_format=channels_last)`` lays the storage out channels-last
    (it was refused as an unknown keyword)."""
    shape, numel = case
    results = []
    for m in (torch, ember):
        x = m.arange(float(numel))
        y = x.resize_(*shape, memory_format=m.channels_last)
        kept = min(numel, 24)  # (PyTorch leaves grown memory uninitialised)
        results.append((y is x, tuple(y.shape), y.stride(),
                        y.permute(0, 2, 3, 1).flatten()[:kept].tolist()))
    assert results[0] == results[1]
    with pytest.raises(ember.errors.OpError, match="preserve_format"):
        ember.zeros(4).resize_(2, 2, memory_format=ember.preserve_format)


EXPANDED = {
    "row": lambda m: m.arange(6.0).reshape(1, 6).expand(4, 6),
    "column": lambda m: m.arange(4.0).reshape(4, 1).expand(4, 6),
    "scalar": lambda m: m.tensor(1.0).expand(3, 3),
    "transposed": lambda m: _x(m, 2, 3, 4)[:, :1].expand(2, 5, 4).transpose(0, 2),
    "sliced_permuted": lambda m: _x(m, 3, 1, 1).expand(3, 4, 5)[:, ::2].permute(2, 0, 1),
}


@pytest.mark.parametrize("name", sorted(EXPANDED))
def test_cast_of_expanded_tensor_is_laid_out_as_torchs(name):
    """A dtype conversion of an expanded tensor is laid out in its order of strides, as
    PyTorch's (NumPy's order put the expanded dimension outermost: a row expanded to (4, 6)
    came out (1, 4)-strided, and ``.view(-1)`` of it failed)."""
    got, want = EXPANDED[name](ember), EXPANDED[name](torch)
    def lib(t):
        return ember if isinstance(t, ember.Tensor) else torch

    for convert in (lambda t: t.double(), lambda t: t.int(), lambda m_t: m_t.to(m_t.dtype),
                    lambda t: t.bfloat16().to(lib(t).int8),  # (through float32)
                    lambda t: t.to(lib(t).float8_e4m3fn)):  # (through cast_ready)
        assert convert(got).stride() == convert(want).stride()
    assert got.double().numpy().tolist() == want.double().numpy().tolist()
    if want.double().is_contiguous():
        assert got.double().view(-1).shape == (want.numel(),)


def test_storage_writes_reach_the_tensor():
    """``storage[i] = v`` and ``storage.fill_(v)`` write into the tensor's memory, as
    PyTorch's (they raised AttributeError)."""
    results = []
    for m in (torch, ember):
        x = m.arange(6, dtype=m.uint8)
        s = x.untyped_storage()
        s[0] = 9
        s[2:4] = 5
        z = m.arange(4.0)[1:]
        z.untyped_storage().fill_(0)
        results.append((x.tolist(), z.tolist()))
    assert results[0] == results[1]
    readonly = np.zeros(3, np.float32)
    readonly.setflags(write=False)
    with pytest.raises(ember.errors.GradError, match="read-only"):
        ember.from_numpy(readonly).untyped_storage().fill_(1)


@pytest.mark.parametrize("channels_last", [False, True])
def test_conv_transpose_with_output_padding_gives_dense_strides_as_torch(channels_last):
    # (the fold's trimmed high side left a strided slice: (396, 132, 12, 1) for (2, 3, 10, 11),
    # so .view(-1) of a C-ordered result failed)
    x, w = np.ones((2, 4, 5, 6), np.float32), np.ones((4, 3, 3, 2), np.float32)
    fmt = (ember.channels_last, torch.channels_last) if channels_last else \
        (ember.contiguous_format, torch.contiguous_format)
    got = ember.nn.functional.conv_transpose2d(
        ember.tensor(x).contiguous(memory_format=fmt[0]), ember.tensor(w), stride=2, padding=1,
        output_padding=1)
    want = torch.nn.functional.conv_transpose2d(
        torch.tensor(x).contiguous(memory_format=fmt[1]), torch.tensor(w), stride=2, padding=1,
        output_padding=1)
    assert got.stride() == want.stride()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
