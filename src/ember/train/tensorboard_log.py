"""What ``ember train --tensorboard`` logs to ``<out>/tensorboard``: the loss and learning rate
of every step, each epoch's train loss, test loss and accuracy, the model's graph at the start
and the hyperparameters with the final metrics at the end."""

from __future__ import annotations

import os
import shutil
from typing import Any

from ember.train.config import ConfigError, TrainConfig

_HYPERPARAMETERS = ("model", "optimizer", "lr", "batch_size", "momentum", "weight_decay",
                    "epochs", "seed")


class TensorBoardLog:
    """A run's TensorBoard logger; a run starting at ``first_step`` (0, or where a resumed
    run goes on) hides what an earlier run into the same folder logged from that step on. A
    run from the start also logs ``model``'s forward on ``batch`` (traced in eval mode: the
    run does not change); a resumed one does not log it again.

    Example:
        >>> log = TensorBoardLog(cfg, 0, model, images[:1])
        >>> log.step(0, 2.31, 1e-3)
    """

    def __init__(self, cfg: TrainConfig, first_step: int, model: Any, batch: Any) -> None:
        try:
            from ember.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ConfigError("--tensorboard needs the tensorboard package: pip install "
                              "'ember[tensorboard]'") from None
        self.cfg = cfg
        self.folder = os.path.join(cfg.out, "tensorboard")
        self.writer = SummaryWriter(self.folder, purge_step=first_step)
        if not first_step:
            self.writer.add_graph(model, batch)

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
        """The hyperparameters against the final metrics (the HParams tab; an earlier run's
        into the same folder replaced), then closes."""
        history = summary["history"]
        if history["test_accuracy"]:
            shutil.rmtree(os.path.join(self.folder, "hparams"), ignore_errors=True)
            self.writer.add_hparams(
                {k: v for k in _HYPERPARAMETERS if (v := getattr(self.cfg, k)) is not None},
                {"hparam/test_accuracy": history["test_accuracy"][-1],
                 "hparam/test_loss": history["test_loss"][-1]}, run_name="hparams")
        self.writer.close()
