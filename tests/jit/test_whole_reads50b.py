"""A compiled function's cache key watches what its code reads, and no more: ``cfg.get('k')``,
``k = 'x'; cfg[k]`` and ``cfg[K]`` (``K`` a global) read one item, ``obj(x)`` what
``obj.__call__`` reads; an equal number rebound is no change, a new key order is one; an
optimizer's ``param_groups[0]['lr']`` read by the user's code is watched. Traces are counted
(``.traces``), never timed."""

import warnings

import numpy as np
import pytest
from tests.jit.helpers import like_eager

import ember
from ember import nn
from ember.jit import compiled

CFG = {"clip": 1.0, "hist": []}
KEY = "clip"
VOCAB = {f"w{i}": float(i) for i in range(50000)}


def test_get_with_a_constant_key_reads_one_item():
    def f(t):
        return t * CFG.get("clip") + CFG.get("shift", 0.0)
    grow = [lambda: CFG["hist"].append(1.0)] * 6
    g = like_eager(f, [lambda: None, *grow])
    assert g.traces == 1  # (was one per call: the list it never reads was watched)
    like_eager(f, [lambda: None, lambda: CFG.update(clip=2.0), lambda: CFG.update(shift=1.0),
             lambda: CFG.pop("shift"), lambda: CFG.update(clip=1.0)])


def test_a_key_held_by_a_constant_local_or_a_global():
    global KEY
    def f(t):
        k = "clip"
        return t * CFG[k] * CFG[KEY]
    g = like_eager(f, [lambda: None, *[lambda: CFG["hist"].append(1.0)] * 4])
    assert g.traces == 1
    def rekey():
        global KEY
        KEY = "other"
    CFG["other"] = 5.0
    try:
        like_eager(f, [lambda: None, rekey, lambda: CFG.update(other=7.0)])
    finally:
        KEY = "clip"
        del CFG["other"]


def test_a_large_table_read_by_a_fixed_key_is_not_scanned():
    def f(t):
        k = "w7"
        return t * VOCAB[k]
    g = like_eager(f, [lambda: None, lambda: VOCAB.update(w7=3.0), lambda: VOCAB.update(w7=7.0)])
    assert not g.reach.contents  # (one item watched, not 50000 at each call)


def test_calling_the_users_object_watches_what_its_call_reads():
    class Scaler:
        def __init__(self):
            self.cfg = {"clip": 1.0}
            self.step_no = 0

        def __call__(self, t):
            return t * self.cfg["clip"]
    s = Scaler()
    def bump():
        s.step_no += 1
    g = like_eager(lambda t: s(t), [lambda: None, *[bump] * 5])
    assert g.traces == 1  # (a counter on it it never reads)
    like_eager(lambda t: s(t), [lambda: None, lambda: s.cfg.update(clip=3.0),
                          lambda: setattr(s, "cfg", {"clip": 4.0})])


def test_many_layouts_keep_a_bounded_list(monkeypatch):
    box = {"v": 0.0}
    def f(t):
        return t * box["v"]
    g = ember.jit.compile(f)
    t = ember.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(compiled._KEEP_ENTRIES + compiled._KEEP_REACHES + 40):
            box["v"] = float(i)
            assert g(t).tolist() == [float(i)] * 2
    assert len(g.layouts) <= compiled._KEEP_ENTRIES + compiled._KEEP_REACHES + 2


def test_an_equal_number_rebound_is_no_change(monkeypatch):
    cfg = {"clip": 2.0, "lr": 0.1}
    def f(t):
        return t * cfg["clip"] if "clip" in cfg else t
    g = ember.jit.compile(f)
    t = ember.ones(2)
    g(t)
    g(t)
    calls, real = [], compiled.reach
    monkeypatch.setattr(compiled, "reach", lambda *a, **k: calls.append(1) or real(*a, **k))
    for _ in range(5):
        cfg["lr"] = float("0.1")  # (a new float object, equal)
        g(t)
    assert not calls and g.traces == 1
    cfg["lr"] = 0.2
    g(t)
    assert calls  # (another value: found again)
    cfg["clip"] = 3.0
    assert g(t).tolist() == [3.0, 3.0]


def test_a_dict_reordered():
    d = {"a": 1.0, "b": 2.0}
    def f(t):
        return t * next(iter(d.values()))
    def reorder():
        d["a"] = d.pop("a")
    like_eager(f, [lambda: None, reorder, reorder])


def test_a_container_holding_itself_is_no_deep_nesting():
    items = [1.0]
    items.append(items)
    table = {"s": 2.0}
    table["self"] = table
    def f(t):
        return t * len(items) * sum(v for v in table.values() if isinstance(v, float))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        like_eager(f, [lambda: None, lambda: items.append(3.0), lambda: table.update(s=5.0)])


