"""Differences from torch.autograd found by the sweep of session 48 (helper autograd48)."""

import pytest
import torch

import ember


def _pack_log(lib, fn):
    """The shapes the pack hook saw and x's gradient, under an unpack hook that doubles."""
    log = []
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append(tuple(t.shape)) or t,
                                                lambda t: t * 2):
        y = fn(lib, x * 1).sum()
    y.backward()
    return log, x.grad.tolist()


@pytest.mark.parametrize("fn", [
    lambda lib, a: a * 2.5, lambda lib, a: 2 * a, lambda lib, a: a / 2,
    lambda lib, a: a * lib.tensor(2.0, dtype=lib.float64), lambda lib, a: a ** 2,
    lambda lib, a: a.clamp(min=1.5)])
def test_python_numbers_do_not_go_through_saved_tensor_hooks(fn):
    # torch passes no wrapped number to pack hooks: an unpack hook that changes values
    # changed the 2.5 in x * 2.5 (gradient 5.0 for torch's 2.5)
    assert _pack_log(ember, fn) == _pack_log(torch, fn)
