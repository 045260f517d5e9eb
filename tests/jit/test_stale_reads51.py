"""A compiled function gives eager's values over several calls where state it reads changes
between them: a dict the call writes into and then reads, a scheduler's ``get_last_lr()``, a
dict subclass with ``__missing__`` and a ``ChainMap``, a callable stored as an attribute
(``self.t(x)``), and a tensor whose memory another shares with no view record (which runs
eagerly). Python's and NumPy's random numbers warn in a helper, not for a class or a seeded
generator."""

import collections
import random
import warnings

import numpy as np
import pytest
from tests.jit.helpers import like_eager

import ember


def test_a_dict_the_call_writes_into_and_reads_back():
    store, cfg = {}, {"b": 2.0}

    def f(t):
        store["c"] = cfg
        return t * store["c"]["b"]
    like_eager(f, [lambda: None, lambda: cfg.update(b=5.0), lambda: cfg.update(b=7.0)])


def test_a_dict_a_helper_writes_into_and_the_call_reads_back():
    store, cfg = {}, {"b": 2.0}

    def keep(c):
        store["c"] = c

    def f(t):
        keep(cfg)
        return t * store["c"]["b"]
    like_eager(f, [lambda: None, lambda: cfg.update(b=5.0)])


def test_a_fresh_value_stored_and_read_back_does_not_trace_at_every_call():
    store = {}

    def f(t):
        store["h"] = t * 2
        return store["h"] + 1
    g = ember.jit.compile(f)
    assert [g(ember.ones(2) * i).tolist()[0] for i in range(6)] == [1, 3, 5, 7, 9, 11]
    assert g.traces <= 2


def test_a_schedulers_last_lr_read_in_the_call():
    model = ember.nn.Linear(2, 2)
    opt = ember.optim.SGD(model.parameters(), lr=1.0)
    sch = ember.optim.lr_scheduler.StepLR(opt, 1, 0.5)
    like_eager(lambda t: t * sch.get_last_lr()[0], [lambda: None, sch.step, sch.step])


def test_a_schedulers_optimizer_lr_read_in_the_call():
    model = ember.nn.Linear(2, 2)
    opt = ember.optim.SGD(model.parameters(), lr=1.0)
    sch = ember.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    like_eager(lambda t: t * sch.optimizer.param_groups[0]["lr"], [lambda: None, sch.step])


class _Missing(dict):
    def __missing__(self, key):
        return self.base[key]


class _Plain(dict):
    pass


def test_a_dict_subclass_item_and_its_missing():
    base = {"b": 2.0}
    d, plain = _Missing(), _Plain(b=1.0)
    d.base = base
    like_eager(lambda t: t * d["b"] + plain["b"],
               [lambda: None, lambda: base.update(b=5.0), lambda: plain.update(b=3.0),
                lambda: d.update(b=7.0)])


def test_a_chainmap():
    front, back = {}, {"b": 2.0}
    cm = collections.ChainMap(front, back)
    like_eager(lambda t: t * cm["b"],
               [lambda: None, lambda: back.update(b=5.0), lambda: front.update(b=7.0)])


class _Holder:
    def __init__(self):
        self.t = lambda x: x * 2.0

    def run(self, x):
        return self.t(x)


class _Layer(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.t = lambda x: x * 2.0

    def forward(self, x):
        return self.t(x)


def test_a_callable_attribute_reassigned():
    obj, layer = _Holder(), _Layer()

    def swap(holder, k):
        return lambda: setattr(holder, "t", lambda x: x * k)
    like_eager(lambda t: obj.run(t) + layer(t),
               [lambda: None, swap(obj, 3.0), lambda: None, swap(layer, 5.0)])


class _Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k


def test_a_callable_object_held_as_an_attribute():
    held = _Holder()
    held.t = _Scale(2.0)
    like_eager(held.run, [lambda: None, lambda: setattr(held.t, "k", 4.0),
                          lambda: setattr(held, "t", _Scale(6.0))])


def test_state_sharing_memory_with_no_view_record_runs_eagerly():
    flat, w = ember.zeros(6), ember.zeros(3)
    w.data = flat[:3]

    def f(x):
        flat.add_(1.0)
        return x * w
    g = ember.jit.compile(f)
    assert [g(ember.ones(3)).tolist()[0] for _ in range(3)] == [1.0, 2.0, 3.0]
    assert "no view record" in g.last.eager


def _helper_draw():
    return random.random()


def test_random_numbers_drawn_in_a_helper_warn():
    with pytest.warns(UserWarning, match="random numbers"):
        ember.jit.compile(lambda t: t * _helper_draw())(ember.ones(2))
    with pytest.warns(UserWarning, match="random numbers"):
        ember.jit.compile(lambda t: t * float(np.random.default_rng().normal()))(ember.ones(2))


def test_a_generator_class_or_a_seeded_generator_does_not_warn():
    def f(t):
        rng = np.random.default_rng(0)
        scale = 1.0 if isinstance(t, np.random.Generator) else float(rng.normal())
        return t * scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = ember.jit.compile(f)
        np.testing.assert_allclose(g(ember.ones(2)).numpy(), f(ember.ones(2)).numpy())


def test_disjoint_views_of_one_buffer_written_still_compile():
    flat = ember.zeros(40)
    parts = [ember.zeros(4) for _ in range(10)]
    for i, p in enumerate(parts):
        p.data = flat[4 * i:4 * i + 4]

    def f(x):
        for p in parts:
            p.add_(1.0)
        return x * 2
    g = ember.jit.compile(f)
    for _ in range(2):
        g(ember.ones(2))
    assert g.last.eager is None and flat.tolist() == [2.0] * 40