def _trainer(use):
    ember.manual_seed(0)
    m = nn.Linear(3, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    def step(x):
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()
        if use == "returned":
            return loss.detach(), opt.param_groups[0]["lr"]
        if use == "scaled":
            return loss.detach() * opt.param_groups[0]["lr"], 0.0
        return loss.detach() * sum(pg["lr"] for pg in opt.param_groups), 0.0
    return step, sched


@pytest.mark.parametrize("use", ["returned", "scaled", "computed"])
def test_a_learning_rate_a_scheduler_sets(use):
    x = ember.ones(2, 3)
    (eager, eager_sched), (step, sched) = _trainer(use), _trainer(use)
    g = ember.jit.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(5):
            (want, lr_want), (got, lr) = eager(x), g(x)
            assert lr == lr_want
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
            sched.step()
            eager_sched.step()


def test_sets_deques_arrays_and_dict_views():
    import array
    import collections
    s = {1.0}
    q = collections.deque([1.0])
    a = array.array("d", [1.0, 2.0])
    d = {"a": 1.0}
    v = d.values()
    like_eager(lambda t: t * len(s) * sum(s), [lambda: None, lambda: s.add(2.0)])
    like_eager(lambda t: t * q[-1] * sum(q), [lambda: None, lambda: q.append(5.0)])
    like_eager(lambda t: t * a[0] * sum(a), [lambda: None, lambda: a.__setitem__(0, 5.0)])
    like_eager(lambda t: t * sum(v), [lambda: None, lambda: d.update(a=3.0),
                                      lambda: d.update(b=1.0)])


def test_attributes_of_objects_in_a_container_read_whole():
    class Layer:
        def __init__(self, scale):
            self.scale = scale
    layers = [Layer(1.0)]
    table = {"a": Layer(2.0)}
    def f(t):
        for layer in layers:
            t = t * layer.scale
        return t * sum(v.scale for v in table.values())
    like_eager(f, [lambda: None, lambda: setattr(layers[0], "scale", 3.0),
             lambda: setattr(table["a"], "scale", 4.0), lambda: layers.append(Layer(5.0))])


def test_past_the_trace_limit_new_signatures_run_eagerly():
    box = {"v": 0.0}
    g = ember.jit.compile(lambda t: t * box["v"])
    t = ember.ones(2)
    with pytest.warns(UserWarning, match="runs the plain function"):
        for i in range(compiled._MAX_TRACES + 20):
            box["v"] = float(i)
            assert g(t).tolist() == [float(i)] * 2
    assert g.traces == compiled._MAX_TRACES
    box["v"] = 0.0
    assert g(t).tolist() == [0.0, 0.0]


def test_a_get_of_a_dict_subclass_is_its_method():
    # (a class's own get may read any item: the dict is read whole, as before)
    class Scaled(dict):
        def get(self, key, default=None):
            return dict.get(self, key, default) * self["factor"]
    table = Scaled(s=1.0, factor=2.0)
    like_eager(lambda t: t * table.get("s") * len(table),
               [lambda: None, lambda: table.update(factor=3.0), lambda: table.update(x=1)])
    class Factored(dict):
        factor = 1.0

        def __getitem__(self, k):
            return super().__getitem__(k) * self.factor
    f = Factored(a=1.0)
    like_eager(lambda t: t * f["a"], [lambda: None, lambda: setattr(f, "factor", 4.0)])


def _clip_of(c):
    return c["clip"]


def _scale_of(n, obj):
    return obj.scale * n


def test_a_container_or_object_passed_to_a_helper_watches_what_the_helper_reads():
    cfg = {"clip": 1.0, "step": 0}
    class Box:
        scale = 2.0
        step = 0
    box = Box()
    def f(t):
        return t * _clip_of(cfg) * _scale_of(2, box)
    def bump():
        cfg["step"] += 1
        box.step += 1
    g = like_eager(f, [lambda: None, *[bump] * 4])
    assert g.traces == 1  # (was one per call: cfg read whole)
    like_eager(f, [lambda: None, lambda: cfg.update(clip=3.0), lambda: setattr(box, "scale", 5.0)])
    def leak(c):
        return c
    like_eager(lambda t: t * sum(leak(cfg).values()), [lambda: None, bump])


def test_python_and_numpy_random_numbers_in_a_compiled_function_warn():
    import random
    rng = np.random.default_rng(0)
    for draw in (lambda t: t * random.random(), lambda t: t * float(np.random.rand()),
                 lambda t: t * rng.normal()):
        with pytest.warns(UserWarning, match="random numbers"):
            ember.jit.compile(draw)(ember.ones(2))
