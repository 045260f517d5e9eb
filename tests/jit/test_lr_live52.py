"""An lr read after a scheduler's step inside a compiled step and only returned (for logging)
compiles (jit52): each call returns the lr as that call's step left it, as eager does; read
any other way, the call still runs the plain function."""

import warnings

import pytest

import ember
from ember import jit, nn


def _make(ret: str, cosine: bool = False):
    """A training step stepping SGD and a scheduler (lr halved at every call, or cosine),
    returning what ``ret`` (the body's last line) says."""
    ember.manual_seed(0)
    m = nn.Linear(4, 2)
    o = ember.optim.SGD(m.parameters(), lr=1.0, momentum=0.5)
    s = ember.optim.lr_scheduler.CosineAnnealingLR(o, 10) if cosine else \
        ember.optim.lr_scheduler.StepLR(o, 1, 0.5)
    x = ember.ones(3, 4)
    scope = {"o": o, "s": s, "m": m, "x": x, "helper": lambda o: o.param_groups[0]["lr"],
             "step_s": lambda: s.step()}
    if "s2" in ret:  # (a second scheduler chained by hand, as PyTorch's docs show)
        scope["s2"] = ember.optim.lr_scheduler.ExponentialLR(o, 0.9)
    exec("def step():\n"
         "    o.zero_grad()\n    loss = m(x).sum()\n    loss.backward()\n"
         f"    o.step()\n    s.step()\n    {ret}\n", scope)
    return scope["step"], m


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, ember.Tensor) else value


def _run(ret: str, cosine: bool = False, calls: int = 6):
    (e, me), (c, mc) = _make(ret, cosine), _make(ret, cosine)
    c = jit.compile(c)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = [c() for _ in range(calls)]
    want = [e() for _ in range(calls)]
    assert _plain(got) == _plain(want)
    assert ember.equal(me.weight, mc.weight) and ember.equal(me.bias, mc.bias)
    return c, got, [str(m.message) for m in w if "ember.jit" in str(m.message)]


RETURNED = ["return loss, o.param_groups[0]['lr']",
            "return loss, s.get_last_lr()[0]",
            "return loss, s.get_last_lr()",
            "return {'lr': o.param_groups[-1]['lr'], 'loss': loss}",
            "return loss, o.param_groups[0]['momentum']",
            "return (loss, (s.get_last_lr()[0],))",
            "lr = o.param_groups[0]['lr']\n    out = (loss, [lr])\n    return out",
            "lrs = s.get_last_lr()\n    out = lrs\n    return loss, out"]


@pytest.mark.parametrize("cosine", [False, True])
@pytest.mark.parametrize("ret", RETURNED)
def test_lr_only_returned_compiles_and_moves_every_call(ret, cosine):
    c, got, warned = _run(ret, cosine)
    assert c.last.eager is None and not warned
    assert c.traces <= 2  # (first call, .grad set: not one per lr)
    lrs = [_plain(g)["lr"] if isinstance(g, dict) else _plain(g)[1] for g in got]
    assert all(type(x) is float for x in ember.utils._pytree.tree_flatten(lrs)[0])
    if "momentum" not in ret:
        assert len({str(x) for x in lrs}) == len(lrs)  # (a new lr at every call)


