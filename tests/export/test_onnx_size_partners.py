"""ONNX export of a constant (or an Expand) whose size is made in Python from a dynamic
size: read from an input's dimension, or from the dimension the op reading it needs it to
equal (a broadcast partner, a matrix product's inner size); never from a pad or cat of the
same traced sizes that it is not aligned with (against eager in onnxruntime)."""

from __future__ import annotations

import warnings

import pytest

import ember
import ember.nn.functional as F
from tests.export.onnx_helpers import matches_eager_over_lengths

_AXES = {"x": {0: "b", 1: "t"}}


def _export(fn):
    return ember.onnx.to_model(fn, (ember.randn(2, 17, 4),), input_names=["x"],
                               dynamic_axes=_AXES)


def _ceil_size(x):  # (T + ceil(T / 16): T + 2 at every traced T (17, 19, 29), not at 34)
    return x.shape[1] + (x.shape[1] + 15) // 16


def _arange_beside_a_pad(x):
    return F.pad(x, (0, 0, 1, 1)).sum(1)[..., None] * ember.arange(_ceil_size(x))


def _expand_beside_a_pad(x):
    y = F.pad(x, (0, 0, 1, 1)).sum(1, keepdim=True)
    return y.expand(x.shape[0], _ceil_size(x), 4)


@pytest.mark.parametrize("fn", [_arange_beside_a_pad, _expand_beside_a_pad])
def test_a_size_aligned_with_no_dimension_of_its_size_is_refused(fn):
    # (read from the pad's T + 2: (3, 4, 36) at T = 34 where eager has (3, 4, 37), and
    # (2, 4, 7) at T = 5 where eager has 6)
    with pytest.raises(ember.onnx.ExportError, match="made in Python is read only from"):
        _export(fn)


def _arange_beside_a_strided_slice(x):
    y = x[:, ::2]
    return y * ember.arange(y.shape[1]).reshape(1, -1, 1)


def _mask_over_a_strided_slice(x):
    y = x[:, ::2]
    return ember.tril(ember.ones(y.shape[1], y.shape[1])) @ y


def _mask_over_a_pad(x):
    n = x.shape[1] + 2
    return ember.tril(ember.ones(n, n)) @ F.pad(x, (0, 0, 1, 1)) + ember.arange(n)[:, None]


@pytest.mark.parametrize("fn", [_arange_beside_a_strided_slice, _mask_over_a_strided_slice,
                                _mask_over_a_pad])
def test_a_size_is_read_from_the_dimension_its_reader_needs_it_to_equal(fn):
    # (the strided slices' ceil(T / 2) was refused: no input dimension gives it)
    proto = _export(fn)
    matches_eager_over_lengths(proto, fn, (17, 34, 5, 50, 2))


def _strided_flattened(x):
    y = x[:, ::16]
    return y.reshape(y.shape[0], -1)


def _strided_beside_ones(x):
    y = x[:, ::16]
    return y * ember.ones(y.shape[1], 1)


@pytest.mark.parametrize("fn", [_strided_flattened, _strided_beside_ones])
def test_a_strided_slice_of_one_size_in_every_near_trace_is_checked_past_its_step(fn):
    # (ceil(T / 16) is 2 at T = 17, 19 and 29: exported as a fixed 2, (4, 8) at T = 50
    # where eager has (2, 16); the check trace now moves T by 16 or more)
    with pytest.raises(ember.onnx.ExportError, match="follow no rule"):
        _export(fn)


def _mask_beside_a_strided_cat(x):
    n = x.shape[1] + 2
    return ember.tril(ember.ones(n, n)) @ ember.cat([x, x[:, ::16]], 1)


def test_a_mask_eager_refuses_past_the_slice_step_is_refused_naming_the_cut():
    # (exported silently: (3, 37, 4) at T = 34, where eager raises; then with a warning
    # quoting eager's error, still (3, 37, 4): the cut's 2 rows at T = 17, 19 and 29, every
    # check size eager accepts, were kept)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ember.onnx.ExportError,
                           match=r"slice at .*x\[:, ::16\].*its step 16 leaves 2 entries "
                                 r"along dimension 1 at the sizes \(17, 19, 29\)"):
            _export(_mask_beside_a_strided_cat)
