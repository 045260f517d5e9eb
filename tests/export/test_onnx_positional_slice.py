"""A slice of a fixed-size table whose bound is an input's dynamic size (``pos[:T]``, a
learned positional embedding cut to the sequence length) follows that size at run time; it
was refused ("moves with a dynamic size in a way ONNX export cannot follow")."""

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import run_onnx


class Positional(ember.nn.Module):
    def __init__(self, steps=1):
        super().__init__()
        self.steps = steps
        self.pos = ember.nn.Parameter(ember.randn(64, 8))

    def forward(self, x):
        if self.steps == 2:  # (a multiple of the size: 2 T rows, paired up)
            return x + self.pos[:2 * x.shape[1]].reshape(x.shape[1], 2, 8).sum(1)
        return x + self.pos[:x.shape[1]]


@pytest.mark.parametrize("steps", [1, 2])
def test_positional_table_cut_to_the_dynamic_length(steps):
    ember.manual_seed(0)
    model = Positional(steps)
    proto = ember.onnx.to_model(model, (ember.randn(2, 6, 8),), input_names=["x"],
                                dynamic_axes={"x": {0: "b", 1: "t"}})
    for shape in [(2, 6, 8), (3, 9, 8), (1, 32, 8), (4, 1, 8)]:
        x = ember.randn(*shape)
        np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], model(x).detach().numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_a_bound_of_another_form_is_still_refused():
    pos = ember.randn(64, 8)
    with pytest.raises(ember.onnx.ExportError, match="moves with a dynamic size"):
        ember.onnx.to_model(lambda x: x + pos[1:x.shape[1] + 1], (ember.randn(2, 6, 8),),
                            input_names=["x"], dynamic_axes={"x": {0: "b", 1: "t"}})
