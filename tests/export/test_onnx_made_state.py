"""A tensor the exported call makes, writes and keeps is state, wherever the model keeps it
(ember.export.local_state decides by liveness: review49e F1); a module built in the call,
which nothing keeps, still folds; two exports in two threads at once (F2)."""

from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.export import export
from ember.export.errors import ExportError
from tests.export.onnx_helpers import Counter, check_seeded_export, run_onnx


def _closure():
    c = Counter()
    return lambda x: c(x)


_GLOBAL = Counter()
_MIXED: dict = {"step": 0}


def _global_module(x):
    return _GLOBAL(x)


def _global_mixed_dict(x):
    if "c" not in _MIXED:
        _MIXED["c"] = ember.zeros(())
    _MIXED["c"].add_(1.0)
    return x * _MIXED["c"]


class _MixedDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {"n": 0}

    def forward(self, x):
        if "c" not in self.cache:
            self.cache["c"] = ember.zeros(())
        self.cache["c"].add_(1.0)
        return x * self.cache["c"]


class _Box:
    pass


class _ObjectAttr(nn.Module):
    def __init__(self):
        super().__init__()
        self.box = _Box()

    def forward(self, x):
        if not hasattr(self.box, "c"):
            self.box.c = ember.zeros(())
        self.box.c.add_(1.0)
        return x * self.box.c


_HELD: dict = {}


def _helper(x):
    if "c" not in _HELD:
        _HELD["c"] = ember.zeros(())
    _HELD["c"].add_(1.0)
    return x * _HELD["c"]


def _helper_global(x):
    return _helper(x)


class _PlainList(nn.Module):
    def __init__(self):
        super().__init__()
        self.parts = [Counter()]

    def forward(self, x):
        return self.parts[0](x)


class _ClassAttr(nn.Module):
    shared: dict = {}

    def forward(self, x):
        if "c" not in self.shared:
            type(self).shared["c"] = ember.zeros(())
        self.shared["c"].add_(1.0)
        return x * self.shared["c"]


LAYOUTS = {  # the review's eight, and a Counter exported itself
    "closure_module": _closure, "global_module": lambda: _global_module,
    "global_mixed_dict": lambda: _global_mixed_dict, "module_mixed_dict": _MixedDict,
    "module_object_attr": _ObjectAttr, "helper_global": lambda: _helper_global,
    "plain_list_submodule": _PlainList, "class_attr": _ClassAttr, "counter": Counter,
}


@pytest.fixture(autouse=True)
def _fresh_state():
    global _GLOBAL
    _GLOBAL = Counter()
    for held in (_MIXED, _HELD, _ClassAttr.shared):
        held.pop("c", None)


@pytest.mark.parametrize("name", LAYOUTS)
@pytest.mark.parametrize("dynamic", [False, True])
def test_state_made_and_kept_by_the_call_is_refused_wherever_it_is_kept(name, dynamic):
    dyn = dict(input_names=["x"], dynamic_axes={"x": {0: "b"}}) if dynamic else {}
    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(LAYOUTS[name](), (ember.ones(2),), **dyn)  # (was: x * 1)


@pytest.mark.parametrize("name", ["plain_list_submodule", "counter", "module_object_attr"])
def test_ember_export_refuses_it_too(name):
    with pytest.raises(ExportError, match="writes into its state"):
        export(LAYOUTS[name](), (ember.ones(2),))


def test_a_tensor_kept_where_the_collector_cannot_see_is_state():
    keep = np.empty(1, dtype=object)  # (a NumPy object array: no referrer gc can list)

    def fn(x):
        w = nn.Parameter(ember.zeros(2))
        with ember.no_grad():
            w.fill_(3.0)
        keep[0] = w
        return x * w

    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(fn, (ember.ones(2),))


def test_a_view_kept_of_memory_the_call_made_is_state():
    kept = []

    def fn(x):
        lin = nn.Linear(2, 2)
        kept.append(lin.weight[0])
        return lin(x)

    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(fn, (ember.ones(2),))


def test_a_local_written_tensor_nothing_keeps_exports():
    def fn(x):
        b = ember.zeros(4)
        b.add_(ember.arange(4.0))
        return x + b

    x = ember.ones(4)
    np.testing.assert_allclose(run_onnx(ember.onnx.to_model(fn, (x,)), x.numpy())[0],
                               [1.0, 2.0, 3.0, 4.0])


def test_two_inits_of_a_built_module_fold_to_the_last():
    def fn(x):
        lin = nn.Linear(4, 3)
        with ember.no_grad():
            lin.weight.normal_()  # (was: "no ONNX converter for uniform")
        return lin(x)

    check_seeded_export(fn, ember.randn(2, 4), 5)


def test_a_random_draw_names_the_frozen_noise():
    def fn(x):
        n = ember.empty(2)
        n.normal_()
        return x + n

    with pytest.raises(ExportError, match=r"normal.*\n.*random draw.*one fixed value"):
        ember.onnx.to_model(fn, (ember.ones(2),))


def test_two_exports_at_once_in_two_threads_both_fold_and_leave_no_hook():
    inside, results, first = threading.Barrier(2, timeout=20), {}, threading.local()

    def built(x):
        once = not getattr(first, "done", False)
        first.done = True
        if once:
            inside.wait()  # (both first traces are running)
        y = nn.Linear(3, 2)(x)
        if once:
            inside.wait()
        return y

    def one(key):
        try:
            results[key] = ember.onnx.to_model(built, (ember.ones(1, 3),))
        except Exception as e:  # (reported below)
            results[key] = e

    threads = [threading.Thread(target=one, args=(k,)) for k in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(not isinstance(r, Exception) for r in results.values()), results
    assert len(results) == 2 and not importlib.import_module("ember.tensor")._wrap_hooks
