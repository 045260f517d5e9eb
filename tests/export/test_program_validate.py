"""ExportedProgram.validate() and the graph signature's other fields, against torch.export's:
a fresh program validates, and each edit that makes graph, signature and state disagree is a
SpecViolationError in both."""

import pytest

import ember
from ember.export.verifier import SpecViolationError

torch = pytest.importorskip("torch")
from torch._export.verifier import SpecViolationError as TorchSpecViolationError  # noqa: E402


def _model(nn):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.bn = nn.BatchNorm1d(3)
            lib = torch if nn is torch.nn else ember
            self.register_buffer("table", lib.ones(3), persistent=False)

        def forward(self, x):
            return self.bn(self.fc(x)) + self.table
    return Model()


def _programs():
    return (ember.export.export(_model(ember.nn), (ember.randn(4, 3),)),
            torch.export.export(_model(torch.nn), (torch.randn(4, 3),)))


def _placeholders(ep):
    return [n for n in ep.graph.nodes if n.op == "placeholder"]


def _drop_parameter(ep):
    del ep.state_dict["fc.bias"]


def _persistent_buffer_as_non_persistent(ep):
    ep.state_dict["table"] = ep.constants["table"]


def _extra_placeholder(ep):
    with ep.graph.inserting_before(_placeholders(ep)[0]):
        ep.graph.placeholder("extra")


def _renamed_placeholder(ep):
    _placeholders(ep)[-1].name = "renamed"


def _extra_output(ep):
    out = ep.graph.output_node()
    out.args = (tuple(out.args[0]) + (_placeholders(ep)[-1],),)


EDITS = [_drop_parameter, _persistent_buffer_as_non_persistent, _extra_placeholder,
         _renamed_placeholder, _extra_output]


def test_a_fresh_program_validates_as_in_torch():
    for ep in _programs():
        ep.validate()
        ep.run_decompositions().validate()


@pytest.mark.parametrize("edit", EDITS, ids=lambda f: f.__name__)
def test_an_edit_that_breaks_the_program_is_a_spec_violation_as_in_torch(edit):
    ours, theirs = _programs()
    for ep, error in ((ours, SpecViolationError), (theirs, TorchSpecViolationError)):
        edit(ep)
        with pytest.raises(error):
            ep.validate()


def test_renaming_a_value_in_graph_and_signature_keeps_it_valid():
    for ep in _programs():
        node = _placeholders(ep)[-1]
        old, node.name = node.name, "renamed"
        ep.graph_signature.replace_all_uses(old, "renamed")
        ep.validate()
        assert ep.graph_signature.user_inputs == ("renamed",)


def test_signature_fields_ember_never_fills_are_torchs_empty_values():
    ours, theirs = (ep.graph_signature for ep in _programs())
    for field in ("user_inputs_to_mutate", "parameters_to_mutate",
                  "inputs_to_lifted_custom_objs", "lifted_custom_objs", "input_tokens",
                  "output_tokens", "backward_signature", "assertion_dep_token"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert ours.non_persistent_buffers == theirs.non_persistent_buffers == ("table",)
    ep = _programs()[0]
    assert ep.tensor_constants is ep.constants


def _dynamic(lib):
    class Model(lib.nn.Module):
        def forward(self, x):
            t = x.shape[1]
            return (x + lib.ones(t, t) + lib.arange(t)).reshape(-1) * 2

    return Model()


def test_a_fresh_program_with_dynamic_sizes_validates_as_in_torch():
    # (its graph calls sym_size, full, arange and size arithmetic besides primitives;
    # validate() refused them: SpecViolationError 'arange ... is not a primitive')
    for lib in (torch, ember):
        t = lib.export.Dim("t", max=64)
        ep = lib.export.export(_dynamic(lib), (lib.randn(3, 5, 5),),
                               dynamic_shapes=({0: lib.export.Dim("b"), 1: t, 2: t},))
        ep.validate()
    targets = {getattr(n.target, "__name__", None) for n in ep.graph.nodes}
    assert {"sym_size", "arange", "mul"} <= targets
