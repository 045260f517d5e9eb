"""Transposed convolutions (which trace into fold) at opset 17, where ONNX has no Col2Im, and
3-d dilated ones, where onnxruntime's Col2Im is wrong: a ScatterElements add."""

import pytest

import ember
from tests.export.onnx_helpers import check_export

nn = ember.nn

CASES = [
    (lambda: nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1, groups=2, dilation=2),
     (2, 4, 7)),
    (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
                                dilation=2), (2, 4, 5, 6)),
    (lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), output_padding=(1, 2),
                                dilation=(1, 2)), (2, 4, 5, 6)),
    (lambda: nn.ConvTranspose2d(3, 2, 2, stride=2, padding=(0, 1), output_padding=(1, 0)),
     (1, 3, 4, 4)),
    (lambda: nn.ConvTranspose3d(2, 4, 3, stride=2, padding=1, dilation=(2, 1, 2),
                                output_padding=1, groups=2), (1, 2, 3, 4, 3)),
]


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("make, shape", CASES)
def test_conv_transpose_exports_without_col2im(make, shape, opset):
    ember.manual_seed(0)
    model = make().eval()
    check_export(model, ember.randn(*shape), dynamic_batch=True, opset_version=opset,
                 rtol=1e-5, atol=1e-5)


def test_fold_at_opset17():
    cols = ember.randn(2, 3 * 4, 20)
    check_export(lambda c: ember.nn.functional.fold(c, (5, 6), 2, dilation=(2, 1), padding=1,
                                                    stride=(1, 2)),
                 cols, opset_version=17)


def test_channels_last_fold_at_opset17():
    cols = ember.randn(2, 6, 12)
    fold = ember.ops.im2col.fold_nd
    check_export(lambda c: fold(c, (4, 5), kernel_size=(2, 2), dilation=(1, 1),
                                padding=((0, 0), (1, 0)), stride=(2, 2), layout="nlc"), cols,
                 opset_version=17)
