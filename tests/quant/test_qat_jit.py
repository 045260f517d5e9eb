"""A quantization-aware training step compiled with ``ember.jit.compile`` runs as eager: the
fake quantizers are primitives, their switches part of the compiled signature."""

import numpy as np
import pytest

import ember
import ember.ao.quantization as eq
from tests.jit.helpers import training_step


def _qat_model(per_channel: bool):
    ember.manual_seed(0)
    m = ember.nn.Sequential(eq.QuantStub(), ember.nn.Linear(4, 8), ember.nn.ReLU(),
                            ember.nn.Linear(8, 3), eq.DeQuantStub())
    m.qconfig = eq.get_default_qat_qconfig("x86") if per_channel else eq.default_qat_qconfig
    return eq.prepare_qat(m.train())


def _train(compiled: bool, per_channel: bool, switches: dict):
    m = _qat_model(per_channel)
    step = training_step(m, ember.optim.SGD(m.parameters(), lr=0.5))
    run = ember.jit.compile(step) if compiled else step
    x, y = ember.randn(16, 4), ember.tensor(np.arange(16) % 3)
    m(x)  # (observers see data eagerly first)
    losses = []
    for i in range(5):
        if i in switches:
            m.apply(switches[i])
        losses.append(run(x, y).item())
    return losses, [p.detach().numpy() for p in m.parameters()]


@pytest.mark.parametrize("per_channel", [False, True])
def test_compiled_qat_step_with_observers_off_equals_eager(per_channel):
    switches = {0: eq.disable_observer, 3: eq.disable_fake_quant}
    (eager, we), (jit, wj) = (_train(c, per_channel, switches) for c in (False, True))
    np.testing.assert_allclose(jit, eager, rtol=1e-5)
    for a, b in zip(wj, we):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_compiling_with_an_observer_on_says_what_to_do():
    m = _qat_model(False)
    step = ember.jit.compile(lambda x: m(x).sum())
    with pytest.raises(ember.jit.TraceError, match="disable_observer"):
        step(ember.randn(2, 4))


def test_compiling_a_converted_model_says_it_runs_eagerly():
    m = ember.nn.Sequential(eq.QuantStub(), ember.nn.Linear(4, 3), eq.DeQuantStub()).eval()
    m.qconfig = eq.default_qconfig
    prepared = eq.prepare(m)
    prepared(ember.randn(5, 4))
    for model in (eq.convert(prepared), eq.quantize_dynamic(ember.nn.Sequential(
            ember.nn.Linear(4, 3)))):
        with pytest.raises(ember.jit.TraceError, match="run the converted model eagerly"):
            ember.jit.compile(model)(ember.randn(2, 4))
