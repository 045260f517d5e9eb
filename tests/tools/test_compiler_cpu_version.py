"""``ember.compiler``, ``ember.cpu`` (with its deprecated ``amp``) and ``ember.version`` answer
as torch's do (their docstring examples run in test_cuda_namespaces.py)."""

import pytest
import torch

import ember


def test_is_compiling_only_while_tracing():
    seen = []

    @ember.compile
    def f(x):
        seen.append(ember.compiler.is_compiling())
        return x + 1

    f(ember.ones(2))
    f(ember.ones(2))  # the generated code runs: the Python body does not
    assert seen == [True] and not ember.compiler.is_compiling()
    assert ember.compiler.is_dynamo_compiling is ember.compiler.is_compiling


def test_reset_makes_every_compiled_function_trace_again():
    calls = []

    @ember.compile
    def f(x):
        calls.append(1)
        return x * 2

    f(ember.ones(2))
    f(ember.ones(2))
    ember.compiler.reset()
    assert f(ember.ones(2)).tolist() == [2.0, 2.0] and len(calls) == 2


def test_disable_gives_the_uncompiled_function():
    def g(x):
        return x - 1

    assert ember.compiler.disable(ember.compile(g)) is g
    assert ember.compiler.disable(g) is g and ember.compiler.disable()(g) is g


def test_cpu_answers_as_torch():
    for name in ("is_available", "device_count", "current_device"):
        assert getattr(ember.cpu, name)() == getattr(torch.cpu, name)()
    assert ember.cpu.synchronize() is None and ember.cpu.set_device("cpu") is None


@pytest.mark.parametrize("lib", [torch, ember])
def test_deprecated_cpu_amp_warns_and_casts_to_bfloat16(lib):
    with pytest.warns(FutureWarning, match="deprecated"):
        ctx = lib.cpu.amp.autocast()
    with ctx:
        assert lib.nn.Linear(2, 2)(lib.ones(1, 2)).dtype == lib.bfloat16
    with pytest.warns(FutureWarning, match="deprecated"):
        assert lib.cpu.amp.GradScaler().is_enabled()


def test_version_and_top_level_grad_scaler():
    assert ember.version.__version__ == ember.__version__
    assert (ember.version.cuda, ember.version.hip) == (torch.version.cuda, torch.version.hip)
    assert ember.GradScaler is ember.amp.GradScaler


def test_reset_during_a_call_lets_the_call_finish_and_the_next_one_trace():
    traces = []

    @ember.compile
    def inner(x):
        return x + 1

    @ember.compile
    def outer(x):
        traces.append(1)
        y = inner(x)
        ember.compiler.reset()
        return y * 3

    for _ in range(2):
        assert outer(ember.ones(2)).tolist() == [6.0, 6.0]
    assert len(traces) == 2
