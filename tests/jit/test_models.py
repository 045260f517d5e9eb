"""Whole training steps, compiled and eager, give the same losses and parameters."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.models
import ember.nn.functional as F
from ember import jit


def _train(build, opt_cls, opt_kwargs, x, y, steps, compiled):
    ember.manual_seed(0)
    model = build()
    opt = opt_cls(model.parameters(), **opt_kwargs)

    def step(inputs, targets):
        out = model(inputs)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    run = jit.compile(step) if compiled else step
    losses = [float(run(x, y)) for _ in range(steps)]
    return losses, {k: v.numpy().copy() for k, v in model.state_dict().items()}, run


CASES = {
    "mlp": (lambda: ember.models.mlp(hidden=64), ember.optim.SGD,
            {"lr": 0.01, "momentum": 0.9}, (16, 1, 28, 28), 10),
    "cnn": (ember.models.cnn, ember.optim.Adam, {"lr": 1e-3}, (8, 1, 28, 28), 10),
    "resnet18": (ember.models.resnet18, ember.optim.SGD, {"lr": 0.01, "momentum": 0.9},
                 (4, 3, 8, 8), 10),
    "gpt": (lambda: ember.models.gpt(n_layer=2, d_model=32, block_size=16, dropout=0.0),
            ember.optim.AdamW, {"lr": 3e-4}, None, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_twenty_compiled_steps_match_eager(name):
    build, opt_cls, kwargs, shape, classes = CASES[name]
    rng = np.random.default_rng(0)
    if shape is None:  # tokens
        x = ember.from_numpy(rng.integers(0, 256, (4, 16)))
        y = ember.from_numpy(rng.integers(0, 256, (4, 16)))
    else:
        x = ember.from_numpy(rng.standard_normal(shape, dtype=np.float32))
        y = ember.from_numpy(rng.integers(0, classes, shape[0]))
    eager_losses, eager_state, _ = _train(build, opt_cls, kwargs, x, y, 20, compiled=False)
    losses, state, run = _train(build, opt_cls, kwargs, x, y, 20, compiled=True)
    assert len(run.entries) == 1, jit.explain()
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    assert state.keys() == eager_state.keys()
    for key in state:  # parameters, and BatchNorm's running statistics and batch count
        np.testing.assert_allclose(state[key], eager_state[key], rtol=1e-6, atol=1e-7,
                                   err_msg=key)
