"""Learning-rate schedulers under PyTorch's names and semantics
(``ember.optim.lr_scheduler.CosineAnnealingLR``).

Example:
    >>> opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=1000)
    >>> for batch in loader:
    ...     train_step(batch); opt.step(); sched.step()
"""

from ember.optim.lr_scheduler.base import LRScheduler
from ember.optim.lr_scheduler.composite import ChainedScheduler, SequentialLR
from ember.optim.lr_scheduler.cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from ember.optim.lr_scheduler.decay import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from ember.optim.lr_scheduler.one_cycle import OneCycleLR
from ember.optim.lr_scheduler.plateau import ReduceLROnPlateau

_LRScheduler = LRScheduler  # PyTorch's old name

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
           "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "MultiplicativeLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR",
           "StepLR"]
