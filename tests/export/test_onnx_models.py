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
