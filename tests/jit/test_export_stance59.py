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


@pytest.mark.parametrize("switch", [_SWITCHES[2], ember.jit.disable])
def test_export_inside_autocast_captures_the_model_itself_as_torch(switch):
    """torch.export.export inside ``torch.autocast("cpu")`` records no casts (its graph of a
    Linear is one float32 linear); Ember's export captured nothing there ("has not been called
    yet": the call went to a per-autocast-state inner function) (review rm59e item 3)."""
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    m = ember.nn.Linear(4, 3)
    x = ember.randn(2, 4)
    with ember.autocast("cpu"), switch():
        program = ember.export.export(m, (x,))
        onnx_model = ember.onnx.export(m, (x,))
        assert ember.is_autocast_enabled("cpu")  # (set aside while capturing only)
    tm = torch.nn.Linear(4, 3)
    with torch.no_grad():
        tm.weight.copy_(torch.from_numpy(m.weight.detach().numpy()))
        tm.bias.copy_(torch.from_numpy(m.bias.detach().numpy()))
    with torch.autocast("cpu"):
        tprogram = torch.export.export(tm, (torch.from_numpy(x.numpy()),))
    got = program.module()(x)
    want = tprogram.module()(torch.from_numpy(x.numpy())).detach()
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "float32"
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), atol=1e-6)
    assert onnx_model is not None


def test_export_inside_the_profiler_is_a_clear_error():
    """(torch.export works there; Ember's jit runs the model eagerly under the profiler's
    handler, so export captured nothing: "has not been called yet") (mend59e2)."""
    m = ember.nn.Linear(4, 3)
    x = ember.randn(2, 4)
    with ember.profiler.profile(), pytest.raises(ember.export.ExportError,
                                                 match="profiler.*hint: call"):
        ember.export.export(m, (x,))
