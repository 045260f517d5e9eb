"""What ``ember train --tensorboard`` logs to ``<out>/tensorboard``: the loss and learning rate
of every step, each epoch's train loss, test loss and accuracy, the model's graph at the start
and the hyperparameters with the final metrics at the end."""

from __future__ import annotations

import os
from typing import Any

from ember.train.config import ConfigError, TrainConfig

_HYPERPARAMETERS = ("model", "optimizer", "lr", "batch_size", "momentum", "weight_decay",
                    "epochs", "seed")


class TensorBoardLog:
    """A run's TensorBoard logger; a resumed run (``first_step`` > 0) hides what the
    interrupted one logged from that step on.

    Example:
        >>> log = TensorBoardLog(cfg, first_step=0)
        >>> log.step(0, 2.31, 1e-3)
    """

    def __init__(self, cfg: TrainConfig, first_step: int) -> None:
        try:
            from ember.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ConfigError("--tensorboard needs the tensorboard package: pip install "
                              "'ember[tensorboard]'") from None
        self.cfg = cfg
        self.writer = SummaryWriter(os.path.join(cfg.out, "tensorboard"),
                                    purge_step=first_step or None)

    def graph(self, model: Any, batch: Any) -> None:
        """The model's forward on ``batch``, traced in eval mode (no running statistics
        change, no random numbers drawn)."""
        was_training = model.training
        model.eval()
        try:
            self.writer.add_graph(model, batch)
        finally:
            model.train(was_training)

    def step(self, step: int, loss: float, lr: float) -> None:
        self.writer.add_scalar("train/loss", loss, step)
        self.writer.add_scalar("train/lr", lr, step)

    def epoch(self, step: int, train_loss: float, test_loss: float, accuracy: float) -> None:
        """An epoch's figures at its last step, so they share the steps' axis."""
        self.writer.add_scalar("epoch/train_loss", train_loss, step)
        self.writer.add_scalar("epoch/test_loss", test_loss, step)
        self.writer.add_scalar("epoch/test_accuracy", accuracy, step)
        self.writer.flush()

    def close(self, summary: dict[str, Any]) -> None:
        """The hyperparameters against the final metrics (the HParams tab), then closes."""
        history = summary["history"]
        if history["test_accuracy"]:
            self.writer.add_hparams(
                {k: getattr(self.cfg, k) for k in _HYPERPARAMETERS},
                {"hparam/test_accuracy": history["test_accuracy"][-1],
                 "hparam/test_loss": history["test_loss"][-1]}, run_name="hparams")
        self.writer.close()
