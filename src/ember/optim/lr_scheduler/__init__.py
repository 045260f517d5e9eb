"""Learning-rate schedulers under PyTorch's names and semantics
(``ember.optim.lr_scheduler.CosineAnnealingLR``).

Example:
    >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=1000)
    >>> for batch in range(300):
    ...     opt.step(); sched.step()       # after each batch
    >>> round(sched.get_last_lr()[0], 4), round(opt.param_groups[0]["momentum"], 4)
    (0.1, 0.85)
"""

from ember.optim.lr_scheduler.base import LRScheduler
from ember.optim.lr_scheduler.composite import ChainedScheduler, SequentialLR
from ember.optim.lr_scheduler.cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from ember.optim.lr_scheduler.cyclic import CyclicLR
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
           "CyclicLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "MultiplicativeLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR",
           "StepLR"]
