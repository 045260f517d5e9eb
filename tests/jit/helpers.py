"""What several compiled-step tests share."""

from __future__ import annotations

from typing import Any

import ember.nn.functional as F


def training_step(model: Any, opt: Any) -> Any:
    """The usual step of ``model`` on ``(x, y)``: cross-entropy, backward, ``opt.step()``,
    ``opt.zero_grad()``; returns the loss."""

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step
