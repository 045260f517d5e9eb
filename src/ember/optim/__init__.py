"""Optimizers and learning-rate schedules, under PyTorch's names (``ember.optim.AdamW``).

Example:
    >>> w = ember.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = ember.optim.AdamW([w], lr=0.1)
    >>> sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    >>> for epoch in range(10):
    ...     opt.zero_grad(); (w * w).sum().backward(); opt.step(); sched.step()
    >>> w
    tensor([ 0.4593, -1.4452], requires_grad=True)
"""

import sys

from ember.optim import adam, lr_scheduler, swa_utils
from ember.optim.adadelta import Adadelta
from ember.optim.adafactor import Adafactor
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam, AdamW
from ember.optim.adamax import Adamax
from ember.optim.asgd import ASGD
from ember.optim.lbfgs import LBFGS
from ember.optim.lion import Lion
from ember.optim.muon import Muon
from ember.optim.nadam import NAdam
from ember.optim.optimizer import Optimizer
from ember.optim.radam import RAdam
from ember.optim.rmsprop import RMSprop
from ember.optim.rprop import Rprop
from ember.optim.sgd import SGD
from ember.optim.sparse_adam import SparseAdam
from ember.optim.stateless import swap_in_optimizer_params_and_state

__all__ = ["ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW",
           "Adamax", "Lion", "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop",
           "lr_scheduler", "swa_utils", "swap_in_optimizer_params_and_state"]

adamw = sys.modules[f"{__name__}.adamw"] = adam  # (torch.optim.adamw's path: AdamW is in adam)
