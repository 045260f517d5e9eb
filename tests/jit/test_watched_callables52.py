"""A compiled function's callables and containers that change between calls (jit52): a
method reassigned on the class or shadowed on the instance, a ``functools.partial``'s bound
arguments, a ``collections.UserDict``/``UserList``'s items: the next call traces again, as
eager Python would run the new code or read the new value."""

import collections
import functools

import numpy as np

import ember
from ember import jit, nn


def _same(make, change, calls: int = 4):
    """Runs ``make()``'s function eagerly and compiled, ``change(i)`` before call i."""
    got = []
    for compiled in (False, True):
        f, state = make()
        g = jit.compile(f) if compiled else f
        out = []
        for i in range(calls):
            change(state, i)
            out.append(np.asarray(g(ember.ones(2)).detach().numpy()).tolist())
        got.append(out)
    assert got[0] == got[1]
    return got[1]


def test_module_forward_reassigned_on_the_class_traces_again():
    def make():
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)

            def forward(self, x):
                return self.lin(x) * 2.0

        ember.manual_seed(0)
        m = M()
        return m, M

    def change(cls, i):
        if i == 2:
            cls.forward = lambda self, x: self.lin(x) * 3.0

    out = _same(make, change)
    assert out[2] != out[1]

    def on_instance(m, i):
        if i == 1:
            m.forward = lambda x: m.lin(x) * 4.0
        if i == 3:
            del m.forward

    out = _same(lambda: (make()[0],) * 2, on_instance)
    assert out[1] != out[0] and out[3] == out[0]


def test_method_reassigned_on_the_class_or_shadowed_on_the_instance():
    def make():
        class Scaler:
            def helper(self, x):
                return x * 2.0

        s = Scaler()
        return (lambda t: s.helper(t)), s

    def on_instance(s, i):
        if i:
            s.helper = lambda x, k=float(i): x * k

    _same(make, on_instance)

    def on_class(s, i):
        if i == 2:
            type(s).helper = lambda self, x: x * 5.0

    assert _same(make, on_class)[2] == [5.0, 5.0]


class _Holder:
    def __init__(self, fn):
        self.fn = fn

    def run(self, x):
        return self.fn(x)


def test_partial_bound_list_argument_mutated():
    def use(c, x):
        return x * c[0]

    def held():
        cfg = [2.0]
        h = _Holder(functools.partial(use, cfg))
        return (lambda t: h.run(t)), cfg

    def keyword():
        cfg = {"k": 2.0}
        p = functools.partial(lambda x, c: x * c["k"], c=cfg)
        return p, cfg

    def set_item(cfg, i):
        cfg[0 if isinstance(cfg, list) else "k"] = float(i + 1)

    _same(held, set_item)
    _same(keyword, set_item)
    _same(lambda: (functools.partial(use, h := [2.0]), h), set_item)  # (compiled itself)


def test_userdict_and_userlist_items_mutated():
    def make_dict():
        u = collections.UserDict({"b": 2.0})
        return (lambda t: t * u["b"] + u.get("c", 0.0)), u

    def make_list():
        u = collections.UserList([2.0])
        return (lambda t: t * u[0]), u

    def set_item(u, i):
        u["b" if isinstance(u, collections.UserDict) else 0] = float(i + 1)

    _same(make_dict, set_item)
    _same(make_list, set_item)
    _same(make_dict, lambda u, i: u.__setitem__("c", float(i)))


def test_partial_keyword_rebound_in_its_keywords_dict():
    # (``p.keywords`` is a plain dict the partial reads at each call: review52c finding 3)
    def held():
        p = functools.partial(lambda x, scale, offs: x * scale["k"] + offs[0],
                              scale={"k": 2.0}, offs=[1.0])
        h = _Holder(p)
        return (lambda t: h.run(t)), p

    def compiled_itself():
        p = functools.partial(lambda x, scale: x * scale["k"], scale={"k": 2.0})
        return p, p

    def rebind(p, i):
        if i:
            p.keywords["scale"] = {"k": 2.0 + i}

    assert len({str(x) for x in _same(held, rebind)}) == 4
    assert len({str(x) for x in _same(compiled_itself, rebind)}) == 4


def test_userdict_data_rebound_then_items_set():
    # (the watch followed the old ``.data`` dict: review52c finding 4)
    def make():
        u = collections.UserDict({"k": 2.0})
        return (lambda t: t * u["k"]), u

    def change(u, i):
        if i == 1:
            u.data = {"k": 5.0}
        if i == 2:
            u["k"] = 7.0
        if i == 3:
            u.data = {"k": 9.0}

    assert [x[0] for x in _same(make, change)] == [2.0, 5.0, 7.0, 9.0]


def test_a_library_layers_forward_set_on_the_instance():
    def make():
        ember.manual_seed(0)
        m = nn.Sequential(nn.Linear(2, 2))
        return m, m

    def change(m, i):
        if i == 1:
            lin, plain = m[0], nn.Linear.forward
            lin.forward = lambda x: plain(lin, x) * 3.0
        if i == 3:
            del m[0].forward

    out = _same(make, change)
    assert out[1] != out[0] and out[3] == out[0]
