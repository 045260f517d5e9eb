"""Distributed optimizers: :class:`ZeroRedundancyOptimizer` (ZeRO stages 1 and 2)."""

from ember.distributed.optim.zero import ZeroRedundancyOptimizer
