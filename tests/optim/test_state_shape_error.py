"""A parameter that changes shape after its optimizer state was made (``p.data = ...``) is
refused at the step with a ShapeError naming the state, both shapes and the fix (PyTorch 2.13
raises a size-mismatch RuntimeError too; Ember's was NumPy's bare broadcast error)."""

from __future__ import annotations

import numpy as np
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


@pytest.mark.parametrize(("before", "after"), [((3, 4), (12,)), ((12,), (3, 4)), ((6, 1), (6,))])
def test_adafactor_with_another_number_of_dims_is_a_clear_error(before, after):
    # (its vector and matrix states differ: torch asserts, the update's lookup was a bare
    # KeyError)
    p, opt = stepped(torch, "Adafactor", before)
    p.data, p.grad = torch.ones(*after), torch.ones(*after)
    with pytest.raises(AssertionError, match="should be defined"):
        opt.step()
    p, opt = stepped(ember, "Adafactor", before)
    p.data, p.grad = ember.ones(*after), ember.ones(*after)
    with pytest.raises(ember.errors.ShapeError, match=r"Adafactor\.step: state '\w+' has shape "
                                                      r".* now of shape .* needs .*del "
                                                      r"optimizer\.state\[p\]"):
        opt.step()


@pytest.mark.parametrize("after", [(1, 3, 4), (2, 3, 4)])
def test_adafactor_refuses_a_matrix_that_gained_leading_dims_as_torch(after):
    # (NumPy's writes into row_var (3, 1) dropped the new leading 1-dim: it stepped silently)
    p, opt = stepped(torch, "Adafactor", (3, 4))
    p.data, p.grad = torch.ones(*after), torch.ones(*after)
    with pytest.raises(RuntimeError):
        opt.step()
    p, opt = stepped(ember, "Adafactor", (3, 4))
    p.data, p.grad = ember.ones(*after), ember.ones(*after)
    with pytest.raises(ember.errors.ShapeError, match="state 'row_var' has shape"):
        opt.step()


def test_asgd_refuses_a_parameter_that_gained_leading_dims_as_torch():
    # (NumPy's ax[...] = p drops p's leading 1-dims: (6,) -> (1, 6) stepped silently)
    p, opt = stepped(torch, "ASGD", (6,))
    p.data, p.grad = torch.ones(1, 6), torch.ones(1, 6)
    with pytest.raises(RuntimeError, match="shape"):
        opt.step()
    p, opt = stepped(ember, "ASGD", (6,))
    p.data, p.grad = ember.ones(1, 6), ember.ones(1, 6)
    with pytest.raises(ember.errors.ShapeError, match=r"'ax' has shape \(6,\) .* now of shape "
                                                      r"\(1, 6\), needs \(1, 6\)"):
        opt.step()
    assert p.detach().numpy().tolist() == [[1.0] * 6]  # (refused before stepping it)


def test_asgd_steps_a_parameter_that_broadcasts_into_its_state_as_torch():
    out = []
    for lib in (torch, ember):
        p, opt = stepped(lib, "ASGD", (1, 6))
        p.data, p.grad = lib.ones(6) * 2, lib.ones(6)
        opt.step()
        out.append((p.detach().numpy(), opt.state[p]["ax"].detach().numpy()))
    for theirs, ours in zip(*out, strict=True):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
