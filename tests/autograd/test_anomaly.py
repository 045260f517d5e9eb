"""Anomaly mode names the forward op and the user's line that produced a NaN in backward."""

import pytest

import ember
from ember.errors import GradError


def test_anomaly_reports_op_and_source_line():
    x = ember.zeros(2, requires_grad=True)
    z = ember.zeros(2, requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = x / z  # the line anomaly mode must name
        with pytest.raises(GradError) as info:
            y.backward(ember.ones(2))
    msg = str(info.value)
    assert "div" in msg and "NaN" in msg
    assert "test_anomaly.py" in msg and "y = x / z" in msg


def test_without_anomaly_mode_nan_passes_silently():
    x = ember.zeros(2, requires_grad=True)
    z = ember.zeros(2, requires_grad=True)
    (x / z).backward(ember.ones(2))
    assert z.grad is not None


def test_anomaly_mode_leaves_no_handler_behind():
    from ember.ops.primitive import DISPATCH

    with ember.autograd.detect_anomaly():
        pass
    assert DISPATCH.handler is None


def test_set_detect_anomaly_switches_it_on_until_switched_off():
    x = ember.tensor([-1.0], requires_grad=True)
    assert not ember.autograd.is_anomaly_enabled()
    ember.autograd.set_detect_anomaly(True)
    try:
        assert ember.autograd.is_anomaly_enabled()
        with pytest.raises(GradError, match="backward of sqrt returned NaN"):
            ember.sqrt(x).sum().backward()
        with ember.autograd.set_detect_anomaly(False):
            assert not ember.autograd.is_anomaly_enabled()
            ember.sqrt(x).sum().backward()  # (NaN, unchecked)
        with ember.autograd.detect_anomaly():
            pass
        assert ember.autograd.is_anomaly_enabled()
    finally:
        ember.autograd.set_detect_anomaly(False)
    assert not ember.autograd.is_anomaly_enabled()


def test_anomaly_mode_catches_a_nan_in_a_complex_gradient():
    x = ember.zeros(2, dtype=ember.complex128, requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = x / x
        with pytest.raises(GradError, match="backward of abs returned NaN"):
            y.abs().sum().backward()
