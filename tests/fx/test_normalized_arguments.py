"""``Node.normalized_arguments`` (was missing): a call's arguments matched to its target's
signature with the defaults filled in, as torch.fx's (``ember.fx.operator_schemas``)."""

import pytest
import torch
import torch.fx

import ember
import ember.fx


def _model(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 4)

        def forward(self, x):
            u = lib.cat([self.lin(x), x], 1) + 1
            return lib.nn.functional.relu(u).transpose(0, 1), \
                lib.nn.functional.layer_norm(u, (7,), eps=1e-3)
    return M()


def _normalized(lib, fx, only):
    gm = fx.symbolic_trace(_model(lib))
    out = []
    for n in gm.graph.nodes:
        pair = n.normalized_arguments(gm, normalize_to_only_use_kwargs=only)
        out.append((n.op, None if pair is None else
                    (fx.node.map_arg(pair.args, str), fx.node.map_arg(pair.kwargs, str))))
    return out


@pytest.mark.parametrize("only", [False, True])
def test_normalized_arguments_as_torch_fx(only):
    assert _normalized(ember, ember.fx, only) == _normalized(torch, torch.fx, only)


def test_normalized_arguments_refuses_what_torch_refuses():
    gm = ember.fx.symbolic_trace(_model(ember))
    lin = next(n for n in gm.graph.nodes if n.op == "call_module")
    with pytest.raises(RuntimeError, match="no submodule 'lin'"):
        lin.normalized_arguments(ember.nn.Module())
    relu = next(n for n in gm.graph.nodes if n.target is ember.nn.functional.relu)
    relu.args = relu.args + (True, 3)
    with pytest.raises(TypeError):  # (as torch's: the signature does not bind)
        relu.normalized_arguments(gm)
    pair = ember.fx.operator_schemas.normalize_function(
        ember.nn.functional.relu, ("x",), normalize_to_only_use_kwargs=True)
    assert pair.args == () and pair.kwargs == {"input": "x", "inplace": False}
