"""Export of channels-last tensors, which a sweep of the vision model zoo found refused: ONNX
export of average pooling over a channels-last input (DenseNet's transitions, MaxViT), whose
windows are gathered in the channels-last ``nlc`` column layout, and a channels-last example
with a dynamic axis (the traces that find the dynamic sizes kept its layout only by chance)."""

from __future__ import annotations

import ember
import ember.nn as nn
from ember.export import Dim, export
from tests.export.onnx_helpers import check_export


def _channels_last(*shape: int) -> ember.Tensor:
    return ember.randn(*shape).contiguous(memory_format=ember.channels_last)


def test_onnx_avg_pool_of_a_channels_last_input():
    ember.manual_seed(0)
    check_export(nn.AvgPool2d(3, 2, padding=1, count_include_pad=False),
                 _channels_last(2, 3, 7, 8))
    check_export(nn.AvgPool2d(2), _channels_last(2, 5, 6, 6), dynamic_batch=True)


def test_onnx_conv_then_avg_pool_as_in_densenet_transitions():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(4, 3, 1), nn.AvgPool2d(2, 2)).eval()
    check_export(model, _channels_last(2, 4, 8, 8), dynamic_batch=True, rtol=1e-5, atol=1e-5)


def test_program_export_of_a_channels_last_example_with_a_dynamic_batch():
    ember.manual_seed(0)
    model = nn.Sequential(nn.AvgPool2d(2), nn.Conv2d(3, 4, 3)).eval()
    ep = export(model, (_channels_last(2, 3, 9, 9),), dynamic_shapes=({0: Dim("batch")},))
    for n in (2, 5):
        x = _channels_last(n, 3, 9, 9)
        with ember.no_grad():
            assert ember.allclose(ep.module()(x), model(x), rtol=1e-5, atol=1e-6)
