"""``ember.fx.CodeGen`` and ``Graph.set_codegen`` change how ``forward`` is written and called,
as torch.fx's (a ``ListCodeGen`` as in its documentation runs on both)."""

import copy
import pickle

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx as fx
from ember.fx.placeholders import SpecializedArgumentError


def _list_codegen(fx):
    class ListCodeGen(fx.CodeGen):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return (f"def forward(self, args_list){maybe_return_annotation}:\n"
                    f"    {', '.join(free_vars)} = args_list")

        def generate_output(self, output_args):
            return f"return [{output_args!r}]"

        def process_inputs(self, *inputs):
            assert len(inputs) == 1
            return inputs[0]

        def process_outputs(self, outputs):
            return [outputs]

    return ListCodeGen()


def _traced(fx, lib):
    gm = fx.symbolic_trace(lambda a, b: lib.relu(a) * b)
    gm.graph.set_codegen(_list_codegen(fx))
    gm.recompile()
    return gm


def test_a_list_codegen_runs_as_torch_fx_through_forward_and_interpreter():
    a, b = np.array([-1.0, 2.0]), np.array([3.0, 4.0])
    gm, tm = _traced(ember.fx, ember), _traced(torch.fx, torch)
    want = tm([torch.tensor(a), torch.tensor(b)])[0].numpy()
    np.testing.assert_allclose(gm([ember.tensor(a), ember.tensor(b)])[0].numpy(), want)
    out = ember.fx.Interpreter(gm).run([ember.tensor(a), ember.tensor(b)])
    assert isinstance(out, list)
    np.testing.assert_allclose(out[0].numpy(), want)
    assert "args_list" in gm.code


def test_the_codegen_survives_copies_and_transformers():
    gm = _traced(ember.fx, ember)
    x = [ember.tensor([-1.0, 2.0]), ember.tensor([3.0, 4.0])]
    for other in (copy.deepcopy(gm), ember.fx.Transformer(gm).transform()):
        assert other(x)[0].tolist() == [0.0, 8.0]


def test_the_default_codegen_writes_the_usual_forward():
    gm = ember.fx.symbolic_trace(lambda x: x + 1)
    gm.graph.set_codegen(ember.fx.CodeGen())
    gm.recompile()
    assert gm.code.startswith("def forward(self, x):")
    assert gm.graph.process_inputs(1, 2) == (1, 2)


def _hooked_copy_leaves_the_original(fx, lib):
    gm = fx.symbolic_trace(lambda x: x + 1)
    other = copy.deepcopy(gm)
    other.graph.on_generate_code(lambda _: lambda body: ["x = x * 100\n", *body])
    other.recompile()
    gm.recompile()
    return gm(lib.ones(1)).item(), other(lib.ones(1)).item()


def test_a_deepcopy_has_its_own_codegen_as_torch_fx():
    assert _hooked_copy_leaves_the_original(ember.fx, ember) == \
        _hooked_copy_leaves_the_original(torch.fx, torch) == (2.0, 101.0)


def _two_line_output(fx, lib):
    class TwoLines(fx.CodeGen):
        def generate_output(self, output_args):
            return f"out = {output_args!r}\nreturn out * 2"

    gm = fx.symbolic_trace(lambda a: a + 1)
    gm.graph.set_codegen(TwoLines())
    gm.recompile()
    return gm(lib.ones(1)).item()


def test_a_generate_output_of_several_lines_is_indented_as_torch_fx():
    assert _two_line_output(ember.fx, ember) == _two_line_output(torch.fx, torch) == 4.0


def test_a_generate_output_of_several_lines_passes_through_a_body_transformer():
    class TwoLines(ember.fx.CodeGen):
        def generate_output(self, output_args):
            return f"out = {output_args!r}\nreturn out * 2"

    gm = ember.fx.symbolic_trace(lambda a: a + 1)
    gm.graph.set_codegen(TwoLines())
    gm.graph.on_generate_code(lambda _: lambda body: ["a = a * 3\n", *body])
    gm.recompile()
    assert gm(ember.ones(1)).item() == 8.0


def _pickled(fx, lib):
    class Local(fx.CodeGen):  # (a class local to a function does not pickle)
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return f"def forward(self, args):\n    {', '.join(free_vars)}, = args"

        def process_inputs(self, *inputs):
            return inputs[0]

    gm = fx.symbolic_trace(lambda a, b: a * b)
    gm.graph.set_codegen(Local())
    gm.recompile()
    listed = pickle.loads(pickle.dumps(gm))([lib.ones(1) * 2, lib.ones(1) * 3]).item()
    seq = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
    gm = fx.symbolic_trace(seq)
    gm.graph.on_generate_code(lambda _: lambda body: [b.replace("input_1)", "input_1 * 2)")
                                                      for b in body])
    gm.recompile()
    x = lib.ones(1, 2)
    return listed, (pickle.loads(pickle.dumps(gm))(x) - seq(x * 2)).abs().max().item()


def test_a_local_codegen_or_a_kept_transformer_pickles_as_torch_fx():
    assert _pickled(ember.fx, ember) == _pickled(torch.fx, torch) == (6.0, 0.0)


def test_a_retraced_pickle_keeps_the_specialized_check():
    gm = ember.fx.symbolic_trace(lambda x, n: x * n, concrete_args={"n": 2})
    gm.graph.on_generate_code(lambda _: lambda body: body)
    gm.recompile()
    again = pickle.loads(pickle.dumps(gm))
    assert again(ember.ones(1)).item() == 2.0
    with pytest.raises(SpecializedArgumentError):
        again(ember.ones(1), 3)


def test_a_generated_forward_naming_a_local_function_is_refused_clearly():
    def local(x):
        return x + 1

    gm = ember.fx.symbolic_trace(lambda x: x * 2)
    mul = next(n for n in gm.graph.nodes if n.op == "call_function")
    with gm.graph.inserting_after(mul):
        added = gm.graph.call_function(local, (mul,))
    mul.replace_all_uses_with(added, lambda u: u.op == "output")
    gm.graph.on_generate_code(lambda _: lambda body: body)
    gm.recompile()
    with pytest.raises(pickle.PicklingError, match="names local_1 .*Hint: define them at module"):
        pickle.dumps(gm)


def test_a_codegen_starts_with_torch_fxs_fields():
    fields = [(g._body_transformer, g._func_name) for g in (ember.fx.CodeGen(),
                                                          torch.fx.CodeGen())]
    assert fields[0] == fields[1] == (None, "forward")


def _branchy(x):
    return x * 2 if float(x.sum()) > 0 else -x  # (no tracing through it: a Python branch)


fx.wrap("_branchy")


class _Branchy(ember.nn.Module):
    def forward(self, x):
        return _branchy(x).relu()


def test_a_retraced_pickle_keeps_wrapped_functions_as_calls():
    # (unpickling traced into an fx.wrap'ed function: a TraceError here; torch keeps the call)
    gm = fx.symbolic_trace(_Branchy())
    gm.graph.on_generate_code(lambda _: lambda body: body)  # (kept: the forward is pickled)
    gm.recompile()
    again = pickle.loads(pickle.dumps(gm))
    assert any(n.target is _branchy for n in again.graph.nodes)
    for x in (ember.tensor([1.0, -3.0]), ember.tensor([1.0, 3.0])):
        assert again(x).tolist() == gm(x).tolist()
