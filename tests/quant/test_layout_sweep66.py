"""Quantized tensors' layouts as PyTorch's: contiguous(memory_format=channels_last) lays the
integers out channels-last, and dequantize() keeps a channels-last layout but gives C order
for other strides (a permuted or transposed tensor). Compared with torch."""

import warnings

import pytest
import torch

import ember


def _quantized(lib, per_channel=False):
    x = lib.arange(24, dtype=lib.float32).reshape(1, 2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch 2.13 deprecates its quantized tensors)
        if per_channel:
            return lib.quantize_per_channel(x, lib.tensor([0.5, 1.0]), lib.tensor([0, 0]), 1,
                                            lib.qint8)
        return lib.quantize_per_tensor(x, 0.5, 0, lib.quint8)


_VIEWS = {
    "channels_last": lambda L, q: q.contiguous(memory_format=L.channels_last),
    "channels_last again contiguous": lambda L, q: q.contiguous(
        memory_format=L.channels_last).contiguous(),
    "permuted": lambda L, q: q.permute(0, 2, 3, 1),
    "transposed": lambda L, q: q.transpose(2, 3),
    "itself": lambda L, q: q,
}


@pytest.mark.parametrize("name", list(_VIEWS))
@pytest.mark.parametrize("per_channel", [False, True])
def test_strides_and_dequantized_strides_as_torch(name, per_channel):
    if per_channel and name in ("permuted", "transposed"):
        pytest.skip("torch cannot dequantize a permuted per-channel tensor")
    t = _VIEWS[name](torch, _quantized(torch, per_channel))
    e = _VIEWS[name](ember, _quantized(ember, per_channel))
    assert e.stride() == t.stride()
    assert e.dequantize().stride() == t.dequantize().stride()
    assert e.dequantize().tolist() == t.dequantize().tolist()


def test_contiguous_refusals_as_torch():
    for lib in (torch, ember):
        q = _quantized(lib)
        with pytest.raises(RuntimeError):
            q.permute(0, 2, 3, 1).contiguous(memory_format=lib.preserve_format)
        with pytest.raises(RuntimeError):
            q[0, 0].contiguous(memory_format=lib.channels_last)
