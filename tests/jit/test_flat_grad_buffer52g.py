"""A compiled step whose parameters' ``.grad`` are views of one flat gradient buffer
(``p.grad = gflat[a:b].view(p.shape)``, apex/ZeRO style) runs eagerly with a warning, so
backward adds into the buffer as eager's does: reading the buffer, clipping through it
(``gflat.mul_(coef)``) and the optimizer's step give eager's values exactly over several
calls. (A graph gave ``.grad`` new memory: the buffer read 0 and clipping did nothing, or a
``p.grad.zero_()`` loop raised a TraceError.) Plain ``.grad`` compiles as before."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn


def _model(views=True):
    ember.manual_seed(0)
    m = nn.Linear(5, 3)
    ps = list(m.parameters())
    gflat = ember.zeros(sum(p.numel() for p in ps))
    at = 0
    for p in ps:
        p.grad = gflat[at:at + p.numel()].view(p.shape) if views else ember.zeros(p.shape)
        at += p.numel()
    return m, ps, gflat, ember.optim.SGD(ps, lr=0.1)


def _step(m, ps, gflat, opt, zero):
    def step(x):
        if zero == "zero_grad":
            opt.zero_grad(set_to_none=False)
        elif zero == "loop":
            for p in ps:
                p.grad.zero_()
        (m(x) ** 2).sum().backward()
        gn = gflat.norm()
        if zero == "clip":
            opt.zero_grad(set_to_none=False)  # (the clip below sees this call's grads only)
        if zero != "none":
            gflat.mul_((1.0 / (gn + 1e-6)).clamp(max=1.0))  # clip to total norm 1
            opt.step()
        return gn, sum(p.grad.sum() for p in ps)
    return step


def _run(zero, compiled, views=True):
    m, ps, gflat, opt = _model(views)
    step = _step(m, ps, gflat, opt, zero)
    f = ember.jit.compile(step) if compiled else step
    x = ember.ones(4, 5)
    outs = [tuple(float(t) for t in f(x)) for _ in range(3)]
    return outs, gflat.numpy().copy(), nn.utils.parameters_to_vector(ps).detach().numpy(), \
        [np.shares_memory(p.grad.numpy(), gflat.numpy()) for p in ps], f


@pytest.mark.parametrize("zero", ["none", "zero_grad", "loop", "clip"])
def test_grad_views_of_a_flat_buffer_give_eager_values(zero):
    want = _run(zero, False)
    with pytest.warns(UserWarning, match="is a view of another tensor"):
        got = _run(zero, True)
    assert got[0] == want[0]  # (the buffer's norm and the grads' sum, each call)
    np.testing.assert_array_equal(got[1], want[1])  # the buffer
    np.testing.assert_array_equal(got[2], want[2])  # the parameters
    assert got[3] == want[3] == [True, True]  # .grad still views the buffer
    assert "flat gradient buffer" in got[4].last.eager


def test_grads_made_views_after_a_trace_trace_again():
    m, ps, gflat, opt = _model(views=False)
    f = ember.jit.compile(_step(m, ps, gflat, opt, "zero_grad"))
    x = ember.ones(4, 5)
    f(x)
    assert f.last.eager is None  # (plain .grad: compiled)
    at = 0
    for p in ps:
        p.grad = gflat[at:at + p.numel()].view(p.shape)
        at += p.numel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gn, _ = f(x)
    assert f.last.eager is not None
    assert float(gn) > 0 and float(gflat.norm()) > 0


def test_plain_grads_still_compile():
    want = _run("clip", False, views=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _run("clip", True, views=False)
    assert got[4].last.eager is None
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


def test_fullgraph_raises():
    m, ps, gflat, opt = _model()
    f = ember.jit.compile(_step(m, ps, gflat, opt, "none"), fullgraph=True)
    with pytest.raises(ember.jit.TraceError, match="is a view of another tensor"):
        f(ember.ones(4, 5))
    assert float(gflat.norm()) == 0  # (the trace's work rolled back)


def test_grads_sharing_a_buffer_without_a_view_record():
    def run(compiled):
        m = nn.Linear(3, 2)
        buf = np.zeros(8, np.float32)
        gflat = ember.from_numpy(buf)  # (.grad over its memory, as from_numpy makes them)
        m.weight.grad = ember.from_numpy(buf[:6].reshape(2, 3))
        m.bias.grad = ember.from_numpy(buf[6:])

        def step(x):
            m(x).sum().backward()
            return gflat.sum()
        f = ember.jit.compile(step) if compiled else step
        return [float(f(ember.ones(4, 3))) for _ in range(3)]
    with pytest.warns(UserWarning, match="shares memory with gflat"):
        assert run(True) == run(False)


def test_a_trace_error_before_any_grad_is_touched_still_raises():
    m, ps, gflat, opt = _model()

    def step(x):
        n = m(x).sum().item()  # (Python needs the value: a TraceError, .grad untouched)
        m(x).sum().backward()
        return n
    with pytest.raises(ember.jit.TraceError, match="item"):
        ember.jit.compile(step)(ember.ones(4, 5))
