"""torch.jit's TorchScript names (script, is_scripting, is_tracing, ignore, unused, export,
annotate, Final): model code written for TorchScript runs under Ember, with torch's values."""
import typing

import numpy as np
import pytest
import torch

import ember


def _gelu_torch(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


def _gelu_ember(x):
    return x * 0.5 * (1.0 + ember.erf(x / 1.41421))


def test_script_function_matches_torch():
    x = np.linspace(-2, 2, 7).astype(np.float32)
    want = torch.jit.script(_gelu_torch)(torch.tensor(x))
    got = ember.jit.script(_gelu_ember)(ember.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)


def test_script_module_matches_torch_and_keeps_training():
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    em = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU(), ember.nn.Linear(3, 2))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    ts, es = torch.jit.script(tm), ember.jit.script(em)
    np.testing.assert_allclose(es(ember.tensor(x)).detach().numpy(),
                               ts(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    es(ember.tensor(x)).sum().backward()
    ts(torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(em[0].weight.grad.numpy(), tm[0].weight.grad.numpy(), rtol=1e-5)


def test_script_gives_classes_back_and_refuses_values():
    class Point:
        pass
    assert ember.jit.script(Point) is Point
    with pytest.raises(TypeError, match="function or an nn.Module"):
        ember.jit.script(3)


def _negate(v):
    return -v


def test_markers_behave_as_torch_outside_torchscript():
    for jit in (torch.jit, ember.jit):
        assert jit.is_scripting() is False
        assert jit.is_tracing() is False
        assert jit.ignore(_negate)(-1) == 1
        assert jit.unused(_negate)(-3) == 3
        assert jit.export(_negate)(-4) == 4
        assert jit.annotate(list[int], [5]) == [5]
        assert jit.Final is typing.Final
    assert ember.jit.ignore(drop=True)(_negate)(-2) == 2  # torch's warns it is deprecated


def test_is_tracing_is_true_while_a_compiled_function_traces():
    seen = []

    @ember.compile
    def f(x):
        seen.append(ember.jit.is_tracing())
        return x + 1

    f(ember.ones(2))
    assert seen[0] is True and ember.jit.is_tracing() is False


def test_traced_and_scripted_save_as_torch_after_calls_with_grad(tmp_path):
    torch.manual_seed(0)
    tm = torch.nn.Linear(4, 2)
    em = ember.nn.Linear(4, 2)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.ones((3, 4), np.float32)
    ttraced, etraced = torch.jit.trace(tm, torch.tensor(x)), ember.jit.trace(em, ember.tensor(x))
    assert isinstance(etraced, ember.jit.ScriptModule)
    ttraced(torch.tensor(x)).sum().backward()  # a call with grad between trace and save
    etraced(ember.tensor(x)).sum().backward()
    ttraced.save(str(tmp_path / "t.pt"))
    etraced.save(str(tmp_path / "e.ejit"))
    want = torch.jit.load(str(tmp_path / "t.pt"))(torch.tensor(x)).detach().numpy()
    got = ember.jit.load(str(tmp_path / "e.ejit"))(ember.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    scripted = ember.jit.script(em)
    with ember.no_grad():
        scripted(ember.tensor(x))
    scripted.save(str(tmp_path / "s.ejit"))
    np.testing.assert_allclose(ember.jit.load(str(tmp_path / "s.ejit"))(ember.tensor(x)).numpy(),
                               want, rtol=1e-6)
