"""ember.export.export (torch.export): the exported program of Ember's models, its graph
signature against torch.export's, and its module's outputs and gradients against eager."""

import collections
import copy
import dataclasses
import io

import numpy as np
import pytest

import ember
from ember.export import InputKind
from ember.models.gpt import Block
from tests.export.program_helpers import assert_same_as_eager, buffers

torch = pytest.importorskip("torch")


def test_mlp_outputs_and_gradients_match_eager():
    model = ember.models.mlp(hidden=16)
    ep = ember.export.export(model, (ember.randn(2, 1, 28, 28),))
    assert_same_as_eager(model, ep.module(), ember.randn(2, 1, 28, 28))
    assert ep.graph_signature.parameters == tuple(k for k, _ in model.named_parameters())


def test_cnn_graph_is_primitives_with_lifted_state():
    model = ember.models.cnn().eval()
    ep = ember.export.export(model, (ember.randn(1, 1, 28, 28),))
    ops = {n.op for n in ep.graph.nodes}
    assert ops == {"placeholder", "call_function", "output"}  # (no get_attr: state is lifted)
    targets = {type(n.target).__name__ for n in ep.graph.nodes if n.op == "call_function"}
    assert targets <= {"PrimitiveOp", "builtin_function_or_method"}
    assert_same_as_eager(model, ep.module(), ember.randn(1, 1, 28, 28))


def test_resnet18_train_mode_batch_norm_updates_buffers_as_eager():
    ember.manual_seed(0)
    model = ember.models.resnet18(num_classes=4).train()
    twin = copy.deepcopy(model)
    before = buffers(model)
    ep = ember.export.export(model, (ember.randn(2, 3, 8, 8),))
    assert buffers(model).keys() == before.keys()
    for key, value in buffers(model).items():  # (exporting leaves the model as it was)
        np.testing.assert_array_equal(value, before[key])
    mutated = set(ep.graph_signature.buffers_to_mutate.values())
    assert "bn1.running_mean" in mutated and "layer4.1.bn2.num_batches_tracked" in mutated
    assert len(mutated) == 3 * 20  # (20 BatchNorms: mean, var and count each)
    x = ember.randn(2, 3, 8, 8)
    assert_same_as_eager(twin, ep.module(), x, atol=1e-4)
    for key, value in buffers(twin).items():  # (ep.module() shares the model's buffers)
        np.testing.assert_allclose(buffers(model)[key], value, rtol=1e-4, atol=1e-5)


def test_gpt_block_matches_eager():
    ember.manual_seed(0)
    block = Block(16, 2).eval()
    ep = ember.export.export(block, (ember.randn(2, 5, 16),))
    assert_same_as_eager(block, ep.module(), ember.randn(2, 5, 16))


def _signature(ep):
    sig = ep.graph_signature
    return ([(s.kind.name, s.target, s.persistent) for s in sig.input_specs
             if s.kind.name != "CONSTANT_TENSOR"],
            [(s.kind.name, s.target) for s in sig.output_specs])


def _make(nn):
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU())


def test_signature_structure_matches_torch_export():
    ep = ember.export.export(_make(ember.nn).eval(), (ember.randn(5, 4),))
    tp = torch.export.export(_make(torch.nn).eval(), (torch.randn(5, 4),))
    assert _signature(ep) == _signature(tp)
    assert len(ep.graph_signature.user_inputs) == len(tp.graph_signature.user_inputs) == 1
    assert list(ep.state_dict) == list(tp.state_dict)


def test_train_mode_batch_norm_is_a_buffer_mutation():
    ep = ember.export.export(_make(ember.nn).train(), (ember.randn(5, 4),))
    # (what torch.export.export(...).run_decompositions() says of the torch twin)
    assert sorted(_signature(ep)[1]) == [
        ("BUFFER_MUTATION", "1.num_batches_tracked"), ("BUFFER_MUTATION", "1.running_mean"),
        ("BUFFER_MUTATION", "1.running_var"), ("USER_OUTPUT", None)]
    assert _signature(ep)[1][-1] == ("USER_OUTPUT", None)


def test_placeholders_and_outputs_follow_the_signature():
    ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
    placeholders = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert placeholders == [s.arg.name for s in ep.graph_signature.input_specs]
    assert [s.kind for s in ep.graph_signature.input_specs] == \
        [InputKind.PARAMETER, InputKind.PARAMETER, InputKind.USER_INPUT]
    out = ep.graph_module(*ep.state_dict.values(), ember.ones(3, 4))
    assert isinstance(out, tuple) and out[0].shape == (3, 2)
    text = str(ep)
    assert text.startswith("ExportedProgram:") and "ember.export.prims.matmul" in text
    assert "Graph signature:" in text and 'input_1: "f32[3, 4]"' in text


