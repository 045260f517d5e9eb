"""The training driver behind ``ember train``: options (:class:`TrainConfig`, TOML files),
the loop with progress bar, evaluation, per-epoch checkpoints and resume, and the final plot
and JSON summary.

Example:
    >>> from ember.train import make_config, run
    >>> summary = run(make_config({"model": "cnn", "epochs": 1, "train_size": 512}))
"""

from ember.train.config import ConfigError, TrainConfig, load_toml, make_config
from ember.train.loop import build_model, build_optimizer, evaluate, run

__all__ = ["TrainConfig", "ConfigError", "make_config", "load_toml", "run", "build_model",
           "build_optimizer", "evaluate"]
