"""The built-in models export to ONNX and run in onnxruntime as they run in Ember, with a
dynamic batch dimension."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.models
from tests.export.onnx_helpers import check_export, eager, run_onnx

MODELS = {
    "mlp": (lambda: ember.models.mlp(hidden=32), lambda: ember.randn(2, 1, 28, 28)),
    "cnn": (ember.models.cnn, lambda: ember.randn(2, 1, 28, 28)),
    "lenet5": (ember.models.lenet5, lambda: ember.randn(2, 1, 28, 28)),
    "gpt": (lambda: ember.models.gpt(n_layer=2, n_head=2, d_model=32, block_size=16),
            lambda: ember.randint(0, 256, (2, 8))),
    "gpt_flash": (lambda: ember.models.gpt(n_layer=1, n_head=2, d_model=32, block_size=16,
                                           flash=True),
                  lambda: ember.randint(0, 256, (2, 8))),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_builtin_model_matches_eager_with_dynamic_batch(name):
    ember.manual_seed(0)
    build, example = MODELS[name]
    model = build().eval()
    check_export(model, example(), dynamic_batch=True, rtol=1e-4, atol=1e-5)


def test_resnet18_exports_in_eval_mode_with_running_statistics_and_dynamic_batch():
    ember.manual_seed(0)
    model = ember.models.resnet18()
    with ember.no_grad():  # running statistics away from their initial (0, 1)
        for m in model.modules():
            if isinstance(m, ember.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    model.train()
    x = ember.randn(1, 3, 8, 8)
    proto = ember.onnx.to_model(model, x, input_names=["x"],  # (in eval mode, as torch)
                                dynamic_axes={"x": {0: "batch"}})
    assert model.training  # (and the mode is restored)
    model.eval()
    for batch in (x, ember.randn(3, 3, 8, 8)):
        np.testing.assert_allclose(run_onnx(proto, batch.numpy())[0], eager(model, batch)[0],
                                   rtol=1e-4, atol=1e-5)


def test_resnext_exports_with_a_dynamic_batch_by_both_exporters():
    # a 1×1 conv of few pixels by a large weight (layer4's last, 2×2 pixels, 128→2048) came
    # out channels-last from batch 4 and NCHW below it: added to the other branch, the layout
    # (and so the traced graph: a permute before the pooling) changed with the batch size
    ember.manual_seed(0)
    model = ember.models.ResNet(ember.models.Bottleneck, [1, 1, 1, 1], groups=2,
                                width_per_group=8, num_classes=5).eval()
    x, other = ember.randn(2, 3, 64, 64), ember.randn(5, 3, 64, 64)
    proto = ember.onnx.to_model(model, x, input_names=["x"], dynamic_axes={"x": {0: "b"}})
    program = ember.export.export(model, (x,), dynamic_shapes=({0: ember.export.Dim("b")},))
    for batch in (x, other):
        want = eager(model, batch)[0]
        np.testing.assert_allclose(run_onnx(proto, batch.numpy())[0], want, rtol=1e-4,
                                   atol=1e-5)
        with ember.no_grad():
            got = program.module()(batch).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
