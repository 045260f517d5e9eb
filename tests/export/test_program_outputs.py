"""ember.export of models returning tensors no operation computed (constants, possibly sized
by a dynamic dim): the program returns them, as torch.export's does."""

import io

import numpy as np
import pytest
import torch
import torch.export

import ember
from ember.export import Dim


class ConstantOutputs(ember.nn.Module):
    def forward(self, x):
        return x * 2, x.new_zeros(2), ember.ones(x.shape[0]), ember.arange(x.shape[0])


class TorchConstantOutputs(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.new_zeros(2), torch.ones(x.shape[0]), torch.arange(x.shape[0])


def assert_same_outputs(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape)
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_constant_outputs_run_and_save():
    x = np.ones((3, 4), np.float32)
    ep = ember.export.export(ConstantOutputs(), (ember.tensor(x),))
    want = torch.export.export(TorchConstantOutputs(), (torch.tensor(x),)).module()(
        torch.tensor(x))
    assert_same_outputs(ep.module()(ember.tensor(x)), want)
    f = io.BytesIO()
    ember.export.save(ep, f)
    f.seek(0)
    assert_same_outputs(ember.export.load(f).module()(ember.tensor(x)), want)


def test_constant_outputs_follow_a_dynamic_dim():
    ep = ember.export.export(ConstantOutputs(), (ember.ones(3, 4),),
                             dynamic_shapes={"x": {0: Dim("b")}})
    tep = torch.export.export(TorchConstantOutputs(), (torch.ones(3, 4),),
                              dynamic_shapes={"x": {0: torch.export.Dim("b")}})
    for size in (2, 5):
        x = np.arange(size * 4, dtype=np.float32).reshape(size, 4)
        assert_same_outputs(ep.module()(ember.tensor(x)), tep.module()(torch.tensor(x)))


def test_an_output_class_registered_as_a_pytree_node_comes_back_with_its_tensors():
    # torch.export.register_dataclass: ep.module() returns the class holding the new values
    # (its fields were fx nodes: the graph's output structure did not reach into it)
    import dataclasses

    from ember.func.pytree import register_pytree_node

    @dataclasses.dataclass
    class Pair:
        a: ember.Tensor
        b: ember.Tensor

    register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda xs, _: Pair(*xs))

    class Model(ember.nn.Module):
        def forward(self, x):
            return {"pair": Pair(x + 1, x * 2)}, x.sum()

    ep = ember.export.export(Model(), (ember.zeros(3),))
    out, total = ep.module()(ember.ones(3))
    assert isinstance(out["pair"], Pair)
    assert out["pair"].a.tolist() == [2.0, 2.0, 2.0]
    assert out["pair"].b.tolist() == [2.0, 2.0, 2.0]
    assert total.item() == 3.0
    with pytest.raises(ember.errors.ArgumentError, match="Pair.*register_pytree_node"):
        ember.export.save(ep, io.BytesIO())


def test_a_registered_output_class_is_rebuilt_by_a_node_of_the_graph():
    """The structure is the graph's (its last node), not a forward hook's: ``forward``,
    ``code`` and ember.fx.symbolic_trace of the exported module return the class too."""
    from ember.func.pytree import register_pytree_node

    class Pair:  # (no dataclass: only the registration rebuilds it)
        def __init__(self, a, b):
            self.a, self.b = a, b

    register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda xs, _: Pair(*xs))

    class Model(ember.nn.Module):
        def forward(self, x):
            return Pair(x + 1, x * 2)

    module = ember.export.export(Model(), (ember.zeros(3),)).module()
    assert "unflatten_output" in module.code and not module._forward_hooks
    for run in (module, module.forward, ember.fx.symbolic_trace(module)):
        out = run(ember.full((3,), 2.0))
        assert isinstance(out, Pair)
        assert out.a.tolist() == [3.0] * 3 and out.b.tolist() == [4.0] * 3


class ViewOfInputBeside(ember.nn.Module):
    """One output a view of the input, another a view of a value the model does not return:
    ember.jit's graph also returns that value (to rebuild the view), the model does not."""

    def forward(self, a):
        return a.diagonal(), ember.diag(a[0])


def test_a_view_of_an_input_adds_no_hidden_output():
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    want = torch.export.export(_TorchViewOfInputBeside(), (torch.tensor(x),)).module()(
        torch.tensor(x))
    ep = ember.export.export(ViewOfInputBeside(), (ember.tensor(x),))
    assert len(ep.graph_signature.output_specs) == 2
    assert_same_outputs(ep.module()(ember.tensor(x)), want)
    from tests.export.onnx_helpers import check_export
    proto = check_export(ViewOfInputBeside(), ember.tensor(x))
    assert len(proto.graph.output) == 2


class _TorchViewOfInputBeside(torch.nn.Module):
    def forward(self, a):
        return a.diagonal(), torch.diag(a[0])
