"""A compiled function's cache key watches the items it reads by subscript from a dict, list
or tuple it reaches (``cfg['x']``, ``cfg[0]``, ``self.cfg['a']['b']``): a changed value traces
again, and the result equals eager's."""

import numpy as np

import ember

CFG = {"x": 1.0, "a": {"b": 3.0}}
ITEMS = [1.0, 2.0]
TENSORS = {"w": ember.ones(2)}
SMALL = {"p": 1.0, "q": 5.0}


def _check(f, change, values):
    g = ember.jit.compile(f)
    t = ember.ones(2)
    for value in values:
        change(value)
        np.testing.assert_allclose(g(t).numpy(), f(t).numpy())


def test_global_dict_item():
    def f(t):
        return t * CFG["x"]
    _check(f, lambda v: CFG.__setitem__("x", v), [1.0, 2.0, 2.0, -3.5, 1.0])


def test_global_nested_dict_item():
    def f(t):
        return t + CFG["a"]["b"]
    _check(f, lambda v: CFG["a"].__setitem__("b", v), [3.0, 4.0, 7.0])


def test_global_list_item():
    def f(t):
        return t * ITEMS[1] + ITEMS[-2]
    def change(v):
        ITEMS[1], ITEMS[0] = v, v + 1
    _check(f, change, [2.0, 3.0, 3.0, 0.5])


def test_closure_dict_item_and_replaced_inner_dict():
    cfg = {"x": 1.0, "a": {"b": 1.0}}
    def f(t):
        return t * cfg["x"] + cfg["a"]["b"]
    def change(v):
        cfg["x"] = v
        cfg["a"] = {"b": v * 2}  # (a new inner dict)
    _check(f, change, [1.0, 2.0, 5.0])


def test_dict_of_tensors_replaced_value():
    def f(t):
        return t * TENSORS["w"]
    _check(f, lambda v: TENSORS.__setitem__("w", ember.tensor([v, -v])), [1.0, 2.0, 3.0])


def test_dict_read_with_variable_key():
    def f(t):
        return sum(t * SMALL[k] for k in ("p", "q"))
    key = "p"
    def g(t):
        return t * SMALL[key]
    def change(v):
        SMALL["p"], SMALL["q"] = v, v * 3
    _check(f, change, [1.0, 2.0, 4.0])
    _check(g, change, [1.0, 2.0, 4.0])


def test_module_config_attribute_holding_a_dict():
    class Scaled(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(2, 2)
            self.cfg = {"scale": 1.0, "shift": [0.0]}

        def forward(self, x):
            return self.fc(x) * self.cfg["scale"] + self.cfg["shift"][0]
    model = Scaled()
    g = ember.jit.compile(model)
    t = ember.ones(2)
    for scale, shift in [(1.0, 0.0), (2.0, 0.0), (2.0, 1.5), (0.5, -1.0)]:
        model.cfg["scale"] = scale
        model.cfg["shift"][0] = shift
        np.testing.assert_allclose(g(t).detach().numpy(), model(t).detach().numpy(),
                                   rtol=1e-6)


def test_unchanged_items_do_not_trace_again():
    cfg = {"x": 2.0}
    def f(t):
        return t * cfg["x"]
    g = ember.jit.compile(f)
    t = ember.ones(2)
    g(t)
    cfg["y"] = 7  # (an item it never reads)
    g(t)
    g(t)
    assert g.traces == 1


def test_read_by_method_and_iteration():
    cfg = {"p": 1.0}
    def f(t):
        return t * cfg.get("p") + sum(cfg.values())
    _check(f, lambda v: cfg.__setitem__("p", v), [1.0, 2.0, 3.0])
    def h(t):
        return sum(t * v for v in cfg.values())
    _check(h, lambda v: cfg.__setitem__("q", v), [1.0, 2.0])  # (a new item read too)


def test_a_log_the_function_appends_to_is_not_watched():
    traced = []
    def f(t):
        traced.append(1)
        return t * 2
    g = ember.jit.compile(f)
    for _ in range(3):
        g(ember.ones(2))
    assert traced == [1]


def test_list_inside_a_tuple():
    pair = (2.0, [1.0])
    def f(t):
        return t * pair[0] + pair[1][0]
    _check(f, lambda v: pair[1].__setitem__(0, v), [1.0, 4.0, -2.0])
