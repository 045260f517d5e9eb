"""ember.onnx.export's interface: names, files, dynamic axes, opsets, the error listing every
unsupported primitive, and converters registered by users."""

from __future__ import annotations

import io
import math

import numpy as np
import onnx
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.onnx import ExportError
from tests.export.onnx_helpers import eager, run_onnx


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).eval()


def test_export_writes_a_path_and_a_file_object_and_returns_the_model(tmp_path):
    model, x = _model(), ember.randn(2, 4)
    path = tmp_path / "model.onnx"
    proto = ember.onnx.export(model, (x,), str(path))
    assert isinstance(proto, onnx.ModelProto)
    loaded = onnx.load(str(path))
    onnx.checker.check_model(loaded)
    np.testing.assert_allclose(run_onnx(loaded, x.numpy())[0], eager(model, x)[0], rtol=1e-6)
    buffer = io.BytesIO()
    ember.onnx.export(model, x, buffer)  # (a tensor as args, as torch allows)
    assert onnx.load_from_string(buffer.getvalue()) == loaded
    assert ember.onnx.export(model, x) == loaded  # (no file: the model only)


def test_verbose_prints_the_graph(capsys):
    ember.onnx.export(_model(), ember.randn(2, 4), io.BytesIO(), verbose=True)
    assert "MatMul" in capsys.readouterr().out


def test_python_reading_a_traced_value_is_refused():
    def fn(x):
        return x * 2 if x.sum() > 0 else x

    with pytest.raises(ExportError, match="traces the model with ember.jit, which refused it"):
        ember.onnx.to_model(fn, ember.randn(3))


def test_parameters_are_named_initializers_or_inputs():
    model, x = _model(), ember.randn(2, 4)
    proto = ember.onnx.to_model(model, x)
    names = {i.name for i in proto.graph.initializer}
    assert {"0.weight", "0.bias", "2.weight", "2.bias"} <= names
    np.testing.assert_array_equal(
        onnx.numpy_helper.to_array(next(i for i in proto.graph.initializer
                                        if i.name == "0.weight")), model[0].weight.detach().numpy())
    bare = ember.onnx.to_model(model, x, export_params=False)
    assert [i.name for i in bare.graph.input] == ["input", "0.weight", "0.bias", "2.weight",
                                                  "2.bias"]
    assert not {i.name for i in bare.graph.initializer} & names


def test_input_and_output_names_default_and_given():
    x, y = ember.randn(3, 2), ember.randn(3, 2)

    def fn(a, b):
        return a + b, a * b

    proto = ember.onnx.to_model(fn, (x, y))
    assert [i.name for i in proto.graph.input] == ["a", "b"]  # (the argument names)
    assert [o.name for o in proto.graph.output] == ["output_0", "output_1"]
    proto = ember.onnx.to_model(fn, (x, y), input_names=["x"], output_names=["sum"])
    assert [i.name for i in proto.graph.input] == ["x", "input_1"]
    assert [o.name for o in proto.graph.output] == ["sum", "output_1"]
    proto = ember.onnx.to_model(fn, (x, y), input_names=["add_1", "mul_2"],  # (no clash with
                                output_names=["add_3", "mul_4"])  # the exporter's own names)
    onnx.checker.check_model(proto, full_check=True)
    got = run_onnx(proto, x.numpy(), y.numpy())
    np.testing.assert_allclose(got[0], (x + y).numpy())
    np.testing.assert_allclose(got[1], (x * y).numpy())
    with pytest.raises(ValueError, match="3 input_names for 2 inputs"):
        ember.onnx.to_model(fn, (x, y), input_names=["p", "q", "r"])


def test_nested_and_keyword_arguments_become_inputs_in_order():
    def fn(x, pair, bias=None):
        return x * pair[0] + pair[1] + bias

    x, a, b, c = (ember.randn(2, 3) for _ in range(4))
    want = eager(lambda: fn(x, (a, b), bias=c))[0]
    for proto in (ember.onnx.to_model(fn, (x, (a, b)), kwargs={"bias": c},
                                      dynamic_axes={n: {0: "batch"} for n in
                                                    ("x", "pair[0]", "pair[1]", "bias")}),
                  ember.onnx.to_model(fn, (x, (a, b), {"bias": c}))):  # (torch's dict last)
        assert [i.name for i in proto.graph.input] == ["x", "pair[0]", "pair[1]", "bias"]
        np.testing.assert_allclose(run_onnx(proto, *(t.numpy() for t in (x, a, b, c)))[0],
                                   want, rtol=1e-6)


def test_dynamic_axes_name_dimensions_and_run_other_sizes():
    model = _model()
    proto = ember.onnx.to_model(model, ember.randn(2, 4), input_names=["x"],
                                output_names=["y"], dynamic_axes={"x": {0: "batch"}})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for n in (1, 5):
        x = ember.randn(n, 4)
        np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(model, x)[0],
                                   rtol=1e-5, atol=1e-6)
    listed = ember.onnx.to_model(model, ember.randn(2, 4), input_names=["x"],
                                 dynamic_axes={"x": [0]})
    assert listed.graph.input[0].type.tensor_type.shape.dim[0].dim_param == \
        "x_dynamic_axes_1"


def test_dynamic_reshape_reads_sizes_at_run_time():
    def fn(x):  # (B, T, C) -> (B, T, 2, C/2) -> (B*T, C): sizes the IR holds as numbers
        b, t, c = x.shape
        return x.view(b, t, 2, c // 2).transpose(1, 2).reshape(b * t, c) * 2

    proto = ember.onnx.to_model(fn, ember.randn(2, 3, 4), input_names=["x"],
                                dynamic_axes={"x": {0: "batch", 1: "time"}})
    for shape in ((1, 5, 4), (4, 2, 4)):
        x = ember.randn(*shape)
        np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(fn, x)[0])


