"""Blocked copies into C order: the same array as NumPy's copy, whatever the layout."""

import ml_dtypes
import numpy as np
import pytest

import ember
from ember.backend import copies


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 4 KiB from 1 KiB up, so that small arrays take the blocked path."""
    monkeypatch.setattr(copies, "_LEAST_BYTES", 1 << 10)
    monkeypatch.setattr(copies, "_BLOCK_BYTES", 1 << 12)


def _layouts(rng: np.random.Generator, dtype: object) -> dict[str, np.ndarray]:
    w = rng.standard_normal((24, 20, 3, 3)).astype(dtype)
    m = rng.standard_normal((72, 64)).astype(dtype)
    return {
        "flipped weight": w[:, :, ::-1, ::-1].transpose(2, 3, 0, 1),
        "transpose": m.T,
        "sliced transpose": m[::2, 3:].T,
        "nchw of nhwc": w.transpose(0, 3, 1, 2),
        "broadcast": np.broadcast_to(m[:1].T, (64, 72)).T,
        "reversed": m[::-1, ::-1],
        "contiguous": m,
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int16, np.bool_,
                                   ml_dtypes.bfloat16])
def test_equals_numpys_copy_in_every_layout(small_blocks, dtype):
    for name, a in _layouts(np.random.default_rng(0), dtype).items():
        got = copies.contiguous(np, a)
        assert got.flags.c_contiguous and got.dtype == a.dtype, name
        assert not np.shares_memory(got, a), name
        np.testing.assert_array_equal(got, np.ascontiguousarray(a), err_msg=name)


def test_cuts_along_the_widest_stride(small_blocks):
    layouts = _layouts(np.random.default_rng(1), np.float32)
    assert copies._blocked_axis(layouts["flipped weight"]) == 2  # the output channels
    assert copies._blocked_axis(layouts["transpose"]) == 1
    assert copies._blocked_axis(layouts["nchw of nhwc"]) is None  # widest already outermost
    assert copies._blocked_axis(layouts["contiguous"]) is None
    assert copies._blocked_axis(np.zeros((4, 8)).T) is None  # under _LEAST_BYTES
    assert copies._blocked_axis(np.zeros((2, 4096), np.float32).T) is None  # 4 bytes a row


def test_a_block_writes_a_cache_line_of_each_row_or_numpy_copies():
    narrow = np.zeros((512, 4608), np.float32).T  # its share of the source: 14 columns a block
    assert copies._step(narrow, 1) == 16 and copies._blocked_axis(narrow) == 1
    wide = np.zeros((256, 8192), np.complex128).T  # 8 values a row: twice the usual source
    assert copies._step(wide, 1) == 8 and copies._blocked_axis(wide) is None


def test_contiguous_of_a_large_permuted_tensor_is_cut_in_blocks(monkeypatch):
    cut = []
    blocked_axis = copies._blocked_axis
    monkeypatch.setattr(copies, "_blocked_axis", lambda a: cut.append(blocked_axis(a)) or cut[-1])
    rng = np.random.default_rng(2)
    w = rng.standard_normal((64, 72, 3, 3)).astype(np.float32)  # 162 KiB, 2 MiB below
    x = ember.from_numpy(np.repeat(w, 8, axis=0)).requires_grad_()
    y = x.flip((2, 3)).permute((2, 3, 0, 1)).contiguous()
    assert y.is_contiguous() and 2 in cut
    np.testing.assert_array_equal(y.detach().numpy(), np.repeat(w, 8, axis=0)[:, :, ::-1, ::-1]
                                  .transpose(2, 3, 0, 1))
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(ember.from_numpy(g))
    np.testing.assert_array_equal(x.grad.numpy(), g.transpose(2, 3, 0, 1)[:, :, ::-1, ::-1])
