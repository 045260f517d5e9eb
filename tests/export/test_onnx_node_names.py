"""ONNX nodes are named by the path of the module whose call made them, as torch.onnx names
them (``/0/fc/Gemm``): every op, not only those that read a parameter (the nodes had no
names)."""

from __future__ import annotations

import io
import threading
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


def _torch_names(model, x):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), f, dynamo=False)
    return [n.name for n in onnx.load_from_string(f.getvalue()).graph.node]


def test_repeated_names_are_numbered_from_1_as_torch_onnx_numbers_them():
    # (Ember numbered the second /Mul_2, torch.onnx /Mul_1)
    def twice(nn):
        class Twice(nn.Module):
            def forward(self, x):
                return (x * 2) * 3
        return nn.Sequential(Twice(), Twice())

    got = ember.onnx.to_model(twice(ember.nn), (ember.randn(3),))
    want = _torch_names(twice(torch.nn), torch.randn(3))
    mul = [n for n in want if "Mul" in n]
    assert _names(got, {"Mul"}) == mul == ["/0/Mul", "/0/Mul_1", "/1/Mul", "/1/Mul_1"]
    proto = ember.onnx.to_model(lambda x: (x * 2) * 3, (ember.randn(3),))
    assert _names(proto, {"Mul"}) == ["/Mul", "/Mul_1"]


def test_the_output_identity_nodes_are_named_too():
    # (they had the name '': torch.onnx names them Identity_<n>, Ember as a root op)
    proto = ember.onnx.to_model(lambda x: (x, x.relu(), x), (ember.randn(3),))
    assert [n.name for n in proto.graph.node] == ["/Relu", "/Identity", "/Identity_1",
                                                  "/Identity_2"]


def test_an_error_names_the_module_of_an_op_that_reads_no_parameter():
    class Rounded(ember.nn.Module):
        def forward(self, x):
            return x[:, :x.shape[1] // 16 * 16]

    model = ember.nn.Sequential(ember.nn.Identity(), Rounded())
    with pytest.raises(ExportError, match=r"slice at .*\(in 1\)"):
        ember.onnx.to_model(model, (ember.randn(2, 40),), input_names=["x"],
                            dynamic_axes={"x": {1: "t"}})


class _Blocker(ember.nn.Module):
    """Called from the other thread: waits inside its call until the export has run."""

    def __init__(self):
        super().__init__()
        self.inside, self.go = threading.Event(), threading.Event()

    def forward(self, x):
        self.inside.set()
        self.go.wait(30)
        return x


def test_another_threads_module_calls_during_an_export_leave_the_names_alone():
    # (the scope hooks were global and shared one stack between threads: a module another
    # thread was inside when the export ran took the export's frames, which named the second
    # Mul /Mul, and its exit raised IndexError: pop from empty list in that thread)
    nn = ember.nn
    blocker, errors = _Blocker(), []

    def other():
        try:
            nn.Sequential(nn.Sequential(blocker), nn.Identity())(ember.ones(2))
        except Exception as e:  # (reported by the test)
            errors.append(e)

    class Start(nn.Module):  # (starts the other thread inside the export's module stack)
        def forward(self, x):
            if thread.ident is None:  # (the first Block's: the thread stays inside)
                thread.start()
                blocker.inside.wait(30)
            return x

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.start, self.fc = Start(), nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(self.start(x)) * 2

    thread = threading.Thread(target=other)
    try:
        proto = ember.onnx.to_model(nn.Sequential(Block(), Block()), (ember.randn(2, 4),))
    finally:
        blocker.go.set()
        thread.join()
    assert _names(proto, {"Mul"}) == ["/0/Mul", "/1/Mul"]
    assert errors == []


def test_the_scope_hooks_are_the_models_own_and_only_act_in_the_exporting_thread():
    # (global hooks put every module call of the process on the hooked path while an export
    # ran; a call of the model's own module from another thread is left alone)
    from ember.nn.module_hooks import ModuleHooksMixin

    nn = ember.nn
    seen, inner = [], nn.Linear(4, 4)

    def elsewhere():
        seen.append(ember.nn.Module.__call__ is ModuleHooksMixin._call_fast)
        out = [None]
        worker = threading.Thread(target=lambda: out.__setitem__(0, inner(ember.ones(1, 4))))
        worker.start()
        worker.join()
        seen.append(out[0].shape)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            elsewhere()
            return self.inner(x) * 2

    model = Model()
    proto = ember.onnx.to_model(model, (ember.randn(2, 4),))
    assert seen == [True, ember.Size([1, 4])]
    assert _names(proto, {"Mul", "MatMul"}) == ["/inner/MatMul", "/Mul"]
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in model.modules())


def test_a_users_pre_hook_raising_inside_a_submodule_raises_the_users_error():
    # (the export's exit hook still ran for the module its entry hook never saw, and the
    # cleanup raised IndexError: list index out of range in place of the user's error)
    nn = ember.nn

    def bad(module, args):
        if isinstance(module, nn.ReLU):
            raise ValueError("the user's hook")

    handle = nn.register_module_forward_pre_hook(bad)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    try:
        with pytest.raises(ValueError, match="the user's hook"):
            ember.onnx.to_model(model, (ember.randn(2, 4),))
    finally:
        handle.remove()
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in model.modules())
    proto = ember.onnx.to_model(nn.Sequential(nn.Linear(4, 4), nn.ReLU()),
                                (ember.randn(2, 4),))
    assert _names(proto, {"Relu"}) == ["/1/Relu"]
