"""``training=`` and ``keep_initializers_as_inputs=``, as torch.onnx.export takes them."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.onnx import ExportError, TrainingMode
from tests.export.onnx_helpers import eager, run_onnx


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.5), nn.BatchNorm1d(3))


def test_eval_is_the_default_and_preserve_keeps_each_modules_mode():
    model, x = _model(), ember.randn(2, 4)
    model.train()
    proto = ember.onnx.to_model(model, x, training=TrainingMode.EVAL)
    assert all(m.training for m in model.modules())  # (restored)
    model.eval()
    np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(model, x)[0], rtol=1e-6)
    proto = ember.onnx.to_model(model, x, training=TrainingMode.PRESERVE)
    np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(model, x)[0], rtol=1e-6)
    model[2].train()  # (batch statistics that update buffers: refused)
    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(model, x, training=TrainingMode.PRESERVE)
    assert model[2].training and not model[0].training


def test_training_mode_is_refused_clearly():
    with pytest.raises(ExportError, match="TrainingMode.TRAINING is not supported"):
        ember.onnx.to_model(_model(), ember.randn(2, 4), training=TrainingMode.TRAINING)
    with pytest.raises(TypeError, match="not the bool True"):
        ember.onnx.to_model(_model(), ember.randn(2, 4), training=True)
    for other in (7, "eval"):
        with pytest.raises(ValueError, match="ember.onnx.export: training takes an .*, not"):
            ember.onnx.to_model(_model(), ember.randn(2, 4), training=other)


def test_keep_initializers_as_inputs_lists_the_weights_as_overridable_inputs():
    model, x = _model().eval(), ember.randn(2, 4)
    proto = ember.onnx.to_model(model, x, keep_initializers_as_inputs=True)
    names = [i.name for i in proto.graph.input]
    assert names[0] == "input" and set(names[1:]) <= set(model.state_dict())  # (those read)
    assert {"0.weight", "0.bias", "2.running_mean", "2.running_var"} <= set(names)
    assert {i.name for i in proto.graph.initializer} >= set(names[1:])
    np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(model, x)[0], rtol=1e-6)
    import onnxruntime as ort
    session = ort.InferenceSession(proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    bias = np.full(3, 10.0, dtype=np.float32)
    got = session.run(None, {"input": x.numpy(), "0.bias": bias})[0]
    with ember.no_grad():
        model[0].bias.copy_(ember.tensor(bias))
    np.testing.assert_allclose(got, eager(model, x)[0], rtol=1e-6)
    default = ember.onnx.to_model(model, x)
    assert [i.name for i in default.graph.input] == ["input"]


class _Carries(ember.nn.Module):
    """Carries its state to the next call (which ONNX export refuses)."""

    def __init__(self):
        super().__init__()
        self.lin, self.h = ember.nn.Linear(3, 3), ember.zeros(3)

    def forward(self, x):
        h = ember.tanh(self.lin(x) + self.h)
        self.h = h.detach()
        return h


def test_a_refused_export_leaves_the_models_state_as_it_was():
    model = _Carries()
    held = model.h
    with pytest.raises(ExportError, match=r"writes into its state or arguments when called "
                                          r"\(self\.h"):
        ember.onnx.to_model(model, ember.ones(3))
    assert model.h is held and not model.h.numpy().any()