def test_module_keeps_state_dict_keys_and_output_structure():
    class TwoHeads(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = ember.nn.Linear(3, 3)
            self.register_buffer("scale", ember.full((3,), 2.0), persistent=False)

        def forward(self, x, pair):
            h = self.body(x) * self.scale
            return {"sum": h + pair[0], "diff": h - pair[1]}, 7

    model = TwoHeads()
    args = (ember.randn(2, 3), (ember.randn(2, 3), ember.randn(2, 3)))
    ep = ember.export.export(model, args)
    assert sorted(ep.module().state_dict()) == ["body.bias", "body.weight"]
    assert "scale" in ep.constants and ep.graph_signature.non_persistent_buffers == ("scale",)
    got, seven = ep.module()(*args)
    want, _ = model(*args)
    assert seven == 7 and list(got) == ["sum", "diff"]
    for key in want:
        np.testing.assert_allclose(got[key].detach().numpy(), want[key].detach().numpy())


def test_lifted_constant_and_run_decompositions():
    class Shift(ember.nn.Module):
        def forward(self, x):
            return x * 2 + 1

    ep = ember.export.export(Shift(), (ember.randn(3),))
    assert ep.graph_signature.lifted_tensor_constants == ("lifted_tensor_0", "lifted_tensor_1")
    again = ep.run_decompositions()
    assert again.graph_module is not ep.graph_module and str(again) == str(ep)
    with pytest.raises(ValueError, match="decompose no further"):
        ep.run_decompositions({"relu": None})
    with pytest.raises(RuntimeError, match="use `exported_program.module"):
        ep(ember.randn(3))


def test_parameters_and_buffers_of_the_program():
    model = _make(ember.nn)
    ep = ember.export.export(model, (ember.randn(5, 4),))
    assert [k for k, _ in ep.named_parameters()] == [k for k, _ in model.named_parameters()]
    assert all(a is b for a, b in zip(ep.parameters(), model.parameters()))
    assert [k for k, _ in ep.named_buffers()] == [k for k, _ in model.named_buffers()]


def _tied(nn):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.decoder = nn.Linear(3, 3), nn.Linear(3, 3)
            self.decoder.weight = self.encoder.weight
            self.shared = self.head = nn.Linear(3, 2)

        def forward(self, x):
            return self.head(self.decoder(self.encoder(x))) + self.shared.bias

    return Tied()


def test_tied_weights_keep_every_key_as_torch():
    model = _tied(ember.nn)
    ep = ember.export.export(model, (ember.randn(2, 3),))
    tp = torch.export.export(_tied(torch.nn), (torch.randn(2, 3),))
    assert _signature(ep) == _signature(tp)
    assert list(ep.state_dict) == list(tp.state_dict)
    m = ep.module()
    assert sorted(m.state_dict()) == sorted(model.state_dict())
    m.load_state_dict(model.state_dict())  # (strict: no key missing or unexpected)
    assert m.decoder.weight is m.encoder.weight
    assert_same_as_eager(model, m, ember.randn(2, 3))
    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    buffer.seek(0)
    loaded = ember.export.load(buffer)
    assert list(loaded.state_dict) == list(ep.state_dict)
    assert loaded.state_dict["decoder.weight"] is loaded.state_dict["encoder.weight"]


def test_module_called_with_missing_or_unknown_arguments_says_so():
    class Masked(ember.nn.Module):
        def forward(self, input, mask):
            return input * mask

    m = ember.export.export(Masked(), (ember.ones(2), ember.ones(2))).module()
    np.testing.assert_allclose(m(ember.ones(2), mask=ember.ones(2)).numpy(), 1.0)
    np.testing.assert_allclose(m(input=ember.ones(2), mask=ember.ones(2)).numpy(), 1.0)
    with pytest.raises(TypeError, match="missing a required argument: 'mask'"):
        m(ember.ones(2))
    with pytest.raises(TypeError, match="unexpected keyword argument 'maks'"):
        m(ember.ones(2), ember.ones(2), maks=ember.ones(2))
    with pytest.raises(TypeError, match="too many positional arguments"):
        m(ember.ones(2), ember.ones(2), ember.ones(2))


def test_module_refuses_inputs_of_another_structure_as_torch():
    # (an element or key more than the example's was silently ignored; torch: ValueError)
    class Nested(ember.nn.Module):
        def forward(self, pair, opts):
            return pair[0] + pair[1] * opts["b"]

    def call(lib, module, pair, opts):
        with pytest.raises(ValueError, match=None if lib is torch else "example's structure"):
            module(pair, opts)

    for lib in (ember, torch):
        nn = ember.nn if lib is ember else torch.nn
        model = type("Nested", (nn.Module,), {"forward": Nested.forward})()
        one = lib.ones(2)
        export = ember.export.export if lib is ember else torch.export.export
        m = export(model, ((one, one), {"b": one})).module()
        assert m((one, one), {"b": one}).tolist() == [2.0, 2.0]
        call(lib, m, (one, one, one), {"b": one})
        call(lib, m, (one,), {"b": one})
        call(lib, m, (one, one), {"b": one, "c": one})
        call(lib, m, (one, one), {"c": one})


def test_module_refuses_train_and_eval_as_torch():
    model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Dropout(0.5)).train()
    m = ember.export.export(model, (ember.randn(3, 2),)).module()
    for switch in (m.eval, m.train):  # (the dropout is in the graph: no mode would drop it)
        with pytest.raises(NotImplementedError, match="export the model again in eval"):
            switch()
    assert isinstance(m, ember.fx.GraphModule)


