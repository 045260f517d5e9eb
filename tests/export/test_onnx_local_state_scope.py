"""Which writes the export folds as a local's initialisation (ember.export.local_state): only
those into tensors made in *this* trace that nothing keeps after it; a random draw folds only
into a module built in the call. (review49c findings 1, 3, 4)"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.export import export
from ember.export.errors import ExportError
from ember.tensor import Tensor, counter_factory, set_counter_factory
from ember.version_counter import VersionCounter
from tests.export.onnx_helpers import Counter, check_seeded_export, run_onnx


class ParameterCounter(nn.Module):
    """The same with a Parameter, which the tracer takes as state when it is made."""

    def forward(self, x):
        if not hasattr(self, "steps"):
            self.steps = nn.Parameter(ember.zeros(()))
        with ember.no_grad():
            self.steps.add_(1.0)
        return x * self.steps


def _export_once(m, x):
    """A first export, which makes the buffer and is refused (its write is a state write)."""
    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(m, (x,))
    assert hasattr(m, "steps")


def test_state_registered_during_the_export_is_refused_as_a_state_write():
    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(ParameterCounter(), (ember.ones(2, 3),))


def test_state_made_in_an_earlier_export_is_not_folded_later():
    m, x = Counter(), ember.ones(2, 3)
    _export_once(m, x)
    m(x)
    with pytest.raises(ExportError, match=r"writes into its state .*\(steps\)"):
        ember.onnx.to_model(m, (x,))  # (was: exported x * 3, the write folded)


def test_ember_export_keeps_the_write_into_state_an_earlier_export_made():
    m, x = Counter(), ember.ones(2)
    _export_once(m, x)
    m(x)  # (steps: 2)
    ep = export(m, (x,))
    assert list(ep.graph_signature.buffers_to_mutate.values()) == ["steps"]
    module = ep.module()
    assert [module(x)[0].item() for _ in range(3)] == [3.0, 4.0, 5.0]


def test_lazy_state_with_dynamic_axes_names_the_state_write():
    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(ParameterCounter(), (ember.ones(2, 3),), input_names=["x"],
                            dynamic_axes={"x": {0: "b"}})


def test_a_global_tensor_made_in_the_call_is_state():
    def lazy(x):
        if "w" not in _STATE:
            _STATE["w"] = nn.Parameter(ember.zeros(5))
        with ember.no_grad():
            _STATE["w"].add_(1.0)
        return x * _STATE["w"]

    _STATE.clear()
    with pytest.raises(ExportError, match="writes into its state"):
        ember.onnx.to_model(lazy, (ember.ones(2, 5),))


_STATE: dict = {}


def test_a_random_fill_of_a_tensor_made_in_the_call_is_refused_as_frozen_noise():
    def noise(x):
        w = nn.Parameter(ember.empty(5))
        with ember.no_grad():
            w.normal_()
        return x + w

    with pytest.raises(ExportError, match=r"random draw \(normal\).*one fixed value"):
        ember.onnx.to_model(noise, (ember.ones(2, 5),))


def test_a_module_built_in_the_call_still_folds_its_random_initial_weights():
    def fn(x):
        return nn.Linear(5, 3)(x)

    check_seeded_export(fn, ember.randn(2, 5), 4)


def test_a_deterministic_fill_of_a_tensor_made_in_the_call_still_folds():
    def fn(x):
        w = nn.Parameter(ember.empty(5))
        with ember.no_grad():
            w.fill_(2.0)
        return x * w

    x = ember.randn(2, 5)
    np.testing.assert_allclose(run_onnx(ember.onnx.to_model(fn, (x,)), x.numpy())[0],
                               x.numpy() * 2, rtol=1e-6)


def test_counter_factory_reads_the_factory_set():
    class Mine(VersionCounter):
        __slots__ = ()

    set_counter_factory(Mine)
    try:
        assert counter_factory() is Mine
    finally:
        set_counter_factory(None)
    assert counter_factory() is VersionCounter


def test_a_tensor_another_thread_is_still_making_is_skipped():
    # (the scan after the call found every live tensor: one whose construction had not yet
    # set its version counter raised AttributeError '_vc')
    half_built = object.__new__(Tensor)

    def fn(x):
        b = ember.zeros(5)
        b.add_(1.0)
        return x * b

    x = ember.randn(2, 5)
    np.testing.assert_allclose(run_onnx(ember.onnx.to_model(fn, (x,)), x.numpy())[0],
                               x.numpy(), rtol=1e-6)
    assert half_built is not None
