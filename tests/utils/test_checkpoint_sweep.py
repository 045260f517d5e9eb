"""ember.utils.checkpoint against torch.utils.checkpoint: edge cases found by sweep59f."""

import contextlib

import pytest
import torch

import ember
from ember.utils.checkpoint import checkpoint


def _fails(x):
    raise ValueError("boom")


def test_context_fn_that_suppresses_the_forward_exception_is_refused():
    def context_fn():
        return contextlib.suppress(ValueError), contextlib.nullcontext()

    with pytest.raises(RuntimeError, match="suppressed an exception"):
        torch.utils.checkpoint.checkpoint(_fails, torch.ones(2, requires_grad=True),
                                          use_reentrant=False, context_fn=context_fn)
    with pytest.raises(RuntimeError, match="suppressed an exception"):
        checkpoint(_fails, ember.ones(2, requires_grad=True), use_reentrant=False,
                   context_fn=context_fn)


class _Counted:
    """A layer that counts its calls (forward runs and recomputations alike)."""

    def __init__(self, scale):
        self.scale, self.calls = scale, 0

    def __call__(self, x):
        self.calls += 1
        return (x * self.scale).sin()


@pytest.mark.parametrize("n, segments", [(5, 2), (4, 3), (6, 4), (7, 3), (3, 3), (4, 1)])
def test_checkpoint_sequential_splits_the_layers_as_torch(n, segments):
    # which layers are recomputed in backward (so which activations are kept) follows
    # torch's split: segments - 1 chunks of n // segments layers, the rest last
    def recomputed(lib, seq):
        layers = [_Counted(1.0 + i / 10) for i in range(n)]
        x = lib.ones(2, requires_grad=True)
        y = seq(layers, segments, x, use_reentrant=False)
        before = [layer.calls for layer in layers]
        y.sum().backward()
        return [layer.calls - b for layer, b in zip(layers, before)], x.grad.tolist()

    want, want_grad = recomputed(torch, torch.utils.checkpoint.checkpoint_sequential)
    got, got_grad = recomputed(ember, ember.utils.checkpoint.checkpoint_sequential)
    assert got == want
    assert got_grad == pytest.approx(want_grad, rel=1e-5)


def test_checkpoint_sequential_more_segments_than_layers():
    # (torch fails here: its chunk size is 0) one layer per chunk, the last one kept
    layers = [_Counted(1.0), _Counted(2.0)]
    x = ember.ones(2, requires_grad=True)
    y = ember.utils.checkpoint.checkpoint_sequential(layers, 5, x, use_reentrant=False)
    y.sum().backward()
    assert [layer.calls for layer in layers] == [2, 1]
