"""Layouts the strides/storage sweep found different from PyTorch's, compared with torch."""

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
