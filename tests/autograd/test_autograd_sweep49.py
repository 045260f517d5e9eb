"""Differences from torch.autograd found by the sweep of session 49 (helper autograd49)."""

import pytest
import torch

import ember


def _function_view(lib):
    """A view of a custom Function's view output, whose base is then written in place."""
    f = type("F", (lib.autograd.Function,), {
        "forward": staticmethod(lambda ctx, a: a.view_as(a)),
        "backward": staticmethod(lambda ctx, g: g)})
    x = lib.ones(3, requires_grad=True).clone()
    v = f.apply(x)[:2]
    x.mul_(2)
    return v


def _no_grad_view(lib):
    """A view made under no_grad of a tensor that requires grad, whose base is then written."""
    x = lib.ones(3, requires_grad=True).clone()
    with lib.no_grad():
        v = x[:2]
    x.mul_(2)
    return v


@pytest.mark.parametrize("lib", [torch, ember])
@pytest.mark.parametrize("make", [_function_view, _no_grad_view])
def test_is_leaf_of_a_stale_view_raises(lib, make):
    # ember answered (False / True) where torch refuses, as it does for grad_fn
    v = make(lib)
    with pytest.raises(RuntimeError, match="modified in ?place"):
        _ = v.is_leaf


@pytest.mark.parametrize("lib", [torch, ember])
def test_is_leaf_of_a_view_whose_base_gained_history(lib):
    # ember's is_leaf read the view's old (empty) history: True, torch False
    x = lib.ones(3)
    v = x[:2]
    x.mul_(lib.ones(3, requires_grad=True))
    assert not v.is_leaf


@pytest.mark.parametrize("lib", [torch, ember])
@pytest.mark.parametrize("value", ["no", None, 1, 0.0])
@pytest.mark.parametrize("switch", [lambda lib, v: lib.set_grad_enabled(v),
                                    lambda lib, v: lib.autograd.set_detect_anomaly(v),
                                    lambda lib, v: lib.set_anomaly_enabled(v),
                                    lambda lib, v: lib.autograd.detect_anomaly(
                                        check_nan=v).__enter__()])
def test_mode_switches_take_only_a_bool(lib, value, switch):
    # ember took bool(value): set_grad_enabled("no") turned recording on; torch refuses
    with pytest.raises(TypeError, match="must be bool, not"):
        switch(lib, value)
    assert lib.is_grad_enabled() and not lib.is_anomaly_enabled()


@pytest.mark.parametrize("lib", [torch, ember])
@pytest.mark.parametrize("mode", [lambda lib: lib.set_grad_enabled(mode=False),
                                  lambda lib: lib.inference_mode(mode=True),
                                  lambda lib: lib.no_grad()])
def test_mode_switches_take_their_flag_as_a_keyword(lib, mode):
    # (set_grad_enabled(mode=False) crashed in _Mode.__new__: no keyword arguments)
    with mode(lib):
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled()
