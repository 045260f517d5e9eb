"""A None among the outputs (``MultiheadAttention(..., need_weights=False)``'s weights) is
left out of the model, as torch.onnx leaves it out; it was refused."""

import numpy as np

import ember
from tests.export.onnx_helpers import run_onnx


def test_attention_without_weights_exports_its_output_alone():
    ember.manual_seed(0)
    mha = ember.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    q = ember.randn(2, 5, 8)
    proto = ember.onnx.to_model(lambda q: mha(q, q, q, need_weights=False), (q,))
    assert [o.name for o in proto.graph.output] == ["output"]
    got, = run_onnx(proto, q.numpy())
    np.testing.assert_allclose(got, mha(q, q, q)[0].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_names_and_dynamic_axes_skip_the_none():
    # torch.onnx: output_names apply to the tensors in order, the rest are output_<i>
    proto = ember.onnx.to_model(lambda q: (q * 2, None, q + 1), (ember.randn(3, 2),),
                                input_names=["q"], output_names=["a"],
                                dynamic_axes={"q": {0: "b"}, "output_1": {0: "b"}})
    assert [o.name for o in proto.graph.output] == ["a", "output_1"]
    assert proto.graph.output[1].type.tensor_type.shape.dim[0].dim_param == "b"
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    a, b = run_onnx(proto, x)
    np.testing.assert_array_equal(a, x * 2)
    np.testing.assert_array_equal(b, x + 1)
