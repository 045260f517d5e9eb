"""Inference tensors outside ``inference_mode``: in-place writes (every path: methods,
operators, indexing, fills, ``out=``, shape and storage changes, views) and
``requires_grad_`` are refused as PyTorch refuses them, before anything is written; reads,
clones and writes inside the mode are allowed. Each case is checked against torch."""

import operator

import pytest
import torch

import ember

_WRITES = {
    "add_": lambda lib, x: x.add_(1),
    "iadd": lambda lib, x: operator.iadd(x, 1),
    "setitem": lambda lib, x: x.__setitem__(0, 5.0),
    "index_put_": lambda lib, x: x.index_put_((lib.tensor([0]),), lib.tensor([1.0])),
    "copy_": lambda lib, x: x.copy_(lib.zeros(3)),
    "zero_": lambda lib, x: x.zero_(),
    "fill_": lambda lib, x: x.fill_(3),
    "normal_": lambda lib, x: x.normal_(),
    "clamp_": lambda lib, x: x.clamp_(0, 0.5),
    "relu inplace": lambda lib, x: lib.nn.functional.relu(x, inplace=True),
    "init.zeros_": lambda lib, x: lib.nn.init.zeros_(x),
    "view add_": lambda lib, x: x.view(3).add_(1),
    "slice add_": lambda lib, x: x[1:].mul_(2),
    "out=": lambda lib, x: lib.add(lib.zeros(3), 1, out=x),
    "out= factory": lambda lib, x: lib.zeros(3, out=x),
    "out= tuple": lambda lib, x: lib.sort(lib.zeros(3), out=(x, lib.empty(3, dtype=lib.long))),
    "unsqueeze_": lambda lib, x: x.unsqueeze_(0),
    "resize_": lambda lib, x: x.resize_(2),
    "set_": lambda lib, x: x.set_(lib.zeros(3)),
}


def _inference_ones(lib):
    with lib.inference_mode():
        return lib.ones(3)


@pytest.mark.parametrize("case", sorted(_WRITES))
def test_inplace_write_outside_inference_mode_is_refused_as_in_torch(case):
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        _WRITES[case](torch, _inference_ones(torch))
    x = _inference_ones(ember)
    with pytest.raises(ember.errors.GradError,
                       match="Inplace update to inference tensor outside InferenceMode"):
        _WRITES[case](ember, x)
    assert x.tolist() == [1.0, 1.0, 1.0] and x.shape == (3,)  # nothing written
    with ember.no_grad(), pytest.raises(ember.errors.GradError, match="inference tensor"):
        _WRITES[case](ember, x)  # no_grad is not inference mode


@pytest.mark.parametrize("case", sorted(_WRITES))
def test_writes_inside_inference_mode_and_into_clones_are_allowed(case):
    for lib in (torch, ember):
        x = _inference_ones(lib)
        with lib.inference_mode():
            _WRITES[case](lib, x)
        _WRITES[case](lib, _inference_ones(lib).clone())


def test_requires_grad_and_parameter_are_refused_as_in_torch():
    for lib in (torch, ember):
        x = _inference_ones(lib)
        with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference"):
            x.requires_grad_()
        with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference"):
            lib.nn.Parameter(x)
        assert not x.requires_grad
        x.requires_grad_(False)  # allowed, as is a parameter that needs no grad
        assert not lib.nn.Parameter(x, requires_grad=False).requires_grad
        assert x.clone().requires_grad_().requires_grad
        with lib.inference_mode():
            assert x.requires_grad_().requires_grad


def test_normal_tensors_and_their_views_made_in_inference_mode_stay_writable():
    for lib in (torch, ember):
        z = lib.ones(3)
        with lib.inference_mode():
            v = z[:2]
            v.add_(1)  # a normal tensor's memory, written inside the mode
        v.add_(1)
        assert not v.is_inference() and z.tolist() == [3.0, 3.0, 1.0]
        x = _inference_ones(lib)
        assert (x + 1).tolist() == [2.0, 2.0, 2.0]
        lib.empty(3).copy_(x)  # an inference tensor as the source of a write
