"""Custom ops under program capture, against torch: ember.fx records a call as one node;
ember.export's program runs it forward and backward."""

import numpy as np
import torch
import torch.export
import torch.fx

import ember
from tests.library.ops_for_tests import define_pair, define_sin

sin_e = define_sin(ember, ember.library, "emcapture")
sin_t = define_sin(torch, torch.library, "emcapture")
pair_e = define_pair(ember, ember.library, "emcapture")
pair_t = define_pair(torch, torch.library, "emcapture")

X = np.array([[0.3, -1.2, 0.7], [1.5, 0.1, -0.4]], np.float32)


def model(lib, sin, pair):
    class Model(lib.nn.Module):
        def forward(self, x):
            a, b = pair(sin(x), x, 2.0)
            return a * 2 + b

    return Model()


def test_symbolic_trace_records_a_custom_op_call_like_torch():
    gm = ember.fx.symbolic_trace(model(ember, sin_e, pair_e))
    tgm = torch.fx.symbolic_trace(model(torch, sin_t, pair_t))
    ops = [(n.op, n.target) for n in gm.graph.nodes if n.op == "call_function"]
    tops = [(n.op, n.target) for n in tgm.graph.nodes if n.op == "call_function"]
    assert [t for _, t in ops[:2]] == [sin_e, pair_e] and len(ops) == len(tops)
    assert "numpy_sin = ember.ops.emcapture.numpy_sin(x)" in gm.code  # (named after the op)
    np.testing.assert_allclose(gm(ember.tensor(X)).numpy(),
                               tgm(torch.tensor(X)).numpy(), rtol=1e-6)


def test_exported_program_runs_a_custom_op_forward_and_backward_like_torch():
    ep = ember.export.export(model(ember, sin_e, pair_e), (ember.tensor(X),))
    tep = torch.export.export(model(torch, sin_t, pair_t), (torch.tensor(X),))
    x, tx = ember.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    out, tout = ep.module()(x), tep.module()(tx)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)
