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

