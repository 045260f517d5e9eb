"""``dynamic_shapes`` (torch.export's form, which ``torch.onnx.export`` takes) and the
``dynamo`` flag: a torch user's call; both were a TypeError."""

import numpy as np
import pytest

import ember
from ember.export import Dim
from tests.export.onnx_helpers import run_onnx


class Net(ember.nn.Module):
    def forward(self, x, y):
        return x.sum(1) + y


def dims(proto):
    return [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in proto.graph.input]


@pytest.mark.parametrize("shapes", [
    {"x": {0: Dim("batch")}, "y": {0: Dim("batch")}},
    ({0: "batch", 1: None}, ["batch", None]),
    {"x": (Dim("batch"), Dim.STATIC), "y": {0: "batch"}},
])
def test_dynamic_shapes_name_the_axes(shapes):
    x, y = ember.randn(2, 3), ember.randn(2)
    proto = ember.onnx.export(Net(), (x, y), None, dynamic_shapes=shapes, dynamo=True)
    assert dims(proto) == [["batch", 3], ["batch"]]
    x, y = np.ones((5, 3), np.float32), np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(run_onnx(proto, x, y)[0], x.sum(1) + y)


def test_auto_dims_get_names_and_bad_specs_are_refused():
    proto = ember.onnx.to_model(lambda x: x * 2, (ember.randn(2, 3),),
                                dynamic_shapes=({0: Dim.AUTO},))
    assert dims(proto) == [["x_dim_0", 3]]
    with pytest.raises(ember.errors.ArgumentError, match="no tensor argument"):
        ember.onnx.to_model(Net(), (ember.randn(2, 3), ember.randn(2)),
                            dynamic_shapes={"z": {0: "b"}})
    with pytest.raises(ember.errors.ArgumentError, match="not both"):
        ember.onnx.to_model(Net(), (ember.randn(2, 3), ember.randn(2)),
                            dynamic_shapes={"x": {0: "b"}}, dynamic_axes={"x": {0: "b"}})


@pytest.mark.parametrize("hint, first", [(Dim.DYNAMIC(min=3, max=10), "x_dim_0"),
                                         (Dim.AUTO(max=10), "x_dim_0"), (Dim.STATIC(min=1), 2)])
def test_ranged_hints_name_or_fix_the_axis(hint, first):
    # (torch.export's ranged hints, Dim.DYNAMIC(min=, max=): a range ONNX cannot keep; the
    # axis is named as for the bare hint. They were refused as an unknown entry.)
    proto = ember.onnx.to_model(lambda x: x * 2, (ember.randn(2, 3),),
                                dynamic_shapes=({0: hint},))
    assert dims(proto) == [[first, 3]]