def test_a_copy_of_the_module_keeps_its_guards_and_class():
    ep = ember.export.export(ember.nn.Linear(3, 2), (ember.randn(4, 3),))
    m = copy.deepcopy(ep.module())
    assert m(ember.randn(4, 3)).shape == (4, 2)
    with pytest.raises(ember.export.GuardError, match=r"size\(\)\[1\] == 3"):
        m(ember.randn(4, 5))
    with pytest.raises(NotImplementedError):
        m.eval()


def _holding_constants(nn, torch_like):
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.offset = torch_like.ones(3) * 3
            self.sub = nn.Module()
            self.sub.table = torch_like.arange(3.0)

        def forward(self, x):
            return x + self.offset + self.sub.table

    return Holder()


def test_tensor_attributes_are_constants_named_by_their_path_as_torch():
    ep = ember.export.export(_holding_constants(ember.nn, ember), (ember.randn(3),))
    tp = torch.export.export(_holding_constants(torch.nn, torch), (torch.randn(3),))
    want = [(s.kind.name, s.arg.name, s.target) for s in tp.graph_signature.input_specs]
    assert [(s.kind.name, s.arg.name, s.target)
            for s in ep.graph_signature.input_specs] == want
    assert sorted(ep.constants) == sorted(tp.constants) == ["offset", "sub.table"]


def test_module_takes_a_defaulted_argument_before_a_given_one_as_torch():
    class Scaled(ember.nn.Module):
        def forward(self, x, scale=2, *, mask=None):
            return x * scale * mask

    m = ember.export.export(Scaled(), (ember.ones(2),), {"mask": ember.ones(2)}).module()
    np.testing.assert_allclose(m(ember.ones(2), mask=ember.ones(2)).numpy(), 2.0)
    np.testing.assert_allclose(m(ember.ones(2), 2, mask=ember.ones(2)).numpy(), 2.0)
    with pytest.raises(TypeError, match="missing a required argument: 'mask'"):
        m(ember.ones(2))
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        m(ember.ones(2), x=ember.ones(2), mask=ember.ones(2))


class _Delay(ember.nn.Module):
    """Returns the buffer it held, then holds its input."""

    def __init__(self):
        super().__init__()
        self.register_buffer("buf", ember.zeros(3))

    def forward(self, x):
        out = self.buf
        self.buf = x.clone()
        return out


def test_a_buffer_returned_before_it_is_rebound_keeps_its_old_value():
    program = ember.export.export(_Delay(), (ember.ones(3),)).module()
    eager = _Delay()
    with ember.no_grad():
        for i in range(1, 4):
            x = ember.full((3,), float(i))
            np.testing.assert_array_equal(program(x).numpy(), eager(x).numpy())
    np.testing.assert_array_equal(program.buf.numpy(), eager.buf.numpy())


