"""Optimizers and learning-rate schedules, under PyTorch's names (``ember.optim.AdamW``)."""

from ember.optim.adam import Adam, AdamW
from ember.optim.optimizer import Optimizer
from ember.optim.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]
