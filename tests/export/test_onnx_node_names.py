"""ONNX nodes are named by the path of the module whose call made them, as torch.onnx names
them (``/0/fc/Gemm``): every op, not only those that read a parameter (the nodes had no
names)."""

from __future__ import annotations

import io
import warnings

import onnx
import pytest
import torch

import ember
from ember.export.errors import ExportError


def _model(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.act = nn.Linear(4, 4), nn.ReLU()

        def forward(self, x):
            return self.act(self.fc(x)) * 2

    return nn.Sequential(Block(), nn.Linear(4, 2), nn.Softmax(-1))


def _names(proto, ops):
    return [n.name for n in proto.graph.node if n.op_type in ops]


def test_each_node_is_named_by_its_module_path_as_torch_onnx_names_it():
    ops = {"Relu", "Mul", "Softmax"}
    got = ember.onnx.to_model(_model(ember.nn), (ember.randn(3, 4),))
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(_model(torch.nn), (torch.randn(3, 4),), f, dynamo=False)
    want = onnx.load_from_string(f.getvalue())
    assert _names(got, ops) == _names(want, ops) == ["/0/act/Relu", "/0/Mul", "/2/Softmax"]
    # (ember writes a Linear as Transpose, MatMul, Add where torch writes one Gemm)
    assert _names(got, {"MatMul", "Add"}) == ["/0/fc/MatMul", "/0/fc/Add", "/1/MatMul",
                                              "/1/Add"]


def test_repeated_names_are_numbered_and_a_function_has_root_names():
    proto = ember.onnx.to_model(lambda x: (x * 2) * 3, (ember.randn(3),))
    assert _names(proto, {"Mul"}) == ["/Mul", "/Mul_2"]


def test_an_error_names_the_module_of_an_op_that_reads_no_parameter():
    class Rounded(ember.nn.Module):
        def forward(self, x):
            return x[:, :x.shape[1] // 16 * 16]

    model = ember.nn.Sequential(ember.nn.Identity(), Rounded())
    with pytest.raises(ExportError, match=r"slice at .*\(in 1\)"):
        ember.onnx.to_model(model, (ember.randn(2, 40),), input_names=["x"],
                            dynamic_axes={"x": {1: "t"}})