@pytest.mark.parametrize("ret", [
    "lr = o.param_groups[0]['lr']\n    print(lr)\n    return loss, lr",
    "lr = o.param_groups[0]['lr']\n    loss = loss * lr\n    return loss, lr",
    "lr = s.get_last_lr()[0]\n    for _ in range(2):\n        pass\n    return loss, lr",
    "lr = s.get_last_lr()[0]\n    return loss, locals()['lr'] * 2",
    "return loss * o.param_groups[0]['lr'], 0",
    "return loss, helper(o)",  # (a helper's return: its caller may use it)
    "import numpy as np\n    return loss, np.asarray(s.get_last_lr())",
    "return loss, (o.param_groups[0]['lr'] if o else 0)",
    "return loss, o.param_groups[0]['lr'], s.get_last_lr()[0] * 2",
    # (the lr changed after the read, before the return: the value as read, not as at the end)
    "lr = o.param_groups[0]['lr']\n    s2.step()\n    return loss, lr",
    "lr = s.get_last_lr()[0]\n    s2.step()\n    return loss, lr",
    "lr = s.get_last_lr()[0]\n    s.step()\n    return loss, lr",
    "lrs = s.get_last_lr()\n    s.step()\n    return loss, lrs",
    "lr = s.get_last_lr()[0]\n    _ = [s.step() for _ in range(1)]\n    return loss, lr",
    "lr = o.param_groups[0]['lr']\n    (lambda: s.step())()\n    return loss, lr",
    "lr = o.param_groups[0]['lr']\n    step_s()\n    return loss, lr",
    "lr = s.get_last_lr()[0]\n    s.base_lrs[0] = 7.0\n    s.step()\n    return loss, lr",
    "lr = o.param_groups[0]['lr']\n    g = o.param_groups\n    g[0]['lr'] = 0.01\n"
    "    return loss, lr",
    "lr = o.param_groups[0]['lr']\n    loss = loss.detach()\n    return loss, lr",
    "return {o.param_groups[0]['lr']: loss}",  # (a dict's key: structure, not a leaf)
])
def test_lr_used_otherwise_still_runs_eagerly(ret):
    c, _, warned = _run(ret)
    assert c.last.eager is not None
    assert any("after a scheduler's step" in m for m in warned)


def test_a_compiled_step_called_inside_another_one_trace_returns_no_live_lr():
    # (the inner function's return value is the outer code's to use: it multiplies it)
    def make():
        ember.manual_seed(0)
        m = nn.Linear(4, 2)
        o = ember.optim.SGD(m.parameters(), lr=1.0)
        s = ember.optim.lr_scheduler.StepLR(o, 1, 0.5)
        x = ember.ones(3, 4)

        def inner():
            o.zero_grad()
            loss = m(x).sum()
            loss.backward()
            o.step()
            s.step()
            return loss, o.param_groups[0]["lr"]

        return inner, x

    (e_inner, ex), (c_inner, cx) = make(), make()
    c_inner = jit.compile(c_inner)

    def outer(inner, x):
        loss, lr = inner()
        return loss.detach() + x.sum() * lr

    c_outer = jit.compile(lambda: outer(c_inner, cx))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = [c_outer().item() for _ in range(5)]
    assert got == [outer(e_inner, ex).item() for _ in range(5)]


@pytest.mark.parametrize("rebind", [False, True])
@pytest.mark.parametrize("body", [
    "s.step()\n    return loss, s.get_last_lr()",
    "lrs = s.get_last_lr()\n    s.step()\n    return loss, lrs",  # (the list before the step)
])
def test_a_whole_get_last_lr_list_with_the_scheduler_rebound_or_not(body, rebind):
    # (the retrace's reach did not name a rebound scheduler: its get_last_lr() was baked; a
    # list read whole before the step was no input: baked too)
    def make():
        ember.manual_seed(0)
        m = nn.Linear(4, 2)
        o = ember.optim.SGD(m.parameters(), lr=1.0)
        scope = {"m": m, "o": o, "s": ember.optim.lr_scheduler.StepLR(o, 1, 0.5),
                 "x": ember.ones(3, 4)}
        exec("def step():\n    o.zero_grad()\n    loss = m(x).sum()\n    loss.backward()\n"
             f"    o.step()\n    {body}\n", scope)
        return scope

    def run(scope, step):
        out = []
        for i in range(5):
            out.append(_plain(step()))
            if i == 1 and rebind:
                scope["s"] = ember.optim.lr_scheduler.StepLR(scope["o"], 1, 0.1)
        return out

    e, c = make(), make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(c, jit.compile(c["step"])) == run(e, e["step"])
