"""A parameter that changes shape after its optimizer state was made (``p.data = ...``) is
refused at the step with a ShapeError naming the state, both shapes and the fix (PyTorch 2.13
raises a size-mismatch RuntimeError too; Ember's was NumPy's bare broadcast error)."""

from __future__ import annotations

import pytest
import torch

import ember

NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
         "Rprop", "ASGD", "Adafactor"]


def stepped(lib, name, shape, dtype="float32"):
    kwargs = dict(lr=0.1, momentum=0.9) if name in ("SGD", "RMSprop") else dict(lr=0.1)
    p = lib.ones(*shape, dtype=getattr(lib, dtype), requires_grad=True)
    opt = getattr(lib.optim, name)([p], **kwargs)
    p.grad = lib.ones(*shape, dtype=getattr(lib, dtype))
    opt.step()
    return p, opt


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("before", "after"), [((3,), (4,)), ((2, 3), (3, 2))])
def test_a_parameter_that_changed_shape_is_a_clear_error(name, before, after):
    for lib in (torch, ember):
        p, opt = stepped(lib, name, before)
        p.data = lib.ones(*after)
        p.grad = lib.ones(*after)
        if lib is torch:
            with pytest.raises(RuntimeError, match="size"):
                opt.step()
            continue
        with pytest.raises(ember.errors.ShapeError,
                           match=rf"{name}\.step: state '\w+' has shape .* now of shape "
                                 rf"\({after[0]},.*del optimizer\.state\[p\]"):
            opt.step()


def test_the_factored_state_of_adafactor_names_the_shape_it_needs():
    p, opt = stepped(ember, "Adafactor", (2, 3))
    p.data, p.grad = ember.ones(3, 3), ember.ones(3, 3)
    with pytest.raises(ember.errors.ShapeError, match=r"'row_var' has shape \(2, 1\) where its "
                                                      r"parameter, now of shape \(3, 3\), "
                                                      r"needs \(3, 1\)"):
        opt.step()


def test_a_complex_parameter_too():
    p, opt = stepped(ember, "Adam", (3,), dtype="complex64")
    p.data, p.grad = ember.ones(4, dtype=ember.complex64), ember.ones(4, dtype=ember.complex64)
    with pytest.raises(ember.errors.ShapeError, match="'exp_avg' has shape"):
        opt.step()


def test_starting_the_parameter_afresh_steps_it():
    p, opt = stepped(ember, "Adam", (3,))
    p.data, p.grad = ember.ones(4), ember.ones(4)
    del opt.state[p]
    opt.step()
    assert opt.state[p]["exp_avg"].shape == (4,)
