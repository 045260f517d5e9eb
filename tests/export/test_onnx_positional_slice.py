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


def test_a_negative_multiple_counts_from_the_end():
    pos = ember.randn(32, 8)
    fn = lambda x: x + pos[-x.shape[1]:]  # noqa: E731 - the table's last T rows
    proto = ember.onnx.to_model(fn, (ember.randn(2, 6, 8),), input_names=["x"],
                                dynamic_axes={"x": {0: "b", 1: "t"}})
    for shape in [(3, 9, 8), (1, 1, 8), (2, 32, 8)]:
        x = ember.randn(*shape)
        np.testing.assert_array_equal(run_onnx(proto, x.numpy())[0], fn(x).numpy())


def test_a_causal_mask_buffer_cut_to_the_length_as_nanogpt():
    bias = ember.ones(32, 32).tril().view(1, 1, 32, 32)

    def attend(x):  # nanoGPT's CausalSelfAttention: bias[:, :, :T, :T]
        b, t, c = x.shape
        q = x.view(b, t, 2, c // 2).transpose(1, 2)
        att = (q @ q.transpose(-2, -1)).masked_fill(bias[:, :, :t, :t] == 0, float("-inf"))
        return (att.softmax(-1) @ q).transpose(1, 2).reshape(b, t, c)

    proto = ember.onnx.to_model(attend, (ember.randn(2, 6, 8),), input_names=["x"],
                                dynamic_axes={"x": {0: "b", 1: "t"}})
    for shape in [(3, 9, 8), (1, 1, 8), (2, 32, 8)]:
        x = ember.randn(*shape)
        np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], attend(x).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_a_bound_of_another_form_is_still_refused():
    pos = ember.randn(64, 8)
    with pytest.raises(ember.onnx.ExportError, match="moves with a dynamic size"):
        ember.onnx.to_model(lambda x: x + pos[1:x.shape[1] + 1], (ember.randn(2, 6, 8),),
                            input_names=["x"], dynamic_axes={"x": {0: "b", 1: "t"}})


@pytest.mark.parametrize("bound", [lambda t: max(t, 4), lambda t: t if t > 4 else 4])
def test_a_bound_clamped_from_below_is_refused_not_taken_for_the_length(bound):
    # traced at T = 6 and above, max(T, 4) is T: it was exported as pos[:T], wrong for T < 4
    pos = ember.randn(64, 8)
    with pytest.raises(ember.onnx.ExportError, match="not below it"):
        ember.onnx.to_model(lambda x: pos[:bound(x.shape[1])].sum(0) + x.sum(1),
                            (ember.randn(2, 6, 8),), input_names=["x"],
                            dynamic_axes={"x": {0: "b", 1: "t"}})


@pytest.mark.parametrize("shape", [(2, 8, 8), (3, 6, 8), (4, 8, 8)])
def test_a_length_that_is_a_multiple_of_the_batch_is_told_apart(shape):
    # T = 8 and B = 2 both explained the bound 8 in two traces: refused with no hint
    pos = ember.randn(64, 8)
    fn = lambda x: x + pos[:x.shape[1]]  # noqa: E731
    proto = ember.onnx.to_model(fn, (ember.randn(*shape),), input_names=["x"],
                                dynamic_axes={"x": {0: "b", 1: "t"}})
    for other in [(3, 5, 8), (1, 1, 8), (4, 12, 8)]:
        x = ember.randn(*other)
        np.testing.assert_array_equal(run_onnx(proto, x.numpy())[0], fn(x).numpy())
