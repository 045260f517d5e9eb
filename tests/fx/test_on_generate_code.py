"""``Graph.on_generate_code`` rewrites the generated body's statements, as torch.fx's."""

import torch
import torch.fx

import ember


def _run(fx, lib):
    gm = fx.symbolic_trace(lambda x: lib.relu(x) + 1)
    with gm.graph.on_generate_code(lambda _: lambda body: ["x = x * 2\n", *body]):
        gm.recompile()
        scoped = gm(lib.ones(1)).item()
    gm.recompile()
    restored = gm(lib.ones(1)).item()
    gm.graph.on_generate_code(lambda _: lambda body: [b.replace("+ 1", "+ 5") for b in body])
    gm.recompile()
    return scoped, restored, gm(lib.ones(1)).item()


def test_a_body_transformer_runs_as_torch_fx_and_a_with_restores_the_previous_one():
    assert _run(ember.fx, ember) == _run(torch.fx, torch) == (3.0, 2.0, 6.0)


def test_the_transformer_gets_the_previous_one():
    gm = ember.fx.symbolic_trace(lambda x: x + 1)
    gm.graph.on_generate_code(lambda _: lambda body: ["x = x * 2\n", *body])
    gm.graph.on_generate_code(lambda prev: lambda body: ["x = x - 1\n", *prev(body)])
    gm.recompile()
    assert gm(ember.ones(1)).item() == 1.0  # ((1 - 1) * 2 + 1)