def test_dynamic_expand_of_a_parameter_reads_the_batch_size():
    token = ember.nn.Parameter(ember.randn(1, 1, 4))

    def fn(x):  # (a class token, as in a vision transformer)
        return ember.cat([token.expand(x.shape[0], -1, -1), x], dim=1)

    proto = ember.onnx.to_model(fn, ember.randn(2, 3, 4), input_names=["x"],
                                dynamic_axes={"x": {0: "batch"}})
    x = ember.randn(5, 3, 4)
    np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(fn, x)[0])


def test_dynamic_axes_are_validated():
    model, x = _model(), ember.randn(2, 4)
    with pytest.raises(ValueError, match="'z', which is no input"):
        ember.onnx.to_model(model, x, dynamic_axes={"z": [0]})
    with pytest.raises(ValueError, match="dynamic axis 2 of 'input'"):
        ember.onnx.to_model(model, x, dynamic_axes={"input": [2]})


def test_a_constant_made_from_a_dynamic_size_is_refused_with_its_line():
    def fn(a):
        return a + ember.arange(a.shape[1]) ** 2  # (no pattern export rebuilds)

    with pytest.raises(ExportError, match=r"test_onnx_api.py:\d+ \(`return a \+ .*\): a constant "
                       r"of shape \(5,\) depends on the size of a dynamic axis"):
        ember.onnx.to_model(fn, ember.randn(2, 5), input_names=["a"],
                            dynamic_axes={"a": [1]})


def test_every_unsupported_primitive_is_listed_in_one_error():
    def fn(x):
        return ember.linalg.qr(x)[0] + ember.special.entr(x) + \
            ember.linalg.matrix_norm(x, "nuc")

    with pytest.raises(ExportError) as info:
        ember.onnx.to_model(fn, ember.randn(3, 3))
    message = str(info.value)
    for name in ("linalg_qr", "special_entr", "linalg_svd"):
        assert name in message
    assert "test_onnx_api.py:" in message  # (where each one was called)
    assert "ember.onnx.converter" in message  # (the hint)


def test_an_equation_without_an_onnx_form_is_refused_with_its_reason():
    def fn(x):
        y = x.scatter_reduce(0, ember.zeros(2, 2, dtype=ember.int64), x[1:], "amax")
        return y

    with pytest.raises(ExportError, match=r"scatter_reduce at .*test_onnx_api.py:\d+ \(`y = "
                                          r"x.scatter_reduce.*`\): .*needs ScatterND's max"):
        ember.onnx.to_model(fn, ember.randn(3, 2), opset_version=17)


def test_a_user_converter_extends_the_table():
    assert "special_entr" not in ember.onnx.supported_primitives()

    @ember.onnx.converter("special_entr")
    def entr(ctx, eqn):  # -x log(x): 0 at 0, -inf below
        x, dtype = ctx.value(eqn.inputs[0]), eqn.outputs[0].dtype
        zero = ctx.scalar(0, dtype)
        body = ctx.node("Neg", [ctx.node("Mul", [x, ctx.node("Log", [x])])])
        at_zero = ctx.node("Where", [ctx.node("Equal", [x, zero]), zero, body])
        below = ctx.node("Less", [x, zero])
        return ctx.node("Where", [below, ctx.scalar(-math.inf, dtype), at_zero])

    try:
        x = ember.cat([ember.randn(8), ember.zeros(2)]).reshape(2, 5)
        proto = ember.onnx.to_model(lambda t: ember.special.entr(t), x)
        np.testing.assert_allclose(run_onnx(proto, x.numpy())[0],
                                   ember.special.entr(x).numpy(), rtol=1e-5, atol=1e-7)
    finally:
        del ember.onnx.CONVERTERS["special_entr"]


def test_opset_versions():
    x = ember.randn(2, 3)
    assert ember.onnx.to_model(F.relu, x).opset_import[0].version == 18
    assert ember.onnx.to_model(F.relu, x, opset_version=17).opset_import[0].version == 17
    with pytest.raises(ValueError, match="opset_version 11 is not supported"):
        ember.onnx.to_model(F.relu, x, opset_version=11)


def test_constant_folding_is_switchable():
    def fn(x):  # (the mask is made inside: a constant of the graph)
        return x.masked_fill(ember.ones(4, 4, dtype=ember.bool).triu(1), 0.0)

    x = ember.randn(4, 4)
    folded = ember.onnx.to_model(fn, x)
    kept = ember.onnx.to_model(fn, x, do_constant_folding=False)
    assert "Trilu" not in [n.op_type for n in folded.graph.node]
    assert "Trilu" in [n.op_type for n in kept.graph.node]
    for proto in (folded, kept):
        np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(fn, x)[0])


def test_a_model_writing_its_inputs_is_refused():
    def fn(x):
        x.add_(1)
        return x * 2

    with pytest.raises(ExportError, match="writes into its state or arguments"):
        ember.onnx.to_model(fn, ember.randn(2))


def test_ember_onnx_is_imported_on_first_use():
    assert ember.onnx.export is ember.onnx.exporter.export
    assert ember.export.export is not ember.onnx.export  # (ember.export is torch.export's)
    with pytest.raises(AttributeError, match="no attribute 'onnx_'"):
        ember.onnx_  # noqa: B018
