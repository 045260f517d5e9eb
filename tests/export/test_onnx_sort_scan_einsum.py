"""Converters for sorting, cumulative products, einsum and transposed convolutions, each
checked against Ember eager in onnxruntime (with a dynamic batch where it applies)."""

from __future__ import annotations

import pytest

import ember
import ember.nn as nn
from ember.onnx import ExportError
from tests.export.onnx_helpers import check_export


def test_sort_and_argsort_with_ties_and_nan_as_ember():
    x = ember.tensor([[1.0, float("nan"), 3.0, 1.0, float("inf"), -2.0, 3.0, float("-inf")],
                      [0.5, 0.5, -1.0, 2.0, float("nan"), 0.5, 7.0, 1.0]])
    check_export(lambda t: (*t.sort(dim=1, stable=True), *t.sort(descending=True, stable=True),
                            t.argsort(dim=0, stable=True), ember.msort(t)), x,
                 dynamic_batch=True)


def test_sort_of_integers_along_a_dynamic_axis():
    i = ember.randint(-50, 50, (3, 7))
    check_export(lambda t: (t.argsort(dim=0, descending=True, stable=True), t.sort(dim=-1)[0]),
                 i, dynamic_batch=True)


def test_cumprod_with_zeros_negatives_and_narrow_dtypes():
    x = ember.tensor([[2.0, -1.5, 0.0, 3.0, -2.0, 0.5, 1.25],
                      [-0.5, 4.0, 2.0, -1.0, 0.0, 0.0, 3.0]])
    check_export(lambda t: t.cumprod(1), x, dynamic_batch=True)
    check_export(lambda t: t.cumprod(0), x)
    check_export(lambda t: (t.cumprod(1), (t > 0).cumprod(1), t.to(ember.int8).cumprod(1)),
                 ember.randint(-4, 5, (2, 9)))
    check_export(lambda t: t.cumprod(0), ember.randn(5, 3).half(), rtol=1e-3, atol=1e-3)


def test_cumprod_and_transposed_convolutions_at_opset_17():
    """Pad takes no axes input before opset 18, and Col2Im is new in it (a scatter there)."""
    check_export(lambda t: t.cumprod(-1), ember.randn(2, 5), opset_version=17)
    check_export(nn.ConvTranspose1d(2, 2, 3).eval(), ember.randn(1, 2, 4), opset_version=17,
                 atol=1e-5)


def test_cumprod_along_a_dynamic_axis_is_refused():
    with pytest.raises(ExportError, match="cumprod along dimension 0, which follows a dynamic"):
        ember.onnx.to_model(lambda t: t.cumprod(0), ember.randn(3, 2), input_names=["t"],
                            dynamic_axes={"t": [0]})


def test_einsum_contractions_traces_and_outer_products():
    a, b, sq = ember.randn(2, 3, 4), ember.randn(2, 4, 5), ember.randn(2, 3, 3)
    check_export(lambda x, y, s: (ember.einsum("bij,bjk->bik", x, y),
                                  ember.einsum("bii->b", s), ember.einsum("bij->bji", s),
                                  ember.einsum("bij,bkl->bijkl", x, y)), a, b, sq,
                 dynamic_batch=True)


@pytest.mark.parametrize("build, shape", [
    (lambda: nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5)),
    (lambda: nn.ConvTranspose1d(2, 2, 2, stride=3, output_padding=2), (2, 2, 4)),
    (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2), (2, 4, 4, 5)),
    (lambda: nn.ConvTranspose2d(2, 3, (2, 3), stride=(2, 1), padding=(1, 0),
                                output_padding=(1, 0), bias=False), (1, 2, 3, 4)),
    (lambda: nn.ConvTranspose3d(2, 2, 2, stride=2, padding=1, output_padding=1), (1, 2, 3, 2, 3)),
    # (onnxruntime's Col2Im is wrong with dilation on 1 or 3 spatial dims)
    (lambda: nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
                                dilation=2), (2, 4, 5)),
])
def test_transposed_convolutions(build, shape):
    ember.manual_seed(0)
    check_export(build().eval(), ember.randn(*shape), dynamic_batch=True, atol=1e-5)


def test_dilated_3d_transposed_convolution():
    """onnxruntime's Col2Im computes a dilated 3-d col2im wrongly: a scatter instead."""
    ember.manual_seed(0)
    model = nn.ConvTranspose3d(2, 2, (3, 2, 2), stride=(2, 1, 1), dilation=(2, 1, 2)).eval()
    check_export(model, ember.randn(1, 2, 4, 3, 3), atol=1e-5)


def test_fold_in_channels_last_layout():
    """The channels-last col2im that a convolution's input gradient folds with."""
    cols = ember.randn(2, 6, 12)
    fold = ember.ops.im2col.fold_nd
    check_export(lambda c: fold(c, (4, 5), kernel_size=(2, 2), dilation=(1, 1),
                                padding=((0, 0), (1, 0)), stride=(2, 2), layout="nlc"), cols)
