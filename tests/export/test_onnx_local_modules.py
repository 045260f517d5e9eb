"""A module built inside the exported function (its parameters made and initialised in place
while the call runs) exports with those parameters as constants, as torch.onnx.export does;
a write into a tensor the call did not make, or whose starting value the model reads, is
still refused."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.export.errors import ExportError
from tests.export.onnx_helpers import eager, run_onnx

BUILT = {  # name: (the module, its input's sizes that may change)
    "linear": (lambda: nn.Linear(5, 3), {0: "b", 1: "t"}),
    "group_norm": (lambda: nn.GroupNorm(2, 4), {0: "b", 2: "t"}),
    "rms_norm": (lambda: nn.RMSNorm(5), {0: "b", 1: "t"}),
    "layer_norm": (lambda: nn.LayerNorm(5), {0: "b", 1: "t"}),
    "prelu": (lambda: nn.PReLU(4), {0: "b", 2: "t"}),
    "conv1d": (lambda: nn.Conv1d(4, 2, 3, padding=1), {0: "b", 2: "t"}),
}


@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize("dynamic", [False, True])
def test_a_module_built_in_the_call_exports_with_its_initial_weights(name, dynamic):
    make, axes = BUILT[name]

    def fn(x):
        return make()(x) * 2

    x = ember.randn(2, 4, 5)
    ember.manual_seed(3)
    dyn = dict(input_names=["x"], dynamic_axes={"x": axes}) if dynamic else {}
    proto = ember.onnx.to_model(fn, (x,), **dyn)
    grown = [6 if axes.get(d) else n for d, n in enumerate((3, 4, 5))]
    for shape in [(2, 4, 5)] + ([tuple(grown)] if dynamic else []):
        a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        ember.manual_seed(3)  # (eager draws the weights the trace drew)
        want = eager(fn, ember.tensor(a))[0]
        np.testing.assert_allclose(run_onnx(proto, a)[0], want, rtol=1e-5, atol=1e-6)


def test_the_export_draws_from_the_generator_as_one_call():
    def fn(x):
        return nn.Linear(5, 3)(x)

    ember.manual_seed(0)
    ember.onnx.to_model(fn, (ember.ones(2, 5),), input_names=["x"],
                        dynamic_axes={"x": {0: "b"}})
    after_export = ember.rand(3)
    ember.manual_seed(0)
    nn.Linear(5, 3)
    np.testing.assert_array_equal(after_export.numpy(), ember.rand(3).numpy())


def test_a_write_computed_from_the_input_is_still_refused():
    def fn(x):
        w = nn.Parameter(ember.zeros(5))
        with ember.no_grad():
            w.add_(x.sum(0))
        return x * w

    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(fn, (ember.randn(2, 5),))


def test_a_made_tensor_whose_starting_value_is_read_is_still_refused():
    def fn(x):
        w = nn.Parameter(ember.zeros(5))
        y = x * w  # (reads the zeros; the tensor holds ones after the call)
        with ember.no_grad():
            w.add_(1.0)
        return y + w

    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(fn, (ember.randn(2, 5),))


def test_a_write_into_a_tensor_made_before_the_call_is_still_refused():
    held = nn.Parameter(ember.zeros(5))

    def fn(x):
        with ember.no_grad():
            held.fill_(2.0)
        return x * held

    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(fn, (ember.randn(2, 5),))
