"""The curves ``ember train`` draws (curves.png)."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")


def test_epoch_axes_have_whole_epoch_ticks():
    # a 3-epoch run's axes were ticked 1.00, 1.25, ..., 3.00: epochs that do not exist
    from ember.train.plot import _figure
    history = {"step_loss": [2.0, 1.5, 1.2, 1.0, 0.9, 0.8], "train_loss": [1.75, 1.1, 0.85],
               "test_accuracy": [0.7, 0.776, 0.788]}
    fig = _figure(history, "cnn")
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_loss_panel_shows_the_test_loss():
    # the history holds each epoch's test loss, but only the training loss was drawn
    from ember.train.plot import _figure
    history = {"step_loss": [2.0, 1.5, 1.2, 1.0], "train_loss": [1.75, 1.1],
               "test_loss": [0.9, 0.7], "test_accuracy": [0.7, 0.8]}
    ax_loss = _figure(history).axes[0]
    lines = {line.get_label(): list(line.get_ydata()) for line in ax_loss.get_lines()}
    assert lines["test"] == [0.9, 0.7]
    assert "test" not in {line.get_label() for line in _figure(
        {k: v for k, v in history.items() if k != "test_loss"}).axes[0].get_lines()}
