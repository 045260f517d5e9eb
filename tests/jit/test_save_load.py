"""ember.jit.save / load: a compiled graph and its weights round-trip through one file and run
without the Python code that made them."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import ember
import ember.models
from ember import jit
from ember.errors import ArgumentError, CheckpointError


@pytest.mark.parametrize("build, shape", [
    (ember.models.cnn, (2, 1, 28, 28)),
    (lambda: ember.models.resnet18(), (2, 3, 16, 16)),
])
def test_round_trip_runs_the_same_numbers(tmp_path, build, shape):
    ember.manual_seed(0)
    model = build().eval()
    fast = jit.compile(model)
    x = ember.randn(*shape)
    with ember.no_grad():
        expected = model(x).numpy()
        fast(x)
    jit.save(fast, tmp_path / "m.ejit")
    del model, fast
    loaded = jit.load(tmp_path / "m.ejit")
    np.testing.assert_allclose(loaded(x).numpy(), expected, rtol=1e-6, atol=1e-6)
    assert "def ResNet" in loaded.code or "def Sequential" in loaded.code


def test_round_trip_through_a_file_object():
    import io
    ember.manual_seed(0)
    model = ember.models.cnn().eval()
    fast = jit.compile(model)
    x = ember.randn(2, 1, 28, 28)
    with ember.no_grad():
        expected = model(x).numpy()
        fast(x)
    buffer = io.BytesIO()
    jit.save(fast, buffer)  # (load took paths only: os.fspath raised a bare TypeError)
    buffer.seek(0)
    np.testing.assert_allclose(jit.load(buffer)(x).numpy(), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(CheckpointError, match="the file"):
        jit.load(io.BytesIO(b"not a safetensors file"))


def test_a_graph_that_writes_through_views_round_trips(tmp_path):
    def f(x):
        y = x * 1
        y[:, 1:].mul_(2)  # view_scatter's param is the chain of view primitives
        y.t()[0].add_(1)
        return y.exp()
    fast = jit.compile(f)
    x = ember.randn(3, 4)
    with ember.no_grad():
        fast(x)
    jit.save(fast, tmp_path / "views.ejit")
    np.testing.assert_allclose(jit.load(tmp_path / "views.ejit")(x).numpy(), f(x).numpy(),
                               rtol=1e-6)


def test_bfloat16_weights_and_a_wrong_input_shape(tmp_path):
    lin = ember.nn.Linear(3, 2).to(ember.bfloat16)
    fast = jit.compile(lin)
    x = ember.randn(4, 3).to(ember.bfloat16)
    with ember.no_grad():
        expected = lin(x).float().numpy()
        fast(x)
    jit.save(fast, tmp_path / "bf.ejit")
    loaded = jit.load(tmp_path / "bf.ejit")
    np.testing.assert_array_equal(loaded(x).float().numpy(), expected)
    with pytest.raises(ValueError, match=r"compiled for inputs \(\(4, 3\) bfloat16\)"):
        loaded(ember.randn(5, 3))


def test_training_steps_and_foreign_files_are_refused_clearly(tmp_path):
    w = ember.randn(3, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)

    def step():
        (w * w).sum().backward()
        opt.step()
        opt.zero_grad()
    fast = jit.compile(step)
    fast()
    with pytest.raises(ValueError, match="SGD.step"):
        jit.save(fast, tmp_path / "step.ejit")
    ember.io.save_file({"w": ember.ones(2)}, tmp_path / "plain.safetensors")
    with pytest.raises(CheckpointError, match="no compiled graph"):
        jit.load(tmp_path / "plain.safetensors")
    (tmp_path / "junk.ejit").write_bytes(b"\x00" * 20)
    with pytest.raises(CheckpointError, match="junk.ejit"):
        jit.load(tmp_path / "junk.ejit")


def test_the_file_is_safetensors_with_the_graph_as_json(tmp_path):
    from safetensors import safe_open

    fast = jit.compile(lambda x: (x * 3).exp())
    fast(ember.ones(2))
    jit.save(fast, tmp_path / "f.ejit")
    with safe_open(str(tmp_path / "f.ejit"), framework="numpy") as f:
        doc = json.loads(f.metadata()["ember.jit"])
    assert [e["prim"] for e in doc["eqns"]] == ["mul", "exp"]


def test_differentiable_calls_and_closures_are_refused_clearly(tmp_path):
    lin = ember.nn.Linear(3, 2)
    fast = jit.compile(lin)
    fast(ember.randn(2, 3))  # grad on: a differentiable call (forward + saved values)
    with pytest.raises(ValueError, match="differentiable call"):
        jit.save(fast, tmp_path / "d.ejit")
    opt = ember.optim.SGD(lin.parameters(), lr=0.1)

    def step(x):
        return opt.step(lambda: lin(x).sum())
    with pytest.raises(jit.TraceError, match="closure"):
        jit.compile(step)(ember.randn(2, 3))


def test_trace_then_save_as_torch_jit(tmp_path):
    ember.manual_seed(0)
    model = ember.models.cnn().eval()
    x = ember.randn(2, 1, 28, 28)
    traced = jit.trace(model, x)
    jit.save(traced, tmp_path / "m.ejit")          # traced without grad: saves at once
    np.testing.assert_allclose(jit.load(tmp_path / "m.ejit")(x).numpy(),
                               model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert traced(ember.randn(3, 1, 28, 28)).shape == (3, 10)   # a new shape retraces


def test_trace_checks_the_graph_against_python():
    drop = ember.nn.Sequential(ember.nn.Linear(8, 8), ember.nn.Dropout(0.5))   # train mode
    with pytest.warns(jit.TracerWarning, match="output 0 .*differs.*eval"):
        jit.trace(drop, ember.randn(4, 8))
    jit.trace(drop, ember.randn(4, 8), check_trace=False)
    scaled = jit.trace(lambda x, *, k: x * k, example_kwarg_inputs={"x": ember.ones(2), "k": 3})
    assert scaled(x=ember.ones(2), k=3).tolist() == [3.0, 3.0]


def test_trace_takes_torch_jit_traces_other_arguments():
    double = jit.trace(lambda x, y: x * 2 + y, [ember.ones(2), ember.ones(2)])  # a list: args
    assert double(ember.ones(2), ember.zeros(2)).tolist() == [2.0, 2.0]
    # check_inputs: more argument tuples the graph is checked on
    clip = lambda x: x.clamp(max=float(x.shape[0]))                            # noqa: E731
    jit.trace(clip, ember.ones(3), check_inputs=[(ember.ones(4),)])
    # strict=True (torch's default) refuses list and dict outputs; strict=False returns them
    pair = lambda x: {"a": x, "b": [x * 2]}                                     # noqa: E731
    with pytest.raises(jit.TraceError, match="strict=False"):
        jit.trace(pair, ember.ones(2))
    assert jit.trace(pair, ember.ones(2), strict=False)(ember.ones(2))["b"][0].tolist() == \
        [2.0, 2.0]


def test_a_loaded_graph_refuses_keywords_and_numbers_naming_its_inputs():
    def f(x, *, scale=2.0, bias=None):
        return x * scale + bias
    compiled = jit.compile(f)
    x, b = ember.ones(2), ember.full((2,), 3.0)
    with ember.no_grad():
        compiled(x, scale=3.0, bias=b)
    buf = io.BytesIO()
    jit.save(compiled, buf)
    buf.seek(0)
    run = jit.load(buf)
    assert run(x, b).tolist() == [6.0, 6.0]  # (keyword tensors after the positional ones)
    with pytest.raises(ArgumentError, match=r"\(\(2,\) float32, \(2,\) float32\), got \(\(2,\) "
                                            r"float32\) and keywords \['bias', 'scale'\]"):
        run(x, scale=3.0, bias=b)
    with pytest.raises(ArgumentError, match=r"got \(\(2,\) float32, float\).*traced with"):
        run(x, 3.0)


def test_save_writes_the_graph_of_the_most_recent_call_not_of_the_last_trace():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(4, 4), ember.nn.Dropout(0.5))
    fast = jit.compile(model)
    x = ember.randn(3, 4)
    with ember.no_grad():
        fast.eval()(x)  # eval graph, traced first
        fast.train()(x)  # then a train graph (dropout on)
    fast(x).sum().backward()  # and a differentiable one, traced last
    with ember.no_grad():
        fast.eval()(x)  # the eval graph again, reused: what save writes
    buf = io.BytesIO()
    jit.save(fast, buf)  # (before: the differentiable graph, refused)
    buf.seek(0)
    with ember.no_grad():
        np.testing.assert_array_equal(jit.load(buf)(x).numpy(), model(x).numpy())
