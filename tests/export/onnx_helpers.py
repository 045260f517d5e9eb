"""Helpers of the ONNX export tests: export, check the model, run it in onnxruntime and
compare with Ember's eager output."""

from __future__ import annotations

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def run_onnx(proto, *arrays):
    """The model's outputs on ``arrays`` (fed in input order) in onnxruntime's CPU provider."""
    session = ort.InferenceSession(proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, arrays)))


def eager(fn, *args):
    with ember.no_grad():
        out = fn(*args)
    outs = out if isinstance(out, tuple | list) else (out,)
    return [o.numpy() for o in outs]


def matches_eager_over_lengths(proto, fn, lengths):
    """onnxruntime's first output of ``proto`` equals eager ``fn``'s on a random (3, t, 4)
    input for each length ``t`` of ``lengths`` (the exported axis 1 is dynamic)."""
    for t in lengths:
        x = np.random.default_rng(t).standard_normal((3, t, 4)).astype(np.float32)
        np.testing.assert_allclose(run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0],
                                   rtol=1e-5, atol=1e-5)


def check_seeded_export(fn, x, seed):
    """``fn`` draws random numbers (a module built in the call): exported after
    ``manual_seed(seed)``, onnxruntime gives what an eager call after the same seed gives."""
    ember.manual_seed(seed)
    proto = ember.onnx.to_model(fn, (x,))
    ember.manual_seed(seed)
    want = fn(x).detach().numpy()
    np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], want, rtol=1e-5, atol=1e-6)


def grown(args, extra=1):
    """``args`` with dimension 0 of every tensor longer by ``extra`` (repeating entries)."""
    out = []
    for a in args:
        array = a.numpy()
        index = np.arange(array.shape[0] + extra) % array.shape[0]
        out.append(ember.tensor(array[index], dtype=a.dtype))
    return out


def check_export(fn, *args, dynamic_batch=False, rtol=1e-5, atol=1e-6, **kwargs):
    """Exports ``fn`` on ``args``, checks the model and compares onnxruntime with eager; with
    ``dynamic_batch`` dimension 0 of every input is dynamic and a longer batch is run too."""
    if dynamic_batch:
        names = [f"in{i}" for i in range(len(args))]
        kwargs.update(input_names=names, dynamic_axes={n: {0: "batch"} for n in names})
    proto = ember.onnx.to_model(fn, args, **kwargs)
    onnx.checker.check_model(proto, full_check=True)
    feeds = [args] + ([grown(args)] if dynamic_batch else [])
    for inputs in feeds:
        got = run_onnx(proto, *(a.numpy() for a in inputs))
        want = eager(fn, *inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return proto


class Counter(ember.nn.Module):
    """A step counter registered lazily in the first call: the model's state after it (a
    write an export must keep, or refuse, never fold into a constant)."""

    def forward(self, x):
        if not hasattr(self, "steps"):
            self.register_buffer("steps", ember.zeros(()))
        self.steps.add_(1.0)
        return x * self.steps
