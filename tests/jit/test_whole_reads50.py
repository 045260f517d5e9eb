"""A compiled function's cache key watches a dict, list or tuple it reads other than by a
constant subscript (``len(cfg)``, ``'x' in cfg``, ``c = cfg``, ``helper(cfg)``, ``cfg[k]``,
``sum(cfg)``) whole, nested containers and all items too: a change traces again, and the
result equals eager's."""

import pytest
from tests.jit.helpers import like_eager

import ember
from ember.jit import reached_values
from ember.jit.code_names import WHOLE, item_chains

CFG = {"s": 1.0, "sub": {"x": 1.0}}
ITEMS = [1.0]


def test_a_local_alias_of_a_global_dict():
    def f(t):
        c = CFG
        return t * c["s"]
    like_eager(f, [lambda: None, lambda: CFG.update(s=3.0), lambda: CFG.update(s=1.0)])


def test_membership_after_a_key_is_added_and_removed():
    cfg = {"s": 1.0}
    def f(t):
        return t * 2 if "extra" in cfg else t
    g = like_eager(f, [lambda: None, lambda: cfg.update(extra=1), lambda: cfg.pop("extra")])
    assert g.traces == 2  # (the first graph again, once the key is gone)


def test_len_after_append():
    def f(t):
        return t * len(ITEMS)
    like_eager(f, [lambda: None, lambda: ITEMS.append(2.0), lambda: ITEMS.append(3.0)])


def test_a_user_class_with_getitem():
    class Table:
        def __init__(self):
            self.d = {"s": 1.0}

        def __getitem__(self, k):
            return self.d[k]
    table = Table()
    def f(t):
        return t * table["s"]
    like_eager(f, [lambda: None, lambda: table.d.update(s=4.0)])


def test_a_nested_dict_changed_in_place_under_a_computed_key():
    def f(t):
        k = "sub"
        return t * CFG[k]["x"]
    like_eager(f, [lambda: None, lambda: CFG["sub"].update(x=5.0),
                   lambda: CFG["sub"].update(x=1.0)])


def test_a_method_of_the_users_object_or_module_reading_its_dict():
    class Config:
        def __init__(self):
            self.d = {"s": 1.0}

        def scale(self):
            return self.d["s"]
    config = Config()
    def f(t):
        return t * config.scale()
    like_eager(f, [lambda: None, lambda: config.d.update(s=2.0)])

    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.d = {"s": 1.0}

        def scale(self):
            return self.d["s"]

        def forward(self, x):
            return x * self.scale()
    net = Net()
    like_eager(net, [lambda: None, lambda: net.d.update(s=3.0)])


def test_the_users_object_used_whole_or_called():
    class Config:
        def __init__(self):
            self.factor = 1.0

        def __call__(self, t):
            return t * self.factor
    config, name = Config(), "factor"
    def f(t):
        return t * getattr(config, name) + config(t)
    like_eager(f, [lambda: None, lambda: setattr(config, "factor", 3.0)])


def test_sum_list_and_a_helper_given_the_container():
    cfg = {"a": 1.0, "b": 2.0}
    values = [1.0, 2.0]
    def helper(c):
        return c["a"]
    def f(t):
        return t * sum(values) + len(list(cfg)) + helper(cfg)
    like_eager(f, [lambda: None, lambda: values.__setitem__(0, 5.0), lambda: cfg.update(c=1.0),
               lambda: cfg.update(a=-2.0)])


def test_past_256_items_by_a_computed_key():
    table = [1.0] * 1000
    def f(t):
        i = 900
        return t * table[i]
    g = like_eager(f, [lambda: None, lambda: table.__setitem__(900, 7.0), lambda: None])
    assert g.traces == 2


def test_an_equal_value_of_another_type_traces_again():
    cfg = {"s": 2}
    def f(t):
        k = "s"
        return t * cfg[k]
    g = like_eager(f, [lambda: None, lambda: cfg.update(s=2.0)])
    assert g.traces == 2


def test_unchanged_contents_do_not_trace_again():
    cfg = {"s": 2.0, "list": [1, 2]}
    def f(t):
        return t * len(cfg)
    g = ember.jit.compile(f)
    for _ in range(3):
        g(ember.ones(2))
    cfg["s"] = 2.0  # (the same value: no new graph)
    g(ember.ones(2))
    assert g.traces == 1


def test_item_writes_and_appends_are_no_reads():
    log, out = [], {}
    def f(t):
        log.append(1)
        out["last"] = 1
        return t * 2
    g = ember.jit.compile(f)
    for _ in range(3):
        g(ember.ones(2))
    assert g.traces == 1 and log == [1]


def test_too_many_items_or_levels_warn(monkeypatch):
    monkeypatch.setattr(reached_values, "WATCHED_ITEMS", 4)
    table = list(range(10))
    def f(t):
        return t * len(table)
    with pytest.warns(UserWarning, match="items"):
        ember.jit.compile(f)(ember.ones(2))
    deep = {"a": {"b": {"c": {"d": {"e": {"f": 1.0}}}}}}
    def g(t):
        return t * len(deep)
    with pytest.warns(UserWarning, match="nested"):
        ember.jit.compile(g)(ember.ones(2))


def test_the_patterns_are_found_in_this_pythons_bytecode():
    # (the patterns are CPython 3.11's: this test tells when another version's differ; an
    # item's value is then used, so read whole too: it may be a container)
    def f(cfg, k):
        j = "z"
        return cfg["x"], cfg.get("y"), cfg[1:3], len(cfg), cfg[k], cfg.get(k), cfg[j], \
            cfg[ITEMS]
    chains = {links for _, name, links in item_chains(f.__code__) if name == "cfg"}
    assert chains == {(("item", "x"), WHOLE), (("get", "y"), WHOLE), (("method", "get"),),
                      (WHOLE,), (("item", "z"), WHOLE), (("key", ("LOAD_GLOBAL", "ITEMS")),
                                                         WHOLE),
                      (("passed", ("LOAD_GLOBAL", "len", 0)),)}
    def g(log, out, k):
        log.append(1)
        out["n"] = 1
        out[k] = 2
    found = {name: links for _, name, links in item_chains(g.__code__)}
    assert found["log"] == (("method", "append"),) and "out" not in found
