"""An error raised inside a composite op names the public function the user called before the
op it failed in (``margin_ranking_loss: sub: shapes …``), so the message points at the user's
own call; an op called directly keeps its message as it is."""

import pickle

import pytest
import torch

import ember
from ember.errors import ArgumentTypeError, ShapeError
from ember.ops.public_op import calling_op, public_message

F = ember.nn.functional


@pytest.mark.parametrize("call, match", [
    (lambda m: m.nn.functional.margin_ranking_loss(m.ones(3), m.ones(4), m.ones(3)),
     r"^margin_ranking_loss: sub: shapes \(3,\) and \(4,\) do not broadcast"),
    (lambda m: m.nn.functional.kl_div(m.ones(3), m.ones(4)), r"^kl_div: mul: shapes"),
    (lambda m: m.nn.functional.cosine_similarity(m.ones(3, 4), m.ones(5, 4)),
     r"^cosine_similarity: broadcast_tensors: shapes \(3, 4\) and \(5, 4\)"),
    (lambda m: m.addmm(m.ones(2, 2), m.ones(2, 3), m.ones(4, 2)),
     r"^addmm: matmul: \(2, 3\) @ \(4, 2\)"),
    (lambda m: m.clamp(m.ones(3, 4), m.ones(5)), r"^clamp: shapes \(3, 4\) and \(5,\) do not"),
    # (a primitive failing where no function of its name runs: clamp's gt, in hardtanh)
    (lambda m: m.nn.functional.hardtanh(m.ones(3, 4), m.ones(5), m.ones(3, 4)),
     r"^hardtanh: gt: shapes"),
    # a module's forward is the user's call of the functional form
    (lambda m: m.nn.MarginRankingLoss()(m.ones(3), m.ones(4), m.ones(3)),
     r"^margin_ranking_loss: sub: shapes"),
])
def test_a_composite_names_itself_before_the_op_it_failed_in(call, match):
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(ShapeError, match=match):
        call(ember)


def test_an_op_called_directly_keeps_its_message():
    with pytest.raises(ShapeError, match=r"^sub: shapes \(3,\) and \(4,\)"):
        ember.ones(3) - ember.ones(4)
    with pytest.raises(ShapeError, match=r"^sub: shapes"):
        ember.ones(3).sub_(ember.ones(4))  # (the in-place form of the op named)
    with pytest.raises(ShapeError, match=r"^sub: shapes"):  # (a user's function is no op)
        (lambda a, b: a - b)(ember.ones(3), ember.ones(4))


def test_an_operand_error_names_the_public_function():
    with pytest.raises(ArgumentTypeError,
                       match=r"^margin_ranking_loss\(\): cannot take an operand of type list"):
        F.margin_ranking_loss(ember.ones(3), [1.0, 2.0, 3.0], ember.ones(3))


def test_a_function_a_factory_made_is_named_by_the_op_it_calls():
    """(max_pool2d_with_indices is a closure whose code is named with_indices)"""
    with pytest.raises(ShapeError, match=r"^max_pool2d: expected a 3-D"):
        F.max_pool2d_with_indices(ember.ones(3), 2)


def test_the_message_survives_pickling():
    with pytest.raises(ShapeError) as caught:
        F.margin_ranking_loss(ember.ones(3), ember.ones(4), ember.ones(3))
    again = pickle.loads(pickle.dumps(caught.value))
    assert again.args == caught.value.args


def test_outside_any_op_messages_are_unchanged():
    assert calling_op() == "conversion to an array"
    assert public_message("sub: shapes differ") == "sub: shapes differ"
    assert str(ShapeError("sub: shapes differ")) == "sub: shapes differ"


@pytest.mark.parametrize("active", [lambda: ember.autocast("cpu"), ember.profiler.profile])
def test_a_handler_running_the_ops_is_walked_through(active):
    """(autocast's and the profiler's frames, Ember's own, lie between the op and its rule)"""
    with active():
        with pytest.raises(ShapeError, match=r"^sub: shapes \(3, 4\) and \(5,\)"):
            ember.sub(ember.ones(3, 4), ember.ones(5))
        with pytest.raises(ShapeError, match=r"^margin_ranking_loss: sub: shapes"):
            F.margin_ranking_loss(ember.ones(3), ember.ones(4), ember.ones(3))
