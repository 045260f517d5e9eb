"""The cache key of a compiled function stays right where a key is picked by a branch
(``k = 'a' if c else 'b'``, ``k = name or 'b'``), where a dict subclass has its own ``get``
(never called with the jit's placeholders), and where a helper reads its parameter inside a
comprehension, generator expression or lambda: a changed value traces again."""

import functools
import warnings

import numpy as np

import ember

CFG = {"train": 0.5, "eval": 1.0, "a": 1.0, "b": 2.0}


class _Flag:
    on = True


def _check(f, changes, *args):
    g = ember.jit.compile(f)
    t = ember.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for change in changes:
            change()
            np.testing.assert_allclose(g(t, *args).numpy(), f(t, *args).numpy())


def _set(d, key, value):
    return lambda: d.__setitem__(key, value)


def test_key_picked_by_conditional_expression():
    def f(x):
        key = "train" if _Flag.on else "eval"
        return x * CFG[key]
    _check(f, [lambda: None, _set(CFG, "train", 0.1), _set(CFG, "eval", 3.0)])


def test_key_picked_by_or():
    def f(x, name=None):
        k = name or "b"
        return x * CFG.get(k)
    _check(f, [lambda: None, _set(CFG, "a", 7.0), _set(CFG, "b", 4.0)], "a")


def test_constant_key_still_fixed():
    def f(x):
        k = "b"
        return x * CFG[k]
    g = ember.jit.compile(f)
    t = ember.ones(2)
    g(t)
    CFG["a"] = 9.0  # (another item: no new trace)
    CFG["b"] = 5.0
    np.testing.assert_allclose(g(t).numpy(), [5.0, 5.0])
    assert g.traces == 2


class _ScaledGet(dict):
    def get(self, key, default=None):
        self.calls.append(key)
        return dict.get(self, key, default) * self.scale


def test_dict_subclass_own_get_reading_attribute():
    d = _ScaledGet(a=1.0)
    d.scale, d.calls = 1.0, []

    def f(x):
        return x * d.get("a")
    _check(f, [lambda: None, lambda: setattr(d, "scale", 3.0), _set(d, "a", 2.0)])
    assert all(key == "a" for key in d.calls)  # (never the jit's placeholder or ``scale``)


def _sum_genexpr(c):
    return sum(c[k] for k in c)


def _list_comprehension(c):
    return [c[k] for k in ("a", "b")][1]


def _get_genexpr(c):
    return sum(c.get(k, 0.0) for k in ("a", "b"))


def _lambda(c):
    g = lambda: c["b"]  # noqa: E731
    return g()


def _reduce(c):
    return functools.reduce(lambda s, k: s + c[k], c, 0.0)


def test_helper_reads_parameter_in_nested_code():
    for helper in (_sum_genexpr, _list_comprehension, _get_genexpr, _lambda, _reduce):
        c = {"a": 1.0, "b": 2.0}

        def f(x, helper=helper, c=c):
            return x * helper(c)
        _check(f, [lambda: None, _set(c, "b", 5.0), _set(c, "a", -1.0)])
