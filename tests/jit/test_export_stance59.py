"""``ember.export.export`` and ``ember.onnx.export`` capture the model under every stance of
``ember.compiler.set_stance`` and inside ``ember.jit.disable()``, as torch.export ignores the
stance (review59e item 2)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

_SWITCHES = [lambda s=s: ember.compiler.set_stance(s)
             for s in ("force_eager", "eager_on_recompile", "fail_on_recompile")]


@pytest.mark.parametrize("switch", [*_SWITCHES, ember.jit.disable])
def test_export_and_onnx_ignore_the_stance(switch):
    ember.manual_seed(0)
    m = ember.nn.Linear(3, 2)
    x = ember.randn(2, 3)
    with switch():
        program = ember.export.export(m, (x,))
        onnx_model = ember.onnx.export(m, (x,))
    np.testing.assert_allclose(program.module()(x).detach().numpy(), m(x).detach().numpy(),
                               atol=1e-6)
    assert onnx_model is not None