def test_symbolic_trace_of_the_exported_module_records_its_primitives():
    # torch.fx.symbolic_trace(ep.module()) records the aten calls; Ember's prims, buffer
    # writes (train-mode BatchNorm) and dynamic sizes are recorded the same way
    model = ember.nn.Sequential(ember.nn.Conv2d(1, 4, 3), ember.nn.BatchNorm2d(4),
                                ember.nn.ReLU(), ember.nn.Flatten(), ember.nn.Linear(144, 3))
    x = ember.randn(2, 1, 8, 8)
    ep = ember.export.export(copy.deepcopy(model).train(), (x,),
                             dynamic_shapes=({0: ember.export.Dim("b")},))
    traced = ember.fx.symbolic_trace(ep.module())
    targets = {getattr(n.target, "__name__", None) for n in traced.graph.nodes}
    assert {"conv", "relu", "assign_buffer"} <= targets
    x5 = ember.randn(5, 1, 8, 8)
    np.testing.assert_allclose(traced(x5).detach().numpy(), model.train()(x5).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(traced.get_submodule("1").running_mean.numpy(),
                               model[1].running_mean.numpy(), rtol=1e-6)


@dataclasses.dataclass
class _Inputs:
    x: ember.Tensor
    y: ember.Tensor


class _AddFields(ember.nn.Module):
    def forward(self, d, pair=None):
        return d.x + d.y


def test_an_argument_of_another_class_is_refused_naming_what_to_pass():
    """It said "argument d holds a _Inputs" and no more; torch's error names
    register_dataclass, which Ember has not got: this one says what to pass instead."""
    with pytest.raises(ember.export.ExportError,
                       match=r"argument d holds a tests.export.test_program._Inputs \(a "
                             r"dataclass\).*register_dataclass.*"
                             r"Hint: pass its fields \(x, y\)"):
        ember.export.export(_AddFields(), (_Inputs(ember.randn(3), ember.randn(3)),))
    with pytest.raises(ember.export.ExportError,
                       match=r"argument pair\[1\] holds a numpy.ndarray.*ember.from_numpy"):
        ember.export.export(_AddFields(), ({"x": 1, "y": 2}, (1, np.ones(2))))


def test_a_registered_dataclass_argument_is_refused_saying_registration_does_not_help():
    """It said "Ember has no such registration for inputs", though
    ember.utils._pytree.register_dataclass exists (export still refuses such inputs)."""
    from ember.utils._pytree import register_dataclass

    @dataclasses.dataclass
    class Registered:
        x: ember.Tensor
        y: ember.Tensor

    register_dataclass(Registered)
    with pytest.raises(ember.export.ExportError,
                       match=r"holds a .*Registered \(a dataclass\).*does not, even one "
                             r"registered with ember.utils._pytree.register_dataclass.*"
                             r"Hint: pass its fields \(x, y\)"):
        ember.export.export(_AddFields(), (Registered(ember.randn(3), ember.randn(3)),))


def test_a_torch_tensor_argument_is_named_with_its_module_and_what_to_pass():
    """It said "holds a Tensor" (read as Ember's) and hinted "pass the tensors it holds in a
    tuple, list or dict"; "a ndarray" for an array."""
    with pytest.raises(ember.export.ExportError) as err:
        ember.export.export(_AddFields(), ({"x": 1, "y": 2}, (1, torch.ones(3))))
    message = str(err.value)
    assert "pair[1] holds a torch.Tensor; export takes Ember tensors" in message
    assert "Hint: pass ember.tensor(t.numpy())" in message
    assert "register_dataclass" not in message
    with pytest.raises(ember.export.ExportError, match=r"holds an? numpy.ndarray; export"):
        ember.export.export(_AddFields(), ({"x": 1, "y": 2}, (1, np.ones(2))))


_Pair = collections.namedtuple("_Pair", "a b")


def _pair_model(nn):
    class PairModel(nn.Module):
        def forward(self, p, q, d):
            return p.a * p.b + q[0] + d["k"]
    return PairModel()


def test_placeholders_of_a_namedtuple_are_named_by_its_fields_as_torch():
    """They were p_0, p_1 (by position); torch names them p_a, p_b."""
    def args(lib):
        return (_Pair(lib.ones(3), lib.ones(3)), (lib.ones(3),), {"k": lib.ones(3)})

    ep = ember.export.export(_pair_model(ember.nn), args(ember))
    tp = torch.export.export(_pair_model(torch.nn), args(torch))
    assert ep.graph_signature.user_inputs == tp.graph_signature.user_inputs == \
        ("p_a", "p_b", "q_0", "d_k")
    assert ep.module()(*args(ember)).tolist() == [3.0, 3.0, 3.0]
