"""A compiled function's output that the graph keeps as a constant (``zeros_like(x)``: it
depends on x's layout only) came back as a C-order copy on the first (tracing) call, so a
channels-last input gave contiguous strides then and channels-last ones afterwards; eager
Ember and torch give channels-last every time."""

import pytest
import torch

import ember


@pytest.mark.parametrize("make", [
    lambda lib, x: lib.zeros_like(x),
    lambda lib, x: lib.ones_like(x, memory_format=lib.preserve_format),
    lambda lib, x: lib.full_like(x, 3.0),
    lambda lib, x: (lib.zeros_like(x), x * 2)[0],
], ids=["zeros_like", "ones_like", "full_like", "with-another-output"])
@pytest.mark.parametrize("grad", [False, True])
def test_every_call_keeps_the_layout_as_eager_and_torch(make, grad):
    x = ember.ones(1, 4, 2, 3).contiguous(memory_format=ember.channels_last)
    x.requires_grad_(grad)
    expected = make(torch, torch.ones(1, 4, 2, 3).to(memory_format=torch.channels_last))
    expected = expected.stride()
    assert make(ember, x).stride() == expected
    compiled = ember.jit.compile(lambda a: (make(ember, a), a * 2) if grad else make(ember, a))
    for _ in range(3):
        out = compiled(x)
        out = out[0] if grad else out
        assert out.stride() == expected
        assert out.tolist() == make(ember, x).tolist()
        with ember.no_grad():
            out.add_(1)  # (a copy: the constant later calls return is not changed)
